"""PostgreSQL's plans for the hot access paths use the store's indexes (the SQLite twin is
tests/store/test_query_plans.py). With a few thousand rows the planner may rightly prefer a
sequential scan, so each plan is taken with ``enable_seqscan`` off: what is checked is that an
index matches the access path, not the planner's cost choice at this size."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from quipu.api import KnowledgeBase
from quipu.store import values
from quipu.store.schema import facts
from quipu.store.views import TemporalView
from tests.backends import on_postgres
from tests.store import PREFIXES

pytestmark = pytest.mark.skipif(not on_postgres(), reason="runs in the PostgreSQL half (QUIPU_TEST_DB)")

c = facts.c


def _plan(kb: KnowledgeBase, statement: Any) -> str:
    with kb.db.read() as conn:
        compiled = statement.compile(dialect=conn.dialect)
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        rows = conn.exec_driver_sql("EXPLAIN " + str(compiled), dict(compiled.params)).all()
    return "\n".join(str(r[0]) for r in rows)


@pytest.fixture
def loaded(kb: KnowledgeBase) -> KnowledgeBase:
    for k in range(10):
        lines = (
            f'ex:s{i} ex:p{i % 7} ex:o{i % 13} ; ex:name "n{i}" .\n' for i in range(k * 100, (k + 1) * 100)
        )
        kb.knot(PREFIXES + "".join(lines), source=f"producer-{k}")
    with kb.db.write() as ctx:
        ctx.conn.exec_driver_sql("ANALYZE facts")
    return kb


def test_subject_lookup_uses_the_subject_index(loaded: KnowledgeBase) -> None:
    query = select(c.a, c.v).where(TemporalView().where(facts), c.e == 5)
    assert "ix_facts_gea" in _plan(loaded, query)


def test_predicate_object_lookup_uses_the_value_index(loaded: KnowledgeBase) -> None:
    v = values.string("n7")
    query = select(c.e).where(TemporalView().where(facts), c.a == 3, c.vh == values.digest(v), c.v == v)
    assert "ix_facts_gav" in _plan(loaded, query)


def test_reverse_edge_lookup_uses_the_reference_index(loaded: KnowledgeBase) -> None:
    query = select(c.e, c.a).where(TemporalView().where(facts), c.v_ref == 9)
    assert "ix_facts_ref" in _plan(loaded, query)


def test_time_travel_by_subject_uses_the_subject_index(loaded: KnowledgeBase) -> None:
    query = select(c.a, c.v).where(
        TemporalView.at(as_of_tx=1, valid_at="2026-01-01T00:00:00Z").where(facts), c.e == 5
    )
    assert "ix_facts_gea" in _plan(loaded, query)


def test_a_write_that_doubles_a_small_store_leaves_planner_statistics(kb: KnowledgeBase) -> None:
    # With no statistics every live-index scan is estimated at one row, and a co-occurrence
    # question over 450 facts chose a nested loop of full scans (21 s instead of 0.06).
    lines = "".join(f"ex:c{i} ex:modifies ex:e1 ; ex:implements ex:w{i} .\n" for i in range(100))
    kb.knot(PREFIXES + lines)
    with kb.db.read() as conn:
        tuples = conn.exec_driver_sql("SELECT reltuples FROM pg_class WHERE relname = 'facts'").scalar()
    assert tuples is not None and tuples >= 200  # analyzed (a table never analyzed says -1)
