"""Pulling events: bounded pages and durable consumer cursors (tools-core §1.11, §3.12).

Reading never commits: a consumer reads a page, processes it, and only then commits the
offset it reached. Delivery is therefore at-least-once, and consumers deduplicate by offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from quipu import times
from quipu.errors import InvalidField, MissingField
from quipu.store import event_feed, graph_scope
from quipu.store.database import Database
from quipu.store.schema import ROOT

DEFAULT_LIMIT = 100
MAX_LIMIT = 10_000


def parse_types(types: str | Sequence[str] | None) -> list[str]:
    """Event types from a comma-separated string (or a list): entries trimmed, empty ones dropped."""
    if types is None:
        return []
    parts = types.split(",") if isinstance(types, str) else list(types)
    return [t.strip() for t in parts if t.strip()]


def read(
    db: Database,
    *,
    since: int | None = None,
    consumer: str | None = None,
    limit: int | None = None,
    types: str | None = None,
    group: str | None = None,
) -> dict[str, Any]:
    """One page of events in offset order; commits nothing (tools-core §1.11).

    ``since`` wins over ``consumer`` (rule 1: an explicit start overrides a stored cursor); an
    unknown consumer starts at 0. ``lag`` is measured against the whole, unfiltered log (rule 4).
    """
    if since is not None and since < 0:
        raise InvalidField("since must be >= 0", field="since")
    if consumer is not None:
        consumer = consumer.strip()  # as quipu_events_commit stores it
        if not consumer:
            raise InvalidField("consumer must not be blank", field="consumer")
    size = DEFAULT_LIMIT if limit is None else max(1, min(int(limit), MAX_LIMIT))
    wanted = parse_types(types)
    with db.read() as conn:
        # The log speaks of ROOT's statements, so ROOT's label floor admits reading it.
        graph_scope.enforce(db, conn, (ROOT,))
        committed: int | None = None
        if since is not None:
            start = since
        elif consumer is not None:
            committed = event_feed.committed_offset(conn, consumer) or 0
            start = committed
        else:
            start = 0
        page = event_feed.read_page(conn, after=start, limit=size, types=wanted, group=group)
        latest = event_feed.latest_offset(conn)
    next_offset = page[-1]["offset"] if page else start
    out: dict[str, Any] = {"events": page, "next_offset": next_offset, "lag": max(0, latest - next_offset)}
    if committed is not None:
        out["committed_offset"] = committed
    return out


def commit(db: Database, *, consumer_id: str | None = None, offset: int | None = None) -> dict[str, Any]:
    """Set a consumer's cursor to the highest offset it processed (tools-core §3.12).

    An upsert; any offset >= 0 is accepted, a lower one rewinds (rules 1-2).
    """
    name = (consumer_id or "").strip()
    if not name:
        raise MissingField("consumer_id is required", field="consumer_id")
    if offset is None:
        raise MissingField("offset (integer) is required", field="offset")
    if offset < 0:
        raise InvalidField("offset must be >= 0", field="offset")
    if offset > event_feed.MAX_OFFSET:
        raise InvalidField(f"offset must be <= {event_feed.MAX_OFFSET}", field="offset")
    with db.write() as ctx:
        event_feed.commit_offset(ctx.conn, name, offset, times.now())
    return {"consumer_id": name, "committed_offset": offset}
