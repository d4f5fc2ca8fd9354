"""Which graphs an entity has live facts in: the membership behind an explicit graph scope of
search (tools-search §5.1.6) and the ``graph``/``graphs`` a scoped result reports."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, select

from quipu.store.schema import facts, graphs
from quipu.store.views import TemporalView


def registered(conn: Connection) -> list[int]:
    """Every registered named graph that is not frozen, ascending."""
    query = select(graphs.c.g).where(graphs.c.lifecycle.is_(None)).order_by(graphs.c.g)
    return [int(row[0]) for row in conn.execute(query)]


def members(conn: Connection, view: TemporalView) -> set[int]:
    """Subjects with at least one fact visible in ``view`` (its graphs, at its instant)."""
    query = select(facts.c.e).distinct().where(view.where(facts))
    return {int(row[0]) for row in conn.execute(query)}


def graphs_of(conn: Connection, view: TemporalView, entity_ids: Iterable[int]) -> dict[int, list[int]]:
    """For each entity, the graphs of ``view`` it has visible facts in, ascending."""
    ids = list(entity_ids)
    out: dict[int, list[int]] = {}
    if not ids:
        return out
    query = (
        select(facts.c.e, facts.c.g)
        .distinct()
        .where(view.where(facts), facts.c.e.in_(ids))
        .order_by(facts.c.e, facts.c.g)
    )
    for row in conn.execute(query):
        out.setdefault(int(row[0]), []).append(int(row[1]))
    return out
