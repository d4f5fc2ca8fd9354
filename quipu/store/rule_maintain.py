"""Incremental maintenance of materialised rules: delete and re-derive (DRed), in SQL.

A full run (``rule_eval.evaluate``) reads the premise graph and rebuilds every rule's output.
Maintenance starts instead from what is materialised: a derived relation is the premise graph's
live statements of its predicate plus the companion's claims of it by the rule set's own rules
(``rule_eval.Facts``). The input is what the premise graph's transactions after the companion's
``derivedAsOfTx`` changed, read through the transaction-time index, so the work follows the
change, not the store:

* ``PLUS`` and ``MINUS`` hold the relation tuples gained and lost so far: the premise changes,
  then each maintained stratum's own net change, which later strata read.
* A positive stratum overdeletes first: every claim with a derivation through a lost tuple,
  found by joining the lost tuples (``FRONT``) with the relations as they stood before the
  change (``as_of``), is marked in ``DROPPED``, to fixpoint. Then it re-derives and inserts,
  semi-naively, over the current relations less the marked claims: a marked claim derived again
  is kept (unmarked, never closed and reasserted), a tuple derived for the first time is a new
  claim. What stays marked is closed.

No tuple passes through Python except the claims written, which the writer needs as rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Column, ColumnElement, Index, Integer, delete, exists, func, insert, literal, select
from sqlalchemy.sql import FromClause

from quipu.store import values
from quipu.store.context import TxInfo, WriteContext
from quipu.store.rule_eval import (
    DROPPED,
    TUPLE,
    BodyAtom,
    CompiledRule,
    Facts,
    Pick,
    ensure_tables,
    heads,
    tuples,
)
from quipu.store.schema import OP_ASSERT, OP_RETRACT, facts, transactions
from quipu.store.stage import Row
from quipu.store.views import visible
from quipu.store.writes import assert_rows, close_claims

PLUS = tuples("quipu_rule_plus")
MINUS = tuples("quipu_rule_minus")
FRONT = tuples("quipu_rule_front")
GONE = tuples("quipu_rule_gone")
ADDED = tuples("quipu_rule_added")
FOUND = tuples("quipu_rule_found", Column("r", Integer))
_TABLES = (PLUS, MINUS, FRONT, GONE, ADDED, FOUND, DROPPED)
_INDEXES = [
    Index(f"ix_{t.name}_{'_'.join(cols)}", *(t.c[c] for c in cols))
    for t in (PLUS, MINUS, FRONT, GONE, ADDED)
    for cols in (("p", "s", "v"), ("p", "v"), ("p", "v_ref"))
] + [
    Index("ix_quipu_rule_found_r", FOUND.c.r, FOUND.c.p, FOUND.c.s, FOUND.c.v),
    Index("ix_quipu_rule_dropped_id", DROPPED.c.id),
    Index("ix_quipu_rule_dropped_r", DROPPED.c.r, DROPPED.c.p, DROPPED.c.s, DROPPED.c.v),
    Index("ix_quipu_rule_dropped_k", DROPPED.c.k),
]


@dataclass
class Maintenance:
    """One maintenance run over a premise graph and its companion, inside one write."""

    ctx: WriteContext
    premise: int
    companion: int
    sources: dict[int, str]  # rule index -> the source of its claims, ``reasoner:<id>``
    since: int  # the premise transaction the companion was last derived from
    before: int  # the last transaction before the first unprocessed premise change
    open_tx: Callable[[int], TxInfo]  # a rule's transaction in this run, opened on first use
    valid_from: str
    asserted: dict[int, int] = field(default_factory=dict)
    retracted: dict[int, int] = field(default_factory=dict)

    @property
    def now(self) -> Facts:
        """The relations now, less the claims marked as overdeleted."""
        return Facts(self.premise, self.companion, tuple(self.sources.values()), dropped=True)

    @property
    def old(self) -> Facts:
        """The relations as they stood before the change."""
        return Facts(self.premise, self.companion, tuple(self.sources.values()), as_of=self.before)

    @property
    def settled(self) -> Facts:
        return Facts(self.premise, self.companion, tuple(self.sources.values()))


def prepare(ctx: WriteContext) -> None:
    ensure_tables(ctx, "quipu_rule_maintenance", _TABLES, _INDEXES)


def _held(reads: Facts, t: FromClause) -> ColumnElement[bool]:
    """The tuple of ``t``'s row is in its relation as ``reads`` sees it."""
    f = facts.alias("h")
    return exists().where(*reads.conds(f, t.c.p), f.c.e == t.c.s, f.c.v == t.c.v)


def _same(a: FromClause, b: FromClause) -> list[ColumnElement[bool]]:
    return [a.c.p == b.c.p, a.c.s == b.c.s, a.c.v == b.c.v]


def _count(ctx: WriteContext, table: Any) -> int:
    return int(ctx.conn.execute(select(func.count()).select_from(table)).scalar() or 0)


