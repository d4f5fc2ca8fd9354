"""stdio only: the token-file rules, a clean stdout, and an outside client (the MCP Inspector CLI)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import pytest

from tests.acceptance.mcp.harness import (
    LEGACY_ERA,
    PROCESS_TIMEOUT,
    QUIPU,
    SHARED,
    Target,
    access_paths,
    child_env,
    ok_body,
    registry,
    run,
    turtle,
    write_config,
    write_token_file,
)

INSPECTOR: Final = "@modelcontextprotocol/inspector@2.12.0"
INSPECTOR_TIMEOUT: Final = 300.0  # the first run downloads the package
REPLY_TIMEOUT: Final = 30.0


# -- token-file rules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    returncode: int
    stdout: str
    stderr: str
    store_created: bool


def _bad_token_files(root: Path) -> dict[str, Path]:
    long_enough = "t" * 32
    directory = root / "a-directory"
    directory.mkdir()
    return {
        "missing": root / "no-such.token",
        "directory": directory,
        "mode_644": write_token_file(root / "shared.token", long_enough, 0o644),
        "too_large": write_token_file(root / "large.token", "t" * 4097, 0o600),
        "too_short": write_token_file(root / "short.token", "t" * 15, 0o600),
    }


EXPECTED: Final = {
    "missing": "cannot read token file",
    "directory": "is not a regular file",
    "mode_644": "must be private: mode 600 or 400, not 644",
    "too_large": "is larger than 4096 bytes",
    "too_short": "is shorter than 16 characters",
}


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Refusal]:
    """Every bad token file tried at once (each its own store), stdin closed."""
    started: dict[str, tuple[subprocess.Popen[str], Path]] = {}
    for case, token_file in _bad_token_files(tmp_path_factory.mktemp("token-files")).items():
        root = tmp_path_factory.mktemp(case)
        db = root / "store.db"
        command = [str(QUIPU), "mcp", "--db", str(db), "--mcp-token-file", str(token_file)]
        started[case] = (
            subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=root,
            ),
            db,
        )
    out: dict[str, Refusal] = {}
    for case, (proc, db) in started.items():
        try:
            stdout, stderr = proc.communicate(timeout=PROCESS_TIMEOUT)
        finally:
            proc.kill()
        out[case] = Refusal(proc.returncode, stdout, stderr, db.exists())
    return out


@pytest.mark.backend_independent
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_an_unsafe_token_file_refuses_to_start_with_one_error_line(
    refusals: dict[str, Refusal], case: str
) -> None:
    refusal = refusals[case]
    assert refusal.returncode == 2
    assert refusal.stdout == ""  # nothing on the protocol stream
    lines = refusal.stderr.splitlines()
    assert len(lines) == 1, refusal.stderr
    assert lines[0].startswith("error: --mcp-token-file: ")
    assert EXPECTED[case] in lines[0]
    assert not refusal.store_created  # refused before the store was opened


# -- stdout carries JSON-RPC only ------------------------------------------------------------------


def _pump(stream: IO[str], sink: Callable[[str], None]) -> threading.Thread:
    def run() -> None:
        for line in stream:
            sink(line)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _request(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": method,
        **({"params": params} if params is not None else {}),
    }


def test_every_stdout_line_is_a_json_rpc_message_while_the_server_logs(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    token_file = write_token_file(tmp_path / "client.token", SHARED.token)
    command = [str(QUIPU), "mcp", "--config", str(config), "--mcp-token-file", str(token_file)]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **child_env()},
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout: list[str] = []
    stderr: list[str] = []

    def line_out(line: str) -> None:
        stdout.append(line)
        lines.put(line)

    readers = [_pump(proc.stdout, line_out), _pump(proc.stderr, stderr.append)]
    subject = "http://example.org/acceptance/raw-pipe"
    messages = [
        _request(
            1,
            "initialize",
            {
                "protocolVersion": LEGACY_ERA,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        ),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/list"),
        _request(
            3,
            "tools/call",
            {"name": "quipu_knot", "arguments": {"turtle": f'<{subject}> <http://example.org/p> "v" .'}},
        ),
        _request(4, "tools/call", {"name": "quipu_query", "arguments": {"query": "SELEC"}}),
        _request(5, "tools/call", {"name": "quipu_no_such_tool", "arguments": {}}),
    ]
    replies: dict[int, dict[str, Any]] = {}
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" not in message:
                continue
            deadline = time.monotonic() + REPLY_TIMEOUT
            while message["id"] not in replies:  # stdin stays open until the reply is in
                reply = json.loads(lines.get(timeout=max(0.0, deadline - time.monotonic())))
                if "id" in reply:
                    replies[reply["id"]] = reply
        proc.stdin.close()
        returncode = proc.wait(timeout=PROCESS_TIMEOUT)
    finally:
        proc.kill()
    for reader in readers:
        reader.join(timeout=5)

    assert returncode == 0, "".join(stderr)  # stdin EOF ends the server cleanly
    assert stdout, "the server wrote nothing"
    for line in stdout:
        message = json.loads(line)  # every line parses ...
        assert message["jsonrpc"] == "2.0"  # ... and is JSON-RPC
        assert ("id" in message and ("result" in message) != ("error" in message)) or "method" in message
    assert replies[1]["result"]["protocolVersion"] == LEGACY_ERA
    assert len(replies[2]["result"]["tools"]) == len(registry(config))
    assert replies[3]["result"]["isError"] is False
    assert replies[4]["result"]["isError"] is True
    assert json.loads(replies[4]["result"]["content"][0]["text"])["reason"] == "sparql_parse_error"
    assert "error" in replies[5]
    # The server did log, and on stderr: its start-up line and one access line per REST call.
    logs = [json.loads(line) for line in stderr if line.startswith("{")]
    assert any(record["msg"] == "serving MCP over stdio" for record in logs)
    assert access_paths("".join(stderr)) == ["/knot", "/query"]


# -- an outside client ------------------------------------------------------------------------------


def test_the_mcp_inspector_cli_lists_the_tools_over_stdio(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not on PATH: the MCP Inspector CLI cannot run")
    home = tmp_path / "home"
    home.mkdir()
    # The Inspector keeps its state under $HOME; npm's package cache stays where it was, so a
    # second run need not download again.
    npm = {key.lower(): value for key, value in os.environ.items() if key.lower().startswith("npm_config_")}
    cache = npm.get("npm_config_cache") or str(Path.home() / ".npm")
    env = {key: value for key, value in os.environ.items() if key.lower() != "npm_config_cache"}
    env.update(HOME=str(home), NPM_CONFIG_CACHE=cache, NPM_CONFIG_UPDATE_NOTIFIER="false")
    db = tmp_path / "inspected.db"
    command = [npx, "-y", INSPECTOR, "--cli", "--format", "json", str(QUIPU), "mcp", "--db", str(db)]
    result = subprocess.run(
        [*command, "--method", "tools/list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=INSPECTOR_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)["result"]["tools"]
    reference = tmp_path / "reference"
    reference.mkdir()
    assert [tool["name"] for tool in listed] == list(registry(write_config(reference)).tools)
    # The list came from the handshake data (issue 16): the store opens at the first tool call.
    assert not db.exists()


# -- local authority ----------------------------------------------------------------------------


def test_a_store_without_credentials_keeps_local_authority_over_stdio(tmp_path: Path) -> None:
    """No credential configured: stdio writes are open, as the CLI's are, and carry no identity."""
    config = tmp_path / "open.toml"
    config.write_text('[quipu.store]\nsynchronous = "NORMAL"\n', encoding="utf-8")
    target = Target("stdio", tmp_path, config)

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with target.client() as client:
            knot = ok_body(
                await client.call_tool("quipu_knot", {"turtle": turtle("http://example.org/local", "yes")})
            )
            log = ok_body(await client.call_tool("quipu_transactions", {}))
            return knot, log

    knot, log = run(main)
    assert knot["conforms"] is True and knot["tx_id"] > 0
    (entry,) = [t for t in log["transactions"] if t["id"] == knot["tx_id"]]
    assert entry["authenticated"] is None
