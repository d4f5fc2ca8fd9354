"""Fact reads of the OWL extra (quipu/owl): the premises of materialisation, the statements a
write just asserted (the OWL write gate) and the one-pattern matches ``quipu_explain`` walks.

Statements are ``(e, a, v)``: subject and predicate term ids and the stored value encoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, select

from quipu.store import values
from quipu.store.schema import OP_ASSERT, facts
from quipu.store.views import TemporalView

Statement = tuple[int, int, bytes]
_CHUNK = 500  # ids per IN list


def _chunks(ids: Iterable[int]) -> list[list[int]]:
    out = sorted(set(ids))
    return [out[i : i + _CHUNK] for i in range(0, len(out), _CHUNK)]


def _distinct(conn: Connection, view: TemporalView, extra: Sequence[ColumnElement[bool]]) -> set[Statement]:
    c = facts.c
    rows: list[Any] = list(conn.execute(select(c.e, c.a, c.v).distinct().where(view.where(facts), *extra)))
    return {(int(e), int(a), bytes(v)) for e, a, v in rows}


def with_predicates(conn: Connection, view: TemporalView, predicates: Iterable[int]) -> set[Statement]:
    """Visible statements whose predicate is one of ``predicates``."""
    out: set[Statement] = set()
    for chunk in _chunks(predicates):
        out |= _distinct(conn, view, [facts.c.a.in_(chunk)])
    return out


def typed(conn: Connection, view: TemporalView, type_id: int, classes: Iterable[int]) -> set[Statement]:
    """Visible ``rdf:type`` statements whose class is one of ``classes``."""
    out: set[Statement] = set()
    for chunk in _chunks(classes):
        out |= _distinct(conn, view, [facts.c.a == type_id, facts.c.v_ref.in_(chunk)])
    return out


def touching(conn: Connection, view: TemporalView, nodes: Iterable[int]) -> set[Statement]:
    """Visible statements with one of ``nodes`` as subject or as (reference) object."""
    out: set[Statement] = set()
    for chunk in _chunks(nodes):
        out |= _distinct(conn, view, [facts.c.e.in_(chunk)])
        out |= _distinct(conn, view, [facts.c.v_ref.in_(chunk)])
    return out


def match(
    conn: Connection,
    view: TemporalView,
    a: int,
    *,
    e: int | None = None,
    v: bytes | None = None,
    limit: int = 50,
) -> list[Statement]:
    """Visible statements of predicate ``a``, optionally with a fixed subject and/or object."""
    c = facts.c
    cond: list[ColumnElement[bool]] = [view.where(facts), c.a == a]
    if e is not None:
        cond.append(c.e == e)
    if v is not None:
        ref = values.ref_id(v)
        cond += [c.v_ref == ref] if ref is not None else [c.vh == values.digest(v), c.v == v]
    query = select(c.e, c.a, c.v).distinct().where(*cond).order_by(c.e, c.v).limit(limit)
    rows: list[Any] = list(conn.execute(query))
    return [(int(r[0]), int(r[1]), bytes(r[2])) for r in rows]


def asserted_in(
    conn: Connection, graph: int, tx_ids: Iterable[int], predicates: Iterable[int]
) -> list[Statement]:
    """Live statements of ``predicates`` that these transactions asserted into ``graph``: what a
    write has just staged, read back inside it."""
    c = facts.c
    wanted = sorted(set(predicates))
    if not wanted:
        return []
    out: set[Statement] = set()
    for chunk in _chunks(tx_ids):
        live = [c.tx.in_(chunk), c.g == graph, c.op == OP_ASSERT, c.valid_to.is_(None), c.a.in_(wanted)]
        rows: list[Any] = list(conn.execute(select(c.e, c.a, c.v).distinct().where(*live)))
        out |= {(int(e), int(a), bytes(v)) for e, a, v in rows}
    return sorted(out)


def predicates_in(conn: Connection, graph: int, tx_ids: Iterable[int]) -> set[int]:
    """The predicates of every row (claims and retraction records) these transactions wrote to
    ``graph``: what a committed write touched."""
    c = facts.c
    out: set[int] = set()
    for chunk in _chunks(tx_ids):
        rows: list[Any] = list(conn.execute(select(c.a).distinct().where(c.tx.in_(chunk), c.g == graph)))
        out |= {int(r[0]) for r in rows}
    return out
