"""``quipu mcp`` (and ``quipu-server --mcp-stdio``): MCP over stdin/stdout, with no listener.

An MCP client spawns a stdio server for each session and gives up on a slow one, but the REST
app and the ``mcp`` SDK take seconds to import (issue 16). So the server starts in two parts
**[designed here]**:

* **The front** (this module, standard library only) answers the handshake at once: the
  ``initialize`` result and the ``tools/list`` tools come from ``handshake.json``, the SDK server's
  own answers kept as data (quipu/mcp/handshake.py), narrowed by the settings' toolsets.
* **The SDK server** (quipu/mcp/stdio_session.py) is built on a background thread from the
  moment the process starts: settings, the refusals a bad flag or file deserves, then the REST
  app and the SDK. At the first message the front does not answer — a tool call, a ping, a
  modern-era ``server/discover``, anything unusual — the front waits for it and hands over:
  the SDK session is replayed the client's ``initialize`` (its answer dropped, the client has
  it) and serves everything from then on, exactly as before.

``tools/list`` waits for the settings (a fraction of a second); the first tool call waits for
the whole build. A configuration mistake, an unsafe token file or a bad store path is reported
as one ``error: ...`` line on stderr with exit status 2 whenever it is found, also after an
``initialize`` was answered. stdout carries JSON-RPC only: descriptor 1 points at stderr while
serving, and descriptor 0 at the null device, so nothing the tools run can touch the wire.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from quipu.defaults import OWL_REASONER
from quipu.mcp import handshake

if TYPE_CHECKING:
    from quipu.config import Settings
    from quipu.mcp.stdio_session import StdioSession

log = logging.getLogger("quipu.mcp")
_HANDOVER: Final = object()  # the front leaves this message, and all after it, to the SDK
_EOF: Final = b""


@dataclass(frozen=True)
class Launch:
    """How to get ready, in two steps run off the handshake path."""

    settings: Callable[[], Settings]  # load and check the settings (QuipuError: refuse)
    preflight: Callable[[Settings], str | None]  # the other refusals; the Authorization header value
    # (mcp.toolsets, mcp.read_only_tools) when known without the settings, else None
    narrowing: Callable[[], tuple[list[str] | None, bool] | None] = lambda: None


def claim_stdout() -> BinaryIO:
    """A private stream onto the process's stdout; descriptor 1 and ``sys.stdout`` then write to
    stderr, so only what is written to the returned stream reaches the client."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def claim_stdin() -> BinaryIO:
    """A private stream onto the process's stdin; descriptor 0 then reads the null device, so a
    child process (the Prolog engine) cannot take bytes meant for the server."""
    protocol = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return protocol


def encode(message: Mapping[str, Any]) -> bytes:
    """One outbound line, as the SDK writes it: compact JSON, UTF-8 rather than ``\\u`` escapes,
    then ``\\n`` (also zpm serve's, its rule R-T2)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


class _Warmup(threading.Thread):
    """Settings, then the preflight refusals, then the SDK session; each step's outcome is a
    future, and a failure is also posted to the front's queue so an idle front reacts to it."""

    def __init__(self, launch: Launch, events: queue.Queue[tuple[str, Any]]) -> None:
        super().__init__(name="quipu-mcp-warmup", daemon=True)
        self._launch = launch
        self._events = events
        self.settings: Future[Settings] = Future()
        self.ready: Future[None] = Future()  # every refusal is behind us
        self.session: Future[StdioSession] = Future()

    def run(self) -> None:
        steps: list[Future[Any]] = [self.settings, self.ready, self.session]
        try:
            settings = self._launch.settings()
            steps.pop(0).set_result(settings)
            authorization = self._launch.preflight(settings)
            steps.pop(0).set_result(None)
            from quipu.mcp.stdio_session import StdioSession  # the seconds-long import

            steps.pop(0).set_result(StdioSession(settings, authorization))
        except Exception as exc:  # every failure reaches the front
            for step in steps:
                step.set_exception(exc)
            self._events.put(("failed", exc))


