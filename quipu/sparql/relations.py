"""The pieces every part of the SPARQL compiler shares: how a value sits in SQL (``Node``), a
compiled graph pattern (``Rel``), the compilation context and the compiled result.

A value is a pair: ``id``, the term id of an IRI or blank node, and ``v``, the stored encoding
(DM §2) of a literal. Object columns carry both (``v_ref`` and ``v``); subject and predicate
columns only ``id``. Both NULL means unbound.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from rdflib import BNode, Literal, URIRef, Variable
from rdflib.term import Node as RdfNode
from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Connection,
    Select,
    and_,
    case,
    func,
    literal,
    not_,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.sql import FromClause
from sqlalchemy.sql.elements import Null

from quipu.errors import BadLiteral
from quipu.store import values
from quipu.store.database import Database
from quipu.store.reads import named_graph_ids
from quipu.store.schema import facts
from quipu.store.views import TemporalView

Col = ColumnElement[Any]
XSD_STRING_REF = URIRef(values.XSD_STRING)


class Unsupported(Exception):
    """This algebra is outside what the compiler handles; evaluate it another way."""


@dataclass(frozen=True)
class Node:
    """One SPARQL value in SQL. ``has_id``/``has_v`` say whether the column can be non-NULL;
    ``v_full``: when bound, ``v`` is never NULL (an object column: refs are encoded too)."""

    id: Col
    v: Col
    has_id: bool = True
    has_v: bool = True
    v_full: bool = False
    n: Col | None = None  # numeric shadow (float) when cheaply known
    vh: Col | None = None  # digest of v, for index use in joins


UNKNOWN: ColumnElement[bool] = cast(ColumnElement[bool], null())  # SQL NULL: a SPARQL error
UNBOUND = Node(null(), null(), has_id=False, has_v=False)

# Shapes the databases refuse in one statement (quipu.store.statement_limits), so long lists in
# a query are written as several smaller pieces: SQLite allows 127 arguments to a function and
# PostgreSQL 100; SQLite parses ``a AND b AND ...`` as a chain whose depth it caps at 1000, and
# allows 500 SELECTs in one compound.
MAX_FUNCTION_ARGS = 64
# Terms of one AND / OR: a shorter chain stays flat, as SQLite's planner reads an OR of
# equalities on one column as an IN list it can look up.
_GROUP = 256
_COMPOUND = 256  # SELECTs of one UNION ALL


def balanced(op: Callable[..., ColumnElement[bool]], parts: list[ColumnElement[bool]]) -> ColumnElement[bool]:
    """``op`` (``and_`` or ``or_``) over ``parts``, in groups of at most ``_GROUP`` when there
    are more: a chain of thousands stays far from SQLite's depth limit. Both operators are
    associative in SQL's three-valued logic, so the answer is the same."""
    while len(parts) > _GROUP:
        # coalesce(x, NULL) is x: it keeps a group a group, where SQLAlchemy would flatten
        # parentheses around an operator of the same kind back into one chain.
        parts = [func.coalesce(op(*parts[i : i + _GROUP]), null()) for i in range(0, len(parts), _GROUP)]
    return op(*parts) if len(parts) > 1 else parts[0]


def union_all_of(selects: list[Select[Any]]) -> Select[Any] | CompoundSelect[Any]:
    """UNION ALL of ``selects`` (one: itself), nested in pieces of at most ``_COMPOUND``."""
    while len(selects) > _COMPOUND:
        pieces = [
            union_all(*selects[i : i + _COMPOUND]).subquery() for i in range(0, len(selects), _COMPOUND)
        ]
        selects = [select(*piece.c) for piece in pieces]
    return selects[0] if len(selects) == 1 else union_all(*selects)


def encoding(x: Node) -> Col:
    """The full encoding (IRIs as ``Ref``), for the SQL functions."""
    if not x.has_id or x.v_full:
        return x.v
    if not x.has_v:
        return func.q_ref(x.id)
    return func.coalesce(x.v, func.q_ref(x.id))


def shadow_is_value(v: Col, n: Col) -> ColumnElement[bool]:
    """SQL: ``n``, the double shadow of the number ``v``, is its exact value: an Int or a Float
    (9 bytes, like a Ref, whose shadow is NULL) within 2**53. Where it holds for both sides,
    equal shadows are equal numbers and no SQL function need look closer."""
    return and_(func.length(v) == 9, func.abs(n) < 2.0**53)


def never_bound(x: Node) -> bool:
    """Statically unbound (a variable the pattern never binds)."""
    return not x.has_id and not x.has_v


def is_bound(x: Node) -> ColumnElement[bool]:
    if not x.has_v:
        return x.id.is_not(None)
    if not x.has_id or x.v_full:
        return x.v.is_not(None)
    return or_(x.id.is_not(None), x.v.is_not(None))


def is_unbound(x: Node) -> ColumnElement[bool]:
    return not_(is_bound(x))


def eq(a: Col, b: Col) -> ColumnElement[bool]:
    """``a = b`` with SQL's NULL rule even for a NULL constant (SQLAlchemy would write IS NULL)."""
    if isinstance(a, Null) or isinstance(b, Null):
        return UNKNOWN
    return a == b


def same_term(x: Node, y: Node) -> ColumnElement[bool]:
    """Term identity for join conditions (NULL when either side is unbound)."""
    if not x.has_id and not y.has_id:
        return eq(x.v, y.v)
    if not x.has_v or not y.has_v:
        return eq(x.id, y.id)
    if x.v_full and y.v_full:
        if x.vh is not None and y.vh is not None:
            return and_(eq(x.vh, y.vh), eq(x.v, y.v))
        return eq(x.v, y.v)
    return case((or_(x.id.is_not(None), y.id.is_not(None)), eq(x.id, y.id)), else_=eq(x.v, y.v))


