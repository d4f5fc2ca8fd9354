"""Reads for golden paths (tools-graphs-governance §6): the statements that make up trajectories,
their steps and their work items, in current ROOT.

Every function reads the live primary claims of ROOT (one row per statement, however many owners)
in store order, so a caller that keeps "the first" of something gets the same answer on SQLite
and PostgreSQL. Ids are read in chunks short enough for an IN list on every backend.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from sqlalchemy import Connection, select

from quipu.store.schema import facts
from quipu.store.search_reads import id_chunks
from quipu.store.views import TemporalView, primary

Statement = tuple[int, int, bytes]  # (subject, predicate, encoded value)


def referrers(conn: Connection, predicate: int, targets: Collection[int]) -> list[tuple[int, int]]:
    """``(subject, target)`` of every live ROOT statement ``subject -predicate-> <target>`` whose
    target is one of ``targets``, in store order."""
    c = facts.c
    found: list[tuple[int, int]] = []
    for chunk in id_chunks(targets):
        query = (
            select(c.e, c.v_ref)
            .where(TemporalView().where(facts), primary(facts), c.a == predicate, c.v_ref.in_(chunk))
            .order_by(c.id)
        )
        rows: Iterable[Any] = conn.execute(query)
        found.extend((int(e), int(ref)) for e, ref in rows)
    return found


def statements_of(
    conn: Connection, subjects: Collection[int], predicates: Collection[int]
) -> list[Statement]:
    """Every live ROOT statement of one of ``subjects`` under one of ``predicates``, in store order
    within each chunk of subjects."""
    if not predicates:
        return []
    c = facts.c
    found: list[Statement] = []
    for chunk in id_chunks(subjects):
        query = (
            select(c.e, c.a, c.v)
            .where(TemporalView().where(facts), primary(facts), c.a.in_(sorted(predicates)), c.e.in_(chunk))
            .order_by(c.id)
        )
        rows: Iterable[Any] = conn.execute(query)
        found.extend((int(e), int(a), bytes(v)) for e, a, v in rows)
    return found


def reference_statements(conn: Connection, predicate: int) -> list[tuple[int, int]]:
    """``(subject, target)`` of every live ROOT statement under ``predicate`` whose object is an
    IRI, in store order: the whole population of one relation (every ``trajectoryOf``)."""
    c = facts.c
    query = (
        select(c.e, c.v_ref)
        .where(TemporalView().where(facts), primary(facts), c.a == predicate, c.v_ref.is_not(None))
        .order_by(c.id)
    )
    rows: Iterable[Any] = conn.execute(query)
    return [(int(e), int(ref)) for e, ref in rows]
