"""Event feeds: ``GET /events``, ``POST /events/commit`` and ``POST /subscriptions``
(tools-core §1.11, §3.12, §3.13), and ``GET /events/stream``, the event log as server-sent events
(a REST-only extra, as in the original).

``/events`` is a read that never commits a cursor. ``/events/commit`` and ``/subscriptions``
are writes, ``list`` included (the route is write-classified: creating one makes the server send
HTTP), so a read-only server refuses them with 403. All three are strict: an unknown key or
parameter is refused with 400. The work lives in ``quipu.events`` (``kb.feeds``).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Header, Query
from pydantic import BaseModel, Field, WithJsonSchema

from quipu.rest import sse
from quipu.rest.deps import KbDep, LanesDep
from quipu.rest.fields import Strict, strict_params
from quipu.rest.route_table import POINT
from quipu.rest.sse import EventStream

router = APIRouter(tags=["events"])

MAX_OFFSET = sse.MAX_CURSOR
STREAM_PAGE: Final = 500  # events per read of the stream


class EventPage(BaseModel):
    events: list[dict[str, Any]] = Field(description='envelopes {"schema": "quipu.event/v1", "offset", ...}')
    next_offset: int = Field(
        description="the last returned offset, or the start when none: pass back as since"
    )
    lag: int = Field(description="newest offset in the whole (unfiltered) log minus next_offset")
    committed_offset: int | None = Field(
        None, description="the consumer's cursor, when consumer chose the start"
    )


# The start and the filters, shared by the page and the stream.
SinceQuery = Annotated[
    int | None,
    Query(ge=0, le=MAX_OFFSET, description="events with offset strictly greater; overrides consumer"),
]
ConsumerQuery = Annotated[
    str | None, Query(description="when since is absent, start after this consumer's committed offset")
]
TypesQuery = Annotated[str | None, Query(description="comma-separated event types, e.g. edge.added,type.new")]
GroupQuery = Annotated[str | None, Query(description="an exact episode group_id (not a graph)")]


@router.get(
    "/events",
    response_model=EventPage,
    response_model_exclude_unset=True,
    dependencies=[Depends(strict_params("since", "consumer", "limit", "types", "group"))],
)
def events(
    kb: KbDep,
    since: SinceQuery = None,
    consumer: ConsumerQuery = None,
    limit: Annotated[
        int | None, Query(ge=1, description="batch size, from 1 (capped at 10000; default 100)")
    ] = None,
    types: TypesQuery = None,
    group: GroupQuery = None,
) -> dict[str, Any]:
    """A bounded batch of semantic events in offset order, without committing any cursor."""
    return kb.feeds.events(since=since, consumer=consumer, limit=limit, types=types, group=group)


@router.get(
    "/events/stream",
    response_class=EventStream,
    responses=sse.OPENAPI,
    dependencies=[Depends(strict_params("since", "consumer", "types", "group", "follow"))],
)
async def events_stream(
    kb: KbDep,
    lanes: LanesDep,
    since: SinceQuery = None,
    consumer: ConsumerQuery = None,
    types: TypesQuery = None,
    group: GroupQuery = None,
    follow: sse.FollowQuery = True,
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", description="resume after this offset; wins over since and consumer"),
    ] = None,
) -> EventStream:
    """Server-sent events: every event after the start, then each new one as it commits, as
    `event: event` with `id: <offset>` and the envelope as data; `: heartbeat` after 15 s of
    silence; at most 64 streams at once. Commits nothing: a consumer commits its own offset."""
    if last_event_id is not None:
        since = sse.resume_point(last_event_id, "an event offset")

    def page_after(cursor: int | None, who: str | None = None) -> sse.Batch:
        page = kb.feeds.events(since=cursor, consumer=who, limit=STREAM_PAGE, types=types, group=group)
        frames, complete = event_frames(page["events"])
        return sse.Batch(frames, page["next_offset"], final=not complete)

    async def read(cursor: int) -> sse.Batch | None:
        return await sse.in_lane(lanes, POINT, partial(page_after, cursor))

    first = await sse.opening(lanes, POINT, partial(page_after, since, consumer))
    frames = sse.follow_log(read, first, follow=follow, cursor_field="after_offset", what="the event stream")
    return EventStream(frames, instead="GET /events")


def event_frames(envelopes: list[dict[str, Any]]) -> tuple[list[bytes], bool]:
    """Envelopes as SSE frames, and whether they are complete: False when one too large for a
    frame ended them with an error frame naming its offset (read it with GET /events)."""
    out: list[bytes] = []
    for envelope in envelopes:
        offset = envelope["offset"]
        encoded = sse.frame("event", envelope, event_id=offset)
        if sse.too_large(encoded):
            error = {
                "error": f"event {offset} is {len(encoded)} bytes, over the {sse.MAX_FRAME_BYTES}-byte "
                f"frame limit: read it with GET /events?since={offset - 1}&limit=1, then resume after it",
                "reason": "frame_too_large",
                "offset": offset,
            }
            out.append(sse.frame("error", error))
            return out, False
        out.append(encoded)
    return out, True


class CommitRequest(Strict):
    consumer_id: str | None = Field(None, description="the consumer's id (trimmed, non-empty)")
    # The bound is published here and checked by the service, whose refusal is the spec's words.
    offset: Annotated[int | None, WithJsonSchema({"type": "integer", "minimum": 0})] = Field(
        None, description="the highest processed offset (>= 0); a lower one rewinds"
    )


class CommitResponse(BaseModel):
    consumer_id: str
    committed_offset: int


@router.post("/events/commit", response_model=CommitResponse)
def events_commit(body: CommitRequest, kb: KbDep) -> dict[str, Any]:
    """Durably set a consumer's cursor: later reads with `consumer` start after it."""
    return kb.feeds.commit(**body.fields())


class SubscriptionsRequest(Strict):
    action: str | None = Field(None, description="create, list (default) or delete")
    consumer_id: str | None = Field(None, description="create/delete: the subscription's identity")
    webhook_url: str | None = Field(None, description="create: the http(s) URL receiving POSTs")
    types: list[str] | None = Field(None, description="event types to deliver; empty or absent: all")
    mode: str | None = Field(None, description="realtime (default) or batch")
    batch_size: int | None = Field(
        None, description="batch mode: deliver once this many are pending (1-500, default 50)"
    )
    batch_window_s: int | None = Field(
        None, description="batch mode: or once the oldest pending event is this old (seconds, default 30)"
    )
    sparql_ask: str | None = Field(None, description="reserved; a non-empty value is refused")
    secret: str | None = Field(
        None,
        description="optional HMAC key (16-1024 characters): each delivery then carries "
        "X-Quipu-Signature: sha256=<hex HMAC-SHA256 of the body>",
    )


@router.post("/subscriptions")
def subscriptions(body: SubscriptionsRequest, kb: KbDep) -> dict[str, Any]:
    """Create, list or delete webhook subscriptions that the server's delivery worker pushes
    event batches to (at-least-once; the cursor advances only on a 2xx answer)."""
    return kb.feeds.subscriptions(**body.fields())
