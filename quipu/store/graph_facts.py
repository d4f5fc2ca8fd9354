"""Triple-level writes and reads of one graph, for the graphs family: label and lifecycle facts
in the meta-graph, and the three overlay primitives (tools-graphs-governance §1.3, §2).

Objects are an IRI (``str``) or an encoded literal (``bytes``, quipu.store.values).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select, update

from quipu.store import values
from quipu.store.context import TxInfo, WriteContext
from quipu.store.database import Database
from quipu.store.schema import OP_ASSERT, OP_TOMBSTONE, facts
from quipu.store.statements import Obj
from quipu.store.writes import assert_rows, close_claims, grouped_rows

Triple = tuple[str, str, Obj]
Key = tuple[int, int, bytes]  # (e, a, v) of a stored statement


def _iris(triples: Sequence[Triple]) -> list[str]:
    out = {t for s, p, o in triples for t in (s, p, *((o,) if isinstance(o, str) else ()))}
    return sorted(out)


def assert_triples(
    db: Database,
    ctx: WriteContext,
    tx: TxInfo,
    triples: Sequence[Triple],
    valid_from: str,
    valid_to: str | None = None,
) -> int:
    """Assert ``triples`` into ``tx.graph``; a ``valid_to`` closes their validity window up front
    (an expiring declaration). Returns the claim rows written."""
    ids = db.terms.intern(ctx, _iris(triples))
    plan = grouped_rows([(None, s, p, o) for s, p, o in triples], ids, {None: tx.graph})
    rows = list(plan.get(tx.graph, {}).values())
    written = assert_rows(ctx, tx, rows, valid_from)
    if valid_to is not None and written:
        ctx.conn.execute(
            update(facts).where(facts.c.tx == tx.id, facts.c.g == tx.graph).values(valid_to=valid_to)
        )
    return written


def _key(db: Database, ctx: WriteContext, triple: Triple) -> Key:
    s, p, o = triple
    ids = db.terms.intern(ctx, _iris([triple]))
    return ids[s], ids[p], (values.ref(ids[o]) if isinstance(o, str) else o)


def close_triple(db: Database, ctx: WriteContext, tx: TxInfo, triple: Triple) -> int:
    """Close every live claim of one statement in ``tx.graph``; the statements closed (0 or 1)."""
    e, a, v = _key(db, ctx, triple)
    return close_claims(ctx, tx, e=e, a=a, v=v)


def tombstone(db: Database, ctx: WriteContext, tx: TxInfo, triple: Triple, valid_from: str) -> bool:
    """Mark ``triple`` absent in ``tx.graph``'s composed view; False (no row) when an active
    tombstone for it is already there."""
    e, a, v = _key(db, ctx, triple)
    c = facts.c
    active = select(c.id).where(
        c.g == tx.graph, c.e == e, c.a == a, c.vh == values.digest(v), c.v == v,
        c.op == OP_TOMBSTONE, c.valid_to.is_(None),
    ).limit(1)  # fmt: skip
    if ctx.conn.execute(active).first() is not None:
        return False
    ctx.conn.execute(
        facts.insert(),
        {
            "e": e, "a": a, "v": v, "vh": values.digest(v), "v_ref": values.ref_id(v),
            "v_num": values.numeric(v), "g": tx.graph, "tx": tx.id, "valid_from": valid_from,
            "op": OP_TOMBSTONE,
        },
    )  # fmt: skip
    return True


def live(conn: Connection, g: int, op: int = OP_ASSERT) -> set[Key]:
    """Distinct current (e, a, v) rows of graph ``g`` with op ``op`` (asserts or tombstones)."""
    c = facts.c
    query = select(c.e, c.a, c.v).distinct().where(c.g == g, c.op == op, c.valid_to.is_(None))
    return {(int(r[0]), int(r[1]), bytes(r[2])) for r in conn.execute(query)}
