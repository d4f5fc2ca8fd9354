"""The plans of the SPARQL benchmark's core queries (Q1-Q6) are pinned, on both backends.

A current-state read runs on the live indexes (schema revision 0010: live primary claims only).
These tests take the one statement quipu runs for each query, exactly as the benchmark runs it,
and check which index each triple pattern's alias of ``facts`` is read through, so that a change
to the compiler or the schema cannot silently lose an index. SQLite's plan is pinned alias by
alias and must be covering (the table row is never read); PostgreSQL's must read every alias
through a live index (with sequential scans off: at this size a scan can rightly be cheaper,
and what is checked is that the index matches the access path).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

import quipu
from bench import lubm
from bench.sparql import QUERIES
from quipu.api import KnowledgeBase
from quipu.sparql.engine import Statement, compiled_statement
from quipu.store import budget as budgets
from tests import backends

CORE: Final = {q.name: q.text for q in QUERIES if q.name in {"Q1", "Q2", "Q3", "Q4", "Q5", "Q6"}}

# Which live index an alias is read through depends on the join order, which follows the
# statistics (it differs between 20k and 1M triples); what is pinned is that every alias is a
# SEARCH of a covering live index. The single-pattern queries have one right index each.
ALIASES: Final = {"Q1": 3, "Q2": 3, "Q3": 3, "Q4": 4, "Q5": 1, "Q6": 1}
ONLY_INDEX: Final = {"Q5": "ix_live_gav", "Q6": "ix_live_gea"}


@pytest.fixture(scope="module")
def lubm_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """About 20k LUBM-shaped triples (the benchmark's generator), with fresh statistics."""
    path: Path = tmp_path_factory.mktemp("core-plans")
    kb = quipu.open(backends.migrated_location(path))
    kb.knot("".join(lubm.generate(20_000)), format="ntriples")
    with kb.db.write() as ctx:
        ctx.conn.exec_driver_sql("ANALYZE")
    try:
        yield kb
    finally:
        kb.close()


def _explain_rows(
    kb: KnowledgeBase, text: str, prefix: str, setup: str | None = None
) -> list[tuple[Any, ...]]:
    db = kb.db
    with db.read() as conn, budgets.enforce(db, conn, timeout_ms=None, max_join_rows=None) as budget:
        found = compiled_statement(db, conn, text, row_cap=budget.row_cap(None))
        assert isinstance(found, Statement), found
        assert not found.mixed
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        if setup is not None:
            cursor.execute(setup)
        cursor.execute(prefix + found.sql, found.params)
        return [tuple(row) for row in cursor.fetchall()]


def _explained(kb: KnowledgeBase, text: str, prefix: str, setup: str | None = None) -> list[str]:
    """The plan's lines: SQLite's details, or PostgreSQL's text."""
    rows = _explain_rows(kb, text, prefix, setup)
    return [str(row[-1] if prefix.startswith("EXPLAIN QUERY") else row[0]) for row in rows]


@pytest.mark.sqlite_only
@pytest.mark.parametrize("name", sorted(CORE))
def test_sqlite_reads_each_core_pattern_through_its_covering_live_index(
    lubm_kb: KnowledgeBase, name: str
) -> None:
    plan = _explained(lubm_kb, CORE[name], "EXPLAIN QUERY PLAN ")
    used: dict[str, str] = {}
    for line in plan:
        found = re.search(r"\b(SEARCH|SCAN) (t\d+)\b(?: USING (COVERING )?INDEX (\w+))?", line)
        if found is None:
            continue
        how, alias, covering, index = found.groups()
        assert how == "SEARCH" and covering and index, f"{name}: {alias} is not a covering search: {line}"
        assert index.startswith("ix_live_"), f"{name}: {alias} reads {index}, not a live index"
        used[alias] = index
    assert len(used) == ALIASES[name], "\n".join(plan)
    if name in ONLY_INDEX:
        assert set(used.values()) == {ONLY_INDEX[name]}


@pytest.mark.skipif(not backends.on_postgres(), reason="runs in the PostgreSQL half (QUIPU_TEST_DB)")
@pytest.mark.parametrize("name", sorted(CORE))
def test_postgresql_reads_each_core_pattern_through_a_live_index(lubm_kb: KnowledgeBase, name: str) -> None:
    plan = _explained(lubm_kb, CORE[name], "EXPLAIN ", "SET LOCAL enable_seqscan = off")
    text = "\n".join(plan)
    # every alias is scanned (an index scan, or a bitmap heap scan under an index scan) ...
    scanned = set(re.findall(r"Scan (?:using \w+ )?on facts (t\d+)", text))
    assert len(scanned) == ALIASES[name], text
    # ... and every index read is a live one, never a full index or the whole table
    indexes = re.findall(r"(?:Scan using|Bitmap Index Scan on) (\w+)", text)
    assert indexes and all(i.startswith("ix_live_") for i in indexes), text
    assert "Seq Scan" not in text


SEEDED_PATH: Final = f"SELECT ?o WHERE {{ <http://www.Department0.University0.edu/ResearchGroup0> <{lubm.ONTOLOGY}subOrganizationOf>+ ?o }}"


@pytest.fixture(scope="module")
def sampled_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """The LUBM store with the sampled statistics ``PRAGMA optimize`` leaves at close."""
    location = backends.migrated_location(tmp_path_factory.mktemp("sampled-stats"))
    with quipu.open(location) as kb:
        kb.knot("".join(lubm.generate(20_000)), format="ntriples")
        with kb.db.write() as ctx:
            ctx.conn.exec_driver_sql("PRAGMA analysis_limit=1000")
            ctx.conn.exec_driver_sql("ANALYZE")
    kb = quipu.open(location)  # connections read the statistics when they first read the schema
    try:
        yield kb
    finally:
        kb.close()


Q10: Final = next(q.text for q in QUERIES if q.name == "Q10")


@pytest.mark.sqlite_only
@pytest.mark.parametrize(("text", "rows"), [(Q10, 90), (SEEDED_PATH, 2)])
def test_sqlite_walks_a_path_closure_without_a_bloom_filter_per_step(
    sampled_kb: KnowledgeBase, text: str, rows: int
) -> None:
    # Flattened into the recursive step, the edges were probed through a Bloom filter rebuilt
    # for every row of the queue on a store under 2**20 facts (Q10: 115 ms instead of 6).
    plan = _explain_rows(sampled_kb, text, "EXPLAIN QUERY PLAN ")  # (id, parent, _, detail)
    steps = {row[0] for row in plan if row[3] == "RECURSIVE STEP"}
    assert steps, plan
    inside = [row[3] for row in plan if row[1] in steps]
    assert inside and not any("BLOOM FILTER" in line for line in inside), "\n".join(str(r) for r in plan)
    found = sampled_kb.query(text)
    assert isinstance(found, list) and len(found) == rows
