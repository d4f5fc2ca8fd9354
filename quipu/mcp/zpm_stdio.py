"""``zpm serve``: the logic memory's MCP server on stdio (spec logic-memory.md §2).

Every tool call goes, in process, to the project's ``LogicService``: the service that
``POST /logic/<tool>`` calls (quipu/rest/routers/logic.py) and the ``zpm`` tool commands call
(quipu/cli/zpm.py), so the three are one system with one set of answers. Its ``tools/call``
result object (``content`` + ``isError``) is passed on unchanged. What stops a call from reaching
a tool (no engine, the project gone, an argument UTF-8 cannot carry) becomes the tool result
``ExecutionFailed`` with the reason on stderr (R-T9), except that the two tools whose contract
names the missing engine answer ``Prolog engine is not initialized``
(``LogicTool.engine_unavailable_text``), exactly as the route's problem answers did.

Why not through the REST route, as until issue 16 **[designed here]**: importing the REST stack
takes two seconds, on the path of the first answer, and brings nothing a local process with the
CLI's authority uses (no token, no read-only mode, an in-memory quad store). ``initialize`` and
``tools/list`` are answered from ``tools.json`` (quipu.logic.registry) alone; the runtime
(engine, snapshot, journal) opens on a background thread from the moment the server starts, and
the first tool call waits for it. The tools run inline on the loop's thread, and stdin is read
there too: with one message at a time (R-T3) nothing else waits on the loop.

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
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
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
from quipu.mcp.stdio import claim_stdout, encode

if TYPE_CHECKING:
    from quipu.logic.project import Project
    from quipu.logic.service import LogicHost

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


def _encodable(value: Any) -> bool:
    """Whether every string in the arguments can be written as UTF-8 (JSON allows a lone
    surrogate escape such as ``\\ud800``; no journal, engine or answer can carry one)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_encodable(v) for v in value)
    return True


class ServiceClient:
    """Tool calls into the project's ``LogicService``, the service ``POST /logic/<tool>`` calls
    too (quipu/rest/routers/logic.py): the same tools, answers and journal, without the REST
    stack, which costs two seconds of imports and is not needed for a local process with the
    CLI's authority (issue 16).

    The runtime (engine, snapshot, journal replay) opens on a background thread as the server
    starts (``start``), while the client initializes; the first call waits for it (the host's
    lock). A failure there is not reported until a call needs the runtime, which then tries
    again and answers as the REST route would: the engine's own text where the tool names a
    missing engine, else ``ExecutionFailed``, with the reason on stderr (R-T9)."""

    def __init__(self, project: Project, store: str | None = None) -> None:
        self._root = project.root
        self._store = store  # what rdf/3 ... read: this store, else [quipu.logic] store
        self._host: LogicHost | None = None
        self._opening: threading.Thread | None = None

    def _new_host(self) -> LogicHost:
        from quipu.logic.graph_bridge import StoreAt
        from quipu.logic.service import LogicHost  # the engine's modules: 0.13 s

        return LogicHost(self._root, graph=StoreAt(self._store))

    def start(self) -> None:
        """Import the service and open the runtime on a daemon thread (see the class docstring)."""

        def open_runtime() -> None:
            try:
                self._host = self._new_host()
                self._host.service()
            except Exception:  # the first call tries again and reports why it cannot
                log.debug("zpm: opening the logic runtime in the background failed", exc_info=True)

        self._opening = threading.Thread(target=open_runtime, name="zpm-open", daemon=True)
        self._opening.start()

    def _ready(self) -> LogicHost:
        if self._opening is not None:  # joined first: no two threads ever import at once
            self._opening.join()
            self._opening = None
        if self._host is None:
            self._host = self._new_host()
        return self._host

    def close(self) -> None:
        if self._opening is not None:
            self._opening.join()  # a runtime still opening is let finish, then closed
        if self._host is not None:
            self._host.close()

    async def call(self, tool: LogicTool, arguments: Mapping[str, Any]) -> dict[str, Any]:
        from quipu.errors import QuipuError
        from quipu.logic.errors import EngineUnavailable

        if not _encodable(arguments):
            log.error("zpm: %s: an argument holds a lone surrogate, which UTF-8 cannot carry", tool.name)
            return failure(EXECUTION_FAILED)
        try:
            return self._ready().service().call(tool.name, dict(arguments)).as_mcp()
        except EngineUnavailable as exc:
            log.error("zpm: %s: %s", tool.name, exc.message)
            return failure(tool.engine_unavailable_text)
        except QuipuError as exc:
            log.error("zpm: %s: %s", tool.name, exc.message)
            return failure(EXECUTION_FAILED)
        except Exception:
            log.exception("zpm: %s: the tool call could not be completed", tool.name)
            return failure(EXECUTION_FAILED)


def _response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


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


async def serve_stdio(
    project: Project,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    store: str | None = None,
) -> None:
    """The MCP loop over ``project`` until end-of-file on ``stdin`` (R-T5), then a clean close.

    With no streams given it takes the process's stdin and claims its stdout. ``store``: the
    knowledge graph the rdf/3 family reads (``zpm serve --db``; else ``[quipu.logic] store``)."""
    import anyio.lowlevel

    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else claim_stdout()
    client = ServiceClient(project, store)
    client.start()
    try:
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
    finally:
        client.close()
