"""Compile SPARQL algebra to one SQL statement over a ``TemporalView``.

First slice: SELECT and ASK over a basic graph pattern (or a join of them), with projection,
DISTINCT/REDUCED, LIMIT and OFFSET. Anything else raises ``Unsupported`` and the engine evaluates the query with
rdflib over the Store view; the two must agree (the W3C suite and a differential test check it).

How a BGP becomes SQL: each triple pattern is an alias of ``facts`` under the view's visibility
predicate. A variable that ever stands in subject or predicate position is a term id (matched in
object position through ``v_ref``); one that only stands in object position is a stored value
(``v`` bytes, compared with its digest first so the index applies). The inner query is DISTINCT
over every variable of the pattern, which collapses several claims of one statement into one
solution; the outer query projects, keeping SPARQL's duplicates.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from rdflib import BNode, Literal, URIRef, Variable
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Node
from sqlalchemy import ColumnElement, Connection, Select, exists, literal, null, select, true
from sqlalchemy.sql import FromClause

from quipu.errors import BadLiteral
from quipu.store import values
from quipu.store.database import Database
from quipu.store.schema import facts
from quipu.store.views import TemporalView

TERM, VALUE = "term", "value"


class Unsupported(Exception):
    """This algebra is outside what the compiler handles; evaluate it another way."""


@dataclass
class Compiled:
    """A compiled query: ``statement`` is None when a constant cannot match (no solutions)."""

    form: str  # "SELECT" or "ASK"
    variables: list[str]
    kinds: dict[str, str] = field(default_factory=dict)  # TERM (an id) or VALUE (bytes)
    statement: Select[Any] | None = None


def _unwrap(main: CompValue) -> tuple[str, list[Any], bool, int, int | None, list[str]]:
    """(form, triples, distinct, offset, limit, projected names) or Unsupported."""
    if main.name not in ("SelectQuery", "AskQuery"):
        raise Unsupported(main.name)
    node = main.p
    offset, limit, distinct = 0, None, False
    if node.name == "Slice":
        offset, limit = int(node.start or 0), (None if node.length is None else int(node.length))
        node = node.p
    if node.name in ("Distinct", "Reduced"):
        distinct = True
        node = node.p
    if node.name != "Project":
        raise Unsupported(node.name)
    projected = [str(v) for v in node.PV]
    triples = _conjunction(node.p)
    form = "SELECT" if main.name == "SelectQuery" else "ASK"
    return form, triples, distinct, offset, limit, projected


def _conjunction(node: CompValue) -> list[Any]:
    """The triples of a BGP, or of a Join of BGPs: every variable of a BGP is bound, so the
    join is the conjunction of the patterns."""
    if node.name == "BGP":
        return list(node.triples)
    if node.name == "Join":
        return _conjunction(node.p1) + _conjunction(node.p2)
    raise Unsupported(node.name)


_ALIASES: list[FromClause] = []
_ALIASES_LOCK = threading.Lock()


def _alias(i: int) -> FromClause:
    """The i-th alias of ``facts``, built once: building one costs more than a point lookup."""
    if i >= len(_ALIASES):
        with _ALIASES_LOCK:
            while len(_ALIASES) <= i:
                _ALIASES.append(facts.alias(f"t{len(_ALIASES)}"))
    return _ALIASES[i]


def _var(term: Node) -> str | None:
    """The variable name a pattern position binds (query blank nodes act as variables)."""
    if isinstance(term, Variable):
        return str(term)
    if isinstance(term, BNode):
        return f"_:{term}"
    return None


def compile_query(
    db: Database, conn: Connection, main: CompValue, view: TemporalView, *, max_rows: int | None = None
) -> Compiled:
    """Compile ``main`` (the query algebra) or raise ``Unsupported``."""
    form, triples, distinct, offset, limit, projected = _unwrap(main)
    for s, p, _o in triples:
        if not isinstance(p, (URIRef, Variable)) or isinstance(s, Literal):
            raise Unsupported("a property path or a literal subject")
    kinds: dict[str, str] = {}
    for s, p, _o in triples:
        for term in (s, p):
            if (name := _var(term)) is not None:
                kinds[name] = TERM
    for _s, _p, o in triples:
        if (name := _var(o)) is not None:
            kinds.setdefault(name, VALUE)
    result = Compiled(form, projected if form == "SELECT" else [], kinds)

    iris = {str(t) for tr in triples for t in tr if isinstance(t, URIRef)}
    ids = db.terms.lookup(conn, iris)
    if len(ids) < len(iris):
        return result  # an IRI the store has never seen: no solutions (reads never intern)

    bound: dict[str, ColumnElement[Any]] = {}
    value_digest: dict[str, ColumnElement[Any]] = {}
    conds: list[ColumnElement[bool]] = []
    aliases: list[FromClause] = []
    for i, (s, p, o) in enumerate(triples):
        f = _alias(i)
        aliases.append(f)
        conds.append(view.where(f))
        for term, column in ((s, f.c.e), (p, f.c.a)):
            name = _var(term)
            if name is None:
                conds.append(column == ids[str(term)])
            elif name in bound:
                conds.append(column == bound[name])
            else:
                bound[name] = column
        name = _var(o)
        if name is None:
            if isinstance(o, Literal):
                try:
                    enc = values.literal(str(o), str(o.datatype) if o.datatype else None, o.language)
                except BadLiteral:
                    return result  # an ill-typed constant equals no stored value
                conds += [f.c.vh == values.digest(enc), f.c.v == enc]
            else:
                oid = ids[str(o)]
                conds += [f.c.vh == values.digest(values.ref(oid)), f.c.v_ref == oid]
        elif kinds[name] == TERM:
            if name in bound:
                conds.append(f.c.v_ref == bound[name])
            else:
                bound[name] = f.c.v_ref
                conds.append(f.c.v_ref.is_not(None))
        elif name in bound:
            conds += [f.c.vh == value_digest[name], f.c.v == bound[name]]
        else:
            bound[name], value_digest[name] = f.c.v, f.c.vh

    labels = {n: f"v{k}" for k, n in enumerate(sorted(bound))}
    columns = [bound[n].label(label) for n, label in labels.items()] or [literal(1).label("one")]
    inner = select(*columns).select_from(*aliases).where(*conds).distinct().subquery("solutions")
    if form == "ASK":
        result.statement = select(exists(select(true()).select_from(inner)))
        return result
    # A projection of no variables still yields one (empty) solution per match.
    outer_columns = [inner.c[labels[n]] if n in labels else null() for n in projected]
    outer = select(*(outer_columns or [literal(1).label("one")])).select_from(inner)
    if distinct:
        outer = outer.distinct()
    if offset:
        outer = outer.offset(offset)
    cap = None if max_rows is None else max_rows + 1  # one extra row reveals truncation
    if limit is not None or cap is not None:
        outer = outer.limit(min(x for x in (limit, cap) if x is not None))
    result.statement = outer
    return result
