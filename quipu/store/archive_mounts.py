"""Mounted archive packs: how a frozen graph stays readable at its IRI (tools-graphs-governance
§1.4, rules FZ-1, FZ-4, FZ-5).

A freeze moves a graph's rows into a pack file (a standalone SQLite store whose term ids are the
live store's own) and deletes them locally. Every reader connection of a SQLite store ATTACHes
the open packs, synced with the ``frozen_packs`` registry when it is checked out of the pool
(before its read transaction begins): in process through a generation number, and across
processes whenever ``PRAGMA data_version`` says another connection committed.

A read whose graph scope names a frozen graph installs, for that read only, a temporary view
``facts`` that unions ``main.facts`` with the packs' facts. SQLite resolves an unqualified name
in the temp schema first, so every reader (compiled SQL, the rdflib store, export, search) sees
the frozen rows without knowing about packs. Reads that do not name a frozen graph never pay
for the union. Writer connections never attach or install anything: a frozen graph is not
writable anyway.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Connection

from quipu.errors import StorageError
from quipu.store.schema import facts
from quipu.store.terms import iri_hash

_COLUMNS: Final = ", ".join(c.name for c in facts.columns)
_VIEW_KEY: Final = "quipu_archive_view"


@dataclass(frozen=True, slots=True)
class Mount:
    alias: str
    path: str
    graph: int  # the frozen graph's id (its term id, the same in the pack)


def missing_pack(path: str) -> StorageError:
    return StorageError(
        f"archive pack {path} is missing: the store's frozen-pack registry names it, so the store "
        "will not open without it (restore the file, or thaw the graph from a copy)"
    )


@dataclass
class Archives:
    """The open packs of one store and the reader-connection bookkeeping around them."""

    enabled: bool = False  # a SQLite file store; PostgreSQL and :memory: never mount
    mounts: dict[str, Mount] = field(default_factory=dict)  # by alias
    generation: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def mounted(self) -> bool:
        return bool(self.mounts)

    def frozen_graphs(self) -> frozenset[int]:
        return frozenset(m.graph for m in self.mounts.values())

    def replace(self, mounts: list[Mount]) -> None:
        with self.lock:
            new = {m.alias: m for m in mounts}
            if new != self.mounts:
                self.mounts = new
                self.generation += 1

    def load(self, dbapi_conn: Any) -> None:
        """Read the open packs from the registry on a driver connection; every file must exist."""
        rows = dbapi_conn.execute(
            "SELECT alias, path, graph_iri FROM frozen_packs WHERE thawed_at IS NULL ORDER BY id"
        ).fetchall()
        found: list[Mount] = []
        for alias, path, iri in rows:
            if not os.path.exists(path):
                raise missing_pack(path)
            term = dbapi_conn.execute("SELECT id FROM terms WHERE iri_hash = ?", (iri_hash(iri),)).fetchone()
            if term is not None:
                found.append(Mount(alias, path, int(term[0])))
        self.replace(found)

    def on_checkout(self, dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        """Bring a reader connection's attachments in line with the registry (rule FZ-5)."""
        if not self.enabled:
            return
        version = dbapi_conn.execute("PRAGMA data_version").fetchone()[0]
        if record.info.get("data_version") != version:
            record.info["data_version"] = version
            self.load(dbapi_conn)  # another connection committed: a freeze or thaw may be among it
        if record.info.get("archive_generation") == self.generation:
            return
        attached: dict[str, str] = record.info.setdefault("archives", {})
        wanted = {m.alias: m.path for m in self.mounts.values()}
        for alias in [a for a in attached if wanted.get(a) != attached[a]]:
            dbapi_conn.execute(f'DETACH DATABASE "{alias}"')
            del attached[alias]
        for alias, path in wanted.items():
            if alias not in attached:
                if not os.path.exists(path):
                    raise missing_pack(path)
                dbapi_conn.execute(f'ATTACH DATABASE ? AS "{alias}"', (path,))
                attached[alias] = path
        record.info["archive_generation"] = self.generation

    def install_view(self, conn: Connection) -> None:
        """For this read only: ``facts`` also holds the rows of every attached pack."""
        if conn.info.get(_VIEW_KEY):
            return
        aliases = sorted(conn.info.get("archives", {}))
        if not aliases:
            return
        arms = [f"SELECT {_COLUMNS} FROM main.facts"]
        arms += [f'SELECT {_COLUMNS} FROM "{a}".facts' for a in aliases]
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute("PRAGMA query_only=OFF")  # the temp schema only; reverted at once
        try:
            driver.execute("CREATE TEMP VIEW facts AS " + " UNION ALL ".join(arms))
        finally:
            driver.execute("PRAGMA query_only=ON")
        conn.info[_VIEW_KEY] = True

    @staticmethod
    def remove_view(conn: Connection) -> None:
        """Undo ``install_view`` before the connection goes back to the pool."""
        if not conn.info.pop(_VIEW_KEY, False):
            return
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute("PRAGMA query_only=OFF")
        try:
            driver.execute("DROP VIEW IF EXISTS temp.facts")
        finally:
            driver.execute("PRAGMA query_only=ON")