class _Front:
    """The handshake from the cached data; None from ``answer`` means no reply is due."""

    def __init__(self, data: handshake.Handshake, warmup: _Warmup, launch: Launch) -> None:
        self._data = data
        self._warmup = warmup
        self._launch = launch
        self.version: str | None = None  # settled by an initialize the front answered
        self.replay: list[bytes] = []  # what the SDK session must see first
        self.answered_id: Any = None
        self._known: tuple[list[str] | None, bool] | None = None  # the narrowing, once read

    def answer(self, line: bytes) -> Any:
        try:
            message = json.loads(line)
        except ValueError:
            return _HANDOVER
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _HANDOVER
        method, params = message.get("method"), message.get("params")
        request_id = message.get("id")
        is_request = isinstance(request_id, str | int) and not isinstance(request_id, bool)
        if method == "notifications/initialized" and "id" not in message and self.version is not None:
            self.replay.append(line)  # the SDK judges it on replay; no reply either way
            return None
        if not is_request:
            return _HANDOVER
        if method == "initialize" and self.version is None:
            result = self._data.initialize_result(params)
            if result is None:
                return _HANDOVER
            self.version = result["protocolVersion"]
            self.replay.append(line)
            self.answered_id = request_id
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        if method == "tools/list" and self.version is not None and _no_cursor(params) and not _owl_extra():
            toolsets, read_only = self._narrowing()
            tools = self._data.tool_list(self.version, toolsets, read_only)
            return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}}
        return _HANDOVER

    def _narrowing(self) -> tuple[list[str] | None, bool]:
        if self._known is None:
            known = self._launch.narrowing()
            if known is None or (known[0] is not None and not self._data.accepts(known[0])):
                mcp = self._warmup.settings.result().mcp  # the settings library decides (or refuses)
                known = (mcp.toolsets, mcp.read_only_tools)
            self._known = known
        return self._known


def _owl_extra() -> bool:
    """The cached tools are a default install's: with the owl extra the live server lists two
    more, so it answers tools/list itself (a standard-library probe, the extra is not imported)."""
    return importlib.util.find_spec(OWL_REASONER) is not None


def _no_cursor(params: Any) -> bool:
    """Params the front can answer: none, or only ``_meta`` (a cursor is the SDK's to refuse)."""
    return params is None or (isinstance(params, dict) and set(params) <= {"_meta"})


def _refused(exc: BaseException) -> int:
    from quipu.errors import QuipuError

    if isinstance(exc, QuipuError):
        sys.stderr.write(f"error: {exc.message}\n")
        return 2
    log.error("quipu mcp could not start", exc_info=exc)
    return 1


def _read_lines(source: BinaryIO, events: queue.Queue[tuple[str, Any]]) -> None:
    while True:
        line = source.readline()
        events.put(("line", line))
        if line == _EOF:
            return


def serve(launch: Launch) -> int:
    """Serve MCP on stdin/stdout until end of input; the process's exit status. Ctrl-C ends the
    process with 130 and no traceback."""
    try:
        return _serve(launch)
    except KeyboardInterrupt:
        # Ended at once: the warm-up thread may still be importing, and an interpreter shutting
        # down under an importing thread can abort (SIGABRT). Nothing needs closing by then: the
        # store opens only inside the SDK session, whose exit has already closed it.
        logging.shutdown()
        sys.stderr.flush()
        os._exit(130)


def _serve(launch: Launch) -> int:
    out = claim_stdout()
    source = claim_stdin()
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    warmup = _Warmup(launch, events)
    warmup.start()
    threading.Thread(target=_read_lines, args=(source, events), name="quipu-mcp-stdin", daemon=True).start()
    front = _Front(handshake.load(), warmup, launch)
    try:
        while True:
            kind, value = events.get()
            if kind == "failed":
                return _refused(value)
            if value == _EOF:
                warmup.join()  # a refusal still counts; and no thread is left importing at exit
                failure = warmup.session.exception()  # a failed step fails every step after it
                return 0 if failure is None else _refused(failure)
            reply = front.answer(value)
            if reply is _HANDOVER:
                break
            if reply is not None:
                out.write(encode(reply))
                out.flush()
        session = warmup.session.result()
    except Exception as exc:  # a step the front waited for failed
        return _refused(exc)
    return _hand_over(session, front, value, events, out)


def _hand_over(
    session: StdioSession, front: _Front, line: bytes, events: queue.Queue[tuple[str, Any]], out: BinaryIO
) -> int:
    import anyio

    async def more() -> bytes | None:
        _kind, value = await anyio.to_thread.run_sync(events.get, abandon_on_cancel=True)
        return None if value == _EOF else value

    replay = [*front.replay, line]
    if front.version is None:
        anyio.run(session.serve, replay, more, out)
    else:
        anyio.run(session.serve, replay, more, out, front.answered_id)
    return 0
