"""Datalog evaluation in SQL: semi-naive, to fixpoint, over one graph's current facts.

The reasoner (``quipu.reasoning``) hands over rules already resolved to term ids. Relations live
in temporary tables of the write connection: ``all`` (every tuple known so far, premises of the
derived predicates included), ``delta`` (what the last round added) and ``new`` (this round's).
Each round of a recursive stratum is one ``INSERT … SELECT`` per rule and recursive body atom,
that atom reading ``delta`` and the rest reading full relations; no tuple passes through Python.
After the last stratum each rule's own output is projected once more over the final relations
into ``out``, which is what the caller diffs against the rule's earlier derivations.

A tuple is (p, s, v, v_ref, v_num) as a fact row stores it: the subject is a term id, the object
its value encoding (``v``, canonical, so equal objects have equal bytes), with the term id of a
reference object and the numeric shadow of a number. Literal objects therefore take part like
any other [beyond the original, whose rules saw reference triples only].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    ColumnElement,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    and_,
    bindparam,
    case,
    cast,
    delete,
    distinct,
    exists,
    false,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    text,
    true,
)
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.sql import FromClause, Select

from quipu.store import values
from quipu.store.context import WriteContext
from quipu.store.schema import OP_ASSERT, facts, transactions
from quipu.store.stage import TEMP_TABLES
from quipu.store.views import primary, visible


@dataclass(frozen=True)
class Slot:
    """One argument: a variable, a reference constant (term id), a literal constant (its
    encoding), or an IRI the store has never seen (``unknown``: it matches nothing)."""

    var: str | None = None
    ref: int | None = None
    value: bytes | None = None
    unknown: bool = False


@dataclass(frozen=True)
class BodyAtom:
    pred: int | None  # None: a predicate never interned (an empty relation)
    s: Slot
    o: Slot
    negated: bool = False


@dataclass(frozen=True)
class Test:
    """``left op right`` over bound values (op: = != < <= > >=), negated with ``not``."""

    left: Slot
    op: str
    right: Slot
    negated: bool = False


@dataclass(frozen=True)
class CompiledRule:
    index: int  # position in the rule set: the key of its output
    head: int  # head predicate id
    s: Slot
    o: Slot
    body: tuple[BodyAtom, ...]
    tests: tuple[Test, ...] = ()
    aggregate: str | None = None  # count, sum, min or max of the head object's variable


_meta = MetaData()


def tuples(name: str, *extra: Column[Any]) -> Table:
    return Table(
        name,
        _meta,
        *extra,
        Column("p", BigInteger),
        Column("s", BigInteger),
        Column("v", LargeBinary),
        Column("v_ref", BigInteger),
        Column("v_num", Float),
        prefixes=["TEMPORARY"],
    )


ALL = tuples("quipu_rule_all")
DELTA = tuples("quipu_rule_delta")
NEW = tuples("quipu_rule_new")
OUT = tuples("quipu_rule_out", Column("r", Integer))
# Maintenance (``rule_maintain``): the companion claims overdeleted so far, by claim id and rule.
DROPPED = tuples("quipu_rule_dropped", Column("id", BigInteger), Column("r", Integer), Column("k", Integer))
_TABLES = (ALL, DELTA, NEW, OUT)
# Probes by subject and by object value, and the duplicate checks by the whole tuple.
_INDEXES = [
    Index(f"ix_{t.name}_{'_'.join(cols)}", *(t.c[c] for c in cols))
    for t in (ALL, DELTA, NEW)
    for cols in (("p", "s", "v"), ("p", "v"), ("p", "v_ref"))
] + [Index("ix_quipu_rule_out_r", OUT.c.r, OUT.c.s, OUT.c.v)]
_CREATED = "quipu_rule_tables"

TUPLE = ("p", "s", "v", "v_ref", "v_num")


def ensure_tables(ctx: WriteContext, key: str, tables: Sequence[Table], indexes: Sequence[Index]) -> None:
    """Create ``tables`` (once per connection, remembered under ``key``) and empty them."""
    conn = ctx.conn
    # The set ``stage.forget_temp_tables`` clears after a rollback, which drops these too.
    created: set[str] = conn.info.setdefault(TEMP_TABLES, set())
    if key not in created:
        for table in tables:
            conn.execute(CreateTable(table, if_not_exists=True))
        for index in indexes:
            conn.execute(CreateIndex(index, if_not_exists=True))
        created.add(key)
    for table in tables:
        conn.execute(delete(table))


def prepare_tables(ctx: WriteContext) -> None:
    """Create (once per connection) and empty the evaluator's temporary tables."""
    ensure_tables(ctx, _CREATED, _TABLES, _INDEXES)


