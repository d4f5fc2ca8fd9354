"""New SQLite stores as copies of the first one a process migrated, not migrated again.

Migrating an empty SQLite store to head runs every Alembic script (about 45 ms, and loading
Alembic), which a process that makes many stores pays each time: a test suite, a harness with a
scratch store per case. The first store a process migrates from nothing is kept here, as bytes;
a later new store at the same revision starts as a copy of it, so its schema and seed rows are
the migrations' own by construction. What the migrations make unique to a store is made anew:
its identity (``store_identity``, written by migrations/versions/0012_sharing.py), so two
copies are two stores. tests/store/test_fresh_stores.py holds a copy equal to a migrated store.

Only stores that hold nothing yet qualify: an in-memory store, or a file that does not exist. A
file at an older revision migrates as before.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import uuid
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

_lock = threading.Lock()
_images: dict[str, bytes] = {}  # schema revision -> the migrated empty store's bytes

# Bytes 18 and 19 of a SQLite file's header are 2 for a WAL-mode file, 1 otherwise. The image
# must be 1: an in-memory database cannot open a WAL-mode one, and a file copy is switched to WAL
# by the connection that opens it (as a newly created file is).
_FORMAT_BYTES = slice(18, 20)


def keep(revision: str, image: bytes) -> None:
    """Remember the bytes of a store just migrated from nothing to ``revision`` (the first kept
    stays: every later one is the same schema)."""
    header = bytearray(image[:100])
    header[_FORMAT_BYTES] = b"\x01\x01"
    with _lock:
        _images.setdefault(revision, bytes(header) + image[100:])


def _identity() -> tuple[str, str]:
    # Exactly what migration 0012 writes: a random store id and the time it was made.
    return f"urn:quipu:store:{uuid.uuid4()}", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fresh(revision: str) -> sqlite3.Connection | None:
    """An in-memory copy of the kept image with an identity of its own, or None if none is kept."""
    with _lock:
        image = _images.get(revision)
    if image is None:
        return None
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    try:
        scratch.deserialize(image)
        scratch.execute("UPDATE store_identity SET id = ?, created_at = ?", _identity())
    except BaseException:
        scratch.close()
        raise
    return scratch


def copy_into(revision: str, target: sqlite3.Connection) -> bool:
    """Fill the empty database of ``target`` (an in-memory store's connection) with a new store at
    ``revision``; False when this process has no image of it yet (then migrate instead).

    A backup, not ``deserialize``: that would reset the connection's pragmas (cache size,
    synchronous) to their defaults."""
    scratch = _fresh(revision)
    if scratch is None:
        return False
    with closing(scratch):
        scratch.backup(target)
    return True


def create_file(revision: str, path: str) -> bool:
    """Create the store file ``path`` as a new store at ``revision``. False, and nothing created,
    when there is no image yet, when ``path`` (or a log of it) exists, or when the file system
    cannot do it: the store is then opened and migrated as before.

    The copy is written to a file of its own and linked into place: the store appears whole or not
    at all, and a file another process created meanwhile is never overwritten."""
    # A log left beside a missing file would be replayed into the copy: leave that to SQLite.
    if any(os.path.lexists(path + suffix) for suffix in ("", "-wal", "-journal")):
        return False
    scratch = _fresh(revision)
    if scratch is None:
        return False
    with closing(scratch):
        data = scratch.serialize()
    target = Path(path)
    part = target.with_name(f".{target.name}.{uuid.uuid4().hex}.new")
    try:
        # 0o644 less the umask: the mode SQLite gives a file it creates.
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.link(part, target)  # fails if the store appeared meanwhile (or without hard links)
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(part)
    return True
