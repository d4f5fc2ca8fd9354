"""In-process hops to the logic tools: ``POST /logic/<tool>`` as direct ASGI requests
(quipu/mcp/asgi_call.py), run on the loop's thread in an app set up with ``serve_inline``, and
zpm serve's client, which calls the same logic service without the REST stack."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import FastAPI

from quipu.config import load_settings
from quipu.logic import project
from quipu.logic.knowledge import ToolResult
from quipu.logic.registry import find_tool
from quipu.mcp.asgi_call import AsgiResponse, asgi_request, http_scope
from quipu.mcp.zpm_stdio import ServiceClient
from quipu.rest.app import create_app
from quipu.rest.routers.logic import serve_inline
from tests.logic.runtime_support import require_swipl

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

JSON = {"content-type": "application/json", "accept": "application/json"}


def _post(app: FastAPI, path: str, body: bytes) -> AsgiResponse:
    async def run() -> AsgiResponse:
        async with app.router.lifespan_context(app):
            return await asgi_request(app, "POST", path, body, JSON)

    return anyio.run(run)


class RecordingService:
    """Answers ``echo`` and notes the thread each call ran on."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        self.threads.append(threading.get_ident())
        return ToolResult(str((arguments or {}).get("message")))


class RecordingHost:
    def __init__(self) -> None:
        self.recorder = RecordingService()

    def service(self) -> RecordingService:
        return self.recorder

    def close(self) -> None:
        pass


def _app(tmp_path: Path, *, inline: bool, **server: Any) -> tuple[FastAPI, RecordingHost]:
    app = create_app(load_settings(store={"db": str(tmp_path / "s.db")}, server=server))
    host = RecordingHost()
    app.state.logic = host
    if inline:
        serve_inline(app)
    return app, host


def test_the_scope_is_an_http_1_1_request_with_its_length() -> None:
    scope = http_scope("post", "/logic/echo", b"{}", [("Accept", "application/json")])
    assert (scope["type"], scope["method"], scope["path"], scope["raw_path"]) == (
        "http",
        "POST",
        "/logic/echo",
        b"/logic/echo",
    )
    assert (b"accept", b"application/json") in scope["headers"]
    assert (b"content-length", b"2") in scope["headers"]


def test_a_call_passes_the_app_middleware_and_answers_the_tool_result(tmp_path: Path) -> None:
    app, _ = _app(tmp_path, inline=True)
    response = _post(app, "/logic/echo", b'{"message":"h\xc3\xa9"}')
    assert response.status == 200
    assert response.json() == {"content": [{"type": "text", "text": "hé"}], "isError": False}
    assert response.header("X-Request-Id")  # set by the app's AccessLog middleware
    assert response.header("content-type") == "application/json"


def test_inline_tools_run_on_the_loop_thread_and_others_in_a_worker(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    inline, inline_host = _app(tmp_path / "a", inline=True)
    threaded, threaded_host = _app(tmp_path / "b", inline=False)
    here = threading.get_ident()
    assert _post(inline, "/logic/echo", b'{"message":"x"}').status == 200
    assert _post(threaded, "/logic/echo", b'{"message":"x"}').status == 200
    assert inline_host.recorder.threads == [here]
    assert len(threaded_host.recorder.threads) == 1
    assert threaded_host.recorder.threads[0] != here  # quipu-server's loop never blocks on the engine


def test_inline_calls_keep_the_rest_error_model(tmp_path: Path) -> None:
    app, host = _app(tmp_path, inline=True)
    wrong = _post(app, "/logic/echo", b"[1]")
    assert wrong.status == 400
    assert wrong.json()["reason"] == "wrong_type"
    assert (wrong.header("content-type") or "").startswith("application/problem+json")
    assert _post(app, "/logic/no_such_tool", b"{}").json()["reason"] == "no_such_route"
    assert host.recorder.threads == []


def test_inline_calls_keep_the_route_table_auth(tmp_path: Path) -> None:
    app, host = _app(tmp_path, inline=True, read_only=True)
    refused = _post(app, "/logic/remember_fact", b'{"fact":"x(1)"}')
    assert refused.status == 403
    assert refused.json()["reason"] == "server_is_read_only"
    assert host.recorder.threads == []  # refused before the tool
    assert _post(app, "/logic/echo", b'{"message":"read"}').json()["content"][0]["text"] == "read"


def test_an_app_asking_for_the_body_again_sees_a_disconnect_after_the_answer() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["type"])
        await send({"type": "http.response.start", "status": 201, "headers": [(b"x-a", b"1")]})
        await send({"type": "http.response.body", "body": b"ab", "more_body": True})
        await send({"type": "http.response.body", "body": b"c"})
        seen.append((await receive())["type"])

    response = anyio.run(asgi_request, app, "POST", "/x", b"body")
    assert (response.status, response.body, response.header("X-A")) == (201, b"abc", "1")
    assert seen == ["http.request", "http.disconnect"]


def test_an_app_that_never_answers_is_an_error() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        return None

    with pytest.raises(RuntimeError, match="without starting a response"):
        anyio.run(asgi_request, app, "GET", "/x")


def test_the_zpm_client_round_trips_through_the_logic_service(tmp_path: Path) -> None:
    require_swipl()
    folder = tmp_path / "proj"
    folder.mkdir()
    project.init(folder)
    client = ServiceClient(project.Project(folder))
    client.start()  # the runtime opens in the background; the first call waits for it

    async def run() -> list[dict[str, Any]]:
        remember, query = find_tool("remember_fact"), find_tool("query_logic")
        assert remember is not None and query is not None
        return [
            await client.call(remember, {"fact": "human(socrates)"}),
            await client.call(query, {"goal": "human(X)"}),
            await client.call(query, {"goal": "human(X"}),
            await client.call(query, {"goal": "human(\ud800)"}),
        ]

    try:
        wrote, read, failed, surrogate = anyio.run(run)
    finally:
        client.close()
    assert wrote == {"content": [{"type": "text", "text": "Asserted: human(socrates)"}], "isError": False}
    assert json.loads(read["content"][0]["text"]) == [{"X": "socrates"}]
    assert failed == {"content": [{"type": "text", "text": "Query execution failed"}], "isError": True}
    # JSON can carry a lone surrogate; UTF-8 cannot: refused before any tool sees it
    assert surrogate == {"content": [{"type": "text", "text": "ExecutionFailed"}], "isError": True}
    assert "human(socrates)" in (folder / ".zpm" / "data" / "journal.wal").read_text(encoding="utf-8")


def test_the_zpm_client_answers_a_missing_project_as_the_route_did(tmp_path: Path) -> None:
    # No project folder at all: every call fails, each saying why on stderr, none raising.
    client = ServiceClient(project.Project(tmp_path / "gone"))
    client.start()
    query = find_tool("query_logic")
    assert query is not None
    try:
        first = anyio.run(client.call, query, {"goal": "true"})
    finally:
        client.close()
    assert first == {"content": [{"type": "text", "text": "ExecutionFailed"}], "isError": True}