@dataclass(frozen=True)
class Facts:
    """Where an atom that reads stored facts reads them from.

    A full run reads the premise graph's current statements only. Maintenance (``rule_maintain``)
    reads a relation as it is materialised: the premise graph plus the companion's claims written
    by the rule set's own rules (``rule_sources``: an OWL materialisation or another rule set in
    the same companion is no premise), either now or as it stood at transaction ``as_of``, and
    can leave out the claims it has marked as overdeleted (``dropped``)."""

    premise: int
    companion: int | None = None
    rule_sources: tuple[str, ...] = ()
    as_of: int | None = None
    dropped: bool = False

    def conds(self, f: FromClause, pred: int | ColumnElement[Any]) -> list[ColumnElement[bool]]:
        c = f.c
        out: list[ColumnElement[bool]] = [c.a == pred]
        if self.as_of is None:
            out.append(visible(f, None, None))
            if not self.dropped:  # the primary claim may be a dropped one, and another rule's live
                out.append(primary(f))
        else:  # live at as_of: asserted by then, and neither retracted by then nor expiring
            out += [
                c.op == OP_ASSERT,
                c.tx <= self.as_of,
                or_(c.valid_to.is_(None), c.retracted_tx > self.as_of),
            ]
        if self.companion is None:
            out.append(c.g == self.premise)
        else:
            t = transactions.c
            ruled = exists().where(t.id == c.tx, t.source.in_(self.rule_sources))
            out += [c.g.in_((self.premise, self.companion)), or_(c.g == self.premise, ruled)]
        if self.dropped:
            out.append(~exists().where(DROPPED.c.id == c.id))
        return out


class _Body:
    """The FROM items and conditions of one rule body, variables bound to their first place."""

    def __init__(self, reads: Facts) -> None:
        self.reads = reads
        self.froms: list[FromClause] = []
        self.conds: list[ColumnElement[bool]] = []
        self.subject: dict[str, ColumnElement[Any]] = {}  # var -> a term id column
        self.object: dict[str, tuple[FromClause, bool]] = {}  # var -> (alias, is facts)

    def source(
        self, pred: int, table: Table | None, n: int
    ) -> tuple[FromClause, bool, list[ColumnElement[bool]]]:
        """An alias reading predicate ``pred`` from ``table`` (a temporary relation) or, with
        None, from the graph's current facts, and the conditions that select the predicate."""
        if table is None:
            f = facts.alias(f"f{n}")
            return f, True, self.reads.conds(f, pred)
        t = table.alias(f"t{n}")
        return t, False, [t.c.p == pred]

    @staticmethod
    def subj(alias: FromClause, is_facts: bool) -> ColumnElement[Any]:
        return alias.c.e if is_facts else alias.c.s

    def match(
        self, alias: FromClause, is_facts: bool, conds: list[ColumnElement[bool]], atom: BodyAtom
    ) -> list[ColumnElement[bool]] | None:
        """``conds`` plus conditions tying ``alias`` to the atom's constants and already-bound
        variables, binding the new ones (positive atoms); None when the atom can match nothing."""
        conds = list(conds)
        s_col = self.subj(alias, is_facts)
        s, o = atom.s, atom.o
        if s.unknown or s.value is not None:  # an unseen IRI, or a literal, is no subject
            return None
        if s.ref is not None:
            conds.append(s_col == s.ref)
        elif s.var is not None:
            if s.var in self.subject:
                conds.append(s_col == self.subject[s.var])
            elif s.var in self.object:
                other, _ = self.object[s.var]
                conds.append(s_col == other.c.v_ref)
            elif not atom.negated:
                self.subject[s.var] = s_col
        if o.unknown:
            return None
        if o.ref is not None:
            conds.append(alias.c.v_ref == o.ref)
        elif o.value is not None:
            if is_facts:
                conds.append(alias.c.vh == values.digest(o.value))
            conds.append(alias.c.v == o.value)
        elif o.var is not None:
            if o.var in self.object:
                other, other_facts = self.object[o.var]
                if is_facts and other_facts:
                    conds.append(alias.c.vh == other.c.vh)
                conds.append(alias.c.v == other.c.v)
            elif o.var in self.subject:
                conds.append(alias.c.v_ref == self.subject[o.var])
            elif not atom.negated:
                self.object[o.var] = (alias, is_facts)
        return conds


