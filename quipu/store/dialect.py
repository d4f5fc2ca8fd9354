"""Every difference between SQLite and PostgreSQL, in one place.

The rest of the store speaks SQLAlchemy Core and asks this module for the few things that differ:
connection set-up, how a write transaction starts, and insert-or-ignore.
"""

from __future__ import annotations

import logging
import operator
import re
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, Engine, Integer, Table, Text, event, func, literal
from sqlalchemy.engine.interfaces import Dialect as SADialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.functions import FunctionElement

from quipu.errors import ConfigError, QuipuError
from quipu.store import keyword_tokens, pg_functions, pg_regex, sqlfunctions
from quipu.store.schema import LIVE_INDEXES, facts, postgres_live_index_ddl
from quipu.store.wal import DEFAULT_LIMIT_MB, MIB, LongReads, WalCheckpointer, journal_size_limit

log = logging.getLogger("quipu.store")
_PYFORMAT_NAME = re.compile(r"%\((\w+)\)s")
_DEFER_INDEXES_MIN = 50_000  # rows; below this, dropping and rebuilding indexes costs more
_ANALYZE_MIN = 100  # rows; PostgreSQL refreshes statistics after writes this big that double a table
# SQLite VM instructions between deadline checks: about 0.1 ms of work, and the check's cost is
# lost in the noise (~0.01 ms per 100k instructions, measured; N=1000 cost 3%, N=100 17%).
_PROGRESS_STEPS = 10_000


@dataclass(frozen=True)
class SqliteTuning:
    synchronous: str = "NORMAL"
    cache_mb: int = 256
    busy_timeout_ms: int = 30_000
    wal_checkpoint_mb: int = DEFAULT_LIMIT_MB

    def __post_init__(self) -> None:
        # These values are spliced into PRAGMA statements, so only known spellings pass.
        if self.synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ConfigError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {self.synchronous!r}")
        if not isinstance(self.cache_mb, int) or self.cache_mb < 1:
            raise ConfigError(f"cache_mb must be a positive integer, not {self.cache_mb!r}")
        if not isinstance(self.busy_timeout_ms, int) or self.busy_timeout_ms < 0:
            raise ConfigError(f"busy_timeout_ms must be an integer >= 0, not {self.busy_timeout_ms!r}")
        if not isinstance(self.wal_checkpoint_mb, int) or self.wal_checkpoint_mb < 1:
            raise ConfigError(f"wal_checkpoint_mb must be a positive integer, not {self.wal_checkpoint_mb!r}")


