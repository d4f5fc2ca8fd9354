"""The indexes are chosen on purpose: check SQLite's plans for the hot access paths."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.dialects import sqlite

from quipu.api import KnowledgeBase
from quipu.store import events, planner_stats, values, writes
from quipu.store.schema import facts
from quipu.store.stage import fact_stage, fill
from quipu.store.views import TemporalView
from tests.store import PREFIXES

pytestmark = pytest.mark.sqlite_only  # SQLite's EXPLAIN QUERY PLAN

c = facts.c


def _plan(kb: KnowledgeBase, statement: Any) -> str:
    compiled = statement.compile(dialect=sqlite.dialect())
    params = tuple(compiled.params[name] for name in compiled.positiontup)
    with kb.db.read() as conn:
        rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + str(compiled), params).all()
    return "\n".join(str(r[-1]) for r in rows)


def _loaded(kb: KnowledgeBase) -> KnowledgeBase:
    """Enough rows, sources and transactions for the planner's statistics to mean something."""
    for k in range(20):
        lines = (
            f'ex:s{i} ex:p{i % 7} ex:o{i % 13} ; ex:name "n{i}" .\n' for i in range(k * 100, (k + 1) * 100)
        )
        kb.knot(PREFIXES + "".join(lines), source=f"producer-{k}")
    with kb.db.write() as ctx:
        ctx.conn.exec_driver_sql("ANALYZE")
    return kb


def test_subject_lookup_uses_the_subject_index(kb: KnowledgeBase) -> None:
    _loaded(kb)
    query = select(c.a, c.v).where(TemporalView().where(facts), c.e == 5)
    assert "ix_facts_gea" in _plan(kb, query)


def test_predicate_object_lookup_uses_the_value_index(kb: KnowledgeBase) -> None:
    _loaded(kb)
    v = values.string("n7")
    query = select(c.e).where(TemporalView().where(facts), c.a == 3, c.vh == values.digest(v), c.v == v)
    assert "ix_facts_gav" in _plan(kb, query)


def test_reverse_edge_lookup_uses_the_reference_index(kb: KnowledgeBase) -> None:
    _loaded(kb)
    query = select(c.e, c.a).where(TemporalView().where(facts), c.v_ref == 9)
    assert "ix_facts_ref" in _plan(kb, query)


def test_time_travel_by_subject_uses_the_subject_index(kb: KnowledgeBase) -> None:
    _loaded(kb)
    query = select(c.a, c.v).where(
        TemporalView.at(as_of_tx=1, valid_at="2026-01-01T00:00:00Z").where(facts), c.e == 5
    )
    assert "ix_facts_gea" in _plan(kb, query)


def test_writer_ownership_probe_uses_the_subject_index(kb: KnowledgeBase) -> None:
    _loaded(kb)
    prepared = kb.db.dialect.prepared(writes._INSERT_UNOWNED)
    params = {"g": 0, "tx": 1, "vf": "2026-01-01T00:00:00Z", "src": "knot:anonymous"}
    with kb.db.write() as ctx:
        v = values.string("x")
        fill(ctx.conn, ctx.dialect, fact_stage, [(5, 3, v, values.digest(v), None, None)])
        args = tuple({**prepared.defaults, **params}[n] for n in prepared.names or ())
        rows = ctx.conn.exec_driver_sql("EXPLAIN QUERY PLAN " + prepared.sql, args).all()
    plan = "\n".join(str(r[-1]) for r in rows)
    # One pass over the staged batch; each staged row probes the subject index, never a scan.
    assert "ix_facts_gea" in plan
    assert [line for line in plan.splitlines() if line.startswith("SCAN")] == ["SCAN quipu_stage"]


def test_after_a_bulk_load_one_transactions_rows_are_read_through_the_transaction_index(
    kb: KnowledgeBase,
) -> None:
    # The exact ANALYZE after a load saw a single transaction id for every row; kept, that
    # statistic made the event log's per-write read scan the whole table (86 episodes/s).
    lines = "".join(f'ex:s{i} ex:p{i % 7} "n{i}" .\n' for i in range(60_000))
    kb.knot(PREFIXES + lines)
    tx = kb.knot(PREFIXES + "ex:s1 ex:p9 ex:o1 .\n").tx_id
    with kb.db.read() as conn:
        rows = conn.exec_driver_sql("SELECT idx FROM sqlite_stat1 WHERE tbl = 'facts'").all()
        stats = {str(row[0]) for row in rows}
        assert "ix_live_gav" in stats and "ix_facts_tx" not in stats
    explain = "EXPLAIN QUERY PLAN " + str(events._TRANSITIONS).replace(":tx", "?")
    with kb.db.read() as conn:
        assert "ix_facts_tx" in str(conn.exec_driver_sql(explain, (tx,)).all())
    # the writer ran the ANALYZE and holds what it loaded; it reads the event log on every write
    with kb.db.write() as ctx:
        assert "ix_facts_tx" in str(ctx.conn.exec_driver_sql(explain, (tx,)).all())


def test_the_planners_idea_of_the_store_size_survives_a_bulk_load(kb: KnowledgeBase) -> None:
    # Property paths choose their plan by it (sparql.property_paths); it was read from the
    # transaction index's statistics, which a bulk load now drops.
    lines = "".join(f'ex:s{i} ex:p{i % 7} "n{i}" .\n' for i in range(60_000))
    kb.knot(PREFIXES + lines)
    with kb.db.read() as conn:
        assert planner_stats.facts_rows(conn) == 60_000
