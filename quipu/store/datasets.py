"""Named datasets: an IRI standing for a set of graph IRIs (tools-graphs-governance §1.6).

The tables are authoritative for resolution; the meta-graph mirror the graphs package writes
beside them is history. Members are kept as IRIs, so a member registered later starts counting
then, and one never registered never counts (rule DS-2: an unregistered member contributes
nothing and never falls through to ROOT).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, select

from quipu.store.context import WriteContext
from quipu.store.schema import dataset_members, datasets

Member = tuple[str, int | None]  # graph IRI, declared rank


def replace(ctx: WriteContext, name: str, members: Sequence[Member], now: str) -> None:
    """Create ``name`` or replace its member set wholesale (rule DS-1)."""
    remove(ctx, name)
    ctx.conn.execute(datasets.insert(), {"name": name, "updated_at": now})
    ctx.conn.execute(dataset_members.insert(), [{"dataset": name, "graph": g, "ord": o} for g, o in members])


def remove(ctx: WriteContext, name: str) -> bool:
    """Drop ``name`` and its members; False when there was no such dataset."""
    ctx.conn.execute(delete(dataset_members).where(dataset_members.c.dataset == name))
    return bool(ctx.conn.execute(delete(datasets).where(datasets.c.name == name)).rowcount)


def names(conn: Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute(select(datasets.c.name).order_by(datasets.c.name))]


def exists(conn: Connection, name: str) -> bool:
    return conn.execute(select(datasets.c.name).where(datasets.c.name == name)).first() is not None


def members(conn: Connection, name: str) -> list[Member] | None:
    """Members ranked ascending first, then unranked by IRI; None for an unknown dataset."""
    if not exists(conn, name):
        return None
    rows = conn.execute(
        select(dataset_members.c.graph, dataset_members.c.ord).where(dataset_members.c.dataset == name)
    )
    found: list[Member] = [(str(r[0]), None if r[1] is None else int(r[1])) for r in rows]
    return sorted(found, key=lambda m: (m[1] is None, m[1] if m[1] is not None else 0, m[0]))


def add_member(ctx: WriteContext, name: str, graph: str, now: str) -> None:
    """Add one unranked member, creating the dataset when needed (the frozen dataset)."""
    if not exists(ctx.conn, name):
        ctx.conn.execute(datasets.insert(), {"name": name, "updated_at": now})
    present = select(dataset_members.c.graph).where(
        dataset_members.c.dataset == name, dataset_members.c.graph == graph
    )
    if ctx.conn.execute(present).first() is None:
        ctx.conn.execute(dataset_members.insert(), {"dataset": name, "graph": graph, "ord": None})


def drop_member(ctx: WriteContext, name: str, graph: str) -> None:
    """Remove one member; the dataset goes too when it becomes empty."""
    ctx.conn.execute(
        delete(dataset_members).where(dataset_members.c.dataset == name, dataset_members.c.graph == graph)
    )
    left = select(dataset_members.c.graph).where(dataset_members.c.dataset == name).limit(1)
    if ctx.conn.execute(left).first() is None:
        ctx.conn.execute(delete(datasets).where(datasets.c.name == name))
