"""Rows of the push-subscription registry and its delivery state (tools-core §3.13).

Validation is the events package's business; this module only reads and writes rows, inside
the caller's transaction. The delivery cursor is not here: it is the consumer cursor
``sub:<consumer_id>`` (quipu.store.event_feed), shared with pull consumers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update

from quipu.store.schema import subscriptions

_s = subscriptions.c
CURSOR_PREFIX = "sub:"


def cursor_id(consumer_id: str) -> str:
    """The consumer cursor a subscription delivers from."""
    return CURSOR_PREFIX + consumer_id


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    consumer_id: str
    webhook_url: str
    types: tuple[str, ...]  # empty: every type
    mode: str  # realtime | batch
    batch_size: int
    batch_window_s: int
    secret: str | None
    created_at: str
    failures: int
    retry_at: float | None  # epoch seconds
    last_attempt_at: str | None
    last_success_at: str | None
    last_status: int | None
    last_error: str | None
    delivered: int


def _row(r: object) -> Subscription:
    values = r._mapping  # type: ignore[attr-defined]
    return Subscription(
        id=int(values["id"]),
        consumer_id=str(values["consumer_id"]),
        webhook_url=str(values["webhook_url"]),
        types=tuple(json.loads(values["types"])),
        mode=str(values["mode"]),
        batch_size=int(values["batch_size"]),
        batch_window_s=int(values["batch_window_s"]),
        secret=values["secret"],
        created_at=str(values["created_at"]),
        failures=int(values["failures"]),
        retry_at=None if values["retry_at"] is None else float(values["retry_at"]),
        last_attempt_at=values["last_attempt_at"],
        last_success_at=values["last_success_at"],
        last_status=None if values["last_status"] is None else int(values["last_status"]),
        last_error=values["last_error"],
        delivered=int(values["delivered"]),
    )


def every(conn: Connection) -> list[Subscription]:
    """Every subscription, oldest first."""
    return [_row(r) for r in conn.execute(select(subscriptions).order_by(_s.id))]


def by_id(conn: Connection, sub_id: int) -> Subscription | None:
    row = conn.execute(select(subscriptions).where(_s.id == sub_id)).first()
    return None if row is None else _row(row)


def exists(conn: Connection, consumer_id: str) -> bool:
    return conn.execute(select(_s.id).where(_s.consumer_id == consumer_id)).first() is not None


def create(
    conn: Connection,
    *,
    consumer_id: str,
    webhook_url: str,
    types: Sequence[str],
    mode: str,
    batch_size: int,
    batch_window_s: int,
    secret: str | None,
    at: str,
) -> int:
    """Insert one subscription; returns its id (the caller checked the consumer id is free)."""
    result = conn.execute(
        insert(subscriptions)
        .values(
            consumer_id=consumer_id,
            webhook_url=webhook_url,
            types=json.dumps(list(types)),
            mode=mode,
            batch_size=batch_size,
            batch_window_s=batch_window_s,
            secret=secret,
            created_at=at,
        )
        .returning(_s.id)
    )
    return int(result.scalar_one())


def remove(conn: Connection, consumer_id: str) -> bool:
    """Delete a subscription (its cursor stays, tools-core §3.13 rule 4); True when one existed."""
    return bool(conn.execute(delete(subscriptions).where(_s.consumer_id == consumer_id)).rowcount)


def record_success(conn: Connection, sub_id: int, *, events: int, status: int, at: str) -> None:
    """A 2xx answer: the failure streak and the backoff end."""
    conn.execute(
        update(subscriptions)
        .where(_s.id == sub_id)
        .values(
            failures=0,
            retry_at=None,
            last_attempt_at=at,
            last_success_at=at,
            last_status=status,
            last_error=None,
            delivered=_s.delivered + events,
        )
    )


def record_failure(
    conn: Connection, sub_id: int, *, failures: int, retry_at: float, status: int | None, error: str, at: str
) -> None:
    """Anything else: the streak grows and the next attempt waits until ``retry_at``."""
    conn.execute(
        update(subscriptions)
        .where(_s.id == sub_id)
        .values(
            failures=failures, retry_at=retry_at, last_attempt_at=at, last_status=status, last_error=error
        )
    )
