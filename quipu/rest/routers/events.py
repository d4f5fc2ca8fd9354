"""Event feeds: ``GET /events``, ``POST /events/commit`` and ``POST /subscriptions``
(tools-core §1.11, §3.12, §3.13).

``/events`` is a read that never commits a cursor. ``/events/commit`` and ``/subscriptions``
are writes, ``list`` included (the route is write-classified: creating one makes the server send
HTTP), so a read-only server refuses them with 403. All three are strict: an unknown key or
parameter is refused with 400. The work lives in ``quipu.events`` (``kb.feeds``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field, WithJsonSchema

from quipu.rest.deps import KbDep
from quipu.rest.fields import Strict, strict_params

router = APIRouter(tags=["events"])

MAX_OFFSET = 2**63 - 1


class EventPage(BaseModel):
    events: list[dict[str, Any]] = Field(description='envelopes {"schema": "quipu.event/v1", "offset", ...}')
    next_offset: int = Field(
        description="the last returned offset, or the start when none: pass back as since"
    )
    lag: int = Field(description="newest offset in the whole (unfiltered) log minus next_offset")
    committed_offset: int | None = Field(
        None, description="the consumer's cursor, when consumer chose the start"
    )


@router.get(
    "/events",
    response_model=EventPage,
    response_model_exclude_unset=True,
    dependencies=[Depends(strict_params("since", "consumer", "limit", "types", "group"))],
)
def events(
    kb: KbDep,
    since: Annotated[
        int | None,
        Query(ge=0, le=MAX_OFFSET, description="events with offset strictly greater; overrides consumer"),
    ] = None,
    consumer: Annotated[
        str | None, Query(description="when since is absent, start after this consumer's committed offset")
    ] = None,
    limit: Annotated[
        int | None, Query(ge=1, description="batch size, from 1 (capped at 10000; default 100)")
    ] = None,
    types: Annotated[
        str | None, Query(description="comma-separated event types, e.g. edge.added,type.new")
    ] = None,
    group: Annotated[str | None, Query(description="an exact episode group_id (not a graph)")] = None,
) -> dict[str, Any]:
    """A bounded batch of semantic events in offset order, without committing any cursor."""
    return kb.feeds.events(since=since, consumer=consumer, limit=limit, types=types, group=group)


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
