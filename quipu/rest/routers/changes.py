"""The change feed: ``GET /changes`` (tools-core §1.10) and its server-sent-events replay,
``GET /changes/stream`` (a REST-only extra, as in the original).

``/changes`` is one page of whole transactions; a consumer passes ``next_tx`` back as ``since``.

``/changes/stream`` replays from ``since`` (or from ``Last-Event-ID``, which wins: a reconnecting
client sends its progress there and its first URL again) and then follows the log:

* each record is one ``event: change`` whose data is the record's JSON; after the last record
  of a transaction comes ``event: commit`` with ``id: <tx>`` and data ``{"tx", "records"}``. Only
  commits carry an id, so a client's Last-Event-ID is always a transaction boundary and a resume
  never skips or splits a transaction;
* it polls for new transactions every second (``POLL_SECONDS``) and, after 15 s without a frame
  (``HEARTBEAT_SECONDS``), sends the comment ``: heartbeat``;
* a frame is at most 1 MiB (``MAX_FRAME_BYTES``). A record that does not fit is not dropped: the
  stream sends ``event: error`` naming its transaction and sequence and ends before that
  transaction's commit, so the client reads it with ``GET /changes`` and resumes after it;
* at most 64 streams are open at once (``MAX_STREAMS``); one more is refused with 503;
* it ends when the client goes away (Starlette cancels it) or the server is stopping; with
  ``follow=false`` (designed here) it ends as soon as the replay has caught up, a bounded
  download of the log so far.

The stream takes no read-lane slot for its life (its route table lane is None): it would hold
one for hours. Each poll takes a heavy-lane slot for its one short read instead, and a reader
connection only inside that read, so idle streams hold neither; a poll that finds the lane full
tries again a second later.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Annotated, Any, Final

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Query
from pydantic import BaseModel, Field
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, QuipuError, ServerBusy, internal_error
from quipu.events.changes import DEFAULT_LIMIT, changes_page, check_capture
from quipu.rest.deps import KbDep, LanesDep
from quipu.rest.fields import strict_params
from quipu.rest.lanes import Lanes
from quipu.rest.problems import problem_response
from quipu.rest.route_table import HEAVY

router = APIRouter(tags=["events"])
log = logging.getLogger("quipu.changes")

MAX_TX: Final = 2**63 - 1  # transaction ids are 64-bit integers
MAX_STREAMS: Final = 64
POLL_SECONDS: Final = 1.0
HEARTBEAT_SECONDS: Final = 15.0
MAX_FRAME_BYTES: Final = 1024 * 1024
EVENT_STREAM: Final = "text/event-stream"

# A stored value on the change feed: DM §2.1's output form, with {"ref": iri} for a reference
# and {"bytes_len": n} for raw bytes.
ChangeValue = str | int | float | bool | dict[str, Any]


class ChangeRecord(BaseModel):
    tx: int
    sequence: int = Field(description="0-based position among the transaction's records in this page")
    timestamp: str
    actor: str | None
    source: str | None
    op: str = Field(description="assert, retract or tombstone")
    graph: str = Field(description='"ROOT" or the graph IRI')
    entity: str
    attribute: str
    value: ChangeValue | None = Field(None, description="assert and tombstone records")
    old_value: ChangeValue | None = Field(
        None, description="retract records under old_and_new_values and new_row"
    )
    closed_claims: int | None = Field(None, description="retract records: claims the retraction closed")
    still_visible: bool | None = Field(
        None, description="retract records: whether another owner keeps the statement visible"
    )
    row: dict[str, ChangeValue | list[ChangeValue]] | None = Field(
        None, description="new_row: the entity's state in the graph as of the transaction"
    )


class ChangePage(BaseModel):
    records: list[ChangeRecord]
    next_tx: int = Field(description="the last transaction in the page, or since when it is empty")
    watermark_tx: int = Field(description="the newest committed transaction of the whole store (0: none)")
    watermark_timestamp: str | None
    capture: str


SinceQuery = Annotated[int, Query(ge=0, le=MAX_TX, description="transactions with id strictly greater")]
CaptureQuery = Annotated[
    str, Query(description="new_values, old_and_new_values or new_row (anything else is refused)")
]
GraphQuery = Annotated[
    str | None,
    Query(description="one exact graph IRI (urn:quipu:graph:root is ROOT); default every graph"),
]


@router.get(
    "/changes",
    response_model=ChangePage,
    response_model_exclude_unset=True,
    dependencies=[Depends(strict_params("since", "limit", "capture", "graph"))],
)
def changes(
    kb: KbDep,
    since: SinceQuery = 0,
    limit: Annotated[
        int, Query(ge=1, description="at most this many transactions, from 1 (capped at 10000)")
    ] = DEFAULT_LIMIT,
    capture: CaptureQuery = "new_values",
    graph: GraphQuery = None,
) -> Response:
    """One page of whole transactions of fact-level change records after `since`; `limit` counts
    transactions, and `next_tx` is the cursor for the next page. Writes no cursor."""
    page = changes_page(kb.db, since=since, limit=limit, capture=capture, graph=graph)
    # Written straight to JSON: the response model documents the page, but validating up to
    # 50 000 records through it doubled the time of a large page (30 000 records: 655 -> 377 ms).
    body = json.dumps(page, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Response(body.encode(), media_type="application/json")


# -- the stream --------------------------------------------------------------------------------


class EventStream(StreamingResponse):
    """An SSE response that counts itself against ``MAX_STREAMS`` while it runs.

    The count is taken when the response starts, so a stream that never starts holds none, and
    is given back however it ends (Starlette cancels the body when the client disconnects)."""

    media_type = EVENT_STREAM

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope["app"].state
        open_streams = getattr(state, "change_streams", 0)
        if open_streams >= MAX_STREAMS:
            busy = ServerBusy(
                f"too many change streams are open ({MAX_STREAMS}, the server-wide limit): "
                "reconnect later, or poll GET /changes",
                retry_after=5,
            )
            await problem_response(busy)(scope, receive, send)
            return
        state.change_streams = open_streams + 1
        try:
            await super().__call__(scope, receive, send)
        finally:
            state.change_streams -= 1
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()


@router.get(
    "/changes/stream",
    response_class=EventStream,
    responses={200: {"content": {EVENT_STREAM: {"schema": {"type": "string"}}}}},
    dependencies=[Depends(strict_params("since", "capture", "graph", "follow"))],
)
async def changes_stream(
    kb: KbDep,
    lanes: LanesDep,
    since: SinceQuery = 0,
    capture: CaptureQuery = "new_values",
    graph: GraphQuery = None,
    follow: Annotated[
        bool,
        Query(description="false: end once the replay has caught up with the log, instead of following it"),
    ] = True,
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", description="resume after this transaction; wins over since"),
    ] = None,
) -> EventStream:
    """Server-sent events: every change record after `since`, then each new one as it commits.
    `event: change` per record, `event: commit` with `id: <tx>` after each transaction,
    `: heartbeat` after 15 s of silence; at most 64 streams at once."""
    cursor = since if last_event_id is None else resume_point(last_event_id)
    check_capture(capture)
    # The first page is read here, so a bad graph or a refused read is a 400, not a broken stream.
    first = await _read(kb, lanes, cursor, capture, graph)
    if first is None:
        raise ServerBusy(f"every heavy read slot ({lanes.slots}) stayed taken", retry_after=lanes.retry_after)
    frames = _frames(kb, lanes, cursor, capture, graph, follow, first)
    return EventStream(frames, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def resume_point(header: str) -> int:
    """The transaction a ``Last-Event-ID`` names; a malformed one never silently replays from 0."""
    if not header.isascii() or not header.isdigit() or int(header) > MAX_TX:
        raise InvalidField(
            f"Last-Event-ID must be a transaction id (a decimal integer >= 0), got {header!r}",
            field="Last-Event-ID",
        )
    return int(header)


async def _read(
    kb: KnowledgeBase, lanes: Lanes, since: int, capture: str, graph: str | None
) -> dict[str, Any] | None:
    """One page, under a heavy-lane slot held for this read only; None when no slot freed."""
    try:
        async with lanes.slot(HEAVY):
            read = partial(
                changes_page, kb.db, since=since, limit=DEFAULT_LIMIT, capture=capture, graph=graph
            )
            return await anyio.to_thread.run_sync(read)
    except ServerBusy:
        return None


async def _frames(
    kb: KnowledgeBase,
    lanes: Lanes,
    cursor: int,
    capture: str,
    graph: str | None,
    follow: bool,
    page: dict[str, Any] | None,
) -> AsyncIterator[bytes]:
    last_sent = time.monotonic()
    while not _server_stopping():
        if page is not None and page["records"]:
            for frame in page_frames(page["records"]):
                yield frame
                if frame.startswith(b"event: error"):
                    return
            cursor = page["next_tx"]
            last_sent = time.monotonic()
        elif page is not None and not follow:
            return  # caught up with the log as it was: a replay without follow ends here
        else:  # caught up, or the lane was full: wait a poll, heartbeat when silent
            await anyio.sleep(POLL_SECONDS)
            if time.monotonic() - last_sent >= HEARTBEAT_SECONDS:
                yield b": heartbeat\n\n"
                last_sent = time.monotonic()
        try:
            page = await _read(kb, lanes, cursor, capture, graph)
        except QuipuError as exc:  # e.g. a label floor that now refuses a graph in the page
            yield _event("error", {"error": exc.message, "reason": exc.reason, "after_tx": cursor})
            return
        except Exception:
            log.exception("change stream read failed")
            yield _event("error", {"error": internal_error("the change stream").message, "after_tx": cursor})
            return


def page_frames(records: list[dict[str, Any]]) -> Iterator[bytes]:
    """A page's records as SSE frames, each transaction closed by its commit frame; an error
    frame in place of a record too large for a frame (and nothing after it)."""
    count = 0
    for i, record in enumerate(records):
        frame = _event("change", record)
        if len(frame) > MAX_FRAME_BYTES:
            yield _event(
                "error",
                {
                    "error": f"record {record['sequence']} of transaction {record['tx']} is "
                    f"{len(frame)} bytes, over the {MAX_FRAME_BYTES}-byte frame limit: read the "
                    "transaction with GET /changes, then resume after it",
                    "reason": "frame_too_large",
                    "tx": record["tx"],
                    "sequence": record["sequence"],
                },
            )
            return
        yield frame
        count += 1
        if i + 1 == len(records) or records[i + 1]["tx"] != record["tx"]:
            yield _event("commit", {"tx": record["tx"], "records": count}, event_id=record["tx"])
            count = 0


def _event(name: str, data: dict[str, Any], event_id: int | None = None) -> bytes:
    # Compact JSON is one line: newlines inside strings are escaped, so no field can be forged.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {name}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {text}\n\n".encode()


def _server_stopping() -> bool:
    """Whether the uvicorn server running this app has been told to stop.

    uvicorn waits for every open response to end before it runs the lifespan shutdown, and tells
    the app nothing meanwhile, so a stream that only waited for that would keep the server up
    for ever. Its signal handler is its own ``Server.handle_exit``, whose ``should_exit`` flag is
    the one sign there is (set on SIGINT or SIGTERM when it runs in the main thread)."""
    owner = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return getattr(owner, "should_exit", False) is True