class Dialect:
    """Backend-specific behaviour; one instance per open store."""

    name: str = "base"
    # The SPARQL value functions of ``sqlfunctions`` exist on this backend's connections, and
    # one column may hold an integer or a blob (SQLite's storage classes; property paths).
    sparql_functions: bool = False
    # Which ``q_*`` functions a compiled statement may call (None: all of them).
    functions: frozenset[str] | None = frozenset()
    # ORDER BY of a SELECT DISTINCT may only use expressions that are selected.
    distinct_order_keys_selected: bool = False
    # Each statement is a network round trip: batch small lookups instead of probing one by one.
    round_trips_costly: bool = False

    def driver_errors(self) -> tuple[type[Exception], ...]:
        """The driver's own exception bases: code that uses the raw DB-API connection (bulk
        inserts, progress handlers) sees them unwrapped by SQLAlchemy."""
        return ()

    def __init__(self) -> None:
        self._prepared: dict[int, Prepared] = {}
        self._sa_dialect: SADialect | None = None

    def configure(self, engine: Engine, *, write: bool) -> None:
        """Set up an engine's connections; every subclass calls this base first."""
        self._sa_dialect = engine.dialect

    def prepared(self, statement: ClauseElement) -> Prepared:
        """``statement`` compiled once for this backend (pass module-level statements only)."""
        found = self._prepared.get(id(statement))
        if found is None:
            assert self._sa_dialect is not None, "configure() an engine first"
            found = self._prepared[id(statement)] = Prepared(statement, self._sa_dialect)
        return found

    def compile_statement(self, statement: ClauseElement) -> Prepared:
        """Compile a statement built at run time (not cached here: the caller keeps it)."""
        assert self._sa_dialect is not None, "configure() an engine first"
        return Prepared(statement, self._sa_dialect)

    def begin_write(self, conn: Connection) -> None:
        """Run first inside every write transaction (PostgreSQL takes its advisory lock here)."""

    def begin_read(self, conn: Connection) -> None:
        """Run first inside every read snapshot."""

    # ``prepare`` has work to do (a write transaction at every open; SQLite has none).
    prepares: bool = False

    def prepare(self, conn: Connection) -> None:
        """Once per open store, inside a write transaction after migrations: server-side set-up."""

    def regex(self, text: ColumnElement[Any], pattern: str, flags: str | None) -> ColumnElement[Any] | None:
        """SPARQL REGEX of a string encoding against a constant pattern, as this backend's own SQL
        (1, 0 or NULL), or None: use the ``q_regex*`` value functions."""
        return None

    def replace(
        self, text: ColumnElement[Any], pattern: str, flags: str | None, replacement: str
    ) -> ColumnElement[Any] | None:
        """SPARQL REPLACE with constant pattern, flags and replacement (an encoding), or None."""
        return None

    def start(self, database: str | None) -> None:
        """Start any background upkeep for an open store (``database``: its file, if any)."""

    def after_commit(self) -> None:
        """Called after every committed write."""

    def stop(self) -> None:
        """Stop background upkeep; the store is closing."""

    def before_close(self, conn: Connection) -> None:
        """Last upkeep on the writer connection before the store closes."""

    @contextmanager
    def deadline(self, conn: Connection, at: float, error: QuipuError) -> Iterator[None]:
        """Stop statements on ``conn`` that run past ``at`` (a ``time.monotonic()`` value).

        A statement stopped this way raises ``error`` instead of the driver's exception, and the
        connection must be left as usable as before: read connections are pooled. The base has
        no way to stop a statement; callers check the clock between statements as well.
        (PostgreSQL: ``SET LOCAL statement_timeout`` to the milliseconds left, and turn
        ``QueryCanceled`` into ``error``; the setting ends with the read transaction.)
        """
        yield

    @contextmanager
    def work_limits(
        self, conn: Connection, at: float | None, late: QuipuError, steps: int | None, costly: QuipuError
    ) -> Iterator[None]:
        """``deadline`` (when ``at`` is set), and a work budget: statements on ``conn`` that do
        more than ``steps`` units of the database's own work in all raise ``costly``.

        Only SQLite counts work (VM steps); elsewhere the budget is ignored and the deadline
        (PostgreSQL: ``statement_timeout``) is what stops a runaway statement.
        """
        if at is None:
            yield
            return
        with self.deadline(conn, at, late):
            yield

    @contextmanager
    def indexes_deferred(self, conn: Connection, table: Table, incoming: int) -> Iterator[None]:
        """Around a bulk insert of ``incoming`` rows; backends may build indexes afterwards."""
        yield

    def insert_tuples(
        self,
        conn: Connection,
        table: Table,
        columns: Sequence[str],
        rows: Sequence[tuple[Any, ...]],
        constants: Mapping[str, int | str] | None = None,
    ) -> None:
        """Bulk-insert positional rows into ``columns``, bypassing per-row dict building.
        ``constants``: further columns with one value for every row."""
        raise NotImplementedError

    def grew(self, conn: Connection, table: Table, incoming: int) -> None:
        """After ``incoming`` rows went into ``table`` outside ``indexes_deferred``."""


# Indexes whose statistics right after a bulk load describe the load, not the store to come:
# every row of one load shares its transaction id, so ix_facts_tx looked like a million rows per
# transaction and the planner scanned the whole table for one transaction's rows (the event log
# did on every write: 86 episodes/s instead of 380, measured). Without a row, SQLite assumes an
# equality on the column matches ten rows, which is what later transactions look like.
LOAD_SHAPED_INDEXES: Final = ("ix_facts_tx",)


def forget_load_shaped_statistics(conn: Connection) -> None:
    """Drop the planner's statistics for ``LOAD_SHAPED_INDEXES`` (after an ANALYZE)."""
    names = ", ".join(f"'{name}'" for name in LOAD_SHAPED_INDEXES)
    conn.exec_driver_sql(f"DELETE FROM sqlite_stat1 WHERE idx IN ({names})")
    # ANALYZE loaded what it found into this connection's planner; this reloads the table
    # (other connections read it when they next load the schema, which the load changed).
    conn.exec_driver_sql("ANALYZE sqlite_schema")


