"""Opening a store: clear errors for what cannot be opened, nothing created by a refusal."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

import quipu
from quipu.errors import ConfigError
from tests.backends import store_location


def test_unsupported_url_scheme_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="unsupported store URL scheme 'mysql'"):
        quipu.open("mysql://localhost/kb")


def test_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="directory does not exist"):
        quipu.open(str(tmp_path / "no" / "such" / "kb.db"))
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    ("option", "value"), [("synchronous", "NORMAL; DROP TABLE facts"), ("cache_mb", 0), ("cache_mb", "9")]
)
def test_tuning_values_are_checked_before_use(tmp_path: Path, option: str, value: object) -> None:
    with pytest.raises(ConfigError, match=option):
        quipu.open(store_location(tmp_path, "kb.db"), **{option: value})
    assert not (tmp_path / "kb.db").exists()


def test_sqlite_url_and_memory_forms_open(tmp_path: Path) -> None:
    for location in (f"sqlite:///{tmp_path / 'url.db'}", ":memory:"):
        with quipu.open(location) as kb:
            kb.knot("<http://ex.org/a> <http://ex.org/b> <http://ex.org/c> .", "nt")
            assert kb.stats() == {"facts": 1, "entities": 1, "predicates": 1}
    assert (tmp_path / "url.db").exists()


def test_reopening_a_file_keeps_its_facts(tmp_path: Path) -> None:
    path = store_location(tmp_path, "kb.db")
    with quipu.open(path) as kb:
        kb.knot('<http://ex.org/a> <http://ex.org/b> "x" .', "nt")
    with quipu.open(path) as kb:
        assert kb.export() == '<http://ex.org/a> <http://ex.org/b> "x" .\n'


@pytest.mark.sqlite_only
def test_an_up_to_date_store_opens_and_reads_while_another_process_writes(tmp_path: Path) -> None:
    # Opening needs no write when nothing is to migrate: a long write elsewhere must not block it.
    path = tmp_path / "busy.db"
    with quipu.open(str(path)) as kb:
        kb.knot("<http://ex.org/a> <http://ex.org/b> <http://ex.org/c> .", "nt")
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with quipu.open(str(path)) as kb:
            assert kb.stats() == {"facts": 1, "entities": 1, "predicates": 1}
        assert time.monotonic() - started < 20  # the busy timeout (30 s) was never waited out
    finally:
        writer.execute("ROLLBACK")
        writer.close()
