"""Which backend the suite runs on: SQLite files by default, PostgreSQL under ``QUIPU_TEST_DB``.

``store_location(tmp_path, name)`` is what a test opens instead of ``tmp_path / name``. On SQLite
it is that file (``migrated_location`` places a copy of a file migrated once per test process
there first, which saves the migration: about 45 ms a store). With ``QUIPU_TEST_DB=postgresql://...`` (a server the test run may create
databases on) it is a database of its own, named after the path, so opening the same location
twice in a test opens the same store, and two locations are two stores. Each is copied from a
template migrated to head once per run (a file copy: ~10 ms). A database under a test's
``tmp_path`` is dropped when that test ends; the others (module fixtures) when the run ends.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Final

ENV: Final = "QUIPU_TEST_DB"
# One template per test process: two runs may share a server (the halves of a CI run).
_TEMPLATE: Final = f"quipu_test_template_{os.getpid()}"
_lock = threading.Lock()
_created: dict[str, Path] = {}  # database -> the location it stands for
_template_ready = False


_asked = 0  # calls of server_url by tests (every way to a test store goes through it)


def server_url() -> str | None:
    """The PostgreSQL server under test, or None for SQLite."""
    global _asked
    _asked += 1
    return _configured()


def on_postgres() -> bool:
    return server_url() is not None


def _configured() -> str | None:
    url = os.environ.get(ENV, "").strip()
    return url or None


def postgres_half() -> bool:
    """Whether this run is the PostgreSQL half, for the suite's own hooks (not counted by ``asked``)."""
    return _configured() is not None


def asked() -> int:
    """How often tests have asked which backend they run on, or for a store location: a test
    that never does runs the same on both halves (``backend_independent`` in tests/conftest.py)."""
    return _asked


def _with_database(url: str, database: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=database).render_as_string(hide_password=False)


def _admin(dbname: str = "postgres") -> Any:
    """An autocommit psycopg connection to the server's maintenance database (or ``dbname``)."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(server_url() or "")
    params: dict[str, Any] = dict(url.query)
    return psycopg.connect(
        host=params.pop("host", url.host),
        port=url.port,
        user=url.username,
        password=url.password,
        dbname=dbname,
        autocommit=True,
    )


# A copy of the migrated template would otherwise carry the template's store identity (the id
# its migration wrote): each test store gets its own, as a store migrated afresh does.
_REIDENTIFY: Final = "UPDATE store_identity SET id = 'urn:quipu:store:' || {}"


def _new_identity() -> str:
    import uuid

    return str(uuid.uuid4())


def _ensure_template(admin: Any) -> None:
    global _template_ready
    if _template_ready:
        return
    import quipu

    exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (_TEMPLATE,)).fetchone()
    if exists is not None:
        admin.execute(f"DROP DATABASE {_TEMPLATE} WITH (FORCE)")
    admin.execute(f"CREATE DATABASE {_TEMPLATE}")
    quipu.open(_with_database(server_url() or "", _TEMPLATE)).close()
    _template_ready = True


def database_name(path: Path) -> str:
    return "q_" + hashlib.sha256(str(path).encode()).hexdigest()[:24]


def store_location(directory: Path, name: str = "kb.db", *, fresh: bool = False) -> str:
    """Where a test's store lives: ``directory / name`` on SQLite, a database of its own on
    PostgreSQL (``fresh``: an empty one, before any migration, for migration tests)."""
    path = directory / name
    url = server_url()
    if url is None:
        return str(path)
    database = database_name(path)
    with _lock:
        if database not in _created:
            with _admin() as admin:
                if not fresh:
                    _ensure_template(admin)
                template = "template0" if fresh else _TEMPLATE
                admin.execute(f"CREATE DATABASE {database} TEMPLATE {template} STRATEGY FILE_COPY")
            if not fresh:
                with _admin(database) as own:
                    own.execute(_REIDENTIFY.format("%s"), (_new_identity(),))
            _created[database] = path
    return _with_database(url, database)


_sqlite_template: Path | None = None


def migrated_location(directory: Path, name: str = "kb.db") -> str:
    """``store_location``, already migrated: on SQLite a copy of a template file migrated once per
    process (the store opens as a fresh, up-to-date one); on PostgreSQL the same database."""
    if server_url() is not None:
        return store_location(directory, name)
    global _sqlite_template
    with _lock:
        if _sqlite_template is None:
            import quipu

            template = Path(tempfile.mkdtemp(prefix="quipu-template-")) / "template.db"
            quipu.open(str(template)).close()
            if template.with_name("template.db-wal").exists():  # a checkpoint the close skipped
                raise RuntimeError("the migrated SQLite template kept a WAL file: it cannot be copied alone")
            _sqlite_template = template
    path = directory / name
    shutil.copyfile(_sqlite_template, path)
    with closing(sqlite3.connect(path)) as own, own:
        own.execute(_REIDENTIFY.format("?"), (_new_identity(),))
    return str(path)


def remove_sqlite_template() -> None:
    global _sqlite_template
    if _sqlite_template is not None:
        shutil.rmtree(_sqlite_template.parent, ignore_errors=True)
        _sqlite_template = None


def drop_template() -> None:
    global _template_ready
    if _template_ready:
        with _admin() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {_TEMPLATE} WITH (FORCE)")
        _template_ready = False


def drop_under(directory: Path | None) -> None:
    """Drop the databases standing for locations under ``directory`` (None: all of them).
    Connections a test left open are closed by the drop."""
    with _lock:
        doomed = [d for d, p in _created.items() if directory is None or p.is_relative_to(directory)]
        if not doomed:
            return
        with _admin() as admin:
            for database in doomed:
                admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
                del _created[database]


@contextmanager
def scratch_location() -> Iterator[str]:
    """A store for one short-lived use, removed afterwards: on SQLite a copy of the migrated
    template file (opening it costs a third of migrating ``:memory:``), on PostgreSQL a database of
    its own. For harnesses that open a store per case outside a test's tmp_path."""
    directory = Path(tempfile.mkdtemp(prefix="quipu-scratch-"))
    try:
        yield migrated_location(directory, "scratch.db")
    finally:
        drop_under(directory)
        shutil.rmtree(directory, ignore_errors=True)