class SqliteDialect(Dialect):
    """WAL mode, one writer (``BEGIN IMMEDIATE``) and read connections that cannot write."""

    name = "sqlite"
    sparql_functions = True
    functions = None  # every one: sqlfunctions registers them on each connection

    def driver_errors(self) -> tuple[type[Exception], ...]:
        return (sqlite3.Error,)

    def __init__(
        self,
        tuning: SqliteTuning,
        *,
        memory: bool = False,
        long_reads: LongReads | None = None,
        write_lock: AbstractContextManager[object] | None = None,
    ) -> None:
        super().__init__()
        self.checkpointer: WalCheckpointer | None = None
        self.long_reads = long_reads or LongReads()
        self.write_lock = write_lock  # the store's in-process writer lock, for the checkpointer
        self.tuning = tuning
        self.memory = memory

    def configure(self, engine: Engine, *, write: bool) -> None:
        super().configure(engine, write=write)
        tuning = self.tuning
        memory = self.memory

        # A pool event only: an engine-level "begin" listener would make SQLAlchemy dispatch
        # events around every statement, which costs more than the statements of a small write.
        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # The driver must not open transactions by itself: begin_write/begin_read choose.
            dbapi_conn.isolation_level = None
            sqlfunctions.register(dbapi_conn)  # SPARQL value semantics for compiled queries
            keyword_tokens.register(dbapi_conn)  # called by the keyword index's triggers
            cur = dbapi_conn.cursor()
            if not memory:
                cur.execute("PRAGMA journal_mode=WAL")
                # Without it the log file stays at its largest size after it starts over.
                cur.execute(f"PRAGMA journal_size_limit={journal_size_limit(tuning.wal_checkpoint_mb * MIB)}")
            cur.execute(f"PRAGMA synchronous={tuning.synchronous}")
            cur.execute(f"PRAGMA busy_timeout={int(tuning.busy_timeout_ms)}")
            cur.execute(f"PRAGMA cache_size=-{int(tuning.cache_mb) * 1024}")
            # Readers sort and group in a temporary file's page cache: an in-memory temp store
            # allocates and frees its pages for every query, and in a process with a large
            # heap that tripled a GROUP BY over 55k rows (Q5 at 1M triples: 85 ms against 21).
            cur.execute(f"PRAGMA temp_store={'MEMORY' if write or memory else 'FILE'}")
            cur.execute("PRAGMA foreign_keys=OFF")
            if write and not memory:
                # The writer never checkpoints inside a commit; WalCheckpointer does it aside.
                cur.execute("PRAGMA wal_autocheckpoint=0")
            if not write and not memory:
                cur.execute("PRAGMA query_only=ON")
            cur.close()

    def begin_write(self, conn: Connection) -> None:
        # Straight on the driver: SQLAlchemy's execution layer cost more than the statement.
        _driver(conn).execute("BEGIN IMMEDIATE")

    def start(self, database: str | None) -> None:
        if database is not None and not self.memory:
            self.checkpointer = WalCheckpointer(
                database,
                self.tuning.busy_timeout_ms,
                long_reads=self.long_reads,
                write_lock=self.write_lock,
                limit_bytes=self.tuning.wal_checkpoint_mb * MIB,
            )
            self.checkpointer.start()

    def after_commit(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.committed()

    def stop(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.stop()
            self.checkpointer = None

    def before_close(self, conn: Connection) -> None:
        # SQLite's advice for long-lived connections: refresh planner statistics where useful.
        # Best effort: another process's write must not keep the store from closing.
        conn.exec_driver_sql("PRAGMA busy_timeout=0")
        conn.exec_driver_sql("PRAGMA analysis_limit=1000")
        conn.exec_driver_sql("PRAGMA optimize")

    def begin_read(self, conn: Connection) -> None:
        _driver(conn).execute("BEGIN")

    @contextmanager
    def deadline(self, conn: Connection, at: float, error: QuipuError) -> Iterator[None]:
        with self.work_limits(conn, at, error, None, error):
            yield

    @contextmanager
    def work_limits(
        self, conn: Connection, at: float | None, late: QuipuError, steps: int | None, costly: QuipuError
    ) -> Iterator[None]:
        # A progress handler that answers non-zero makes SQLite abandon the running statement
        # with SQLITE_INTERRUPT; a read transaction stays open and rolls back as usual. It runs
        # every _PROGRESS_STEPS VM steps, counted over every statement on the connection, so the
        # calls it may take are the work budget (the first call past it stops the statement).
        raw: sqlite3.Connection = conn.connection.driver_connection  # type: ignore[assignment]
        clock = time.monotonic
        calls = -1 if steps is None else steps // _PROGRESS_STEPS
        spent = 0

        def handler() -> bool:
            nonlocal spent
            spent += 1
            return spent > calls >= 0 or (at is not None and clock() > at)

        raw.set_progress_handler(handler, _PROGRESS_STEPS)
        try:
            yield
        except (sqlite3.OperationalError, DBAPIError) as exc:
            if _interrupted(exc) and spent > calls >= 0:
                raise costly from None
            if _interrupted(exc) and at is not None and clock() > at:
                raise late from None
            raise
        finally:
            # Always: the connection goes back to the pool and must not keep these limits.
            raw.set_progress_handler(None, 0)

    @contextmanager
    def indexes_deferred(self, conn: Connection, table: Table, incoming: int) -> Iterator[None]:
        # Building an index once over sorted keys beats maintaining it row by row when the batch
        # dominates the table (2.4 s instead of about 4 s per million facts, measured). DDL is
        # transactional in SQLite, so a failed load restores the indexes with everything else.
        existing = conn.exec_driver_sql(f"SELECT MAX(rowid) FROM {table.name}").scalar() or 0
        if incoming < _DEFER_INDEXES_MIN or incoming < 2 * existing:
            yield
            return
        for index in table.indexes:
            index.drop(conn, checkfirst=True)
        yield
        for index in table.indexes:
            index.create(conn)
        # Fresh, exact statistics for the planner (0.6 s per million facts, measured). A sampled
        # ANALYZE reads the first rows of each index only, and the graph column of a load into
        # one graph then looks selective (1,001 rows per graph instead of all of them), which
        # sent property-path closures through a Bloom filter per recursive step.
        conn.exec_driver_sql("PRAGMA analysis_limit=0")
        conn.exec_driver_sql(f"ANALYZE {table.name}")
        forget_load_shaped_statistics(conn)

    def insert_tuples(
        self,
        conn: Connection,
        table: Table,
        columns: Sequence[str],
        rows: Sequence[tuple[Any, ...]],
        constants: Mapping[str, int | str] | None = None,
    ) -> None:
        marks = ["?"] * len(columns)
        names = list(columns)
        for name, value in (constants or {}).items():
            # Written into the statement: binding them again for every row of a million-row load
            # cost 0.5 s (measured). Only ints and quoted text, never caller-shaped SQL.
            names.append(name)
            marks.append(str(int(value)) if isinstance(value, int) else "'" + value.replace("'", "''") + "'")
        sql = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join(marks)})"
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        cursor.executemany(sql, rows)


