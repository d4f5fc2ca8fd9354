"""Every difference between SQLite and PostgreSQL, in one place.

The rest of the store speaks SQLAlchemy Core and asks this module for the few things that differ:
connection set-up, how a write transaction starts, and insert-or-ignore.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Table, event
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql.dml import Insert


@dataclass(frozen=True)
class SqliteTuning:
    synchronous: str = "NORMAL"
    cache_mb: int = 256
    busy_timeout_ms: int = 30_000


class Dialect:
    """Backend-specific behaviour; one instance per open store."""

    name: str = "base"

    def configure(self, engine: Engine, *, write: bool) -> None:
        raise NotImplementedError

    def begin_write(self, conn: Connection) -> None:
        """Run first inside every write transaction (PostgreSQL takes its advisory lock here)."""

    def insert_ignore(self, table: Table) -> Insert:
        raise NotImplementedError

    def insert_tuples(self, conn: Connection, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
        """Bulk-insert positional rows in column order, bypassing per-row dict building."""
        raise NotImplementedError


class SqliteDialect(Dialect):
    """WAL mode, one writer (``BEGIN IMMEDIATE``) and read connections that cannot write."""

    name = "sqlite"

    def __init__(self, tuning: SqliteTuning, *, memory: bool = False) -> None:
        self.tuning = tuning
        self.memory = memory

    def configure(self, engine: Engine, *, write: bool) -> None:
        tuning = self.tuning
        memory = self.memory

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy's "begin" event issue BEGIN itself, so we choose its kind.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            if not memory:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={tuning.synchronous}")
            cur.execute(f"PRAGMA busy_timeout={int(tuning.busy_timeout_ms)}")
            cur.execute(f"PRAGMA cache_size=-{int(tuning.cache_mb) * 1024}")
            cur.execute("PRAGMA temp_store=MEMORY")
            cur.execute("PRAGMA foreign_keys=OFF")
            if not write and not memory:
                cur.execute("PRAGMA query_only=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            wants_write = write or conn.get_execution_options().get("quipu_write", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if wants_write else "BEGIN")

    def insert_ignore(self, table: Table) -> Insert:
        return sqlite.insert(table).on_conflict_do_nothing()

    def insert_tuples(self, conn: Connection, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" * len(table.columns))
        conn.exec_driver_sql(f"INSERT INTO {table.name} VALUES ({marks})", list(rows))
