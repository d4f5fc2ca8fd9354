"""The versioned registry of stored OWL ontologies (tools-graphs-governance §8.1 OL-1).

Kept as the shape sets are (``quipu.shacl.registry``): a load opens a new version of a name and
closes the open one at the load's timestamp (the same instant replaces it), a removal closes the
open version, and no row is ever deleted. ``tx``/``closed_tx`` are the committed-transaction
watermarks at opening and closing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, insert, select, update

from quipu.store.context import WriteContext
from quipu.store.context import head_tx as committed_head
from quipu.store.schema import ontologies
from quipu.store.versions import refuse_going_back

_c = ontologies.c


@dataclass(frozen=True)
class Version:
    """One stored version of a named ontology."""

    name: str
    turtle: str
    loaded_at: str
    valid_from: str


def open_keys(conn: Connection) -> tuple[tuple[str, str], ...]:
    """(name, valid_from) of every open version: the write gate's cache key, without the texts."""
    rows = conn.execute(select(_c.name, _c.valid_from).where(_c.valid_to.is_(None)).order_by(_c.name))
    return tuple((str(n), str(v)) for n, v in rows)


def open_versions(conn: Connection) -> list[Version]:
    """The open version of every stored name, by name."""
    rows = conn.execute(
        select(_c.name, _c.turtle, _c.loaded_at, _c.valid_from).where(_c.valid_to.is_(None)).order_by(_c.name)
    )
    return [Version(str(n), str(t), str(at), str(vf)) for n, t, at, vf in rows]


def store(ctx: WriteContext, name: str, turtle: str, ts: str, loaded_at: str) -> None:
    """Open a version of ``name`` valid from ``ts``, closing the open one (same instant: replace)."""
    conn = ctx.conn
    refuse_going_back(conn, ontologies, name, ts, "ontology")
    head = committed_head(conn)
    conn.execute(
        update(ontologies)
        .where(_c.name == name, _c.valid_to.is_(None), _c.valid_from != ts)
        .values(valid_to=ts, closed_tx=head)
    )
    row = {"turtle": turtle, "loaded_at": loaded_at, "valid_to": None, "closed_tx": None, "tx": head}
    same = conn.execute(select(_c.name).where(_c.name == name, _c.valid_from == ts)).first()
    if same is not None:
        conn.execute(update(ontologies).where(_c.name == name, _c.valid_from == ts).values(**row))
    else:
        conn.execute(insert(ontologies).values(name=name, valid_from=ts, **row))


def close(ctx: WriteContext, name: str, ts: str) -> bool:
    """Close the open version of ``name`` at ``ts``; False when none was open. History stays."""
    refuse_going_back(ctx.conn, ontologies, name, ts, "ontology")
    done = ctx.conn.execute(
        update(ontologies)
        .where(_c.name == name, _c.valid_to.is_(None))
        .values(valid_to=ts, closed_tx=committed_head(ctx.conn))
    )
    return bool(done.rowcount)


def versions_of(conn: Connection, name: str) -> list[tuple[str, str | None]]:
    """Every version of ``name`` as (valid_from, valid_to), oldest first (history is kept)."""
    rows = conn.execute(select(_c.valid_from, _c.valid_to).where(_c.name == name).order_by(_c.valid_from))
    return [(str(vf), None if vt is None else str(vt)) for vf, vt in rows]
