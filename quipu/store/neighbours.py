"""Edge reads for graph walks: the IRI-valued neighbours of many nodes in one query.

An anchored search walks the graph one frontier at a time (tools-search §5.1.8). Reading each
node's edges with its own query costs a round trip per node; these functions read a whole
frontier with one query per direction and cap each node's edges with a window function, so a
5000-node walk stays a handful of queries per hop on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final

from sqlalchemy import Connection, Select, func, select

from quipu.store import values
from quipu.store.schema import facts
from quipu.store.views import TemporalView

# Ids per query: under SQLite's bound-parameter limit (32766) and PostgreSQL's (65535).
_CHUNK: Final = 5_000

Edge = tuple[int, int, bool]  # (neighbour, predicate, outgoing?)


def edges(
    conn: Connection,
    view: TemporalView,
    nodes: Collection[int],
    *,
    outgoing: bool,
    incoming: bool,
    cap: int,
    predicates: Iterable[int] | None = None,
) -> dict[int, list[Edge]]:
    """The edges of each node that ``view`` shows: outgoing statements whose object is an IRI
    (at most ``cap`` per node, by predicate id then object id) and incoming statements pointing
    at it (at most ``cap`` per node, by subject id then predicate id). ``predicates`` keeps only
    those predicates. Each node's list is merged, sorted and free of duplicates (a statement
    with two owners is one edge); a node without edges is absent."""
    out: dict[int, list[Edge]] = {}
    ids = sorted(set(nodes))
    preds = None if predicates is None else sorted(set(predicates))
    if not ids or cap <= 0 or preds == []:
        return out
    found: dict[int, set[Edge]] = {}
    for i in range(0, len(ids), _CHUNK):
        chunk = ids[i : i + _CHUNK]
        if outgoing:
            for node, a, other in conn.execute(_capped(view, chunk, preds, cap, forward=True)):
                found.setdefault(int(node), set()).add((int(other), int(a), True))
        if incoming:
            for node, a, other in conn.execute(_capped(view, chunk, preds, cap, forward=False)):
                found.setdefault(int(node), set()).add((int(other), int(a), False))
    for node, edge_set in found.items():
        out[node] = sorted(edge_set)
    return out


def _capped(
    view: TemporalView, nodes: list[int], preds: list[int] | None, cap: int, *, forward: bool
) -> Select[int, int, int]:
    """``(node, predicate, other end)`` rows, at most ``cap`` per node in the walk's order."""
    c = facts.c
    node, other = (c.e, c.v_ref) if forward else (c.v_ref, c.e)
    where = [view.where(facts), c.v_ref.is_not(None), node.in_(nodes)]
    if preds is not None:
        where.append(c.a.in_(preds))
    distinct = select(node.label("node"), c.a.label("a"), other.label("other")).distinct().where(*where)
    inner = distinct.subquery("statements")
    order = (inner.c.a, inner.c.other) if forward else (inner.c.other, inner.c.a)
    rank = func.row_number().over(partition_by=inner.c.node, order_by=order).label("rank")
    ranked = select(inner.c.node, inner.c.a, inner.c.other, rank).subquery("ranked")
    return select(ranked.c.node, ranked.c.a, ranked.c.other).where(ranked.c.rank <= cap)


def mentioned(conn: Connection, view: TemporalView, term: int) -> bool:
    """Whether some statement ``view`` shows has ``term`` as its subject or its IRI object."""
    c = facts.c
    as_subject = select(c.id).where(view.where(facts), c.e == term).limit(1)
    if conn.execute(as_subject).first() is not None:
        return True
    as_object = select(c.id).where(view.where(facts), c.v_ref == term).limit(1)
    return conn.execute(as_object).first() is not None


def subjects_with_string(
    conn: Connection, view: TemporalView, predicate: int, text: str, *, limit: int
) -> list[int]:
    """Subjects (ascending, at most ``limit``) with a plain-string ``predicate`` value equal to
    ``text`` in ``view``; a language-tagged or typed value does not count."""
    c = facts.c
    enc = values.string(text)
    query = (
        select(c.e)
        .distinct()
        .where(view.where(facts), c.a == predicate, c.vh == values.digest(enc), c.v == enc)
        .order_by(c.e)
        .limit(limit)
    )
    return [int(row[0]) for row in conn.execute(query)]
