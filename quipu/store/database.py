"""Opening a store: engines, the single writer, read snapshots and automatic migrations."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from quipu.errors import ConfigError, QuipuError, StorageError, WriteRefused
from quipu.identity import Authenticated
from quipu.store.archive_mounts import Archives
from quipu.store.context import TxInfo, WriteContext, head_tx
from quipu.store.dialect import Dialect, PostgresDialect, SqliteDialect, SqliteTuning
from quipu.store.events import SeenTerms, emit, record_refusal
from quipu.store.fresh_stores import copy_into, create_file, keep
from quipu.store.graph_labels import LabelFloor
from quipu.store.schema import SCHEMA_REVISION
from quipu.store.stage import forget_temp_tables
from quipu.store.terms import TermDictionary
from quipu.store.wal import LongReads, wal_bytes

if TYPE_CHECKING:
    from alembic.config import Config


def migrations_dir() -> Path:
    """The Alembic scripts: beside the package in a checkout, inside it in a wheel."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent / "migrations", package / "_migrations"):
        if (candidate / "env.py").exists():
            return candidate
    raise ConfigError("quipu's migrations directory is missing from this installation")


def alembic_config(url: str | None = None) -> Config:
    from alembic.config import Config  # Alembic loads only when a store needs migrating

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url:
        cfg.set_main_option("sqlalchemy.url", url)
    return cfg


_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


@dataclass(frozen=True)
class Backend:
    """Where a store lives: its SQLAlchemy URL, which dialect, and whether it is in memory."""

    url: str
    kind: str  # "sqlite" | "postgresql"
    memory: bool = False

    @property
    def display(self) -> str:
        """The URL without a password, for messages and logs."""
        return make_url(self.url).render_as_string(hide_password=True)


def resolve(location: str) -> Backend:
    """A path, ``:memory:``, ``sqlite:///...`` or ``postgresql://...`` as a ``Backend``."""
    if location in (":memory:", "sqlite://", "sqlite:///:memory:"):
        return Backend("sqlite://", "sqlite", memory=True)
    if location.startswith("sqlite:"):
        return Backend(location, "sqlite", memory=make_url(location).database in (None, "", ":memory:"))
    if "://" in location:
        scheme = location.split("://", 1)[0].lower()
        if scheme in _POSTGRES_SCHEMES:
            # psycopg 3 is the driver whichever spelling the user wrote.
            return Backend("postgresql+psycopg://" + location.split("://", 1)[1], "postgresql")
        raise ConfigError(
            f"unsupported store URL scheme {scheme!r}: use a SQLite file path, ':memory:', "
            "'sqlite:///PATH' or 'postgresql://USER@HOST/DATABASE'"
        )
    return Backend(f"sqlite:///{Path(location).expanduser()}", "sqlite")


def display_location(location: str) -> str:
    """``location`` fit for logs: a store URL loses its password."""
    try:
        backend = resolve(location)
    except ConfigError:
        return location
    return backend.display if backend.kind == "postgresql" else location


def check_location(location: str) -> None:
    """Refuse a store location that cannot be opened, before anything is created."""
    backend = resolve(location)
    directory = Path(make_url(backend.url).database or "").parent
    if backend.kind == "sqlite" and not backend.memory and not directory.exists():
        raise ConfigError(f"cannot create store {location!r}: its directory does not exist")


