"""Query budgets (DM §13.3): the deadline (408) and the join bound (422), on both query paths.

Real SQLite files; a cross product of five patterns over 2000 statements stands in for a
runaway query (2000^5 solutions: no machine finishes it, so only the budget can stop it).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.errors import QueryCanceled
from sqlalchemy.exc import DBAPIError

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import ConfigError, QueryTimeout, QueryTooExpensive, ResultTooLarge
from quipu.sparql.engine import run_query
from tests.backends import store_location

P = "PREFIX : <http://ex.org/> "
ROWS = 2000
RUNAWAY = P + "SELECT * WHERE { ?a :p ?b . ?c :p ?d . ?e :p ?f . ?g :p ?h . ?i :p ?j }"
PAIRS = P + "SELECT * WHERE { ?a :p ?b . ?c :p ?d }"  # 4 million solutions
SHARED = P + "SELECT * WHERE { ?a :p ?b . ?c :p ?b }"  # 80 000 solutions, a few tenths of a second
ALL = P + "SELECT ?a ?b WHERE { ?a :p ?b }"
COUNTED = P + "SELECT (COUNT(*) AS ?n) WHERE { ?a :p ?b . ?c :p ?d . ?e :p ?f }"  # 8 * 10^9 rows
GENEROUS = 10.0  # seconds: "stops quickly", without a tight timing assertion


def _load(kb: KnowledgeBase) -> None:
    kb.knot("@prefix : <http://ex.org/> .\n" + "".join(f":s{i} :p :o{i % 50} .\n" for i in range(ROWS)))


@pytest.fixture(params=[True, False], ids=["compiled", "fallback"])
def compiled(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def _open(tmp_path: Path, compiled: bool, **options: object) -> KnowledgeBase:
    # readers=1: queries run one after another reuse the one pooled read connection, so a
    # deadline left behind on it would show in the next query.
    kb = quipu.open(store_location(tmp_path, "kb.db"), readers=1, sparql_compiler=compiled, **options)
    _load(kb)
    return kb


@pytest.fixture
def timed(tmp_path: Path, compiled: bool) -> Iterator[KnowledgeBase]:
    kb = _open(tmp_path, compiled, query_timeout_ms=200)
    try:
        yield kb
    finally:
        kb.close()


def _check_all(kb: KnowledgeBase) -> None:
    # No deadline on the check itself: a loaded CI machine can take more than the 200 ms
    # budget to walk 2000 rows on the fallback, and the budget is not what this checks.
    result = run_query(
        kb.db,
        ALL,
        max_rows=kb.max_sparql_rows,
        compiled=kb.sparql_compiler,
        timeout_ms=0,
        max_join_rows=kb.max_join_rows,
    )
    assert len(result.table) == ROWS
    assert {str(row["b"]) for row in result.rows} == {f"http://ex.org/o{i}" for i in range(50)}


def test_runaway_query_times_out_and_the_store_stays_usable(timed: KnowledgeBase, compiled: bool) -> None:
    started = time.monotonic()
    with pytest.raises(QueryTimeout) as caught:
        timed.query_result(RUNAWAY)
    assert time.monotonic() - started < GENEROUS
    error = caught.value
    assert error.status == 408 and error.reason == "query_timeout"
    assert "search.query_timeout_ms (200 ms)" in error.message
    if compiled:  # one SQL statement: only the database's own deadline can have stopped it
        assert isinstance(error.__context__, sqlite3.OperationalError | DBAPIError | QueryCanceled)
    _check_all(timed)
    with pytest.raises(QueryTimeout):  # and the budget still applies to the next runaway
        timed.query_result(RUNAWAY)
    _check_all(timed)


def test_no_deadline_is_left_on_the_pooled_connection(timed: KnowledgeBase, compiled: bool) -> None:
    with pytest.raises(QueryTimeout):
        timed.query_result(RUNAWAY)
    # An expired deadline left behind would stop any statement of more than a few thousand
    # SQLite steps; all 80,000 rows of one SQL statement prove none was (no timing needed).
    result = run_query(timed.db, SHARED, compiled=compiled)
    assert len(result.table) == 80_000
    if compiled:
        assert result.plan == "sql"


def test_zero_timeout_disables_the_deadline(tmp_path: Path, compiled: bool) -> None:
    with _open(tmp_path, compiled, query_timeout_ms=0) as kb:
        assert kb.query_timeout_ms is None
        _check_all(kb)
        assert len(run_query(kb.db, SHARED, compiled=compiled, timeout_ms=0).table) == 80_000


def test_timeout_applies_to_a_memory_store(compiled: bool) -> None:
    with quipu.open(":memory:", sparql_compiler=compiled, query_timeout_ms=200) as kb:
        _load(kb)
        with pytest.raises(QueryTimeout):
            kb.query_result(RUNAWAY)
        _check_all(kb)


def test_join_bound_refuses_a_large_intermediate_result_on_the_fallback(tmp_path: Path) -> None:
    with _open(tmp_path, False, max_join_rows=10_000) as kb:
        started = time.monotonic()
        with pytest.raises(ResultTooLarge) as caught:
            kb.query_result(PAIRS)
        assert time.monotonic() - started < GENEROUS
        error = caught.value
        assert error.status == 422 and error.reason == "join_limit_exceeded"
        assert "search.max_join_rows (10000)" in error.message
        _check_all(kb)  # 2000 rows: within the bound, and the store is still usable


def test_join_bound_counts_final_rows_unless_max_sparql_rows_cuts_them(tmp_path: Path) -> None:
    with _open(tmp_path, True, max_join_rows=1000) as kb:
        with pytest.raises(ResultTooLarge, match=r"search\.max_join_rows \(1000\)"):
            kb.query_result(ALL)
        result = kb.query_result(ALL + " LIMIT 1000")  # SQLite never produces more
        assert result.plan == "sql" and len(result.table) == 1000
    with _open(tmp_path, True, max_join_rows=1000, max_sparql_rows=10) as kb:
        result = kb.query_result(ALL)  # the cut comes first: truncated, not refused
        assert result.truncated and len(result.table) == 10


def test_join_bound_counts_every_row_the_fallback_pulls(tmp_path: Path) -> None:
    # The one lookup yields 2000 rows before LIMIT applies: that is the intermediate result.
    with (
        _open(tmp_path, False, max_join_rows=1000) as kb,
        pytest.raises(ResultTooLarge, match=r"search\.max_join_rows \(1000\)"),
    ):
        kb.query_result(ALL + " LIMIT 10")
    with _open(tmp_path, False, max_join_rows=5000, max_sparql_rows=10) as kb:
        result = kb.query_result(ALL)
        assert result.plan == "rdflib" and result.truncated and len(result.table) == 10


def test_zero_join_bound_disables_it(tmp_path: Path, compiled: bool) -> None:
    with _open(tmp_path, compiled, max_join_rows=0) as kb:
        assert len(kb.query_result(SHARED).table) == 80_000


def test_budgets_are_validated_when_the_store_opens(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="query_timeout_ms"):
        quipu.open(store_location(tmp_path, "a.db"), query_timeout_ms=-1)
    with pytest.raises(ConfigError, match="max_join_rows"):
        quipu.open(store_location(tmp_path, "b.db"), max_join_rows=-5)


@pytest.mark.sqlite_only
def test_sqlite_deadline_interrupts_and_is_removed(tmp_path: Path) -> None:
    """The dialect hook on its own: an expired deadline stops a statement, and only inside."""
    with quipu.open(store_location(tmp_path, "kb.db"), readers=1) as kb:
        _load(kb)
        db = kb.db
        count = "SELECT COUNT(*) FROM facts a, facts b"  # millions of SQLite steps
        with db.read() as conn:
            with (
                pytest.raises(QueryTimeout, match="late"),
                db.dialect.deadline(conn, time.monotonic() - 1, QueryTimeout("late")),
            ):
                conn.exec_driver_sql(count).scalar()
            assert conn.exec_driver_sql(count).scalar() == ROWS * ROWS
            with db.dialect.deadline(conn, time.monotonic() + 60, QueryTimeout("late")):
                assert conn.exec_driver_sql(count).scalar() == ROWS * ROWS


@pytest.mark.sqlite_only
def test_sqlite_work_budget_stops_a_statement_by_its_steps_and_is_removed(tmp_path: Path) -> None:
    """The work budget on its own: a statement past its SQLite VM steps stops with the budget's
    error whatever the clock says, and the pooled connection keeps no budget afterwards."""
    with quipu.open(store_location(tmp_path, "kb.db"), readers=1) as kb:
        _load(kb)
        db = kb.db
        count = "SELECT COUNT(*) FROM facts a, facts b"  # 4 million rows: tens of millions of steps
        far = time.monotonic() + 600
        with db.read() as conn:
            with (
                pytest.raises(QueryTooExpensive, match="costly"),
                db.dialect.work_limits(conn, far, QueryTimeout("late"), 100_000, QueryTooExpensive("costly")),
            ):
                conn.exec_driver_sql(count).scalar()
            assert conn.exec_driver_sql(count).scalar() == ROWS * ROWS
            with db.dialect.work_limits(conn, None, QueryTimeout("late"), 10**9, QueryTooExpensive("costly")):
                assert conn.exec_driver_sql(count).scalar() == ROWS * ROWS


def test_work_budget_refuses_a_runaway_query_before_its_deadline(tmp_path: Path) -> None:
    # A count produces one row, so the join bound never sees the cross product; 10^6 steps are
    # spent within milliseconds, and the deadline is a minute away.
    with _open(tmp_path, True, max_join_rows=10_000, query_timeout_ms=60_000) as kb:
        if kb.db.dialect.name != "sqlite":
            pytest.skip("only SQLite counts the work of a statement; PostgreSQL has the deadline")
        started = time.monotonic()
        with pytest.raises(QueryTooExpensive) as caught:
            kb.query_result(COUNTED)
        assert time.monotonic() - started < GENEROUS
        error = caught.value
        assert error.status == 422 and error.reason == "query_too_expensive"
        assert "work budget of 1,000,000 SQLite steps" in error.message
        assert "search.max_join_rows (10000)" in error.message
        _check_all(kb)  # 2000 rows: within the budget, and the store is still usable
