"""``Questions``: the per-store service behind ``quipu_ask``, ``quipu_queries`` and
``quipu_cooccurrence`` (tools-search §5.16-§5.18).

It holds the store and the engine's query runner with the store's budgets already bound
(``KnowledgeBase.query_result``), so every question runs exactly as ``POST /query`` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quipu.graphs import ask, cooccurrence, stored_queries
from quipu.graphs.ask import Runner
from quipu.identity import Authenticated
from quipu.store.database import Database


class Questions:
    def __init__(self, db: Database, run: Runner) -> None:
        self.db = db
        self.run = run

    def ask(
        self, name: object = None, params: Mapping[str, object] | None = None, graph: str | None = None
    ) -> dict[str, Any]:
        """The catalog (no name, a non-string one or ``"list"``), or one named query's rows."""
        return ask.ask(self.db, self.run, name=name, params=params, graph=graph)

    def queries(self, *, auth: Authenticated | None = None, **fields: Any) -> dict[str, Any]:
        """Load, list, get or remove a stored query (``action``, default ``list``)."""
        return stored_queries.run(self.db, auth=auth, **fields)

    def cooccurrence(
        self, work_item: object, *, valid_at: str | None = None, tx: int | None = None
    ) -> dict[str, Any]:
        """Other work items sharing modified entities with ``work_item``, most shared first."""
        return cooccurrence.cooccurrence(self.run, work_item, valid_at=valid_at, tx=tx)