# Which temporary relation a body atom reads (None: stored facts); ``n`` is the atom's place
# among the positive atoms, None for a negated one.
Pick = Callable[[int | None, BodyAtom], Table | None]


def heads(rule: CompiledRule, reads: Facts, pick: Pick, bound: Table | None = None) -> Select[Any] | None:
    """SELECT DISTINCT of the head tuples of ``rule``, each body atom reading what ``pick``
    says. With ``bound`` (a relation with a rule column ``r``), only head tuples listed there
    for this rule: their values bind the head's variables before the body is joined, so a
    re-derivation check costs the tuples checked, not the relation. None when it cannot match."""
    body = _Body(reads)
    if bound is not None:
        b = bound.alias("b")
        conds = body.match(
            b, False, [b.c.r == rule.index, b.c.p == rule.head], BodyAtom(rule.head, rule.s, rule.o)
        )
        if conds is None:
            return None
        body.froms.append(b)
        body.conds += conds
    positives = [a for a in rule.body if not a.negated]
    for n, atom in enumerate(positives):
        if atom.pred is None:
            return None
        alias, is_facts, base = body.source(atom.pred, pick(n, atom), n)
        conds = body.match(alias, is_facts, base, atom)
        if conds is None:
            return None
        body.froms.append(alias)
        body.conds += conds
    for n, atom in enumerate(a for a in rule.body if a.negated):
        if atom.pred is None:
            continue  # nothing to be absent from: the negation holds
        alias, is_facts, base = body.source(atom.pred, pick(None, atom), 100 + n)
        conds = body.match(alias, is_facts, base, atom)
        if conds is None:
            continue
        body.conds.append(~exists().select_from(alias).where(*conds))
    for test in rule.tests:
        body.conds.append(_test(test, body))
    if rule.aggregate is not None:
        return _aggregate_select(rule, body)
    s_col, o_cols = _head(rule, body)
    if s_col is None:
        return None
    head_p = literal(rule.head, BigInteger)
    selected = [c.label(name) for c, name in zip((head_p, s_col, *o_cols), TUPLE, strict=True)]
    return select(*selected).select_from(*body.froms).where(and_(true(), *body.conds)).distinct()


def _aggregate_select(rule: CompiledRule, body: _Body) -> Select[Any]:
    """``p(?g, fn(?v))`` [designed here, docs/reasoning.md]: one tuple per group (the head's
    subject). ``count`` counts the distinct values of ``?v``; ``sum``, ``min`` and ``max`` range
    over the literal values of ``?v`` in the body's distinct solutions, with SPARQL's typing
    (``q_sum``, ``q_min``, ``q_max``: the integers 1 and 2 sum to the integer 3)."""
    assert rule.o.var is not None and rule.aggregate is not None
    s_col, _o = _head(replace(rule, o=rule.s), body)  # the group key, as a head subject
    assert s_col is not None
    var = rule.o.var
    value: ColumnElement[Any]
    if var in body.object:
        alias, _ = body.object[var]
        value = alias.c.v if rule.aggregate == "count" else case((alias.c.v_ref.is_(None), alias.c.v))
    else:
        value = body.subject[var] if rule.aggregate == "count" else cast(null(), LargeBinary)
    keys = [col.label(f"k_{name}") for name, col in body.subject.items()]
    keys += [a.c.v.label(f"o_{name}") for name, (a, _f) in body.object.items()]
    solutions = (
        select(s_col.label("g"), value.label("val"), *keys)
        .select_from(*body.froms)
        .where(and_(true(), *body.conds))
        .distinct()
        .subquery("solutions")
    )
    g, val = solutions.c.g, solutions.c.val
    result: ColumnElement[Any]
    shadow: ColumnElement[Any]
    if rule.aggregate == "count":
        counted = func.count(distinct(val))
        result, shadow = func.q_int(counted, type_=LargeBinary), cast(counted, Float)
    else:
        if rule.aggregate == "sum":
            result = func.q_sum(val, type_=LargeBinary)
        else:
            pick = func.q_min if rule.aggregate == "min" else func.q_max
            result = pick(val, cast(null(), Text), type_=LargeBinary)
        shadow = func.q_num(result, type_=Float)
    selected = [
        literal(rule.head, BigInteger).label("p"),
        g.label("s"),
        result.label("v"),
        cast(null(), BigInteger).label("v_ref"),
        shadow.label("v_num"),
    ]
    grouped = select(*selected).group_by(g)
    return grouped.having(result.is_not(None)) if rule.aggregate != "count" else grouped


