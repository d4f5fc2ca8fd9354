"""``zpm serve``: the logic memory's MCP server on stdio (spec logic-memory.md §2).

Every tool call goes, in process, into ``POST /logic/<tool>`` of the REST app built by
``quipu.rest.app.create_app`` with ``logic.project`` set to the discovered project, so the REST
routes and this server are one system (the ``zpm`` tool commands call the service those routes
call, quipu/cli/zpm.py). The route answers every tool result as the ``tools/call`` result
object (``content`` + ``isError``), which is passed on unchanged; a problem+json answer (engine
unavailable, project gone) becomes the tool result ``ExecutionFailed`` and the problem itself
goes to stderr (R-T9), except that the two tools whose contract names the missing engine answer
``Prolog engine is not initialized`` (``LogicTool.engine_unavailable_text``).

The hop costs no thread hand-off **[designed here]**: the call is a direct ASGI request
(quipu/mcp/asgi_call.py, no HTTP client), the app runs the tools inline on the loop's thread
(``serve_inline``) and stdin is read there too. With one message at a time (R-T3) nothing else
waits on the loop, so blocking it holds up no work.

The JSON-RPC loop is our own, not the ``mcp`` SDK's stdio server **[designed here]**: the
contract needs what that server does not do — strictly one message after another with the
response written before the next line is read (R-T3), every message up to end-of-file answered,
the last one without a newline included (R-T1, R-T5; the SDK drops in-flight requests at EOF),
compact single-line envelopes (R-T2) and the protocol errors of R-T8 (``Tool not found``,
``Server not initialized``). It is also far lighter to import.

stdout belongs to the protocol: ``claim_stdout`` keeps a private copy of file descriptor 1 for
the envelopes and points descriptor 1 (and ``sys.stdout``) at stderr before anything else runs,
so nothing a library, the engine child or a Prolog goal prints can reach the stream (R-T4).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from quipu.logic.registry import (
    CAPABILITIES,
    PROTOCOL_VERSION,
    SERVER_INFO,
    SUPPORTED_PROTOCOL_VERSIONS,
    LogicTool,
    find_tool,
    load_tools,
)

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from quipu.config import Settings
    from quipu.logic.project import Project

log = logging.getLogger("quipu.logic.mcp")

# JSON-RPC error codes (R-T8).
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
NOT_INITIALIZED: Final = -32002
# R-T9's text for an unavailable dependency; the word quipu.logic.tooling uses, spelled here so
# that the protocol layer imports no engine code.
EXECUTION_FAILED: Final = "ExecutionFailed"

_BEFORE_INITIALIZE: Final = frozenset({"initialize", "ping"})

ToolCaller = Callable[[LogicTool, Mapping[str, Any]], Awaitable[dict[str, Any]]]


def failure(text: str) -> dict[str, Any]:
    """A tool error result (R-T7): one text item, ``isError`` true."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _well_formed(body: Any) -> bool:
    """A ``tools/call`` result object: exactly one text content item and a boolean ``isError``."""
    if not isinstance(body, dict) or not isinstance(body.get("isError"), bool):
        return False
    content = body.get("content")
    return (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], dict)
        and content[0].get("type") == "text"
        and isinstance(content[0].get("text"), str)
    )


def route_result(tool: LogicTool, status: int, body: Any) -> dict[str, Any]:
    """The ``tools/call`` result for the route's answer (see the module docstring)."""
    if status == 200 and _well_formed(body):
        return dict(body)
    detail = body.get("error") if isinstance(body, dict) else None
    log.error("zpm: %s: the logic route answered %s: %s", tool.name, status, detail or body)
    if isinstance(body, dict) and body.get("reason") == "engine_unavailable":
        return failure(tool.engine_unavailable_text)
    return failure(EXECUTION_FAILED)


def logic_settings(project: Project) -> Settings:
    """The settings of the in-process REST app for one project **[designed here]**: quipu's
    defaults, not its config files or ``QUIPU_*`` variables. ``zpm`` is a local process with the
    local authority of the CLI, like zpm itself: a quad-store token, read-only mode or a broken
    ``quipu.toml`` meant for ``quipu-server`` must not refuse its writes or stop it. The app's
    quad store is an in-memory one: nothing may appear in the project folder but ``.zpm/``."""
    from quipu.config import LogicSettings, Settings, StoreSettings

    return Settings.model_construct(
        store=StoreSettings(db=":memory:"), logic=LogicSettings(project=str(project.root))
    )


