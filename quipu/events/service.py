"""The event feeds' service object (``kb.feeds``): pulls, cursors, change pages,
subscriptions and retention, bound to one store and the ``[quipu.events]`` settings.

The delivery worker that pushes to subscriptions is started by the server, not here
(quipu.events.delivery), so that embedding ``quipu.open`` never sends HTTP on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from quipu.config import EventsSettings
from quipu.errors import InvalidField
from quipu.events import feeds, subscriptions
from quipu.store import event_feed
from quipu.store.database import Database


class Feeds:
    def __init__(self, db: Database, settings: EventsSettings | None = None) -> None:
        self.db = db
        self.settings = settings or EventsSettings()

    def events(
        self,
        *,
        since: int | None = None,
        consumer: str | None = None,
        limit: int | None = None,
        types: str | None = None,
        group: str | None = None,
    ) -> dict[str, Any]:
        """A page of events; commits nothing (tools-core §1.11)."""
        return feeds.read(self.db, since=since, consumer=consumer, limit=limit, types=types, group=group)

    def commit(self, *, consumer_id: str | None = None, offset: int | None = None) -> dict[str, Any]:
        """Set a consumer's cursor (tools-core §3.12)."""
        return feeds.commit(self.db, consumer_id=consumer_id, offset=offset)

    def subscriptions(self, **fields: Any) -> dict[str, Any]:
        """Create, list or delete push subscriptions (tools-core §3.13)."""
        return subscriptions.run(self.db, allow_private=self.settings.webhook_allow_private, **fields)

    def prune(
        self,
        now: datetime | None = None,
        *,
        days: int | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> int:
        """Apply retention once: delete the events older than ``days`` (default
        ``events.retention_days``) that every cursor has passed, a batch per write transaction,
        calling ``on_batch`` with the running total; returns how many were deleted (0 when
        retention is off and no ``days`` is given)."""
        keep = self.settings.retention_days if days is None else days
        if keep is None:
            return 0
        if keep < 1:
            raise InvalidField("days must be >= 1", field="days")
        cutoff = ((now or datetime.now(UTC)) - timedelta(days=keep)).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.db.read() as conn:
            horizon = event_feed.prune_horizon(conn, cutoff)
        if horizon is None:
            return 0
        deleted, batch = 0, event_feed.PRUNE_BATCH
        while True:
            with self.db.write() as ctx:
                count = event_feed.prune_batch(ctx.conn, cutoff, horizon, batch)
            deleted += count
            if on_batch is not None:
                on_batch(deleted)
            if count < batch:
                return deleted