def _predicates(ctx: WriteContext, table: Any) -> set[int]:
    found: list[Any] = list(ctx.conn.execute(select(table.c.p).distinct()))
    return {int(p) for (p,) in found}


def premise_changes(m: Maintenance, predicates: Iterable[int]) -> None:
    """Fill PLUS and MINUS with the premise graph's changes since ``m.since`` on ``predicates``:
    statements now live that no relation held before, and statements retracted that the
    premise graph no longer holds. Read transaction by transaction through the transaction-time
    index: the changes, never the graph, nor the companion's own (often large) transactions."""
    preds = sorted(set(predicates))
    t = transactions.c
    found: list[Any] = list(m.ctx.conn.execute(select(t.id).where(t.id > m.since, t.graph == m.premise)))
    ids = [int(i) for (i,) in found]
    f = facts.alias("f")
    cols = [c.label(n) for c, n in zip((f.c.a, f.c.e, f.c.v, f.c.v_ref, f.c.v_num), TUPLE, strict=True)]
    live = Facts(m.premise)
    for start in range(0, len(ids), _CHUNK):
        # ``+ 0`` keeps the graph and predicate columns out of index choice: the transaction
        # index is the selective one, and SQLite's planner otherwise reads the whole predicate.
        changed = [f.c.tx.in_(ids[start : start + _CHUNK]), (f.c.g + 0) == m.premise, (f.c.a + 0).in_(preds)]
        gained = select(*cols).where(
            *changed, f.c.op == OP_ASSERT, f.c.valid_to.is_(None), ~_held_row(m.old, f)
        )
        lost = select(*cols).where(*changed, f.c.op == OP_RETRACT, ~_held_row(live, f))
        for target, query in ((PLUS, gained), (MINUS, lost)):
            q = query.subquery("q")
            known = target.alias("k")
            fresh = select(*q.c).where(~exists().where(*_same(known, q))).distinct()
            m.ctx.conn.execute(insert(target).from_select(list(TUPLE), fresh))


_CHUNK = 500


def _held_row(reads: Facts, f: FromClause) -> ColumnElement[bool]:
    """The statement of facts row ``f`` is in its relation as ``reads`` sees it."""
    h = facts.alias("h")
    return exists().where(*reads.conds(h, f.c.a), h.c.e == f.c.e, h.c.vh == f.c.vh, h.c.v == f.c.v)


def changed_predicates(ctx: WriteContext) -> set[int]:
    return _predicates(ctx, PLUS) | _predicates(ctx, MINUS)


def _at(table: Any, n: int) -> Pick:
    """Positive atom ``n`` reads ``table``; every other atom, stored facts."""
    return lambda i, _atom: table if i is not None and i == n else None


def _positives(rule: CompiledRule) -> list[BodyAtom]:
    return [a for a in rule.body if not a.negated]


def _find(m: Maintenance, rules: Sequence[CompiledRule], table: Any, reads: Facts) -> None:
    """FOUND += each rule's head tuples with one positive atom reading ``table`` (a delta)."""
    preds = _predicates(m.ctx, table)
    for rule in rules:
        for n, atom in enumerate(_positives(rule)):
            if atom.pred in preds:
                _found(m, rule, heads(rule, reads, _at(table, n)))


def _found(m: Maintenance, rule: CompiledRule, query: Any) -> None:
    if query is None:
        return
    q = query.subquery("q")
    m.ctx.conn.execute(insert(FOUND).from_select(["r", *TUPLE], select(literal(rule.index, Integer), *q.c)))


def _claims(
    m: Maintenance, rule: CompiledRule, x: FromClause
) -> tuple[FromClause, list[ColumnElement[bool]]]:
    """The companion's live claims, by ``rule``, of the tuple in ``x``'s row."""
    c = facts.alias("c")
    t = transactions.c
    by_rule = exists().where(t.id == c.c.tx, t.source == m.sources[rule.index])
    return c, [
        c.c.g == m.companion,
        c.c.e == x.c.s,
        c.c.a == x.c.p,
        c.c.v == x.c.v,
        visible(c, None, None),
        by_rule,
    ]


