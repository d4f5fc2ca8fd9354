"""Reading the event log, and the durable consumer cursors (DM §11.1-§11.2).

The log is appended by ``quipu.store.events`` inside each write; this module is its consumer
side: filtered pages in offset order, the cursors ``quipu_events_commit`` sets, and retention
pruning, which never removes an event some registered cursor has not passed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, cast

from sqlalchemy import (
    JSON,
    ColumnElement,
    Connection,
    Select,
    Text,
    and_,
    delete,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy import cast as cast_sql

from quipu.store.events import SCHEMA
from quipu.store.schema import consumers, events, transactions

_e = events.c
_c = consumers.c
MAX_OFFSET = 2**63 - 1  # offsets are 64-bit integers
PRUNE_BATCH = 10_000  # events deleted per write transaction: writers wait at most one batch


def envelope(row: Any) -> dict[str, Any]:
    """An events row in its wire envelope (DM §11.1)."""
    return {
        "schema": SCHEMA,
        "offset": int(row.event_offset),
        "type": row.type,
        "ts": row.ts,
        "subject": row.subject,
        "group_id": row.group_id,
        "tx_id": int(row.tx_id),
        "payload": json.loads(row.payload),
    }


def _page(after: int, limit: int, types: Sequence[str], group: str | None) -> Select[Any]:
    where: list[ColumnElement[bool]] = [_e.event_offset > min(max(after, 0), MAX_OFFSET)]
    if types:
        where.append(_e.type.in_(sorted(set(types))))
    if group is not None:
        where.append(_e.group_id == group)
    columns = (_e.event_offset, _e.type, _e.ts, _e.subject, _e.group_id, _e.tx_id, _e.payload)
    return select(*columns).where(and_(*where)).order_by(_e.event_offset).limit(limit)


def read_page(
    conn: Connection,
    *,
    after: int,
    limit: int,
    types: Sequence[str] = (),
    group: str | None = None,
) -> list[dict[str, Any]]:
    """At most ``limit`` events with offset > ``after``, oldest first; ``types`` empty: all."""
    return [envelope(r) for r in conn.execute(_page(after, limit, types, group))]


class WireEvent(Protocol):
    """One event of ``read_wire_page``: result rows as they come, with these named columns."""

    @property
    def offset(self) -> int: ...
    @property
    def ts(self) -> str: ...
    @property
    def json(self) -> str:  # the wire envelope as JSON text
        ...


def _key(constant: str) -> ColumnElement[Any]:
    """A constant of ours as an SQL string literal: typed text on both databases, where a bound
    parameter would leave PostgreSQL's json_build_object unable to infer its type."""
    assert "'" not in constant
    return literal_column(f"'{constant}'", Text)


def _wire_json(dialect: str) -> ColumnElement[Any]:
    """The wire envelope built by the database itself, as JSON text, the stored payload spliced in
    as a JSON value: the delivery worker's hot path then does no per-event work in Python, and
    SQLite builds it while the interpreter serves the writers (the driver releases the GIL)."""
    fields: list[Any] = [
        _key("schema"),
        _key(SCHEMA),
        _key("offset"),
        _e.event_offset,
        _key("type"),
        _e.type,
        _key("ts"),
        _e.ts,
        _key("subject"),
        _e.subject,
        _key("group_id"),
        _e.group_id,
        _key("tx_id"),
        _e.tx_id,
        _key("payload"),
    ]
    if dialect == "postgresql":
        return cast_sql(func.json_build_object(*fields, cast_sql(_e.payload, JSON)), Text)
    return func.json_object(*fields, func.json(_e.payload))


def read_wire_page(
    conn: Connection, *, after: int, limit: int, types: Sequence[str] = ()
) -> Sequence[WireEvent]:
    """``read_page``'s envelopes already serialised (the same fields in the same order), for the
    webhook delivery: no decoding and re-encoding of every payload."""
    page = _page(after, limit, types, None)
    wire = page.with_only_columns(
        _e.event_offset.label("offset"), _e.ts.label("ts"), _wire_json(conn.dialect.name).label("json")
    )
    return cast("Sequence[WireEvent]", conn.execute(wire).all())


def latest_offset(conn: Connection) -> int:
    """The newest offset in the whole log (0 when it is empty)."""
    return int(conn.execute(select(func.max(_e.event_offset))).scalar() or 0)


def committed_offset(conn: Connection, consumer_id: str) -> int | None:
    """A consumer's committed offset; None when it never committed."""
    value = conn.execute(select(_c.committed_offset).where(_c.consumer_id == consumer_id)).scalar()
    return None if value is None else int(value)


def commit_offset(conn: Connection, consumer_id: str, offset: int, at: str) -> None:
    """Upsert a cursor (inside the caller's write transaction): any offset, lower ones rewind."""
    changed = conn.execute(
        update(consumers).where(_c.consumer_id == consumer_id).values(committed_offset=offset, updated_at=at)
    ).rowcount
    if not changed:
        conn.execute(
            insert(consumers).values(consumer_id=consumer_id, committed_offset=offset, updated_at=at)
        )


def lowest_cursor(conn: Connection) -> int | None:
    """The smallest committed offset of any registered consumer (``sub:`` cursors included)."""
    value = conn.execute(select(func.min(_c.committed_offset))).scalar()
    return None if value is None else int(value)


def prune_horizon(conn: Connection, cutoff: str) -> int | None:
    """The newest transaction recorded before ``cutoff`` (wall clock), or None: events of later
    transactions are never old enough to prune, whatever their declared ``ts``."""
    value = conn.execute(
        select(func.max(transactions.c.id)).where(transactions.c.recorded_at < cutoff)
    ).scalar()
    return None if value is None else int(value)


def prune_batch(conn: Connection, cutoff: str, horizon: int, limit: int = PRUNE_BATCH) -> int:
    """Delete up to ``limit`` of the events older than ``cutoff`` that every registered cursor
    has passed, oldest first; returns how many (fewer than ``limit``: none are left).

    Old means both: the declared ``ts`` is before the cut-off (DM §11.2), and the event's
    transaction is at or before ``horizon`` (``prune_horizon``: recorded before the cut-off by the
    wall clock) [designed here], so that a backfill of historical episodes is not pruned the hour
    it lands. The caller runs each batch in a write transaction of its own, so writers wait at
    most one batch.
    """
    where = [_e.ts < cutoff, _e.tx_id <= horizon]
    floor = lowest_cursor(conn)  # read again each batch: a cursor may be registered meanwhile
    if floor is not None:
        where.append(_e.event_offset <= floor)
    batch = select(_e.event_offset).where(and_(*where)).order_by(_e.event_offset).limit(limit)
    return int(conn.execute(delete(events).where(_e.event_offset.in_(batch.scalar_subquery()))).rowcount)