class LogicClient:
    """Tool calls into ``POST /logic/<tool>`` of a running REST app, as in-process ASGI requests
    (quipu/mcp/asgi_call.py): the app's middleware, route, auth dependency and error handlers
    judge each call, with no HTTP client in between."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    @classmethod
    @asynccontextmanager
    async def running(cls, settings: Settings) -> AsyncIterator[LogicClient]:
        """Build the REST app, run its lifespan (an in-process call runs none) and yield a client.

        The app runs its tools inline (``serve_inline``): this server handles one message at a
        time (R-T3), so nothing waits on the loop while a tool runs."""
        from quipu.rest.app import create_app
        from quipu.rest.routers.logic import serve_inline

        app = create_app(settings)
        serve_inline(app)
        async with app.router.lifespan_context(app):
            yield cls(app)

    async def call(self, tool: LogicTool, arguments: Mapping[str, Any]) -> dict[str, Any]:
        from quipu.mcp.asgi_call import asgi_request

        try:
            body = json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            response = await asgi_request(self._app, tool.rest_method, tool.rest_path, body, _HEADERS)
            try:
                answer: Any = response.json()
            except ValueError:
                answer = response.body.decode("utf-8", "replace")
            return route_result(tool, response.status, answer)
        except Exception:
            log.exception("zpm: %s: the tool call could not be completed", tool.name)
            return failure(EXECUTION_FAILED)


_HEADERS: Final = (("content-type", "application/json"), ("accept", "application/json"))


def _response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def encode(message: Mapping[str, Any]) -> bytes:
    """One outbound line: compact JSON, UTF-8 rather than ``\\u`` escapes, then ``\\n`` (R-T2)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


class McpSession:
    """The protocol state of one stdio connection; ``handle`` answers one inbound message."""

    def __init__(self, call_tool: ToolCaller) -> None:
        self._call_tool = call_tool
        self._tools: list[dict[str, Any]] | None = None
        self.initialized = False

    async def handle_line(self, line: bytes | str) -> dict[str, Any] | None:
        """The response to one line (None: a notification, a client response or a blank line)."""
        if not line.strip():
            return None  # R-T1
        try:
            message = json.loads(line)
        except ValueError:  # also bad UTF-8
            return _error(None, PARSE_ERROR, "Parse error")
        return await self.handle(message)

    async def handle(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "Invalid Request")  # batches left MCP in 2025-06-18
        request_id = message.get("id")
        has_id = "id" in message and request_id is not None
        if has_id and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
            return _error(None, INVALID_REQUEST, "Invalid Request")
        method = message.get("method")
        if not isinstance(method, str):
            # A response from the client (we send no requests) is dropped; anything else is invalid.
            is_response = has_id and ("result" in message or "error" in message)
            return None if is_response else _error(request_id, INVALID_REQUEST, "Invalid Request")
        if not has_id:
            return None  # notifications get no response, known or not (initialized included)
        if not self.initialized and method not in _BEFORE_INITIALIZE:
            return _error(request_id, NOT_INITIALIZED, "Server not initialized")
        params = message.get("params")
        if method == "initialize":
            return _response(request_id, self._initialize(params))
        if method == "ping":
            return _response(request_id, {})
        if method == "tools/list":
            return _response(request_id, {"tools": self._tool_list()})
        if method == "tools/call":
            return await self._tools_call(request_id, params)
        return _error(request_id, METHOD_NOT_FOUND, "Method not found")

    def _initialize(self, params: Any) -> dict[str, Any]:
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else PROTOCOL_VERSION  # R-T6
        # Requests are served from here on; notifications/initialized is welcome but not awaited.
        self.initialized = True
        return {
            "protocolVersion": version,
            "capabilities": json.loads(json.dumps(CAPABILITIES)),
            "serverInfo": dict(SERVER_INFO),
        }

    def _tool_list(self) -> list[dict[str, Any]]:
        if self._tools is None:
            self._tools = [tool.listing() for tool in load_tools()]
        return self._tools

    async def _tools_call(self, request_id: Any, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return _error(request_id, INVALID_PARAMS, "Invalid params")
        tool = find_tool(params["name"])
        if tool is None:
            return _error(request_id, INVALID_PARAMS, "Tool not found")  # R-T8
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}  # absent arguments are no arguments (§2.2)
        if not isinstance(arguments, dict):
            return _error(request_id, INVALID_PARAMS, "Invalid params")
        return _response(request_id, await self._call_tool(tool, arguments))


def claim_stdout() -> BinaryIO:
    """A private stream onto the process's stdout; descriptor 1 and ``sys.stdout`` then write
    to stderr, so only what is written to the returned stream reaches the client (R-T4)."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


async def serve_stdio(
    project: Project, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """The MCP loop over ``project`` until end-of-file on ``stdin`` (R-T5), then a clean close.

    With no streams given it takes the process's stdin and claims its stdout."""
    import anyio.lowlevel

    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else claim_stdout()
    async with LogicClient.running(logic_settings(project)) as client:
        session = McpSession(client.call)
        while True:
            # A blocking read on the loop's own thread [designed here]: between two messages
            # nothing may run (R-T3) and the tools run inline, so it holds up no other work, and
            # it saves a thread hand-off per message.
            line = reader.readline()
            if not line:
                break  # end of file: the previous message is answered, every write is durable
            # A Ctrl-C while blocked above cancels this task: the inline calls may never suspend,
            # so let the cancellation in here, before the line is handled.
            await anyio.lowlevel.checkpoint()
            reply = await session.handle_line(line)
            if reply is not None:
                writer.write(encode(reply))
                writer.flush()
