"""Upgrading a store written before the live indexes (schema revision 0009) in place.

``tests/fixtures/rev9.db`` was written by the revision-0009 code, and ``rev9-answers.json`` holds
what that code answered for it (``tests/fixtures/make_rev9_fixture.py``). Opened by today's
code, the file gains the live indexes of revision 0010, and every read must still give the
recorded answer: the current state, ``as_of_tx``, ``valid_at``, both at once, a named graph,
the exports and entity histories. The current-state reads must then run on the new indexes.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import quipu
from tests.fixtures.make_rev9_fixture import ANSWERS, EX, TARGET, answers

pytestmark = pytest.mark.sqlite_only  # a SQLite file; PostgreSQL upgrades in tests/store/test_postgres.py

LIVE = {"ix_live_gea", "ix_live_gav", "ix_live_ref"}


@pytest.fixture
def upgraded(tmp_path: Path) -> Path:
    copy = tmp_path / "rev9.db"
    shutil.copyfile(TARGET, copy)
    return copy


def _raw(path: Path, sql: str) -> list[Any]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


def test_the_fixture_is_a_revision_9_store_without_live_indexes() -> None:
    assert _raw(TARGET, "SELECT version_num FROM alembic_version") == [("0009",)]
    names = {name for (name,) in _raw(TARGET, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert not names & LIVE
    assert _raw(TARGET, "SELECT DISTINCT dup FROM facts ORDER BY dup") == [(0,), (1,)]


def test_every_read_gives_the_answers_recorded_before_the_upgrade(upgraded: Path) -> None:
    recorded = json.loads(ANSWERS.read_text(encoding="utf-8"))
    with quipu.open(str(upgraded)) as kb:
        assert kb.db.schema_revision() == "0012"
        now = answers(kb, recorded["transactions"])
    assert set(now["queries"]) == set(recorded["queries"])
    for key, rows in recorded["queries"].items():
        assert now["queries"][key] == rows, key
    assert now["export_root"] == recorded["export_root"]
    assert now["export_graph"] == recorded["export_graph"]
    assert now["history"] == recorded["history"]


def test_the_upgrade_builds_the_live_indexes_over_live_primary_claims_only(upgraded: Path) -> None:
    quipu.open(str(upgraded)).close()
    sql = dict(_raw(upgraded, "SELECT name, sql FROM sqlite_master WHERE type = 'index'"))
    assert set(sql) >= LIVE
    for name in LIVE:
        assert "op = 1 AND valid_to IS NULL AND dup = 0" in sql[name], name
    live = _raw(
        upgraded,
        "SELECT count(*) FROM facts INDEXED BY ix_live_gea WHERE g >= 0 AND op = 1 AND valid_to IS NULL AND dup = 0",
    )
    assert live == _raw(upgraded, "SELECT count(*) FROM facts WHERE op = 1 AND valid_to IS NULL AND dup = 0")
    assert live[0][0] < _raw(upgraded, "SELECT count(*) FROM facts")[0][0]  # history is not in it


def test_an_upgraded_store_reads_the_current_state_through_the_live_indexes_and_takes_writes(
    upgraded: Path,
) -> None:
    with quipu.open(str(upgraded)) as kb:
        out = kb.knot(f'<{EX}svc> <{EX}name> "renamed" .', "nt")
        assert out.count == 1
        rows = kb.query(f"SELECT ?n WHERE {{ <{EX}svc> <{EX}name> ?n }}")
        assert isinstance(rows, list)
        assert sorted(str(r["n"]) for r in rows) == ["Dienst", 'Service ☃ "one"', "renamed"]
        with kb.db.read() as conn:
            plan = conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN SELECT a, v FROM facts WHERE g = 0 AND e = 2 "
                "AND op = 1 AND valid_to IS NULL AND dup = 0"
            ).all()
        assert "COVERING INDEX ix_live_gea" in str(plan)