def either(x: Node, y: Node) -> Node:
    """The value of a variable bound on either side of a join (x wins when bound)."""
    if not x.has_id and not x.has_v:
        return y
    bx = is_bound(x)
    return Node(
        case((bx, x.id), else_=y.id) if (x.has_id or y.has_id) else null(),
        case((bx, x.v), else_=y.v) if (x.has_v or y.has_v) else null(),
        has_id=x.has_id or y.has_id,
        has_v=x.has_v or y.has_v,
        v_full=(x.v_full or not x.has_id) and (y.v_full or not y.has_id),
    )


@dataclass
class Rel:
    """A compiled graph pattern: its FROM items, WHERE conditions and variable values."""

    froms: list[FromClause] = field(default_factory=list)
    conds: list[ColumnElement[bool]] = field(default_factory=list)
    vars: dict[str, Node] = field(default_factory=dict)
    maybe: set[str] = field(default_factory=set)  # variables that may be unbound
    dedup: bool = False  # rows may repeat a solution (several claims): DISTINCT when materialised
    keys: list[Col] = field(default_factory=list)  # columns that tell legitimate duplicates apart
    empty: bool = False  # statically no solutions


_ALIASES: list[FromClause] = []
_ALIASES_LOCK = threading.Lock()


def facts_alias(i: int) -> FromClause:
    """The i-th alias of ``facts``, built once: building one costs more than a point lookup."""
    if i >= len(_ALIASES):
        with _ALIASES_LOCK:
            while len(_ALIASES) <= i:
                _ALIASES.append(facts.alias(f"t{len(_ALIASES)}"))
    return _ALIASES[i]


@dataclass
class Compiled:
    """A compiled query. ``statement`` is None when it statically has no solutions. Each
    variable is two columns, ``id`` then ``v``; ``const_iris`` names ids below zero (IRIs of the
    query that the store has never seen)."""

    form: str  # SELECT, ASK or CONSTRUCT
    variables: list[str]
    statement: Select[Any] | None = None
    const_iris: dict[int, str] = field(default_factory=dict)
    template: list[tuple[Any, Any, Any]] = field(default_factory=list)
    mixed: bool = False  # rdflib evaluates some function per row inside the statement
    grows: bool = False  # valid only until the store adds a term or a graph


class Context:
    def __init__(
        self,
        db: Database,
        conn: Connection,
        view: TemporalView,
        named: frozenset[int] | None,
    ) -> None:
        self.db = db
        self.conn = conn
        self.view = view
        self.named = named
        self.n_alias = 0
        self.n_sub = 0
        self.ids: dict[str, int | None] = {}
        self.const_iris: dict[int, str] = {}
        self.mixed = False  # some function runs through rdflib per row
        # solutions an EXISTS is evaluated for: its pattern sees their variables (SPARQL's
        # substitute), innermost last
        self.outer: list[Rel] = []
        self.grows = False  # the plan depends on terms or graphs the store may add later
        # compiles a nested graph pattern (EXISTS); set by the compiler, which owns patterns
        self.pattern: Callable[[Context, Any], Rel] = _no_patterns

    def alias(self) -> FromClause:
        f = facts_alias(self.n_alias)
        self.n_alias += 1
        return f

    def sub_name(self) -> str:
        self.n_sub += 1
        return f"q{self.n_sub}"

    def term_id(self, iri: str) -> int | None:
        if iri not in self.ids:
            self.ids.update(self.db.terms.lookup(self.conn, (iri,)))
            self.ids.setdefault(iri, None)
        tid = self.ids[iri]
        if tid is None:
            self.grows = True
        return tid

    def const_id(self, iri: str) -> int:
        """A stored IRI's id, or a negative id standing for an IRI the store does not have."""
        tid = self.term_id(iri)
        if tid is not None:
            return tid
        for k, known in self.const_iris.items():
            if known == iri:
                return k
        k = -1 - len(self.const_iris)
        self.const_iris[k] = iri
        return k

    def primary_claims(self, graph_var: str | None) -> bool:
        """Whether rows need no DISTINCT: in the current state ``dup = 0`` (which every current
        read applies) leaves one claim per statement and graph, so within one graph a row is a
        statement (in two FROM graphs a statement is still two rows to collapse)."""
        return self.view.is_current and (graph_var is not None or len(self.view.graphs) <= 1)

    def named_graphs(self) -> list[int]:
        if self.named is not None:
            return sorted(self.named)
        self.grows = True
        return named_graph_ids(self.conn, self.db)


def variable_name(term: RdfNode) -> str | None:
    """The variable name a pattern position binds (query blank nodes act as variables)."""
    if isinstance(term, Variable):
        return str(term)
    if isinstance(term, BNode):
        return f"_:{term}"
    return None


def constant(ctx: Context, term: RdfNode) -> Node:
    if isinstance(term, URIRef):
        tid = ctx.const_id(str(term))
        return Node(
            literal(tid), literal(values.ref(tid)) if tid > 0 else null(), has_v=tid > 0, v_full=tid > 0
        )
    if isinstance(term, Literal):
        try:
            enc = values.literal(str(term), str(term.datatype) if term.datatype else None, term.language)
        except BadLiteral:
            raise Unsupported("an ill-typed literal constant") from None
        n = values.numeric(enc)
        return Node(null(), literal(enc), has_id=False, n=None if n is None else literal(n))
    raise Unsupported(f"constant {term!r}")


def _no_patterns(ctx: Context, node: Any) -> Rel:
    raise Unsupported("a nested graph pattern outside the compiler")
