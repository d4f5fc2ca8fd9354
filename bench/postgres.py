"""PostgreSQL for the benchmarks: a scratch database of its own, and the plans of compiled queries.

``--db postgresql://USER@HOST/DB`` names a server, never a store to write into: the benchmarks
create ``quipu_bench_<pid>`` there (connecting with the URL's credentials to its database), load
and query it, and drop it at the end, also when the run fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

from sqlalchemy.engine import URL, make_url

PREFIX: Final = "quipu_bench_"
EXPLAIN: Final = "EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) "


class ScratchError(RuntimeError):
    """The server would not give the benchmark a database of its own."""


def _url(location: str) -> URL:
    scheme, sep, rest = location.partition("://")
    if not sep or scheme.lower() not in ("postgresql", "postgres", "postgresql+psycopg"):
        raise ScratchError(f"--db wants a postgresql:// URL, not {location!r}")
    return make_url("postgresql+psycopg://" + rest)


def server_name(url: URL) -> str:
    """Where the server is, for messages (no password)."""
    host = url.query.get("host") or url.host or "localhost"
    if isinstance(host, tuple):
        host = host[0]
    return f"{url.username or ''}@{host}" + (f":{url.port}" if url.port else "")


class ScratchDatabase:
    """``with ScratchDatabase(url) as scratch``: ``scratch.url`` opens an empty store, dropped on exit.

    ``fresh()`` drops and recreates it, for a benchmark that loads more than once.
    """

    def __init__(self, location: str, name: str | None = None) -> None:
        self.server = _url(location)
        self.name = name or f"{PREFIX}{os.getpid()}"
        self.url = self.server.set(database=self.name).render_as_string(hide_password=False)
        self.where = server_name(self.server)
        self._admin: Any = None

    def _connect(self) -> Any:
        import psycopg

        params: dict[str, Any] = dict(self.server.query)
        host = params.pop("host", self.server.host)
        try:
            return psycopg.connect(
                host=host,
                port=self.server.port,
                user=self.server.username,
                password=self.server.password,
                dbname=self.server.database or "postgres",
                autocommit=True,
                **params,
            )
        except psycopg.Error as exc:
            raise ScratchError(f"cannot connect to PostgreSQL server {self.where}: {exc}".strip()) from None

    def _create(self) -> None:
        import psycopg

        try:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            self._admin.execute(f'CREATE DATABASE "{self.name}"')
        except psycopg.Error as exc:
            raise ScratchError(
                f"PostgreSQL server {self.where} refused CREATE DATABASE {self.name}: {exc}".strip()
                + " (the benchmark needs a role that may create databases; it never writes into"
                f" {self.server.database or 'the URL database'})"
            ) from None

    def fresh(self) -> str:
        """An empty database again (the previous one's connections must be closed)."""
        self._create()
        return self.url

    def drop(self) -> None:
        if self._admin is None:
            return
        try:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        finally:
            self._admin.close()
            self._admin = None

    def __enter__(self) -> ScratchDatabase:
        self._admin = self._connect()
        try:
            self._create()
        except BaseException:
            self._admin.close()
            self._admin = None
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.drop()


@dataclass(frozen=True)
class Explained:
    """One query's compiled SQL, its bind parameters and PostgreSQL's plan of it (``sql`` None:
    no statement ran)."""

    sql: str | None
    plan: str
    params: str = ""


def explain(kb: Any, text: str) -> Explained:
    """PostgreSQL's EXPLAIN ANALYZE of the one statement quipu runs for ``text`` (current state,
    default graph), on a read snapshot with the same budgets and bind parameters as a query."""
    from quipu.sparql.engine import compiled_statement
    from quipu.store import budget as budgets

    db = kb.db
    with (
        db.read() as conn,
        budgets.enforce(db, conn, timeout_ms=kb.query_timeout_ms, max_join_rows=kb.max_join_rows) as budget,
    ):
        # The key run_query caches the plan under, so this is the statement the timed runs ran.
        found = compiled_statement(db, conn, text, row_cap=budget.row_cap(kb.max_sparql_rows))
        if isinstance(found, str):
            return Explained(None, found)
        args = found.params
        cursor = conn.connection.dbapi_connection.cursor()
        cursor.execute(EXPLAIN + found.sql, args)
        lines = [str(row[0]) for row in cursor.fetchall()]
        if found.mixed:
            lines.insert(0, "(mixed plan: rdflib evaluates the rest of the query)")
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else repr(args)
        return Explained(found.sql, "\n".join(lines), shown)
