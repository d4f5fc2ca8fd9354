"""Reads of the substring-search and context tools (tools-search §0.8, §5.3-§5.5, §5.7).

All of them read ROOT through a ``TemporalView`` (current unless the view says otherwise) and
return term ids; callers resolve IRIs through the term dictionary. "Store order" here is
ascending subject term id (interning order), then predicate term id, then fact row id.
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from typing import Any, Final, NamedTuple

from sqlalchemy import BigInteger, ColumnElement, Connection, func, literal, or_, select
from sqlalchemy.sql import Select

from quipu.store import values
from quipu.store.schema import facts, terms
from quipu.store.views import TemporalView, primary

_CHUNK: Final = 500  # ids per IN (...) list: well under every backend's parameter limit
_STREAM: Final = 2_000  # rows fetched at a time by a scan (a server-side cursor on PostgreSQL)
# Encodings below this byte string are exactly the tags Ref, Str, Int, Float and Bool (values.py):
# blobs compare bytewise on both backends, so this keeps the kinds a context fact shows.
_SIMPLE_KINDS_BELOW: Final = bytes([values.TAG_BYTES])


class FactRow(NamedTuple):
    """One statement of a scan, with the IRIs it names (``target``: a reference's IRI, else None)."""

    e: int
    subject: str
    a: int
    predicate: str
    v: bytes
    target: str | None


def id_chunks(ids: Iterable[int]) -> Iterator[list[int]]:
    """Distinct ids ascending, in lists short enough for an IN list on every backend."""
    ordered = sorted(set(ids))
    for i in range(0, len(ordered), _CHUNK):
        yield ordered[i : i + _CHUNK]


def _current(view: TemporalView) -> list[ColumnElement[bool]]:
    # One live claim per statement has dup = 0 (schema.py): statements, not claims, without DISTINCT.
    conds: list[ColumnElement[bool]] = [view.where(facts)]
    if view.is_current:
        conds.append(primary(facts))
    return conds


# -- scope sets (§0.8) ---------------------------------------------------------------------------


def generated_in_groups(
    conn: Connection,
    view: TemporalView,
    *,
    generated_by: int,
    group_predicates: Collection[int],
    groups: Collection[str],
) -> set[int]:
    """Subjects with ``generated_by`` pointing at an activity whose value under one of
    ``group_predicates`` is one of the plain strings ``groups``. Never limited: it is an allow-list."""
    if not group_predicates or not groups:
        return set()
    encoded = [values.string(g) for g in sorted(set(groups))]
    act, gen = facts.alias("act"), facts.alias("gen")
    activities = select(act.c.e).where(
        view.where(act),
        act.c.a.in_(sorted(group_predicates)),
        act.c.vh.in_([values.digest(x) for x in encoded]),
        act.c.v.in_(encoded),
    )
    query = (
        select(gen.c.e)
        .distinct()
        .where(view.where(gen), gen.c.a == generated_by, gen.c.v_ref.in_(activities))
    )
    return {int(row[0]) for row in conn.execute(query)}


def subclasses(conn: Connection, view: TemporalView, *, sub_class_of: int, root: int) -> set[int]:
    """``root`` and every class below it through ``sub_class_of`` edges, transitively (cycles end)."""
    edge = facts.alias("edge")
    closure = select(literal(root, BigInteger).label("cls")).cte("closure", recursive=True)
    step = select(edge.c.e).where(view.where(edge), edge.c.a == sub_class_of, edge.c.v_ref == closure.c.cls)
    # UNION (not UNION ALL) drops classes already reached, so a subclass cycle terminates.
    closure = closure.union(step)
    return {int(row[0]) for row in conn.execute(select(closure.c.cls))}


def instances(conn: Connection, view: TemporalView, *, rdf_type: int, classes: Collection[int]) -> set[int]:
    """Subjects with an ``rdf_type`` fact naming one of ``classes``."""
    out: set[int] = set()
    c = facts.c
    for chunk in id_chunks(classes):
        query = select(c.e).distinct().where(view.where(facts), c.a == rdf_type, c.v_ref.in_(chunk))
        out.update(int(row[0]) for row in conn.execute(query))
    return out


# -- scans ---------------------------------------------------------------------------------------


def _scan_query(view: TemporalView) -> Select[Any]:
    c = facts.c
    s, p, o = terms.alias("s"), terms.alias("p"), terms.alias("o")
    return (
        select(c.e, s.c.iri, c.a, p.c.iri, c.v, o.c.iri)
        .select_from(facts.join(s, s.c.id == c.e).join(p, p.c.id == c.a).outerjoin(o, o.c.id == c.v_ref))
        .where(*_current(view))
        .order_by(c.e, c.a, c.id)
    )


def scan(
    conn: Connection, view: TemporalView, subjects: Collection[int] | None = None
) -> Generator[FactRow, None, None]:
    """Every statement of the view in store order, streamed (only ``subjects``' when given).

    A caller may stop early; the open cursor is closed when the generator is."""
    base = _scan_query(view)
    queries = (
        [base] if subjects is None else [base.where(facts.c.e.in_(chunk)) for chunk in id_chunks(subjects)]
    )
    for query in queries:
        result = conn.execute(query.execution_options(yield_per=_STREAM))
        try:
            row: Any
            for row in result:
                e, s, a, p, v, o = row
                yield FactRow(int(e), str(s), int(a), str(p), bytes(v), None if o is None else str(o))
        finally:
            result.close()


def first_targets(
    conn: Connection, view: TemporalView, subjects: Collection[int], predicate: int
) -> dict[int, int]:
    """For each subject, the reference object of its first (lowest row id) ``predicate`` fact."""
    c = facts.c
    out: dict[int, int] = {}
    for chunk in id_chunks(subjects):
        query = (
            select(c.e, c.v_ref)
            .where(*_current(view), c.e.in_(chunk), c.a == predicate, c.v_ref.is_not(None))
            .order_by(c.e, c.id)
        )
        found: Iterable[Any] = conn.execute(query)
        for e, ref in found:
            out.setdefault(int(e), int(ref))
    return out


def neighbours(conn: Connection, view: TemporalView, entity: int, limit: int) -> tuple[list[int], list[int]]:
    """Up to ``limit`` distinct reference objects of ``entity`` and up to ``limit`` distinct subjects
    that reference it, each ascending by term id."""
    c = facts.c
    out_query = (
        select(c.v_ref).distinct().where(view.where(facts), c.e == entity, c.v_ref.is_not(None))
    ).order_by(c.v_ref)
    in_query = (select(c.e).distinct().where(view.where(facts), c.v_ref == entity)).order_by(c.e)
    outgoing = [int(row[0]) for row in conn.execute(out_query.limit(limit))]
    incoming = [int(row[0]) for row in conn.execute(in_query.limit(limit))]
    return outgoing, incoming


def leading_facts(
    conn: Connection, view: TemporalView, entities: Collection[int], per_entity: int
) -> dict[int, list[tuple[int, bytes]]]:
    """The first ``per_entity`` statements ``(a, v)`` of each entity in store order, counting only
    reference, string, integer, double and boolean values (what a context fact shows)."""
    out: dict[int, list[tuple[int, bytes]]] = {e: [] for e in entities}
    if per_entity <= 0 or not entities:
        return out
    c = facts.c
    for chunk in id_chunks(entities):
        rank = func.row_number().over(partition_by=c.e, order_by=(c.a, c.id)).label("rank")
        ranked = (
            select(c.e, c.a, c.v, rank)
            .where(*_current(view), c.e.in_(chunk), c.v < _SIMPLE_KINDS_BELOW)
            .subquery()
        )
        query = (
            select(ranked.c.e, ranked.c.a, ranked.c.v)
            .where(ranked.c.rank <= per_entity)
            .order_by(ranked.c.e, ranked.c.rank)
        )
        leading: Iterable[Any] = conn.execute(query)
        for e, a, v in leading:
            out[int(e)].append((int(a), bytes(v)))
    return out


def suffixed_facts(
    conn: Connection, view: TemporalView, entities: Collection[int], suffixes: Sequence[str]
) -> list[tuple[int, str, bytes]]:
    """``(e, predicate IRI, v)`` of the entities' statements whose predicate IRI ends with one of
    ``suffixes``, in store order (label and type pickers read every one of them)."""
    c = facts.c
    p = terms.alias("p")
    rows: list[tuple[int, str, bytes]] = []
    # LIKE narrows (case-insensitively on SQLite); the exact suffix test is endswith below.
    like = or_(*(p.c.iri.like("%" + suffix) for suffix in suffixes))
    for chunk in id_chunks(entities):
        query = (
            select(c.e, p.c.iri, c.v)
            .select_from(facts.join(p, p.c.id == c.a))
            .where(*_current(view), c.e.in_(chunk), like)
            .order_by(c.e, c.a, c.id)
        )
        found: Iterable[Any] = conn.execute(query)
        rows.extend((int(e), str(iri), bytes(v)) for e, iri, v in found if str(iri).endswith(tuple(suffixes)))
    return rows