def overdelete(m: Maintenance, rules: Sequence[CompiledRule]) -> None:
    """Mark in DROPPED every claim of ``rules`` with a derivation through a lost tuple, to
    fixpoint: the lost tuples join the relations as they stood before the change."""
    conn = m.ctx.conn
    body = {a.pred for rule in rules for a in _positives(rule)}
    for table in (FRONT, GONE, FOUND):
        conn.execute(delete(table))
    lost = select(*MINUS.c).where(MINUS.c.p.in_(sorted(p for p in body if p is not None)))
    conn.execute(insert(FRONT).from_select(list(TUPLE), lost))
    conn.execute(insert(GONE).from_select(list(TUPLE), select(*FRONT.c)))
    k = 0
    while _count(m.ctx, FRONT):
        k += 1
        conn.execute(delete(FOUND))
        _find(m, rules, FRONT, m.old)
        for rule in rules:
            x = FOUND.alias("x")
            c, conds = _claims(m, rule, x)
            d = DROPPED.alias("d")
            marked = (
                select(c.c.id, literal(rule.index, Integer), literal(k, Integer), *(x.c[n] for n in TUPLE))
                .where(x.c.r == rule.index, *conds, ~exists().where(d.c.id == c.c.id))
                .distinct()
            )
            conn.execute(insert(DROPPED).from_select(["id", "r", "k", *TUPLE], marked))
        conn.execute(delete(FRONT))
        d, g = DROPPED.alias("d"), GONE.alias("g")
        fresh = (
            select(*(d.c[n] for n in TUPLE))
            .where(d.c.k == k, ~exists().where(*_same(g, d)), ~_held(Facts(m.premise), d))
            .distinct()
        )
        conn.execute(insert(FRONT).from_select(list(TUPLE), fresh))
        conn.execute(insert(GONE).from_select(list(TUPLE), select(*FRONT.c)))


def rederive(m: Maintenance, rules: Sequence[CompiledRule]) -> None:
    """Re-derive the marked claims and insert the consequences of the gained tuples, to
    fixpoint, over the current relations less what is still marked."""
    conn = m.ctx.conn
    conn.execute(delete(FOUND))
    for rule in rules:  # a marked claim with another derivation
        _found(m, rule, heads(rule, m.now, lambda _i, _a: None, bound=DROPPED))
    _find(m, rules, PLUS, m.now)
    while True:
        conn.execute(delete(FRONT))
        x = FOUND.alias("x")
        fresh = select(*(x.c[n] for n in TUPLE)).where(~_held(m.now, x)).distinct()
        conn.execute(insert(FRONT).from_select(list(TUPLE), fresh))
        d = DROPPED
        conn.execute(delete(d).where(exists().where(x.c.r == d.c.r, *_same(x, d))))
        for rule in rules:
            _write_new(m, rule)
        if not _count(m.ctx, FRONT):
            return
        conn.execute(delete(FOUND))
        _find(m, rules, FRONT, m.now)


def _write_new(m: Maintenance, rule: CompiledRule) -> None:
    """Claims for the FOUND tuples of ``rule`` it holds no claim of yet."""
    x = FOUND.alias("x")
    c, conds = _claims(m, rule, x)
    query = select(*(x.c[n] for n in TUPLE)).where(
        x.c.r == rule.index, ~exists().select_from(c).where(*conds)
    )
    found: list[Any] = list(m.ctx.conn.execute(query.distinct()))
    rows: list[Row] = [
        (int(s), int(p), bytes(v), values.digest(bytes(v)), None if r is None else int(r), n)
        for p, s, v, r, n in found
    ]
    if rows:
        assert_rows(m.ctx, m.open_tx(rule.index), rows, m.valid_from)
        m.ctx.dialect.insert_tuples(m.ctx.conn, ADDED, TUPLE, [(a, e, v, r, n) for e, a, v, _h, r, n in rows])
        m.asserted[rule.index] = m.asserted.get(rule.index, 0) + len(rows)


def settle(m: Maintenance, rules: Sequence[CompiledRule]) -> None:
    """Close what stays marked, then record the stratum's net change for the strata above."""
    conn = m.ctx.conn
    for rule in rules:
        marked: list[Any] = list(conn.execute(select(DROPPED.c.id).where(DROPPED.c.r == rule.index)))
        ids = [int(i) for (i,) in marked]
        if ids:
            closed = close_claims(m.ctx, m.open_tx(rule.index), claim_ids=ids)
            m.retracted[rule.index] = m.retracted.get(rule.index, 0) + closed
    record(m, DROPPED, ADDED)
    clear(m.ctx)


def record(m: Maintenance, removed: Any, added: Any) -> None:
    """MINUS += tuples of ``removed`` no relation holds now; PLUS += tuples of ``added`` none
    held before the change. Only these are changes a stratum above can see."""
    conn = m.ctx.conn
    for target, source, reads in ((MINUS, removed, m.settled), (PLUS, added, m.old)):
        s, t = source.alias("s"), target.alias("t")
        query = (
            select(*(s.c[n] for n in TUPLE)).where(~_held(reads, s), ~exists().where(*_same(t, s))).distinct()
        )
        conn.execute(insert(target).from_select(list(TUPLE), query))


def note_rows(
    ctx: WriteContext, table: Any, rows: Iterable[tuple[int, int, bytes, int | None, float | None]]
) -> None:
    """Stage (p, s, v, v_ref, v_num) tuples into ``table`` (ADDED or GONE) for ``record``."""
    ctx.dialect.insert_tuples(ctx.conn, table, TUPLE, list(rows))


def clear(ctx: WriteContext) -> None:
    """Empty the per-stratum tables; PLUS and MINUS carry over to the strata above."""
    for table in (DROPPED, ADDED, GONE, FOUND, FRONT):
        ctx.conn.execute(delete(table))
