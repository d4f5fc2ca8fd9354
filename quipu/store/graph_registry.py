"""The graph registry's rows: class, parent, provenance, lifecycle and the label cache
(tools-graphs-governance §0.8).

A graph's id is the term id of its IRI (ROOT is 0 and has no term). The label cache is the
registry's copy of the newest declaration in the meta-graph; it is what label filters, label
floors and composed query labels read, so none of them parse RDF per query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, func, select, update

from quipu import times
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.graph_labels import DURABILITY, FRESHNESS, Labels
from quipu.store.schema import META_IRI, ROOT, ROOT_IRI, graphs, terms, transactions

META: Final = 1  # the meta-graph's id: the first term of every store (migration 0001)


@dataclass(frozen=True, slots=True)
class GraphRecord:
    g: int
    iri: str
    cls: str  # committed | overlay
    parent: int | None
    created_at: str
    actor: str | None
    source: str | None
    lifecycle: str | None
    labels: Labels


_COLUMNS = (
    graphs.c.g,
    terms.c.iri,
    graphs.c["class"],
    graphs.c.parent_branch,
    graphs.c.created_at,
    graphs.c.created_actor,
    graphs.c.source,
    graphs.c.lifecycle,
)
# The label cache, in the order Labels.from_cache reads it.
LABEL_COLUMNS: Final = (
    graphs.c.fresh_rank,
    graphs.c.durability_rank,
    graphs.c.trust_iri,
    graphs.c.trust_rank,
    graphs.c.trust_chain,
    graphs.c.policy,
    graphs.c.data_kind,
    graphs.c.labels_tx,
    graphs.c.labels_valid_to,
)
_SELECT = select(*_COLUMNS, *LABEL_COLUMNS).select_from(graphs.outerjoin(terms, terms.c.id == graphs.c.g))


def _record(row: Any) -> GraphRecord:
    g, iri, cls, parent, created_at, actor, source, lifecycle = row[: len(_COLUMNS)]
    labels = Labels.from_cache(row[len(_COLUMNS) :])
    return GraphRecord(
        int(g),
        ROOT_IRI if g == ROOT else str(iri),
        str(cls),
        None if parent is None else int(parent),
        str(created_at),
        actor,
        source,
        lifecycle,
        labels,
    )


def records(conn: Connection, ids: Any = None) -> list[GraphRecord]:
    """Registry rows by ascending id; ``ids`` (an iterable of graph ids) narrows them."""
    query = _SELECT.order_by(graphs.c.g)
    if ids is not None:
        query = query.where(graphs.c.g.in_(sorted(ids)))
    return [_record(row) for row in conn.execute(query)]


def record(conn: Connection, gid: int) -> GraphRecord | None:
    row = conn.execute(_SELECT.where(graphs.c.g == gid)).first()
    return None if row is None else _record(row)


def graph_id(db: Database, conn: Connection, iri: str) -> int | None:
    """The id an IRI would have as a graph (ROOT's IRI is 0), or None when never interned."""
    if iri == ROOT_IRI:
        return ROOT
    return db.terms.lookup(conn, (iri,)).get(iri)


def lookup(db: Database, conn: Connection, iri: str) -> tuple[int | None, GraphRecord | None]:
    """(id, registry row): (None, None) for an IRI never interned, (id, None) for one interned
    but not registered (the two are distinct, tools-graphs-governance §0.8)."""
    gid = graph_id(db, conn, iri)
    return gid, (None if gid is None else record(conn, gid))


def register(
    db: Database,
    ctx: WriteContext,
    iri: str,
    *,
    cls: str = "committed",
    parent: int | None = None,
    created_at: str | None = None,
    actor: str | None = None,
) -> tuple[int, bool]:
    """Insert the registry row of ``iri`` unless there is one: (id, whether this call inserted
    it). The caller has checked the IRI and, for an existing row, its class."""
    gid = db.terms.intern(ctx, (iri,))[iri]
    if ctx.conn.execute(select(graphs.c.g).where(graphs.c.g == gid)).first() is not None:
        return gid, False
    ctx.conn.execute(
        graphs.insert(),
        {
            "g": gid,
            "class": cls,
            "parent_branch": parent,
            "created_at": created_at or times.now(),
            "created_actor": actor,
        },
    )
    return gid, True


def write_labels(ctx: WriteContext, gid: int, labels: Labels) -> None:
    """Replace the cached label of ``gid`` wholesale: an axis not in ``labels`` becomes NULL."""
    ctx.conn.execute(
        update(graphs)
        .where(graphs.c.g == gid)
        .values(
            fresh_rank=FRESHNESS.index(labels.freshness) + 1 if labels.freshness else None,
            durability_rank=DURABILITY.index(labels.durability) + 1 if labels.durability else None,
            trust_iri=labels.trust_iri,
            trust_rank=labels.trust_rank,
            trust_chain=labels.trust_chain,
            policy=" ".join(labels.policy) if labels.policy else None,
            data_kind=labels.kind,
            labels_tx=labels.tx,
            labels_valid_to=labels.valid_to,
        )
    )


def set_lifecycle(ctx: WriteContext, gid: int, lifecycle: str | None) -> None:
    ctx.conn.execute(update(graphs).where(graphs.c.g == gid).values(lifecycle=lifecycle))


def is_reserved(iri: str) -> bool:
    """ROOT's and the meta-graph's IRIs, which no caller registers or writes by name."""
    return iri in (ROOT_IRI, META_IRI)


def next_tx(conn: Connection, graph: int, *, after: int) -> int:
    """The first transaction after ``after`` that wrote ``graph`` (0 when none has)."""
    t = transactions.c
    found = conn.execute(select(func.min(t.id)).where(t.graph == graph, t.id > after)).scalar()
    return int(found or 0)


def head_of(conn: Connection, graph: int) -> int:
    """The latest transaction that wrote ``graph`` (0 when none has)."""
    found = conn.execute(select(func.max(transactions.c.id)).where(transactions.c.graph == graph)).scalar()
    return int(found or 0)
