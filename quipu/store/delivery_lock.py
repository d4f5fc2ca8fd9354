"""Who may deliver a subscription now: an exclusive try-lock that dies with its process.

Two ``quipu-server`` processes on one store must not both POST the same batch (the delivery
worker, quipu.events.delivery). The lock is taken before the cursor is read and released after
the cursor is written, so the second process sees the first one's progress.

* PostgreSQL: a session-level advisory lock per subscription,
  ``pg_try_advisory_lock(<delivery class key>, <subscription id>)``, on a connection of its own
  (not one of the reader pool's, which it would hold for the worker's life). The two-key form
  lives apart from the write lock's one-key ``pg_advisory_xact_lock``. A process that dies
  loses its session, and with it its locks, so another server takes over at its next tick.
* SQLite: one ``flock`` on ``<store file>.delivery.lock``, held by a worker from its first tick
  to its stop: of two servers on one file, only one delivers (SQLite has a single writer
  anyway). The kernel drops the lock when the process dies.
* An in-memory store is private to its process: nothing to exclude.
"""

from __future__ import annotations

import os
import sys
import zlib
from contextlib import suppress
from typing import Final, Protocol

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.exc import SQLAlchemyError

from quipu.errors import StorageError
from quipu.store.database import Database

# The first key of the two-int4 advisory lock: names "webhook delivery" among a database's
# advisory locks (any other user of the two-key form picks its own).
CLASS_KEY: Final = zlib.crc32(b"quipu.delivery") & 0x7FFFFFFF
SUFFIX: Final = ".delivery.lock"


class DeliveryLock(Protocol):
    def acquire(self, sub_id: int) -> bool:
        """Try to take the subscription's lock; False when another process holds it."""
        ...

    def release(self, sub_id: int) -> None:
        """Give it back after the delivery (a no-op where the lock is per worker)."""
        ...

    def close(self) -> None:
        """Release everything this worker holds."""
        ...


class NoLock:
    """An in-memory store: one process, one worker."""

    def acquire(self, sub_id: int) -> bool:
        return True

    def release(self, sub_id: int) -> None:
        return None

    def close(self) -> None:
        return None


class FileLock:
    """SQLite: an exclusive ``flock`` on a sidecar file, kept from the first success to close."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, sub_id: int) -> bool:
        if self._fd is not None:
            return True
        if sys.platform == "win32":  # pragma: no cover - no flock: one server per store there
            self._fd = -1
            return True
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self, sub_id: int) -> None:
        return None  # held for the worker's life: the other process stays out until it stops

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and fd >= 0:
            os.close(fd)  # closing the descriptor drops the flock


class AdvisoryLock:
    """PostgreSQL: ``pg_try_advisory_lock`` per subscription on a dedicated session."""

    def __init__(self, url: str) -> None:
        # Autocommit: the session holds locks, never an open transaction (or its snapshot).
        self._engine = create_engine(url, pool_size=1, max_overflow=0, isolation_level="AUTOCOMMIT")
        self._conn: Connection | None = None

    @staticmethod
    def key(sub_id: int) -> int:
        return sub_id & 0x7FFFFFFF  # int4; ids beyond 2**31 would share keys, never in practice

    def _session(self) -> Connection:
        if self._conn is None or self._conn.closed or self._conn.invalidated:
            self._drop()
            self._conn = self._engine.connect()
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with suppress(SQLAlchemyError):
                conn.close()

    def _call(self, function: str, sub_id: int) -> bool:
        query = text(f"SELECT {function}(CAST(:cls AS int4), CAST(:sub AS int4))")
        try:
            return bool(self._session().execute(query, {"cls": CLASS_KEY, "sub": self.key(sub_id)}).scalar())
        except SQLAlchemyError as exc:
            # A lost session has lost its locks too: start over with a new one next time.
            self._drop()
            raise StorageError("the delivery lock could not be reached") from exc

    def acquire(self, sub_id: int) -> bool:
        return self._call("pg_try_advisory_lock", sub_id)

    def release(self, sub_id: int) -> None:
        with suppress(StorageError):  # a lost session has lost the lock too
            self._call("pg_advisory_unlock", sub_id)

    def close(self) -> None:
        self._drop()
        self._engine.dispose()


def open_lock(db: Database) -> DeliveryLock:
    """The lock fitting ``db``'s backend."""
    if db.backend.kind == "postgresql":
        return AdvisoryLock(db.backend.url)
    path = db.file_path
    if path is None:
        return NoLock()
    return FileLock(path + SUFFIX)
