"""Derived facts that replace their previous derivation (tools-search §5.14 "Persistence").

An algorithm's output (community membership, PageRank scores) is written to ROOT under one
predicate as the complete desired set: statements already current and desired are left alone
(they keep their original assertion time), other current statements of the predicate close,
missing ones are asserted. When nothing differs, no transaction is opened at all, so a re-run
over an unchanged graph leaves no bitemporal churn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select

from quipu.identity import Authenticated
from quipu.store import values
from quipu.store.database import Database
from quipu.store.schema import ROOT, facts
from quipu.store.stage import Row
from quipu.store.views import visible
from quipu.store.writes import assert_rows, close_statements, open_transaction

Value = str | float  # an IRI (a reference) or a double


@dataclass(frozen=True)
class Replaced:
    tx: int | None  # None: nothing changed and nothing was written
    asserted: int
    retracted: int


def replace(
    db: Database,
    predicate: str,
    desired: Sequence[tuple[int, Value]],
    *,
    source: str,
    timestamp: str,
    auth: Authenticated | None = None,
) -> Replaced:
    """Make ``desired`` (subject term id, value) the current ROOT statements of ``predicate``:
    one transaction stamped ``timestamp`` with ``source``, asserting in the order given."""
    with db.write(auth) as ctx:
        iris = [predicate] + [v for _e, v in desired if isinstance(v, str)]
        ids = db.terms.intern(ctx, iris)
        a = ids[predicate]
        wanted: dict[tuple[int, bytes], Row] = {}
        for e, value in desired:
            if isinstance(value, str):
                v, ref, num = values.ref(ids[value]), ids[value], None
            else:
                v, ref, num = values.double(value), None, float(value)
            wanted.setdefault((e, v), (e, a, v, values.digest(v), ref, num))
        c = facts.c
        query = select(c.e, c.v, c.vh, c.v_ref, c.v_num).distinct()
        query = query.where(c.g == ROOT, c.a == a, visible(facts, None, None))
        current = {(int(r.e), bytes(r.v)): r for r in ctx.conn.execute(query)}
        stale: list[Row] = [
            (e, a, v, bytes(r.vh), r.v_ref, r.v_num) for (e, v), r in current.items() if (e, v) not in wanted
        ]
        missing = [row for key, row in wanted.items() if key not in current]
        if not stale and not missing:
            return Replaced(None, 0, 0)
        tx = open_transaction(ctx, timestamp=timestamp, actor=None, source=source, graph=ROOT)
        retracted = close_statements(ctx, tx, stale)
        asserted = assert_rows(ctx, tx, missing, timestamp)
    return Replaced(tx.id, asserted, retracted)
