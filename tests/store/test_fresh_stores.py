"""A new SQLite store is a copy of one migrated earlier in the process (quipu/store/fresh_stores.py):
equal to a store the migrations built, but for an identity of its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.store import database, fresh_stores
from quipu.store.database import Database
from quipu.store.schema import SCHEMA_REVISION

# These stores are SQLite files and in-memory stores made here, whatever the backend under test.
pytestmark = pytest.mark.sqlite_only

IDENTITY = re.compile(r"urn:quipu:store:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
CREATED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
PRAGMAS = ("user_version", "application_id", "page_size", "auto_vacuum", "encoding", "freelist_count")


def _contents(kb: KnowledgeBase) -> tuple[dict[str, Any], tuple[str, str]]:
    """Everything in the store (schema, every row of every table, file-level pragmas) but its
    identity row, and that row apart."""
    with kb.db.read() as conn:
        run = conn.exec_driver_sql
        schema = run("SELECT * FROM sqlite_master ORDER BY rowid").all()
        tables = [row.name for row in schema if row.type == "table"]
        rows = {name: sorted(run(f'SELECT * FROM "{name}"').all(), key=repr) for name in tables}
        pragmas = {name: run(f"PRAGMA {name}").scalar() for name in PRAGMAS}
    identity = rows.pop("store_identity")
    assert len(identity) == 1
    store_id, created_at = str(identity[0][0]), str(identity[0][1])
    assert IDENTITY.fullmatch(store_id) and CREATED.fullmatch(created_at), identity
    return {"schema": schema, "rows": rows, "pragmas": pragmas}, (store_id, created_at)


def _opened(location: str) -> tuple[dict[str, Any], tuple[str, str]]:
    with quipu.open(location) as kb:
        assert kb.db.schema_revision() == SCHEMA_REVISION
        contents = _contents(kb)
        kb.knot("<http://ex.org/a> <http://ex.org/b> <http://ex.org/c> .", "nt")  # a working store
        assert kb.stats() == {"facts": 1, "entities": 1, "predicates": 1}
    return contents


def test_a_new_store_is_a_migrated_store_with_an_identity_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:  # the migrations themselves, as with no store made before
        patch.setattr(database, "create_file", lambda *_: False)
        patch.setattr(database, "copy_into", lambda *_: False)
        migrated_file, id1 = _opened(str(tmp_path / "migrated.db"))
        migrated_memory, id2 = _opened(":memory:")
    assert migrated_file == migrated_memory

    quipu.open(":memory:").close()  # this process has made a store: later ones are copies
    monkeypatch.setattr(Database, "migrate", lambda *_: pytest.fail("a new store was migrated again"))
    copied_file, id3 = _opened(str(tmp_path / "copied.db"))
    copied_memory, id4 = _opened(":memory:")
    assert copied_file == copied_memory == migrated_file
    assert len({id1[0], id2[0], id3[0], id4[0]}) == 4  # four stores, four identities
    with quipu.open(str(tmp_path / "copied.db")) as kb, kb.db.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"  # as a created file
        assert tuple(conn.exec_driver_sql("SELECT * FROM store_identity").one()) == id3  # kept on reopen


def test_only_a_file_that_does_not_exist_is_created_as_a_copy(tmp_path: Path) -> None:
    quipu.open(":memory:").close()
    taken = tmp_path / "taken.db"
    taken.write_bytes(b"someone else's")
    assert not fresh_stores.create_file(SCHEMA_REVISION, str(taken))
    assert taken.read_bytes() == b"someone else's"
    (tmp_path / "logged.db-wal").write_bytes(b"")  # a log without its file is SQLite's to read
    assert not fresh_stores.create_file(SCHEMA_REVISION, str(tmp_path / "logged.db"))
    assert not fresh_stores.create_file("no such revision", str(tmp_path / "other.db"))
    assert fresh_stores.create_file(SCHEMA_REVISION, str(tmp_path / "new.db"))
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["logged.db-wal", "new.db", "taken.db"]  # and no part file