class Database:
    """A store on disk or in memory: one writer connection and a pool of readers.

    The pool keeps ``readers`` connections open and opens more under load, up to twice that or
    ``max_readers``, whichever is more: a server sizes it so that every read it admits at once
    has a connection (quipu/rest/lanes.py) and none waits for one a slow query holds.
    """

    def __init__(
        self,
        location: str,
        tuning: SqliteTuning | None = None,
        readers: int = 4,
        max_readers: int | None = None,
    ) -> None:
        backend = resolve(location)
        self.location = location
        self.backend = backend
        self.memory = backend.memory
        self._write_lock = threading.RLock()
        # Called after a write commits with its transactions and the types of its advisory
        # events (``shapes.loaded``, …): reactive reasoning.
        self.committed_listeners: list[Callable[[tuple[TxInfo, ...], tuple[str, ...]], None]] = []
        # Reads that may run for seconds: the SQLite checkpointer drains them before emptying the log.
        self.long_reads = LongReads()
        check_location(location)
        overflow = max(readers, (max_readers or 0) - readers)
        if backend.kind == "postgresql":
            self.dialect: Dialect = PostgresDialect()
            self._open_postgres(backend.url, readers, overflow)
        else:
            self.dialect = SqliteDialect(
                tuning or SqliteTuning(),
                memory=backend.memory,
                long_reads=self.long_reads,
                write_lock=self._write_lock,
            )
            url = make_url(backend.url)
            if not backend.memory and not url.query and url.database:
                # A new file: a copy of the first store this process migrated from nothing, if any.
                create_file(SCHEMA_REVISION, url.database)
            self._open_sqlite(backend.url, readers, overflow)
        self._failures: tuple[type[Exception], ...] = (SQLAlchemyError, *self.dialect.driver_errors())
        self.terms = TermDictionary()
        # [quipu.labels]: set by the composition root; None reads with no label work at all.
        self.label_floor: LabelFloor | None = None
        # In-transaction gates over what a write staged (DM §12 step 5: the OWL constraints), run
        # after its statements and before its events; raising refuses and rolls back the write.
        self.staged_checks: list[Callable[[WriteContext], None]] = []
        self.schema_terms_seen: SeenTerms = set()
        # Frozen graphs' archive packs, attached to every reader connection (archive_mounts.py).
        self.archives = Archives(enabled=backend.kind == "sqlite" and not backend.memory)
        try:
            self.upgrade()
            if self.dialect.prepares:
                with self._write_lock, self.writer.connect() as conn, conn.begin():
                    self.dialect.begin_write(conn)
                    self.dialect.prepare(conn)
            if self.archives.enabled:
                self.reload_archives()  # rule FZ-4: a pack the registry names must exist
                event.listen(self.reader, "checkout", self.archives.on_checkout)
        except BaseException:
            self._dispose()
            raise
        if backend.kind == "sqlite":
            self.dialect.start(None if backend.memory else make_url(backend.url).database)

    def _open_sqlite(self, url: str, readers: int, overflow: int) -> None:
        # enable_from_linting=False: a SPARQL pattern with disjoint parts is a cross product on
        # purpose, not a forgotten join condition.
        if self.memory:
            # One shared connection: a second one would see a different, empty database.
            self.writer = create_engine(
                url,
                poolclass=StaticPool,
                connect_args={"check_same_thread": False},
                enable_from_linting=False,
            )
            self.dialect.configure(self.writer, write=False)
            self.reader = self.writer
            return
        self.writer = create_engine(
            url,
            pool_size=1,
            max_overflow=0,
            connect_args={"check_same_thread": False},
            enable_from_linting=False,
        )
        self.reader = create_engine(
            url,
            pool_size=readers,
            max_overflow=overflow,
            connect_args={"check_same_thread": False},
            enable_from_linting=False,
        )
        self.dialect.configure(self.writer, write=True)
        self.dialect.configure(self.reader, write=False)

    def _open_postgres(self, url: str, readers: int, overflow: int) -> None:
        try:
            import psycopg  # noqa: F401 - the driver SQLAlchemy loads for this URL
        except ImportError:  # pragma: no cover - a dependency of quipu
            raise ConfigError(
                "the PostgreSQL backend needs the psycopg package (pip install psycopg)"
            ) from None
        # pool_pre_ping on the writer only: a server restart must not fail a write. A read pays
        # no extra round trip for it (it was a third of a point lookup's time, measured); after
        # a restart one read fails and the pool reconnects.
        self.writer = create_engine(
            url, pool_size=1, max_overflow=0, pool_pre_ping=True, enable_from_linting=False
        )
        self.reader = create_engine(url, pool_size=readers, max_overflow=overflow, enable_from_linting=False)
        self.dialect.configure(self.writer, write=True)
        self.dialect.configure(self.reader, write=False)
        try:
            with self.writer.connect():
                pass
        except SQLAlchemyError as exc:
            self._dispose()
            reason = getattr(exc, "orig", None) or exc
            raise ConfigError(f"cannot open store {self.backend.display}: {str(reason).strip()}") from None

    # -- schema -----------------------------------------------------------------------------

    def schema_revision(self) -> str | None:
        """The Alembic revision the store is at (None for a store never migrated)."""
        with self.read() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            found = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            return None if found is None else str(found)

    def upgrade(self) -> None:
        """Apply any migrations this file has not seen (a new file starts from nothing).

        A new SQLite store is kept (store/fresh_stores.py): the next one this process makes is a
        copy of it, not migrated again."""
        revision = self.schema_revision()
        if revision == SCHEMA_REVISION:
            return
        fresh = revision is None and self.backend.kind == "sqlite" and self._holds_nothing()
        if fresh and self.memory:
            with self._write_lock, self.writer.connect() as conn:
                if copy_into(SCHEMA_REVISION, self._driver(conn)):
                    return
        self.migrate(alembic_config(), "head")
        if fresh:
            with self._write_lock, self.writer.connect() as conn:
                keep(SCHEMA_REVISION, self._driver(conn).serialize())

    def _holds_nothing(self) -> bool:
        with self.read() as conn:
            return conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar() == 0

    @staticmethod
    def _driver(conn: Connection) -> sqlite3.Connection:
        driver = conn.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        return driver

    def migrate(self, cfg: Config, revision: str) -> None:
        """Upgrade inside one write transaction: a failed migration leaves the file as it was."""
        from alembic import command

        with self._write_lock, self.writer.connect() as conn, conn.begin():
            self.dialect.begin_write(conn)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)

    # -- transactions -----------------------------------------------------------------------

    @contextmanager
    def translated(self) -> Iterator[None]:
        """Database failures as ``StorageError`` (500), the driver's exception kept as the cause:
        nothing above the store catches a SQLAlchemy or driver class. quipu's own errors pass."""
        try:
            yield
        except QuipuError:
            raise
        except self._failures as exc:
            raise StorageError("the store could not complete the request") from exc

    @contextmanager
    def write(self, auth: Authenticated | None = None) -> Iterator[WriteContext]:
        """A write transaction: serialised, all-or-nothing. ``auth`` is the verified caller."""
        with self.translated(), self._write_lock, self.writer.connect() as conn:
            ctx = WriteContext(conn, self.dialect, auth=auth)
            try:
                with conn.begin():
                    self.dialect.begin_write(conn)
                    yield ctx
                    if ctx.transactions:
                        for check in self.staged_checks:
                            check(ctx)
                    if ctx.transactions or ctx.advisories:
                        emit(ctx, self.terms, self.schema_terms_seen)
            except BaseException as exc:
                forget_temp_tables(conn)
                if ctx.refusal is not None and isinstance(exc, WriteRefused):
                    record_refusal(conn, self.dialect, ctx.refusal, exc.message)
                raise
            self.terms.remember(ctx.pending_terms)
            self.schema_terms_seen.update(ctx.schema_terms)
        self.dialect.after_commit()
        if ctx.transactions or ctx.advisories:  # post-commit work (DM write path step 6),
            kinds = tuple(event.type for event in ctx.advisories)  # outside the writer lock
            for listener in self.committed_listeners:
                listener(tuple(ctx.transactions), kinds)

    @contextmanager
    def read(self, *, long: bool = False) -> Iterator[Connection]:
        """A read snapshot: every statement inside sees one committed state.

        ``long``: the read may run for seconds (a SPARQL query, an export). It then waits while
        the SQLite checkpointer empties the write-ahead log, which a stream of long snapshots
        would otherwise keep from ever finishing (store/wal.py)."""
        with self.long_reads.running() if long else nullcontext(), self.translated():
            if self.memory:
                with self._write_lock, self.reader.connect() as conn, conn.begin():
                    self.dialect.begin_read(conn)
                    yield conn
            else:
                with self.reader.connect() as conn, conn.begin():
                    self.dialect.begin_read(conn)
                    try:
                        yield conn
                    finally:
                        if self.archives.enabled:
                            Archives.remove_view(conn)

    def reload_archives(self) -> None:
        """Re-read the frozen-pack registry now (after a freeze or thaw committed here); reader
        connections attach or detach at their next checkout."""
        if not self.archives.enabled:
            return
        with self._write_lock, self.writer.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            self.archives.load(driver)

    @property
    def file_path(self) -> str | None:
        """The SQLite store's file (None for PostgreSQL and in-memory stores)."""
        if self.backend.kind != "sqlite" or self.memory:
            return None
        return make_url(self.backend.url).database

    def wal_bytes(self) -> int | None:
        """The size of the write-ahead log file of a SQLite store on disk, else None."""
        if self.backend.kind != "sqlite" or self.memory:
            return None
        return wal_bytes(make_url(self.backend.url).database or "")

    def head_tx(self, conn: Connection) -> int:
        """The latest committed transaction id (0 for an empty store)."""
        return head_tx(conn)

    def close(self) -> None:
        try:
            with self._write_lock, self.writer.connect() as conn:
                self.dialect.before_close(conn)
        except SQLAlchemyError:  # upkeep only: never let it keep the store from closing
            pass
        self.dialect.stop()
        self._dispose()

    def _dispose(self) -> None:
        self.writer.dispose()
        if self.reader is not self.writer:
            self.reader.dispose()