@dataclass(frozen=True)
class _Side:
    """A compared value: its encoding, numeric shadow and reference id, where each is known."""

    v: ColumnElement[Any] | None
    num: ColumnElement[Any] | None
    ref: ColumnElement[Any] | None


_ORDER = {"<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}


def _side(slot: Slot, body: _Body) -> _Side:
    if slot.var is not None:
        if slot.var in body.object:
            alias, _ = body.object[slot.var]
            return _Side(alias.c.v, alias.c.v_num, alias.c.v_ref)
        return _Side(None, None, body.subject[slot.var])  # a subject: a reference
    if slot.ref is not None:
        return _Side(literal(values.ref(slot.ref), LargeBinary), None, literal(slot.ref, BigInteger))
    if slot.value is not None:
        num = values.numeric(slot.value)
        shadow = None if num is None else cast(literal(num, Float), Float)
        return _Side(literal(slot.value, LargeBinary), shadow, None)
    return _Side(None, None, None)  # an IRI the store has never seen: equal to nothing


def _test(test: Test, body: _Body) -> ColumnElement[bool]:
    """The SQL truth of a comparison [designed here, docs/reasoning.md]: ``=`` is numeric
    equality between numbers and term identity otherwise, ``!=`` its negation; the orderings
    are SPARQL's, and false where SPARQL's would be a type error. Numbers compare on their
    stored shadows in plain SQL; other values through ``q_cmp``."""
    a, b = _side(test.left, body), _side(test.right, body)
    cond: ColumnElement[bool]
    if test.op in ("=", "!="):
        if a.v is None or b.v is None:  # a reference without its encoding: compare ids
            cond = (a.ref == b.ref) if a.ref is not None and b.ref is not None else false()
        elif a.num is not None and b.num is not None:
            both = and_(a.num.is_not(None), b.num.is_not(None))
            cond = case((both, a.num == b.num), else_=a.v == b.v)
        else:
            cond = a.v == b.v
        if test.op == "!=":
            cond = ~cond
    elif a.v is None or b.v is None:  # a reference has no order
        cond = false()
    else:
        compare = _ORDER[test.op]
        # SPARQL's own ordering (``q_cmp``, as the query compiler uses it): numbers by value,
        # simple strings by code point, booleans, and dates and times of one datatype by
        # instant; anything else (a reference, a language-tagged string, mixed types) is a type
        # error, which is false here
        ordered = func.coalesce(getattr(func.q_cmp(a.v, b.v, type_=Integer), compare)(0), false())
        if a.num is not None and b.num is not None:  # two numbers compare on their shadows
            both = and_(a.num.is_not(None), b.num.is_not(None))
            cond = case((both, getattr(a.num, compare)(b.num)), else_=ordered)
        else:
            cond = ordered
    return ~cond if test.negated else cond


def _head(rule: CompiledRule, body: _Body) -> tuple[ColumnElement[Any] | None, list[ColumnElement[Any]]]:
    s, o = rule.s, rule.o
    if s.var is not None:
        if s.var in body.subject:
            s_col = body.subject[s.var]
        else:
            alias, _ = body.object[s.var]
            body.conds.append(alias.c.v_ref.is_not(None))  # a literal cannot be a subject
            s_col = alias.c.v_ref
    else:
        assert s.ref is not None
        s_col = literal(s.ref, BigInteger)
    o_cols: list[ColumnElement[Any]]
    if o.var is not None:
        if o.var in body.object:
            alias, _ = body.object[o.var]
            o_cols = [alias.c.v, alias.c.v_ref, alias.c.v_num]
        else:
            sub = body.subject[o.var]
            o_cols = [func.q_ref(sub, type_=LargeBinary), sub, cast(null(), Float)]
    elif o.ref is not None:
        o_cols = [literal(values.ref(o.ref), LargeBinary), literal(o.ref, BigInteger), cast(null(), Float)]
    else:
        assert o.value is not None
        num = values.numeric(o.value)
        shadow = cast(null(), Float) if num is None else cast(literal(num, Float), Float)
        o_cols = [literal(o.value, LargeBinary), cast(null(), BigInteger), shadow]
    return s_col, o_cols


def _insert_new(ctx: WriteContext, query: Select[Any]) -> None:
    """INSERT the query's tuples into NEW unless ALL or NEW has them already."""
    q = query.subquery("q")
    fresh = select(*q.c).where(
        ~exists().where(ALL.c.p == q.c.p, ALL.c.s == q.c.s, ALL.c.v == q.c.v),
        ~exists().where(NEW.c.p == q.c.p, NEW.c.s == q.c.s, NEW.c.v == q.c.v),
    )
    ctx.conn.execute(insert(NEW).from_select(list(TUPLE), fresh))


def _promote_new(ctx: WriteContext) -> int:
    """NEW becomes DELTA and joins ALL; returns how many tuples it held."""
    conn = ctx.conn
    conn.execute(delete(DELTA))
    # Counted, not read from the INSERT's rowcount: psycopg reports -1 for these.
    moved = int(conn.execute(select(func.count()).select_from(NEW)).scalar() or 0)
    if moved:
        conn.execute(insert(DELTA).from_select(list(TUPLE), select(*NEW.c)))
        conn.execute(insert(ALL).from_select(list(TUPLE), select(*NEW.c)))
        conn.execute(delete(NEW))
    return moved


def evaluate(
    ctx: WriteContext,
    reads: Facts,
    strata: Sequence[tuple[Sequence[CompiledRule], frozenset[int], bool]],
    rules: Sequence[CompiledRule],
) -> int:
    """Run ``strata`` (rules, the stratum's predicate ids, recursive) over the facts ``reads``
    names, then project every rule into OUT. The heads of ``rules`` are evaluated here, from the
    premise graph's own statements of them; any other predicate is read as stored. Returns the
    number of rounds run."""
    prepare_tables(ctx)
    derived = frozenset(r.head for r in rules)
    seed = select(facts.c.a, facts.c.e, facts.c.v, facts.c.v_ref, facts.c.v_num).where(
        facts.c.g == reads.premise,
        facts.c.a.in_(sorted(derived)),
        visible(facts, None, None),
        primary(facts),
    )
    ctx.conn.execute(insert(ALL).from_select(list(TUPLE), seed))

    def pick(delta_at: int | None) -> Pick:
        return lambda n, atom: (
            DELTA if n is not None and n == delta_at else (ALL if atom.pred in derived else None)
        )

    rounds = 0
    for stratum_rules, predicates, recursive in strata:
        # the first round reads full relations; each later one, a recursive atom from DELTA
        variants: list[tuple[CompiledRule, int | None]] = [(rule, None) for rule in stratum_rules]
        while variants:
            for rule, delta_at in variants:
                built = heads(rule, reads, pick(delta_at))
                if built is not None:
                    _insert_new(ctx, built)
            rounds += 1
            added = _promote_new(ctx)
            variants = [
                (rule, n)
                for rule in stratum_rules
                for n, atom in enumerate(a for a in rule.body if not a.negated)
                if recursive and added and atom.pred in predicates
            ]
    for rule in rules:
        built = heads(rule, reads, pick(None))
        if built is None:
            continue
        q = built.subquery("q")
        ctx.conn.execute(insert(OUT).from_select(["r", *TUPLE], select(literal(rule.index, Integer), *q.c)))
    return rounds


_OUTPUT = select(OUT.c.p, OUT.c.s, OUT.c.v, OUT.c.v_ref, OUT.c.v_num).where(OUT.c.r == bindparam("r"))
_CLAIMS = text(
    "SELECT f.id, f.e, f.a, f.v FROM facts f JOIN transactions t ON t.id = f.tx "
    "WHERE f.g = :g AND f.op = 1 AND f.valid_to IS NULL AND t.source = :src"
)


def output(ctx: WriteContext, rule: int) -> list[tuple[int, int, bytes, int | None, float | None]]:
    """A rule's projected tuples (p, s, v, v_ref, v_num)."""
    # A prepared statement fetched on the driver: SQLAlchemy's row objects cost about 10 µs a
    # tuple, a second per hundred thousand derivations (measured).
    rows: list[Any] = ctx.dialect.prepared(_OUTPUT).run(ctx.conn, {"r": rule}).fetchall()
    return [(int(p), int(s), bytes(v), None if r is None else int(r), n) for p, s, v, r, n in rows]


def claims_of_source(ctx: WriteContext, graph: int, source: str) -> dict[tuple[int, int, bytes], int]:
    """Live claims in ``graph`` written by ``source``: (e, a, v) -> claim id."""
    rows: list[Any] = ctx.dialect.prepared(_CLAIMS).run(ctx.conn, {"g": graph, "src": source}).fetchall()
    return {(int(e), int(a), bytes(v)): int(i) for i, e, a, v in rows}
