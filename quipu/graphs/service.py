"""``Graphs``: the per-store service behind the registry, label, dataset and overlay routes.

It holds what the family needs beyond the store: where freeze may write archive packs
(``[quipu.graphs] archive_dir``). The label floor itself lives on the store, because every
reader enforces it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quipu.graphs import datasets, freeze, labels, overlays, registry
from quipu.identity import Authenticated
from quipu.store.database import Database


class Graphs:
    def __init__(self, db: Database, archive_dir: str | None = None) -> None:
        self.db = db
        self.archive_dir = Path(archive_dir) if archive_dir else None

    def list(self, *, kind: str | None = None, lifecycle: str | None = None) -> dict[str, Any]:
        return registry.list_graphs(self.db, kind=kind, lifecycle=lifecycle)

    def create(self, graph: str, **fields: Any) -> dict[str, Any]:
        return registry.create_graph(self.db, graph, **fields)

    def label(self, graph: object, **fields: Any) -> dict[str, Any]:
        return labels.label_graph(self.db, graph, **fields)

    def datasets(self, **fields: Any) -> dict[str, Any]:
        return datasets.run(self.db, **fields)

    def overlay_create(
        self, overlay: object, parent_branch: object = None, *, auth: Authenticated | None = None
    ) -> dict[str, Any]:
        return overlays.create(self.db, overlay, parent_branch, auth=auth)

    def overlay_write(self, **fields: Any) -> dict[str, Any]:
        return overlays.write(self.db, **fields)

    def overlay_compose(self, overlay: object, precedence: object = None) -> dict[str, Any]:
        return overlays.compose(self.db, overlay, precedence)

    def freeze(self, **fields: Any) -> dict[str, Any]:
        return freeze.freeze(self.db, self.archive_dir, **fields)

    def thaw(self, **fields: Any) -> dict[str, Any]:
        return freeze.thaw(self.db, **fields)
