"""Managing push subscriptions: create, list, delete (tools-core §3.13).

A subscription names a webhook and the consumer cursor ``sub:<consumer_id>`` its deliveries
advance. Deleting one keeps that cursor, so re-creating the same consumer id resumes from it
(rule 4). The delivery worker (quipu.events.delivery) does the pushing.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from quipu import times
from quipu.errors import InvalidField, MissingField
from quipu.events import webhook_guard
from quipu.store import event_feed
from quipu.store import subscriptions as rows
from quipu.store.database import Database
from quipu.store.subscriptions import Subscription, cursor_id

ACTIONS = ("create", "list", "delete")
MODES = ("realtime", "batch")
DEFAULT_BATCH_SIZE = 50
DEFAULT_BATCH_WINDOW_S = 30
MAX_BATCH_SIZE = 500  # a delivery carries at most this many events (rule 2)
SECRET_MIN, SECRET_MAX = 16, 1024
SPARQL_ASK_REFUSED = (
    "sparql_ask filters are not evaluated yet; refusing to store one that would be silently ignored"
)


def run(
    db: Database,
    *,
    allow_private: bool,
    action: str | None = None,
    consumer_id: str | None = None,
    webhook_url: str | None = None,
    types: list[str] | None = None,
    mode: str | None = None,
    batch_size: int | None = None,
    batch_window_s: int | None = None,
    sparql_ask: str | None = None,
    secret: str | None = None,
) -> dict[str, Any]:
    """Dispatch one ``quipu_subscriptions`` call; fields that an action does not use are ignored."""
    name = "list" if action is None else action
    if name not in ACTIONS:
        raise InvalidField(
            f"unknown subscriptions action '{name}' (expected: {', '.join(ACTIONS)})", field="action"
        )
    if name == "list":
        return listing(db)
    consumer = _consumer(consumer_id)
    if name == "delete":
        with db.write() as ctx:
            found = rows.remove(ctx.conn, consumer)
        return {"action": "deleted", "consumer_id": consumer, "found": found}
    return create(
        db,
        allow_private=allow_private,
        consumer_id=consumer,
        webhook_url=webhook_url,
        types=types,
        mode=mode,
        batch_size=batch_size,
        batch_window_s=batch_window_s,
        sparql_ask=sparql_ask,
        secret=secret,
    )


def _consumer(consumer_id: str | None) -> str:
    name = (consumer_id or "").strip()
    if not name:
        raise MissingField("consumer_id is required", field="consumer_id")
    return name


def create(
    db: Database,
    *,
    allow_private: bool,
    consumer_id: str,
    webhook_url: str | None,
    types: list[str] | None,
    mode: str | None,
    batch_size: int | None,
    batch_window_s: int | None,
    sparql_ask: str | None,
    secret: str | None,
) -> dict[str, Any]:
    if sparql_ask is not None and sparql_ask.strip():
        raise InvalidField(SPARQL_ASK_REFUSED, field="sparql_ask")
    chosen_mode = "realtime" if mode is None else mode
    if chosen_mode not in MODES:
        raise InvalidField(f"mode must be realtime or batch, not '{chosen_mode}'", field="mode")
    size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    if not 1 <= size <= MAX_BATCH_SIZE:
        raise InvalidField(f"batch_size must be between 1 and {MAX_BATCH_SIZE}", field="batch_size")
    window = DEFAULT_BATCH_WINDOW_S if batch_window_s is None else batch_window_s
    if window < 0:
        raise InvalidField("batch_window_s must be >= 0", field="batch_window_s")
    if secret is not None and not SECRET_MIN <= len(secret) <= SECRET_MAX:
        raise InvalidField(
            f"secret must be {SECRET_MIN} to {SECRET_MAX} characters (a random string shared with "
            "the receiver)",
            field="secret",
        )
    wanted = [t.strip() for t in types or () if t.strip()]
    # The URL's shape first, then DNS: a malformed URL is refused without a lookup.
    target = webhook_guard.check(webhook_url, allow_private=allow_private)
    now = times.now()
    with db.write() as ctx:
        if rows.exists(ctx.conn, consumer_id):
            raise InvalidField(f"consumer_id '{consumer_id}' already has a subscription", field="consumer_id")
        sub_id = rows.create(
            ctx.conn,
            consumer_id=consumer_id,
            webhook_url=target.url,
            types=wanted,
            mode=chosen_mode,
            batch_size=size,
            batch_window_s=window,
            secret=secret,
            at=now,
        )
        # The cursor exists from now on, so retention cannot prune what is still to deliver;
        # a cursor left by a deleted subscription of the same id is resumed (rule 4).
        cursor = cursor_id(consumer_id)
        if event_feed.committed_offset(ctx.conn, cursor) is None:
            event_feed.commit_offset(ctx.conn, cursor, 0, now)
    return {"action": "created", "id": sub_id, "consumer_id": consumer_id}


def listing(db: Database) -> dict[str, Any]:
    """Every subscription, with its cursor, lag and delivery state [designed here: beyond the
    spec's fields, so a receiver that is behind shows why]."""
    with db.read() as conn:
        subs = rows.every(conn)
        latest = event_feed.latest_offset(conn)
        cursors = {s.id: event_feed.committed_offset(conn, cursor_id(s.consumer_id)) or 0 for s in subs}
    now = time.time()
    return {
        "count": len(subs),
        "subscriptions": [describe(s, cursors[s.id], latest, now) for s in subs],
    }


def _instant(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(sub: Subscription, cursor: int, latest: int, now: float) -> dict[str, Any]:
    retrying = sub.failures > 0
    return {
        "id": sub.id,
        "consumer_id": sub.consumer_id,
        "types": list(sub.types),
        "mode": sub.mode,
        "webhook_url": sub.webhook_url,
        "batch_size": sub.batch_size,
        "batch_window_s": sub.batch_window_s,
        "signed": sub.secret is not None,
        "cursor": cursor,
        "lag": max(0, latest - cursor),
        "delivery": {
            "state": "retrying" if retrying else "ok",
            "failures": sub.failures,
            "next_attempt_at": _instant(sub.retry_at) if retrying else None,
            "retry_in_s": max(0.0, round(sub.retry_at - now, 1)) if retrying and sub.retry_at else None,
            "last_attempt_at": sub.last_attempt_at,
            "last_success_at": sub.last_success_at,
            "last_status": sub.last_status,
            "last_error": sub.last_error,
            "delivered": sub.delivered,
        },
    }
