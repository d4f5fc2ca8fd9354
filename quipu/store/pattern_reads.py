"""Triple-pattern pages for the logic memory's ``rdf/3``, ``rdf/4``, ``rdf_at/4`` and ``rdf_tx/4``.

``match_page`` answers one pattern ``s p o`` (each bound or not) in one graph, in every graph or
in ROOT, at one read point, one keyset page at a time: the bound terms go into the WHERE clause
of ONE SQL statement per page, which also joins the term dictionary for the IRIs it returns, so
a caller streams any number of statements in bounded pages and never reads the whole store.

Rows come in fact-row id order; a statement is represented by one claim (``Match.cursor``):

* current reads keep the live primary claim (``facts.dup = 0``, kept by the writer);
* past reads (``as_of_tx`` and/or ``valid_at``) keep the visible claim that has no earlier
  visible claim of the same statement (same g, e, a, vh and v) at the same read point, decided
  in SQL (``facts.dup`` describes only the current state). ``ix_facts_gea`` serves the check.

A page is consistent in itself (one read snapshot). Pages of a current read taken while writes
commit can miss or repeat a statement whose primary claim changed in between; a caller that needs
a stable walk over several pages pins the read point (``TemporalView(as_of_tx=head)``).

Terms: an IRI is ``("iri", text)``; a stored blank node is its skolem key ``("iri", "_:…")``
(the store keeps blank nodes as ``_:`` keys in the term dictionary and they come back
unchanged). A literal is ``("literal", lexical, datatype, lang)`` with datatype None for a plain
``xsd:string`` and for a language-tagged string (lang lower-cased, as the store keeps it);
numbers and booleans carry their xsd datatype and the lexical form the store keeps: canonical
for an integer ("+042" is "42"), a boolean ("1" is "true") and a double written canonically
("1.5", "1.0E16", "INF"); a double written otherwise keeps its form ("1e3"), as ingestion does.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    String,
    and_,
    any_,
    bindparam,
    exists,
    func,
    literal_column,
    select,
)

from quipu.errors import BadLiteral, InvalidField
from quipu.store import budget as budgets
from quipu.store import graph_scope, values
from quipu.store.database import Database
from quipu.store.graph_registry import META
from quipu.store.reads import I64_MAX, resolve_graph
from quipu.store.schema import ROOT, ROOT_IRI, facts, graphs, terms
from quipu.store.views import TemporalView, primary, visible

# ("iri", iri_text) | ("literal", lexical, datatype_iri_or_None, lang_or_None): a literal's
# datatype or lang may be None, so the items are ``str | None``.
Term = tuple[str | None, ...]

PAGE_MAX: Final = 5000
# ROOT and every registered graph but the meta-graph and frozen ones (the range of GRAPH ?g).
_ANY_GRAPHS: Final = select(graphs.c.g).where(
    graphs.c.g != literal_column(str(META)), graphs.c.lifecycle.is_(None)
)
_PG_ANY_GRAPHS: Final[ColumnElement[Any]] = literal_column(
    f"ARRAY(SELECT g FROM graphs WHERE g <> {META} AND lifecycle IS NULL)"
)


@dataclass(frozen=True, slots=True)
class Match:
    cursor: int  # the fact row id standing for this statement (for keyset paging)
    s: str  # subject IRI (or a stored blank-node key "_:…")
    p: str  # predicate IRI
    o: Term  # object
    g: str  # graph IRI (ROOT_IRI for ROOT)
    tx: int  # the transaction that asserted this (first visible) claim


class _AnyGraph:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ANY_GRAPH"


ANY_GRAPH: Final[Any] = _AnyGraph()  # sentinel: every graph, ROOT and named


def match_page(
    db: Database,
    *,
    s: str | None,
    p: str | None,
    o: Term | None,
    graph: str | object | None = None,
    view: TemporalView = TemporalView(),  # noqa: B008 - frozen, so one shared default is safe
    after: int = 0,
    limit: int = 500,
) -> tuple[list[Match], int | None]:
    """One page of the statements matching ``s p o`` (None: unbound) in ``graph`` at ``view``'s
    read point, ordered by cursor: ``(matches, next_cursor)``, next_cursor None when exhausted.

    ``graph``: None (or ROOT's IRI, or "") reads ROOT; a registered graph's IRI reads that graph
    (the meta-graph and a frozen graph too, when named); ``ANY_GRAPH`` reads ROOT and every
    registered graph except the meta-graph and frozen graphs (the range of SPARQL's default
    graph plus ``GRAPH ?g``: a frozen graph is read only by naming it). ``view.graphs`` is
    ignored. A bound IRI or graph the store has never seen matches nothing, and no fact
    query runs; so does a typed literal the store could never hold (an ill-formed integer).

    The label floor applies as in the other readers: to ROOT or the named graph before the
    read, and with ``ANY_GRAPH`` to each graph whose statements the page returns. Inside a query
    budget (``quipu.store.budget.current()``) the statement runs under its deadline and work
    limit, and the rows returned count against its ``max_join_rows``.
    """
    after, limit = _check_page(after, limit)
    read = _Read.of(db, s, p, o, graph, view)
    if read is None:
        return [], None
    with db.read() as conn:
        found = read.query(db, conn, after=after, limit=limit)
        if found is None:
            return [], None
        rows = _run(db, conn, _statement(found[0]), found[1], read.budget)
        more = len(rows) > limit
        rows = rows[:limit]
        if read.any_graph:  # the floor applies to each graph the page read
            graph_scope.enforce(db, conn, {int(r.g) for r in rows})
    if read.budget is not None:
        read.budget.pulled(len(rows))
    matches = [_match(r) for r in rows]
    return matches, (matches[-1].cursor if more else None)


def match_stream(
    db: Database,
    *,
    s: str | None,
    p: str | None,
    o: Term | None,
    graph: str | object | None = None,
    view: TemporalView = TemporalView(),  # noqa: B008 - frozen, so one shared default is safe
    chunk: int = 500,
) -> Generator[list[Match], None, None]:
    """Every statement ``match_page`` would return for the pattern, from ONE SQL statement whose
    rows are fetched ``chunk`` at a time, in cursor order.

    For a caller that wants all of a pattern at once (the logic memory loading the inner pattern
    of a join, quipu/logic/graph_bridge.py) without a statement per page. The read snapshot is
    held while the caller iterates; closing the iterator early ends the read. The label floor
    and the query budget apply as in ``match_page``.
    """
    chunk = max(1, min(int(chunk), PAGE_MAX))
    read = _Read.of(db, s, p, o, graph, view)
    if read is None:
        return
    with db.read(long=True) as conn:
        found = read.query(db, conn, after=0, limit=None)
        if found is None:
            return
        with _limits(db, conn, read.budget):
            result = conn.execution_options(yield_per=chunk).execute(_statement(found[0]), found[1])
            for rows in result.partitions(chunk):
                if read.any_graph:
                    graph_scope.enforce(db, conn, {int(r.g) for r in rows})
                if read.budget is not None:
                    read.budget.pulled(len(rows))
                yield [_match(r) for r in rows]


def match_count(
    db: Database,
    *,
    s: str | None,
    p: str | None,
    o: Term | None,
    graph: str | object | None = None,
    view: TemporalView = TemporalView(),  # noqa: B008 - frozen, so one shared default is safe
    cap: int,
) -> int:
    """How many statements ``match_stream`` would return, counting no further than ``cap + 1``
    (one statement, no IRIs joined): what the logic memory asks before it loads a pattern."""
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise InvalidField(f"'cap' must be an integer >= 0, got {cap!r}", field="cap")
    read = _Read.of(db, s, p, o, graph, view)
    if read is None:
        return 0
    with db.read() as conn:
        found = read.query(db, conn, after=0, limit=cap)
        if found is None:
            return 0
        ((counted,),) = _run(db, conn, _count_statement(found[0]), found[1], read.budget)
    return min(int(counted), cap + 1)


@dataclass(frozen=True, slots=True)
class _Read:
    """A checked pattern read: the arguments, the object as an IRI or a literal's encoding, and
    the query budget in force."""

    s: str | None
    p: str | None
    o_iri: str | None
    o_lit: bytes | None
    graph: object
    view: TemporalView
    any_graph: bool
    budget: budgets.Budget | None

    @classmethod
    def of(
        cls, db: Database, s: str | None, p: str | None, o: Term | None, graph: object, view: object
    ) -> _Read | None:
        """The read, or None when it can match nothing without asking (a literal ingestion
        refuses). Bad arguments and refused transaction travel raise."""
        o_iri, o_lit, any_graph = _checked(s, p, o, graph, view)
        assert isinstance(view, TemporalView)
        graph_scope.refuse_tx_travel(db, view.as_of_tx, "as_of_tx")
        if o_lit == _NO_VALUE:
            return None
        budget = budgets.current()
        if budget is not None:
            budget.check_deadline()
        return cls(s, p, o_iri, o_lit, graph, view, any_graph, budget)

    def query(
        self, db: Database, conn: Connection, *, after: int, limit: int | None
    ) -> tuple[_Shape, dict[str, Any]] | None:
        """The statement's shape and parameters, or None when a bound term or the graph is
        unknown (no fact query runs)."""
        bound = _bind(db, conn, self.s, self.p, self.o_iri, self.graph)
        if bound is None:
            return None
        return _shaped(self.view, bound, self.o_lit, after=after, limit=limit, backend=conn.dialect.name)


def _checked(
    s: str | None, p: str | None, o: Term | None, graph: object, view: object
) -> tuple[str | None, bytes | None, bool]:
    """The arguments checked: (the object's IRI, its literal encoding, whether every graph)."""
    _check_iri_arg(s, "s")
    _check_iri_arg(p, "p")
    o_iri, o_lit = _object(o)
    if not isinstance(view, TemporalView):
        raise InvalidField("'view' must be a TemporalView", field="view")
    any_graph = graph is ANY_GRAPH
    if not (any_graph or graph is None or isinstance(graph, str)):
        raise InvalidField(f"'graph' must be a graph IRI, None or ANY_GRAPH, got {graph!r}", field="graph")
    return o_iri, o_lit, any_graph


def _bind(
    db: Database, conn: Connection, s: str | None, p: str | None, o_iri: str | None, graph: object
) -> tuple[int | None, int | None, int | None, int | None] | None:
    """(graph id or None for every graph, e, a, object ref) as term ids, or None when the
    pattern matches nothing: an unknown graph, or an IRI the store has never seen (reads never
    intern). The label floor is checked for a single graph here."""
    gid: int | None = None
    if isinstance(graph, str) or graph is None:
        gid = resolve_graph(db, conn, graph)
        if gid is None:
            return None
        graph_scope.enforce(db, conn, (gid,))  # the label floor; a frozen graph's rows
    bound = [x for x in (s, p, o_iri) if x is not None]
    ids = db.terms.lookup(conn, bound)
    if len(ids) < len(set(bound)):
        return None
    return (
        gid,
        None if s is None else ids[s],
        None if p is None else ids[p],
        None if o_iri is None else ids[o_iri],
    )


def _shaped(
    view: TemporalView,
    bound: tuple[int | None, int | None, int | None, int | None],
    o_lit: bytes | None,
    *,
    after: int,
    limit: int | None,
    backend: str,
) -> tuple[_Shape, dict[str, Any]]:
    """The statement's shape and its parameters, for the claims matching ``bound`` (graph id or
    None for every graph but the meta-graph and frozen ones, e, a, object ref, as ``_bind``
    gives them) or the literal ``o_lit``, ``id > after`` by id, ``limit + 1`` of them (every
    one when ``limit`` is None). ``backend``: the SQLAlchemy dialect name.

    The statement depends only on the shape (which terms are bound, the kind of read point) and
    is built once per shape (``_statement``): a join's lookups repeat one shape thousands of
    times, and building the statement cost twice as much as running it."""
    gid, e, a, o_ref = bound
    shape = _Shape(
        as_of=view.as_of_tx is not None,
        valid=view.valid_at is not None,
        graph="any" if gid is None else "root" if gid == ROOT else "one",
        e=e is not None,
        a=a is not None,
        o="ref" if o_ref is not None else "lit" if o_lit is not None else "",
        limited=limit is not None,
        backend=backend,
    )
    params: dict[str, Any] = {"after": after}
    if view.as_of_tx is not None:
        params["as_of_tx"] = view.as_of_tx
    if view.valid_at is not None:
        params["valid_at"] = view.valid_at
    if gid is not None:
        params["gid"] = gid
    if e is not None:
        params["e"] = e
    if a is not None:
        params["a"] = a
    if o_ref is not None:
        params |= {"vh": values.digest(values.ref(o_ref)), "o_ref": o_ref}
    elif o_lit is not None:
        params |= {"vh": values.digest(o_lit), "o_lit": o_lit}
    if limit is not None:
        params["limit"] = limit + 1
    return shape, params


@dataclass(frozen=True, slots=True)
class _Shape:
    as_of: bool
    valid: bool
    graph: str  # "any", "root" or "one"
    e: bool
    a: bool
    o: str  # "ref", "lit" or ""
    limited: bool
    backend: str


@functools.lru_cache(maxsize=128)
def _statement(shape: _Shape) -> Any:
    """A page's one statement: the claims, with their terms' IRIs in the same statement."""
    page = _claims(shape).subquery("page")
    st, pt, ot, gt = terms.alias("st"), terms.alias("pt"), terms.alias("ot"), terms.alias("gt")
    pc = page.c
    return (
        select(pc.id, pc.v, pc.g, pc.tx, st.c.iri, pt.c.iri, ot.c.iri, gt.c.iri)
        .select_from(
            page.join(st, st.c.id == pc.e)
            .join(pt, pt.c.id == pc.a)
            .outerjoin(ot, ot.c.id == pc.v_ref)
            .outerjoin(gt, gt.c.id == pc.g)
        )
        .order_by(pc.id)
    )


@functools.lru_cache(maxsize=64)
def _count_statement(shape: _Shape) -> Any:
    """How many claims a page of ``shape`` holds, up to its limit."""
    return select(func.count()).select_from(_claims(shape).subquery("page"))


def _claims(shape: _Shape) -> Any:
    """The matching claims (one per statement) in id order, ``limit`` of them when limited."""
    c = facts.c
    as_of = bindparam("as_of_tx", type_=BigInteger) if shape.as_of else None
    valid = bindparam("valid_at", type_=String) if shape.valid else None
    gid = None if shape.graph == "any" else bindparam("gid", type_=BigInteger)
    unbound = not (shape.e or shape.a or shape.o)
    conds: list[ColumnElement[bool]] = [
        visible(facts, as_of, valid),
        c.id > bindparam("after", type_=BigInteger),
    ]
    conds.append(_graph_scope(gid, shape.backend, unbound=unbound and shape.graph != "one"))
    if shape.e:
        conds.append(c.e == bindparam("e", type_=BigInteger))
    if shape.a:
        conds.append(c.a == bindparam("a", type_=BigInteger))
    if shape.o == "ref":
        conds += [c.vh == bindparam("vh", type_=c.vh.type), c.v_ref == bindparam("o_ref", type_=BigInteger)]
    elif shape.o == "lit":
        conds += [c.vh == bindparam("vh", type_=c.vh.type), c.v == bindparam("o_lit", type_=c.v.type)]
    if not (shape.as_of or shape.valid):
        conds.append(primary(facts))  # one live claim per statement has dup = 0
    else:
        earlier = facts.alias("earlier")
        x = earlier.c
        # No earlier visible claim of the same statement, found through ix_facts_gea. PostgreSQL
        # derives "earlier.a = <p>" from a bound predicate and then probes ix_facts_gav (g, a, vh)
        # instead, reading every claim of rdf:type Person for each row (7 s a page against 1 ms,
        # measured at 40k subjects); "a + 0" leaves it only the (g, e, ..., vh) probe.
        conds.append(
            ~exists().where(
                x.g == c.g,
                x.e == c.e,
                (x.a + literal_column("0")) == c.a if shape.backend == "postgresql" else x.a == c.a,
                x.vh == c.vh,
                x.v == c.v,
                x.id < c.id,
                visible(earlier, as_of, valid),
            )
        )
    claims = select(c.id, c.e, c.a, c.v, c.v_ref, c.g, c.tx).where(and_(*conds)).order_by(c.id)
    return claims.limit(bindparam("limit", type_=BigInteger)) if shape.limited else claims


def _graph_scope(gid: ColumnElement[Any] | None, backend: str, *, unbound: bool) -> ColumnElement[bool]:
    """The graph condition (``gid``: the graph's parameter, None for every graph), written so
    each planner takes the right path: an index led by g when a term is bound, the table in id
    order from ``after`` when none is and the scope is most of the store (``unbound``: ROOT, or
    every graph), instead of an index on g whose every entry past ``after`` would be sorted for
    each page."""
    c = facts.c
    if backend == "postgresql":
        if gid is not None:
            return c.g == gid  # with statistics, the planner walks facts_pkey when g is most rows
        # An array, not IN (SELECT ...): a semi-join would be estimated at a fraction of the
        # rows it keeps and sorted; "g = ANY($0)" seeks an index led by g or filters a pk walk.
        return c.g == any_(_PG_ANY_GRAPHS)
    # SQLite seeks an index only on an equality or IN for each leading column ("g <> meta"
    # would leave every index led by g unused); "g + 0" keeps the planner off the graph
    # indexes (as in projection.reference_claims).
    g = (c.g + literal_column("0")) if unbound else c.g
    return g == gid if gid is not None else g.in_(_ANY_GRAPHS)


def _run(
    db: Database, conn: Connection, query: Any, params: dict[str, Any], budget: budgets.Budget | None
) -> list[Any]:
    with _limits(db, conn, budget):
        return list(conn.execute(query, params).all())


@contextmanager
def _limits(db: Database, conn: Connection, budget: budgets.Budget | None) -> Iterator[None]:
    """The budget's deadline and work limit around the statements run inside."""
    if budget is None or (budget.deadline is None and budget.max_join_rows is None):
        yield
        return
    late = budgets.timeout_error(budget.timeout_ms or 0)
    costly = budgets.work_error(budget.max_join_rows or 0)
    with db.dialect.work_limits(conn, budget.deadline, late, budget.steps, costly):
        yield


def _match(row: Any) -> Match:
    cursor, v, g, tx, s_iri, p_iri, o_iri, g_iri = row
    g_text = ROOT_IRI if g == ROOT else str(g_iri)  # ROOT (0) is no term
    return Match(int(cursor), str(s_iri), str(p_iri), term_of(bytes(v), o_iri), g_text, int(tx))


def term_of(v: bytes, iri: str | None = None) -> Term:
    """The Term form of a stored value; ``iri``: the IRI of a reference's term id."""
    d = values.decode(v)
    if d.kind == "ref":
        assert iri is not None, "a reference value without its IRI"
        return ("iri", str(iri))
    if d.kind == "str":
        return ("literal", d.lexical, None, None)
    if d.kind == "lang":
        return ("literal", d.lexical, None, d.lang)
    if d.kind == "bytes":  # an old binary value: its base64 lexical form
        return ("literal", base64.b64encode(d.value).decode("ascii"), d.datatype, None)
    # int, float, bool and typed: the datatype and the canonical lexical form decode gives
    return ("literal", d.lexical, d.datatype, None)


def _check_iri_arg(x: object, field: str) -> None:
    if x is not None and (not isinstance(x, str) or not x or not values.encodable(x)):
        raise InvalidField(f"'{field}' must be a non-empty IRI string or None, got {x!r}", field=field)


def _check_page(after: object, limit: object) -> tuple[int, int]:
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise InvalidField(f"'after' must be an integer >= 0, got {after!r}", field="after")
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidField(f"'limit' must be an integer, got {limit!r}", field="limit")
    return min(after, I64_MAX), max(1, min(limit, PAGE_MAX))


_NO_VALUE: Final = b""  # no encoding is empty: the encoding of a literal no stored value equals


def _object(o: object) -> tuple[str | None, bytes | None]:
    """Check ``o``: (its IRI, None), (None, its literal's encoding exactly as ingestion encodes
    it, or ``_NO_VALUE`` for one ingestion refuses), or (None, None) when unbound."""
    if o is None:
        return None, None
    bad = InvalidField(
        f"'o' must be None, ('iri', text) or ('literal', lexical, datatype or None, lang or None), got {o!r}",
        field="o",
    )
    if not isinstance(o, tuple) or not all(
        x is None or (isinstance(x, str) and values.encodable(x)) for x in o
    ):
        raise bad
    if len(o) == 2 and o[0] == "iri" and o[1]:
        return o[1], None
    if len(o) != 4 or o[0] != "literal" or o[1] is None:
        raise bad
    _, lexical, datatype, lang = o
    if datatype == "" or lang == "":
        raise bad
    if lang is not None:
        if datatype not in (None, values.RDF_LANGSTRING):
            raise bad
        datatype = None
    elif datatype == values.RDF_LANGSTRING:
        raise bad  # a language string without its tag
    try:
        return None, values.literal(lexical, datatype, lang)
    except BadLiteral:
        return None, _NO_VALUE
