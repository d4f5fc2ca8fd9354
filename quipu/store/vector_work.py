"""What the embedding paths read from the facts (tools-search §3.3, §3.4, §5.12).

A transaction's subjects (the write-path embedding's work list), the named-only entities of one
graph that still lack a vector (the named-graph backfill's), and which of some entities have a
claim in a view (whether an entity is still named-only, or still lacks a vector, when a batch is
applied). The vector rows themselves are read through ``quipu.store.vectors``.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, exists, select

from quipu.store.schema import OP_ASSERT, ROOT, facts, vectors
from quipu.store.views import TemporalView

CURRENT_ROOT = TemporalView()


def transaction_subjects(conn: Connection, tx: int) -> tuple[list[int], list[int]]:
    """``(touched, retracted)``: the subjects of every row transaction ``tx`` wrote, and those of
    its retraction records, both ascending."""
    query = select(facts.c.e, facts.c.op).distinct().where(facts.c.tx == tx)
    rows = [(int(row[0]), int(row[1])) for row in conn.execute(query)]
    touched = sorted({e for e, _op in rows})
    retracted = sorted({e for e, op in rows if op != OP_ASSERT})
    return touched, retracted


def named_only_without_vector(conn: Connection, graph: int) -> list[int]:
    """Entities with a current claim in ``graph``, none in ROOT and no current vector, ascending
    (the missing set of tools-search §5.12)."""
    root = facts.alias("root")
    in_root = exists().where(root.c.e == facts.c.e, CURRENT_ROOT.where(root))
    has_vector = exists().where(vectors.c.entity_id == facts.c.e, vectors.c.valid_to.is_(None))
    query = (
        select(facts.c.e)
        .distinct()
        .where(CURRENT_ROOT.with_graphs((graph,)).where(facts), ~in_root, ~has_vector)
        .order_by(facts.c.e)
    )
    return [int(row[0]) for row in conn.execute(query)]


def with_claims(conn: Connection, view: TemporalView, entities: Iterable[int]) -> set[int]:
    """Which of ``entities`` are the subject of a claim ``view`` shows."""
    ids = list(entities)
    if not ids:
        return set()
    query = select(facts.c.e).distinct().where(view.where(facts), facts.c.e.in_(ids))
    return {int(row[0]) for row in conn.execute(query)}


def in_root(conn: Connection, entities: Iterable[int]) -> set[int]:
    """Which of ``entities`` have a current ROOT claim (the others are named-only or gone)."""
    return with_claims(conn, CURRENT_ROOT.with_graphs((ROOT,)), entities)
