"""Server-sent-event replays of the two logs: ``GET /changes/stream`` and ``GET /events/stream``
(REST-only extras, as in the original; docs/changes.md, docs/events.md).

Both work the same way. The first page is read while the request is handled, so a bad
parameter or a full read lane is an ordinary 400 or 503 rather than a broken stream. Then the
stream sends the page's frames, reads the next page after the cursor, and once caught up polls
every ``POLL_SECONDS``, sending the comment ``: heartbeat`` after ``HEARTBEAT_SECONDS`` without
a frame. A frame is at most ``MAX_FRAME_BYTES``; a router that meets a larger item sends an
``error`` frame naming it and ends the stream, so nothing is skipped in silence. At most
``MAX_STREAMS`` streams, of both feeds together, are open at once; one more is refused with 503.
A stream ends when the client goes away (Starlette cancels it), when the server is stopping,
or, with ``follow=false``, as soon as it has caught up.

A stream holds no read-lane slot for its life, which may be hours: each read takes a slot of its
lane for that read alone, and a read that finds the lane full tries again a poll later.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar

import anyio
import anyio.to_thread
from fastapi import Query
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from quipu.errors import InvalidField, QuipuError, ServerBusy, internal_error
from quipu.rest.lanes import Lanes
from quipu.rest.problems import problem_response
from quipu.rest.route_table import Lane

log = logging.getLogger("quipu.rest.sse")

MAX_STREAMS: Final = 64
POLL_SECONDS: Final = 1.0
HEARTBEAT_SECONDS: Final = 15.0
MAX_FRAME_BYTES: Final = 1024 * 1024
MAX_CURSOR: Final = 2**63 - 1  # transaction ids and event offsets are 64-bit integers
EVENT_STREAM: Final = "text/event-stream"
HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
OPENAPI: Final[dict[int | str, dict[str, Any]]] = {
    200: {"content": {EVENT_STREAM: {"schema": {"type": "string"}}}}
}

T = TypeVar("T")

FollowQuery = Annotated[
    bool, Query(description="false: end once the replay has caught up with the log, instead of following it")
]


@dataclass(frozen=True, slots=True)
class Batch:
    """What one read produced: frames ready to send, and where the next read starts. ``final``:
    the frames end with an error, and the stream ends after them."""

    frames: list[bytes]
    cursor: int
    final: bool = False


Reader = Callable[[int], Awaitable[Batch | None]]


def frame(name: str, data: dict[str, Any], event_id: int | None = None) -> bytes:
    # Compact JSON is one line: newlines inside strings are escaped, so no field can be forged.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {name}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {text}\n\n".encode()


def too_large(encoded: bytes) -> bool:
    return len(encoded) > MAX_FRAME_BYTES


def resume_point(header: str, what: str) -> int:
    """The cursor a ``Last-Event-ID`` names (``what``: "a transaction id", "an event offset"); a
    malformed one is refused, never read as "from the start"."""
    if not header.isascii() or not header.isdigit() or int(header) > MAX_CURSOR:
        raise InvalidField(
            f"Last-Event-ID must be {what} (a decimal integer >= 0), got {header!r}", field="Last-Event-ID"
        )
    return int(header)


async def in_lane(lanes: Lanes, lane: Lane, work: Callable[[], T]) -> T | None:
    """``work`` in a worker thread under one slot of ``lane``; None when no slot freed."""
    try:
        async with lanes.slot(lane):
            return await anyio.to_thread.run_sync(work)
    except ServerBusy:
        return None


async def opening(lanes: Lanes, lane: Lane, work: Callable[[], Batch]) -> Batch:
    """The first read, while the request is still an ordinary one: a full lane is a 503."""
    batch = await in_lane(lanes, lane, work)
    if batch is None:
        raise ServerBusy(
            f"every {lane} read slot ({lanes.slots}) stayed taken", retry_after=lanes.retry_after
        )
    return batch


async def follow_log(
    read: Reader, first: Batch, *, follow: bool, cursor_field: str, what: str
) -> AsyncIterator[bytes]:
    """The frames of ``first`` and of every later read, polling once caught up (see the module)."""
    batch: Batch | None = first
    cursor = first.cursor
    last_sent = time.monotonic()
    while not server_stopping():
        if batch is not None and batch.frames:
            for encoded in batch.frames:
                yield encoded
            if batch.final:
                return
            cursor = batch.cursor
            last_sent = time.monotonic()
        elif batch is not None and not follow:
            return  # caught up with the log as it was: a replay without follow ends here
        else:  # caught up, or the lane was full: wait a poll, heartbeat when silent
            await anyio.sleep(POLL_SECONDS)
            if time.monotonic() - last_sent >= HEARTBEAT_SECONDS:
                yield b": heartbeat\n\n"
                last_sent = time.monotonic()
        try:
            batch = await read(cursor)
        except QuipuError as exc:  # e.g. a label floor that now refuses a graph in the page
            yield frame("error", {"error": exc.message, "reason": exc.reason, cursor_field: cursor})
            return
        except Exception:
            log.exception("a %s read failed", what)
            yield frame("error", {"error": internal_error(what).message, cursor_field: cursor})
            return


class EventStream(StreamingResponse):
    """An SSE response that counts itself against ``MAX_STREAMS`` while it runs. ``instead``
    names the route a refused client can poll.

    The count is taken when the response starts, so a stream that never starts holds none, and
    is given back however it ends (Starlette cancels the body when the client disconnects)."""

    media_type = EVENT_STREAM

    # status_code stays in the signature: FastAPI reads its default for the OpenAPI document.
    def __init__(self, content: AsyncIterator[bytes], status_code: int = 200, *, instead: str = "") -> None:
        super().__init__(content, status_code, headers=HEADERS)
        self.instead = instead

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope["app"].state
        open_streams = getattr(state, "sse_streams", 0)
        if open_streams >= MAX_STREAMS:
            busy = ServerBusy(
                f"too many event streams are open ({MAX_STREAMS}, the server-wide limit of "
                f"/changes/stream and /events/stream together): reconnect later, or poll {self.instead}",
                retry_after=5,
            )
            await problem_response(busy)(scope, receive, send)
            return
        state.sse_streams = open_streams + 1
        try:
            await super().__call__(scope, receive, send)
        finally:
            state.sse_streams -= 1
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()


def server_stopping() -> bool:
    """Whether the uvicorn server running this app has been told to stop.

    uvicorn waits for every open response to end before it runs the lifespan shutdown, and tells
    the app nothing meanwhile, so a stream that only waited for that would keep the server up
    for ever. Its signal handler is its own ``Server.handle_exit``, whose ``should_exit`` flag is
    the one sign there is (set on SIGINT or SIGTERM when it runs in the main thread)."""
    owner = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return getattr(owner, "should_exit", False) is True