# One advisory lock key for every writer of a database: "quipu" in ASCII.
_WRITE_LOCK_KEY = 0x7175697075


class PostgresDialect(Dialect):
    """Writers from any number of processes serialise on one transaction-scoped advisory lock,
    so transaction ids are allocated in commit order; reads are REPEATABLE READ snapshots."""

    name = "postgresql"
    # The value functions the server has are pg_functions' (installed by ``prepare``); the
    # compiler hands a query needing any other to rdflib's evaluator.
    sparql_functions = False
    distinct_order_keys_selected = True
    round_trips_costly = True
    prepares = True

    def driver_errors(self) -> tuple[type[Exception], ...]:
        import psycopg

        return (psycopg.Error,)

    def configure(self, engine: Engine, *, write: bool) -> None:
        super().configure(engine, write=write)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            import psycopg

            with dbapi_conn.cursor() as cur:
                cur.execute("SET application_name = 'quipu'")
            dbapi_conn.commit()
            if not write:
                # Every read is a snapshot: psycopg then opens each transaction with one
                # "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", not BEGIN plus a SET.
                dbapi_conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                dbapi_conn.read_only = True

    def begin_write(self, conn: Connection) -> None:
        _pg_cursor(conn).execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK_KEY,))

    def begin_read(self, conn: Connection) -> None:
        pass  # the reader connections begin REPEATABLE READ, READ ONLY transactions (configure)

    def regex(self, text: ColumnElement[Any], pattern: str, flags: str | None) -> ColumnElement[Any] | None:
        # Only patterns in the subset where PostgreSQL's regexes provably agree with Python's re
        # (pg_regex); any other stays on rdflib, which the q_regex functions' absence ensures.
        if not pg_regex.pg_regex_ok(pattern, flags):
            return None
        return func.q_pgregex(text, literal(pg_regex.to_pg(pattern, flags), Text))

    def replace(
        self, text: ColumnElement[Any], pattern: str, flags: str | None, replacement: str
    ) -> ColumnElement[Any] | None:
        if not pg_regex.pg_replace_ok(pattern, flags, replacement):
            return None
        are, substitute = pg_regex.to_pg_replace(pattern, flags, replacement)
        return func.q_pgreplace(text, literal(are, Text), literal(substitute, Text))

    def prepare(self, conn: Connection) -> None:
        import psycopg

        cursor = _pg_cursor(conn)
        try:
            with cursor.connection.transaction():  # a savepoint: a refusal must not end the write
                if pg_functions.installed_version(cursor) != pg_functions.VERSION:
                    pg_functions.install(cursor)
        except psycopg.errors.InsufficientPrivilege as exc:
            log.warning(
                "the SPARQL value functions could not be installed (%s): queries needing them "
                "run on rdflib's evaluator",
                str(exc).strip(),
            )
            self.functions = frozenset()
            return
        self.functions = pg_functions.names()

    @contextmanager
    def deadline(self, conn: Connection, at: float, error: QuipuError) -> Iterator[None]:
        import psycopg.errors

        left_ms = max(1, int((at - time.monotonic()) * 1000))
        cursor = _pg_cursor(conn)
        cursor.execute(f"SET LOCAL statement_timeout = {left_ms}")
        cancelled = False
        try:
            yield
        except (psycopg.errors.QueryCanceled, DBAPIError) as exc:
            orig = exc.orig if isinstance(exc, DBAPIError) else exc
            if isinstance(orig, psycopg.errors.QueryCanceled):
                cancelled = True
                raise error from None
            raise
        finally:
            if not cancelled:
                # The transaction goes on without a deadline (an aborted one just rolls back).
                with suppress(psycopg.Error):
                    cursor.execute("SET LOCAL statement_timeout = 0")

    @contextmanager
    def indexes_deferred(self, conn: Connection, table: Table, incoming: int) -> Iterator[None]:
        # As on SQLite: one index build over the loaded rows beats maintaining every index row by
        # row when the batch dominates the table. DDL is transactional here too. A smaller load
        # that at least triples the table refreshes the planner's statistics: without them every
        # estimate is one row and joins pick nested loops (16-110x slower, measured at 3k
        # triples); autovacuum would get there too, but only after the first slow queries.
        if incoming < _ANALYZE_MIN or "id" not in table.c:
            yield
            return
        if incoming < 2 * _max_id(conn, table):
            yield
            return
        deferred = incoming >= _DEFER_INDEXES_MIN
        shared = [i for i in table.indexes if i.name not in LIVE_INDEXES]
        live = table is facts
        if deferred:
            for index in shared:
                index.drop(conn, checkfirst=True)
            if live:
                for name in sorted(LIVE_INDEXES):
                    conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
        yield
        if deferred:
            for index in shared:
                index.create(conn)
            if live:
                for ddl in postgres_live_index_ddl():
                    conn.exec_driver_sql(ddl)
        _analyze(conn, table)

    def grew(self, conn: Connection, table: Table, incoming: int) -> None:
        # A write that at least doubled a small table refreshes its statistics too, as a bulk
        # load does: with none, every live-index scan is estimated at one row, and the
        # co-occurrence question over 450 facts ran 21 s instead of 0.06 (a nested loop of
        # full scans). ANALYZE of a small table costs milliseconds.
        if incoming < _ANALYZE_MIN or "id" not in table.c:
            return
        if 2 * incoming >= _max_id(conn, table):
            _analyze(conn, table)

    def insert_tuples(
        self,
        conn: Connection,
        table: Table,
        columns: Sequence[str],
        rows: Sequence[tuple[Any, ...]],
        constants: Mapping[str, int | str] | None = None,
    ) -> None:
        # COPY: one stream for the whole batch instead of a statement per row.
        cursor = _pg_cursor(conn)
        tail = tuple((constants or {}).values())
        names = ", ".join([*columns, *(constants or {})])
        with cursor.copy(f"COPY {table.name} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row + tail if tail else row)


def _max_id(conn: Connection, table: Table) -> int:
    return int(conn.exec_driver_sql(f"SELECT COALESCE(MAX(id), 0) FROM {table.name}").scalar() or 0)


def _analyze(conn: Connection, table: Table) -> None:
    """PostgreSQL statistics for ``table`` and the term dictionary its rows point into."""
    conn.exec_driver_sql(f"ANALYZE {table.name}")
    conn.exec_driver_sql("ANALYZE terms")


def _pg_cursor(conn: Connection) -> Any:
    """A psycopg cursor on ``conn``'s driver connection, inside SQLAlchemy's transaction."""
    return conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]


