"""``quipu mcp`` answers the handshake before the REST app or the SDK exist, then hands over (issue 16).

The front is driven in a fresh interpreter whose import system refuses the SDK, the REST stack
and the quad store: if ``initialize`` or ``tools/list`` needed any of them, no answer could come.
The hand-over to the SDK is driven through a real ``quipu mcp`` process. No time is asserted
(``just bench logic`` measures it).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.mcp import handshake

pytestmark = pytest.mark.backend_independent

QUIPU = Path(sys.executable).parent / "quipu"

_FRONT_WITHOUT_THE_STACK = """
import sys, threading
from importlib.abc import MetaPathFinder

REFUSED = ("mcp", "mcp_types", "fastapi", "starlette", "sqlalchemy", "pyshacl", "rdflib", "httpx", "typer")

class Refuse(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED or name.startswith(("quipu.rest", "quipu.store", "quipu.api")) or name in (
            "quipu.mcp.stdio_session", "quipu.mcp.server", "quipu.mcp.local"
        ):
            raise ImportError(f"refused for the test: {name}")
        return None

sys.meta_path.insert(0, Refuse())
from quipu.config import load_settings
from quipu.mcp.stdio import Launch, serve

listed = threading.Event()  # the settings wait until tools/list is answered: no race with the failure

def narrowing():
    listed.set()
    return (["data"], True)

def settings():
    listed.wait()
    return load_settings(store={"db": ":memory:"})

sys.exit(serve(Launch(settings, lambda s: None, narrowing)))
"""


def _lines(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps(m) + "\n" for m in messages)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def test_the_handshake_is_answered_without_the_sdk_the_rest_app_or_the_store() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _FRONT_WITHOUT_THE_STACK],
        input=_lines(INITIALIZE, INITIALIZED, LIST),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    data = handshake.load()
    assert replies == [
        {"jsonrpc": "2.0", "id": 1, "result": data.initialize["2025-06-18"]},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": data.tool_list("2025-06-18", ["data"], True)}},
    ], out.stderr
    assert 0 < len(replies[1]["result"]["tools"]) < len(data.tools["2025-06-18"])
    # Only once the input ended did the build need the refused SDK: a failure, reported.
    assert out.returncode == 1
    assert "refused for the test: quipu.mcp.stdio_session" in out.stderr


def _session(tmp_path: Path, *messages: dict[str, Any]) -> dict[Any, dict[str, Any]]:
    out = subprocess.run(
        [str(QUIPU), "mcp", "--db", str(tmp_path / "front.db")],
        input=_lines(*messages),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=True,
    )
    return {reply["id"]: reply for reply in map(json.loads, out.stdout.splitlines())}


def test_an_initialize_the_front_cannot_answer_exactly_is_the_sdks_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    without_client_info = {
        **INITIALIZE,
        "id": "bad",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "quipu_query", "arguments": {"query": "ASK { ?s ?p ?o }"}},
    }
    replies = _session(tmp_path, without_client_info, INITIALIZE, INITIALIZED, LIST, call)
    assert replies["bad"]["error"]["code"] == -32602  # the SDK's own invalid-params refusal
    assert replies[1]["result"]["serverInfo"]["name"] == "quipu"
    assert replies[2]["result"]["tools"] == handshake.load().tool_list("2025-06-18", None, False)
    assert replies[3]["result"]["isError"] is False
    assert json.loads(replies[3]["result"]["content"][0]["text"])["result"] is False


def test_the_replayed_initialize_is_answered_once_and_calls_follow(tmp_path: Path) -> None:
    """The front answers initialize and tools/list; the SDK session that takes over at the first
    call is replayed the initialize (so it serves calls) and its second answer is dropped."""
    calls = [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "quipu_knot", "arguments": {"turtle": f"<http://e/s{n}> <http://e/p> {n} ."}},
        }
        for n in (3, 4)
    ]
    ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    out = subprocess.run(
        [str(QUIPU), "mcp", "--db", str(tmp_path / "replay.db")],
        input=_lines(INITIALIZE, INITIALIZED, LIST, *calls, ping),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=True,
    )
    ids = [json.loads(line)["id"] for line in out.stdout.splitlines()]
    assert sorted(ids, key=str) == [1, 2, 3, 4, 5]  # one answer each: the replay's is not sent
    replies = {json.loads(line)["id"]: json.loads(line) for line in out.stdout.splitlines()}
    # The SDK runs requests concurrently: two transactions, in either order.
    assert sorted(json.loads(replies[n]["result"]["content"][0]["text"])["tx_id"] for n in (3, 4)) == [1, 2]
    assert replies[5]["result"] == {}


@pytest.mark.parametrize("handed_over", [False, True])
def test_ctrl_c_ends_the_server_quietly(tmp_path: Path, handed_over: bool) -> None:
    process = subprocess.Popen(
        [str(QUIPU), "mcp", "--db", str(tmp_path / "interrupted.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        messages = (
            [INITIALIZE, {"jsonrpc": "2.0", "id": 2, "method": "ping"}] if handed_over else [INITIALIZE]
        )
        for message in messages:
            process.stdin.write(_lines(message).encode())
            process.stdin.flush()
            assert "result" in json.loads(process.stdout.readline())
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130
    assert b"Traceback" not in err
