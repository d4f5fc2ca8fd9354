"""Start-up of the logic memory's entry points (issue 16): nothing heavy before the first answer.

An MCP client spawns ``zpm serve`` for each session and gives up on a slow one, so the
handshake (``initialize``, ``tools/list``) is answered from ``tools.json`` alone, the runtime
opens in the background, and tool calls go to the logic service without the REST stack. These
tests pin what is imported, never how long it takes (timing belongs to ``just bench logic``); the
entry modules themselves are pinned by tests/test_startup_imports.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from quipu.logic.project import init
from tests.logic.runtime_support import require_swipl

pytestmark = pytest.mark.backend_independent  # no quad store is opened

# The server is driven in a fresh interpreter whose import system refuses the REST stack, the
# settings and the quad store: if the server needed any of them, it could not answer.
_SERVE_WITHOUT_THE_REST_STACK = """
import io, json, sys
from importlib.abc import MetaPathFinder

class Refuse(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("fastapi", "sqlalchemy", "pyshacl", "pydantic_settings") or name in (
            "quipu.rest", "quipu.config", "quipu.api", "quipu.store"
        ) or name.startswith(("quipu.rest.", "quipu.store.")):
            raise ImportError(f"refused for the test: {name}")
        return None

sys.meta_path.insert(0, Refuse())
import anyio
from quipu.logic.project import discover
from quipu.mcp import zpm_stdio

lines = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "query_logic", "arguments": {"goal": "true"}}},
]
stdin = io.BytesIO(b"".join(json.dumps(m).encode() + b"\\n" for m in lines))
stdout = io.BytesIO()
anyio.run(zpm_stdio.serve_stdio, discover(), stdin, stdout)
print(stdout.getvalue().decode())
"""


def test_zpm_serve_answers_without_the_rest_stack_or_the_quad_store(tmp_path: Path) -> None:
    require_swipl()
    init(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", _SERVE_WITHOUT_THE_REST_STACK],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=True,
    )  # fmt: skip
    answers = {reply["id"]: reply for reply in map(json.loads, out.stdout.strip().splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"]
    assert len(answers[2]["result"]["tools"]) == 29
    assert answers[3]["result"] == {"content": [{"type": "text", "text": "[{}]"}], "isError": False}