# -- SQL the two backends spell differently, as expressions that compile per dialect -----------


class utf8_text(FunctionElement[str]):  # noqa: N801 - used like func.*
    """The text whose UTF-8 bytes are the blob argument."""

    type = Text()
    inherit_cache = True
    name = "utf8_text"


class text_position(FunctionElement[int]):  # noqa: N801
    """1-based position of the second text in the first, 0 when absent."""

    type = Integer()
    inherit_cache = True
    name = "text_position"


class text_suffix(FunctionElement[str]):  # noqa: N801
    """The last ``n`` characters of a text."""

    type = Text()
    inherit_cache = True
    name = "text_suffix"


@compiles(utf8_text, "sqlite")
def _utf8_text_sqlite(element: utf8_text, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS TEXT)"


@compiles(utf8_text, "postgresql")
def _utf8_text_postgresql(element: utf8_text, compiler: SQLCompiler, **kw: Any) -> str:
    return f"convert_from({compiler.process(element.clauses, **kw)}, 'UTF8')"


@compiles(text_position, "sqlite")
def _position_sqlite(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    return f"instr({compiler.process(element.clauses, **kw)})"


@compiles(text_position, "postgresql")
def _position_postgresql(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    return f"strpos({compiler.process(element.clauses, **kw)})"


@compiles(text_suffix, "sqlite")
def _suffix_sqlite(element: text_suffix, compiler: SQLCompiler, **kw: Any) -> str:
    text, n = list(element.clauses)
    return f"substr({compiler.process(text, **kw)}, -({compiler.process(n, **kw)}))"


@compiles(text_suffix, "postgresql")
def _suffix_postgresql(element: text_suffix, compiler: SQLCompiler, **kw: Any) -> str:
    return f"right({compiler.process(element.clauses, **kw)})"


def _driver(conn: Connection) -> sqlite3.Connection:
    """The DBAPI connection under ``conn``; SQLAlchemy's pysqlite begin is a no-op, so a
    ``BEGIN`` run here is the transaction that ``conn.begin()``'s commit or rollback ends."""
    return conn.connection.dbapi_connection  # type: ignore[return-value]


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` (the driver's, or SQLAlchemy's wrapper of it) is SQLITE_INTERRUPT."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    return isinstance(orig, sqlite3.OperationalError) and (
        getattr(orig, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT or str(orig) == "interrupted"
    )


class Prepared:
    """A Core statement compiled once for one backend and run straight on the DBAPI cursor.

    The few statements of every small write cost more in SQLAlchemy's execution layer than in
    the database; these skip it. Only plain bind parameters (no expanding IN lists).
    """

    def __init__(self, statement: ClauseElement, sa_dialect: SADialect) -> None:
        compiled = statement.compile(dialect=sa_dialect)
        self.sql = str(compiled)
        self.defaults: dict[str, Any] = dict(compiled.params)  # values bound inside the statement
        order = getattr(compiled, "positiontup", None)  # set for positional paramstyles
        self.names: tuple[str, ...] | None = tuple(order) if order is not None else None
        # Positional arguments in one C call (a statement over a VALUES list binds hundreds).
        self._pick: Any = operator.itemgetter(*self.names) if self.names and len(self.names) > 1 else None
        # Named placeholders (psycopg's pyformat): exactly the names the text uses, since psycopg
        # refuses a parameter the query does not use, as SQLite does not.
        self.keys: tuple[str, ...] | None = (
            tuple(dict.fromkeys(_PYFORMAT_NAME.findall(self.sql)))
            if sa_dialect.paramstyle == "pyformat"
            else None
        )

    def run(self, conn: Connection, params: dict[str, Any] | None = None) -> Any:
        """Execute and return the DBAPI cursor (for fetchone/fetchall/rowcount)."""
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        merged = {**self.defaults, **params} if params else self.defaults
        args: Any
        if self._pick is not None:
            args = self._pick(merged)
        elif self.names is not None:
            args = tuple(merged[n] for n in self.names)
        elif self.keys is not None:
            args = {n: merged[n] for n in self.keys}
        else:
            args = merged
        cursor.execute(self.sql, args)
        return cursor
