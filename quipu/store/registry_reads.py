"""ROOT facts as they counted at a witness ``(tx, at)``: the verifier registry's reads
(tools-graphs-governance §5.0).

A fact counts at the witness when it is an assertion valid at ``at`` (``valid_from <= at`` and
no ``valid_to`` at or before it) and, when the witness names a transaction, it was written at or
before that transaction and not retracted by it. Both axes are checked: rotating a key closes
it in both, and a ``valid_to`` moved earlier distrusts what was signed after it, whenever that
was recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select

from quipu.store import values
from quipu.store.schema import OP_ASSERT, ROOT, facts, transactions


def facts_at(
    conn: Connection,
    predicates: Sequence[int],
    *,
    at: str,
    tx: int | None,
    subjects: Sequence[int] | None = None,
    objects: Sequence[bytes] | None = None,
) -> list[tuple[int, int, bytes]]:
    """(subject, predicate, value) of every ROOT fact on ``predicates`` that counts at the
    witness, optionally only about ``subjects`` or only with one of the values ``objects``;
    each statement once."""
    if not predicates or (subjects is not None and not subjects) or (objects is not None and not objects):
        return []
    c = facts.c
    cond = [
        c.g == ROOT,
        c.a.in_(sorted(set(predicates))),
        c.op == OP_ASSERT,
        c.valid_from <= at,
        or_(c.valid_to.is_(None), c.valid_to > at),
    ]
    if tx is not None:
        cond += [c.tx <= tx, or_(c.retracted_tx.is_(None), c.retracted_tx > tx)]
    if subjects is not None:
        cond.append(c.e.in_(sorted(set(subjects))))
    if objects is not None:  # through the digest, which the (g, a, vh) index holds
        cond += [c.vh.in_([values.digest(v) for v in objects]), c.v.in_(list(objects))]
    rows: list[Any] = list(conn.execute(select(c.e, c.a, c.v).where(and_(*cond)).distinct()))
    return [(int(e), int(a), bytes(v)) for e, a, v in rows]


def first_recording(conn: Connection, subject: int, predicate: int, value: bytes) -> tuple[int, str] | None:
    """The first transaction that recorded the ROOT statement (subject, predicate, value), and
    that transaction's timestamp: the store's own witness of when it learnt it."""
    c, t = facts.c, transactions.c
    first = (
        select(func.min(c.tx))
        .where(c.g == ROOT, c.e == subject, c.a == predicate, c.v == value, c.op == OP_ASSERT)
        .scalar_subquery()
    )
    row = conn.execute(select(t.id, t.timestamp).where(t.id == first)).first()
    return None if row is None else (int(row[0]), str(row[1]))
