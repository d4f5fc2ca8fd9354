"""The ``mcp`` SDK server behind ``quipu mcp``, from the first request the handshake data cannot
answer (quipu/mcp/stdio.py) to the end of input.

It is the SDK's own stdio transport (``stdio_server``) given two stand-in streams: the lines
come from the front's reader, after a replay of what the front already answered (the client's
``initialize`` and ``notifications/initialized``), so the SDK session holds the client's real
parameters and negotiated version; and the SDK's answer to the replayed ``initialize`` is
dropped, since the client has had it. Everything after that is the SDK's: validation, errors,
both protocol eras, concurrency. Importing this module is the seconds-long part (the SDK and,
through ``LocalTools``, the REST app), so the front imports it on a background thread.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, BinaryIO, cast

import anyio
from mcp.server.stdio import stdio_server

from quipu.config import Settings
from quipu.mcp.local import LocalTools
from quipu.mcp.server import build_server, initialization_options

_NOTHING: Any = object()


class _InFlight:
    """The requests passed to the SDK and not yet answered. At end of input the SDK cancels what
    is still running (its stdio transport answers "Connection closed"), so input is ended only
    once every request has its answer: each message sent is answered, as zpm serve answers."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}
        self._idle = anyio.Event()

    def sent(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # the SDK answers a parse error with no id to wait for
        if isinstance(message, dict) and "method" in message and message.get("id") is not None:
            key = json.dumps(message["id"])
            self._ids[key] = self._ids.get(key, 0) + 1

    def answered(self, message: dict[str, Any]) -> None:
        if "method" in message or ("result" not in message and "error" not in message):
            return  # a notification or a request of the server's own
        key = json.dumps(message.get("id"))
        if key in self._ids:
            self._ids[key] -= 1
            if not self._ids[key]:
                del self._ids[key]
        if not self._ids:
            self._idle.set()

    async def settled(self) -> None:
        while self._ids:
            self._idle = anyio.Event()  # an event once set stays set: a fresh one per wait
            await self._idle.wait()


class _Lines:
    """What the SDK reads as stdin: the replayed lines, then each line ``more`` gives until it
    gives None (end of input), then nothing until every request has its answer. Undecodable
    bytes become U+FFFD, as in the SDK's own reader."""

    def __init__(
        self, first: Sequence[bytes], more: Callable[[], Awaitable[bytes | None]], in_flight: _InFlight
    ) -> None:
        self._first = list(first)
        self._more = more
        self._in_flight = in_flight

    async def __aiter__(self) -> AsyncIterator[str]:
        for line in self._first:
            yield self._sent(line)
        while (more := await self._more()) is not None:
            yield self._sent(more)
        await self._in_flight.settled()

    def _sent(self, line: bytes) -> str:
        text = line.decode("utf-8", errors="replace")
        self._in_flight.sent(text)
        return text


class _Sink:
    """What the SDK writes as stdout: each message to ``out``, except the answer to the replayed
    ``initialize`` (the first message carrying its id), which the client already has."""

    def __init__(self, out: BinaryIO, in_flight: _InFlight, dropped_id: Any = _NOTHING) -> None:
        self._out = out
        self._in_flight = in_flight
        self._dropped_id = dropped_id

    async def write(self, text: str) -> None:
        message = json.loads(text)
        self._in_flight.answered(message)
        if self._dropped_id is not _NOTHING and message.get("id") == self._dropped_id:
            self._dropped_id = _NOTHING
            return
        await anyio.to_thread.run_sync(self._out.write, text.encode("utf-8"))

    async def flush(self) -> None:
        await anyio.to_thread.run_sync(self._out.flush)


class StdioSession:
    """The REST app (store not yet open) and the SDK server over its registry, built off the
    handshake path; ``serve`` opens the store and runs the SDK loop."""

    def __init__(self, settings: Settings, authorization: str | None) -> None:
        self.tools = LocalTools(settings)
        self.server = build_server(
            self.tools.dispatcher.registry, self.tools.dispatcher, lambda _ctx: authorization
        )

    async def serve(
        self,
        replay: Sequence[bytes],
        more: Callable[[], Awaitable[bytes | None]],
        out: BinaryIO,
        answered_id: Any = _NOTHING,
    ) -> None:
        """Serve until ``more`` reports end of input; ``answered_id`` is the id of a replayed
        ``initialize`` the client has had its answer to."""
        in_flight = _InFlight()
        stdin = cast(Any, _Lines(replay, more, in_flight))
        stdout = cast(Any, _Sink(out, in_flight, answered_id))
        async with self.tools.open(), stdio_server(stdin, stdout) as (read, write):
            await self.server.run(read, write, initialization_options(self.server))


async def exchange(session: StdioSession, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every answer the SDK server writes to ``messages`` (for the handshake data and its test);
    input ends only once each request is answered, since the SDK drops what is in flight then."""
    import io

    out = io.BytesIO()
    requests = sum(1 for m in messages if "id" in m)

    async def end_when_answered() -> None:
        while out.getvalue().count(b"\n") < requests:
            await anyio.sleep(0.01)
        return None

    lines = [json.dumps(m).encode("utf-8") + b"\n" for m in messages]
    await session.serve(lines, end_when_answered, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]
