"""Reads about one statement at a read point, for ``quipu_rule_query`` (tools-core §1.2):
its visible claims with their provenance, and the reified nodes that describe it.

Every function takes an open read snapshot and a ``TemporalView``, so the answer is one
consistent state; none interns anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from quipu.store import values
from quipu.store.schema import facts, transactions
from quipu.store.views import TemporalView

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"


@dataclass(frozen=True)
class Claim:
    graph: int
    tx: int
    source: str | None
    valid_from: str


def claims(conn: Connection, view: TemporalView, e: int, a: int, v: bytes) -> list[Claim]:
    """Visible claims of (e, a, v) in the view's graphs, oldest transaction first."""
    f, t = facts.alias("f"), transactions.alias("t")
    query = (
        select(f.c.g, f.c.tx, t.c.source, f.c.valid_from)
        .join_from(f, t, t.c.id == f.c.tx)
        .where(view.where(f), f.c.e == e, f.c.a == a, f.c.vh == values.digest(v), f.c.v == v)
        .order_by(f.c.tx, f.c.id)
    )
    rows: list[Any] = list(conn.execute(query))
    return [Claim(int(g), int(tx), source, str(vf)) for g, tx, source, vf in rows]


def reified(
    conn: Connection, view: TemporalView, cls: int, rdf: dict[str, int], s: int, p: int, o: bytes
) -> list[tuple[int, Claim]]:
    """Nodes N typed ``cls`` with ``rdf:subject s``, ``rdf:predicate p`` and ``rdf:object o``, all
    visible; each with its type claim's provenance. ``rdf`` maps type/subject/predicate/object
    to their term ids."""
    n, ts, tp, to = (facts.alias(x) for x in ("n", "ts", "tp", "to"))
    t = transactions.alias("t")
    query = (
        select(n.c.e, n.c.g, n.c.tx, t.c.source, n.c.valid_from)
        .join_from(n, t, t.c.id == n.c.tx)
        .where(view.where(n), n.c.a == rdf["type"], n.c.v_ref == cls)
        .where(view.where(ts), ts.c.e == n.c.e, ts.c.a == rdf["subject"], ts.c.v_ref == s)
        .where(view.where(tp), tp.c.e == n.c.e, tp.c.a == rdf["predicate"], tp.c.v_ref == p)
        .where(view.where(to), to.c.e == n.c.e, to.c.a == rdf["object"])
        .where(to.c.vh == values.digest(o), to.c.v == o)
        .order_by(n.c.e, n.c.tx)
    )
    found: dict[int, tuple[int, Claim]] = {}
    rows: list[Any] = list(conn.execute(query))
    for e, g, tx, source, vf in rows:
        found.setdefault(int(e), (int(e), Claim(int(g), int(tx), source, str(vf))))
    return list(found.values())


def objects(conn: Connection, view: TemporalView, e: int, a: int) -> list[bytes]:
    """The visible values of (e, a)."""
    f = facts.alias("f")
    rows: list[Any] = list(
        conn.execute(select(f.c.v).distinct().where(view.where(f), f.c.e == e, f.c.a == a))
    )
    return [bytes(r[0]) for r in rows]
