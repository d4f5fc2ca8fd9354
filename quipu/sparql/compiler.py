"""Compile SPARQL algebra to one SQL statement over a ``TemporalView``.

A graph pattern compiles to a *relation* (``relations.Rel``): FROM items, WHERE conditions and,
per variable, a ``Node`` holding its value. Triple patterns are aliases of ``facts`` under the
view's visibility predicate, joined flat so SQLite's planner orders them. In the current state of
one graph each statement is read once through ``facts.dup = 0``; elsewhere several claims of a
statement repeat a solution, so the relation is marked ``dedup`` and collapsed with DISTINCT when
it is materialised. Duplicates SPARQL does keep (UNION branches, VALUES rows, sub-select rows)
carry *key* columns (a branch number, a row number) and the DISTINCT runs over variables and
keys, so every operator can stay flat. Expressions are in ``expressions``, property paths in
``property_paths``.

Anything outside this raises ``Unsupported``; the engine then lets rdflib evaluate the query and
answers the parts that do compile in SQL (``subplans``). The W3C suite and a differential test
check that the paths agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rdflib import Literal, URIRef, Variable
from rdflib.paths import Path
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Node as RdfNode
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Integer,
    LargeBinary,
    Select,
    and_,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    not_,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.sql import FromClause, visitors
from sqlalchemy.sql.elements import ClauseElement, ColumnClause, Null
from sqlalchemy.sql.functions import FunctionElement

from quipu.errors import BadLiteral
from quipu.sparql.expressions import condition, iri_text, value_of
from quipu.sparql.property_paths import path_pattern
from quipu.sparql.relations import (
    UNBOUND,
    Col,
    Compiled,
    Context,
    Node,
    Rel,
    Unsupported,
    constant,
    either,
    encoding,
    is_bound,
    is_unbound,
    same_term,
    shadow_is_value,
    union_all_of,
    variable_name,
)
from quipu.store import values
from quipu.store.database import Database
from quipu.store.views import TemporalView, primary

__all__ = ["Compiled", "Unsupported", "compile_pattern", "compile_query"]

# -- graph patterns --------------------------------------------------------------------------


def _bgp(ctx: Context, triples: list[Any], graph_var: str | None) -> Rel:
    one_claim = ctx.primary_claims(graph_var)
    rel = Rel(dedup=not one_claim)
    if not triples:
        if graph_var is None:
            return Rel()
        ids = ctx.named_graphs()
        if not ids:
            return Rel(empty=True)
        rows = union_all_of([select(literal(g).label("g")) for g in ids]).subquery(ctx.sub_name())
        return Rel([rows], [], {graph_var: Node(rows.c.g, null(), has_v=False)})
    for s, p, o in triples:
        if isinstance(p, Path):
            if graph_var is not None:
                raise Unsupported("a property path inside GRAPH ?g")
            found = path_pattern(ctx, s, p, o)
            if found.empty:
                return found
            rel = _join(ctx, rel, found)
            continue
        if not isinstance(p, (URIRef, Variable)):
            raise Unsupported(f"predicate {p!r}")
        if isinstance(s, Literal):
            return Rel(empty=True)
        f = ctx.alias()
        rel.froms.append(f)
        rel.conds.append(ctx.view.where(f))
        if ctx.view.is_current:
            # one claim per statement per graph, so the live indexes serve every current read;
            # across several graphs a statement is still a row per graph (dedup collapses them)
            rel.conds.append(primary(f))
        for term, column in ((s, f.c.e), (p, f.c.a)):
            name = variable_name(term)
            if name is None:
                tid = ctx.term_id(str(term))
                if tid is None:
                    return Rel(empty=True)  # an IRI the store has never seen matches nothing
                rel.conds.append(column == tid)
            else:
                _bind(rel, name, Node(column, null(), has_v=False))
        name = variable_name(o)
        if name is None:
            if isinstance(o, Literal):
                try:
                    enc = values.literal(str(o), str(o.datatype) if o.datatype else None, o.language)
                except BadLiteral:
                    return Rel(empty=True)  # an ill-typed constant equals no stored value
                rel.conds += [f.c.vh == values.digest(enc), f.c.v == enc]
            else:
                tid = ctx.term_id(str(o))
                if tid is None:
                    return Rel(empty=True)
                rel.conds += [f.c.vh == values.digest(values.ref(tid)), f.c.v_ref == tid]
        else:
            _bind(rel, name, Node(f.c.v_ref, f.c.v, v_full=True, n=f.c.v_num, vh=f.c.vh))
        if graph_var is not None:
            _bind(rel, graph_var, Node(f.c.g, null(), has_v=False))
    return rel


def _bind(rel: Rel, name: str, node: Node) -> None:
    found = rel.vars.get(name)
    if found is None:
        rel.vars[name] = node
    else:
        rel.conds.append(same_term(found, node))


def _labels(names: Iterable[str]) -> dict[str, str]:
    return {n: f"c{k}" for k, n in enumerate(sorted(names))}


def _columns(rel: Rel, labels: dict[str, str]) -> list[Col]:
    cols: list[Col] = []
    for name, label in labels.items():
        x = rel.vars.get(name, UNBOUND)
        cols.append(_id_col(x.id).label(label + "i"))
        cols.append(_v_col(x.v).label(label + "v"))
        if x.n is not None:
            cols.append(x.n.label(label + "n"))
    return cols


def _select(rel: Rel, names: Iterable[str] | None = None) -> tuple[Select[Any], dict[str, str]]:
    labels = _labels(rel.vars if names is None else names)
    cols = _columns(rel, labels) + [k.label(f"k{i}") for i, k in enumerate(rel.keys)]
    cols = cols or [literal(1).label("one")]
    stmt = select(*cols)
    if rel.froms:
        stmt = stmt.select_from(*rel.froms)
    if rel.conds:
        stmt = stmt.where(*rel.conds)
    if rel.dedup:
        stmt = stmt.distinct()
    return stmt, labels


def _from_subquery(sq: Any, labels: dict[str, str], source: Rel, maybe: set[str]) -> Rel:
    out = Rel([sq], [], {}, set(maybe), keys=[sq.c[f"k{i}"] for i in range(len(source.keys))])
    for name, label in labels.items():
        old = source.vars.get(name, UNBOUND)
        cols = sq.c
        out.vars[name] = Node(
            cols[label + "i"],
            cols[label + "v"],
            has_id=old.has_id,
            has_v=old.has_v,
            v_full=old.v_full,
            n=cols[label + "n"] if old.n is not None else None,
        )
    return out


def _materialise(ctx: Context, rel: Rel, names: Iterable[str] | None = None) -> Rel:
    """``rel`` as one subquery (DISTINCT when claims may repeat a solution)."""
    stmt, labels = _select(rel, names)
    kept = set(labels)
    return _from_subquery(stmt.subquery(ctx.sub_name()), labels, rel, rel.maybe & kept)


def _join(ctx: Context, a: Rel, b: Rel) -> Rel:
    if a.empty or b.empty:
        return Rel(empty=True)
    out = Rel(
        a.froms + b.froms, a.conds + b.conds, dict(a.vars), set(a.maybe), a.dedup or b.dedup, a.keys + b.keys
    )
    for name, y in b.vars.items():
        x = a.vars.get(name)
        if x is None:
            out.vars[name] = y
            if name in b.maybe:
                out.maybe.add(name)
            continue
        if name not in a.maybe and name not in b.maybe:
            out.conds.append(same_term(x, y))
            continue
        out.conds.append(or_(is_unbound(x), is_unbound(y), same_term(x, y)))
        out.vars[name] = either(x, y)
        if not (name in a.maybe and name in b.maybe):
            out.maybe.discard(name)
    return out


def _joined(froms: list[FromClause]) -> FromClause:
    if not froms:
        raise Unsupported("an OPTIONAL with an empty left side")
    j = froms[0]
    for f in froms[1:]:
        j = j.join(f, true())
    return j


def _plain(x: Node) -> bool:
    """Whether the value is read straight from columns (so it is NULL on an unmatched row)."""
    return all(isinstance(c, ColumnClause | Null) for c in (x.id, x.v))


def _left_join(ctx: Context, a: Rel, b: Rel, expr: Any) -> Rel:
    if a.empty:
        return a
    if b.empty:
        return a
    if not a.froms:
        a = _materialise(ctx, a)
    if not all(_plain(y) for y in b.vars.values()):
        # a BIND inside OPTIONAL is computed in B's subquery, so an unmatched row leaves it NULL
        b = _materialise(ctx, b)
    on: list[ColumnElement[bool]] = list(b.conds)
    out = Rel([], list(a.conds), dict(a.vars), set(a.maybe), a.dedup or b.dedup, a.keys + b.keys)
    for name, y in b.vars.items():
        x = a.vars.get(name)
        if x is None:
            out.vars[name] = y
            out.maybe.add(name)
        elif name not in a.maybe and name not in b.maybe:
            on.append(same_term(x, y))
        else:
            on.append(or_(is_unbound(x), is_unbound(y), same_term(x, y)))
            out.vars[name] = either(x, y)
    if expr is not None and not (isinstance(expr, CompValue) and expr.name == "TrueFilter"):
        scope = Rel(vars=dict(out.vars), maybe=out.maybe)
        on.append(condition(ctx, scope, expr))
    right: FromClause = (
        _joined(b.froms) if b.froms else select(literal(1).label("one")).subquery(ctx.sub_name())
    )
    out.froms = [_joined(a.froms).outerjoin(right, and_(true(), *on))]
    return out


def _union(ctx: Context, rels: list[Rel]) -> Rel:
    """The branches of a UNION (a chain of them flattened: one UNION ALL, not one subquery per
    branch, which SQLite's parser stack refuses past a dozen)."""
    rels = [rel for rel in rels if not rel.empty]
    if not rels:
        return Rel(empty=True)
    if len(rels) == 1:
        return rels[0]
    names = sorted({name for rel in rels for name in rel.vars})
    labels = _labels(names)
    width = max(len(rel.keys) for rel in rels)

    def branch(rel: Rel, number: int) -> Select[Any]:
        cols: list[Col] = []
        for name, label in labels.items():
            x = rel.vars.get(name, UNBOUND)
            cols += [_id_col(x.id).label(label + "i"), _v_col(x.v).label(label + "v")]
        cols.append(literal(number).label("kb"))
        cols += [(rel.keys[i] if i < len(rel.keys) else null()).label(f"k{i}") for i in range(width)]
        stmt = select(*cols)
        if rel.froms:
            stmt = stmt.select_from(*rel.froms)
        return stmt.where(*rel.conds) if rel.conds else stmt

    # The branch number keeps a solution two branches produce twice, as SPARQL wants, when a
    # DISTINCT later collapses claims.
    sq = union_all_of([branch(rel, number) for number, rel in enumerate(rels)]).subquery(ctx.sub_name())
    maybe = {n for n in names if any(n not in rel.vars or n in rel.maybe for rel in rels)}
    dedup = any(rel.dedup for rel in rels)
    out = Rel([sq], [], {}, maybe, dedup, [sq.c.kb] + [sq.c[f"k{i}"] for i in range(width)])
    for name, label in labels.items():
        found = [rel.vars.get(name, UNBOUND) for rel in rels]
        out.vars[name] = Node(
            sq.c[label + "i"],
            sq.c[label + "v"],
            has_id=any(x.has_id for x in found),
            has_v=any(x.has_v for x in found),
            v_full=all(x.v_full or not x.has_id for x in found),
        )
    return out


def _union_branches(node: CompValue) -> list[Any]:
    """The operands of a chain of UNIONs, in order (rdflib nests ``A UNION B UNION C`` as
    ``Union(Union(A, B), C)``)."""
    branches: list[Any] = []
    stack = [node]
    while stack:
        part = stack.pop()
        if isinstance(part, CompValue) and part.name == "Union":
            stack += [part.p2, part.p1]
        else:
            branches.append(part)
    return branches


def _minus(ctx: Context, a: Rel, b: Rel, graph_var: str | None = None) -> Rel:
    # Under GRAPH ?g both sides read the same graph, but ?g is not in the domain MINUS tests.
    shared = [n for n in b.vars if n in a.vars and n != graph_var]
    if a.empty or b.empty or not shared:
        return a
    conds = list(b.conds)
    if graph_var is not None and graph_var in a.vars and graph_var in b.vars:
        conds.append(same_term(a.vars[graph_var], b.vars[graph_var]))
    for name in shared:
        x, y = a.vars[name], b.vars[name]
        if name in a.maybe or name in b.maybe:
            conds.append(or_(is_unbound(x), is_unbound(y), same_term(x, y)))
        else:
            conds.append(same_term(x, y))
    conds.append(or_(*(and_(is_bound(a.vars[n]), is_bound(b.vars[n])) for n in shared)))
    sub = select(literal(1))
    if b.froms:
        sub = sub.select_from(*b.froms)
    return replace(a, conds=[*a.conds, not_(exists(sub.where(*conds)))])


def _values(ctx: Context, node: CompValue) -> Rel:
    rows: list[dict[Variable, RdfNode]] = list(node.res)
    names = sorted({str(v) for row in rows for v in row})
    if not rows:
        return Rel(empty=True)
    labels = _labels(names)
    selects = []
    for number, row in enumerate(rows):
        cols: list[Col] = [literal(number).label("kr")]
        by_name = {str(k): v for k, v in row.items()}
        for name, label in labels.items():
            term = by_name.get(name)
            # rdflib leaves the token "UNDEF" where a VALUES row binds nothing
            x = UNBOUND if term is None or not isinstance(term, (URIRef, Literal)) else constant(ctx, term)
            # Typed NULLs: PostgreSQL types an all-NULL column of a UNION as text.
            cols += [_id_col(x.id).label(label + "i"), _v_col(x.v).label(label + "v")]
        selects.append(select(*cols))
    sq = union_all_of(selects).subquery(ctx.sub_name())
    maybe = {n for n in names if any(not isinstance(row.get(Variable(n)), (URIRef, Literal)) for row in rows)}
    out = Rel([sq], [], {}, maybe, keys=[sq.c.kr])
    for name, label in labels.items():
        out.vars[name] = Node(sq.c[label + "i"], sq.c[label + "v"])
    return out


def _graph(ctx: Context, node: CompValue) -> Rel:
    term = node.term
    saved_view = ctx.view
    try:
        if isinstance(term, URIRef):
            gid = ctx.term_id(str(term))
            active = ctx.named if ctx.named is not None else set(ctx.named_graphs())
            if gid is None or gid not in active:
                return Rel(empty=True)
            ctx.view = ctx.view.with_graphs({gid})
            return _pattern(ctx, node.p, graph_var=None)
        name = variable_name(term)
        if name is None:
            raise Unsupported("GRAPH with a literal")
        ids = ctx.named_graphs()
        if not ids:
            return Rel(empty=True)
        ctx.view = ctx.view.with_graphs(ids)
        return _pattern(ctx, node.p, graph_var=name)
    finally:
        ctx.view = saved_view


def _pattern(ctx: Context, node: Any, graph_var: str | None = None) -> Rel:
    """Compile one graph-pattern algebra node."""
    name = node.name
    if name == "BGP":
        return _bgp(ctx, list(node.triples), graph_var)
    if name == "Join":
        return _join(ctx, _pattern(ctx, node.p1, graph_var), _pattern(ctx, node.p2, graph_var))
    if name == "LeftJoin":
        a = _pattern(ctx, node.p1, graph_var)
        b = _pattern(ctx, node.p2, graph_var)
        return _left_join(ctx, a, b, node.expr)
    if name == "Filter":
        inner = _pattern(ctx, node.p, graph_var)
        if inner.empty:
            return inner
        return replace(inner, conds=[*inner.conds, condition(ctx, inner, node.expr)])
    if name == "Union":
        return _union(ctx, [_pattern(ctx, branch, graph_var) for branch in _union_branches(node)])
    if name == "Minus":
        return _minus(ctx, _pattern(ctx, node.p1, graph_var), _pattern(ctx, node.p2, graph_var), graph_var)
    if name == "Extend":
        inner = _pattern(ctx, node.p, graph_var)
        var = str(node.var)
        if inner.empty:
            return inner
        if var in inner.vars:
            raise Unsupported("BIND of a variable already in scope")
        value = value_of(ctx, inner, node.expr)
        out = replace(inner, vars={**inner.vars, var: value}, maybe=inner.maybe | {var})
        return out
    if name in ("ToMultiSet", "values"):
        inner_node = node.p if name == "ToMultiSet" else node
        if isinstance(inner_node, list):  # rdflib's form of an empty VALUES block: no solutions
            return Rel(empty=True)
        if inner_node.name != "values":
            return _pattern(ctx, inner_node, graph_var)
        rel = _values(ctx, inner_node)
        if graph_var is not None:  # inside GRAPH ?g the rows pair with each graph in turn
            rel = _join(ctx, _bgp(ctx, [], graph_var), rel)
        return rel
    if name == "Graph":
        if graph_var is not None:
            raise Unsupported("nested GRAPH")
        return _graph(ctx, node)
    if name in ("Project", "Distinct", "Reduced", "Slice", "OrderBy", "AggregateJoin", "Group"):
        if graph_var is not None:
            raise Unsupported("a sub-select inside GRAPH ?g")
        return _subselect(ctx, node)
    raise Unsupported(name)


# -- solution modifiers ----------------------------------------------------------------------


@dataclass
class _Mods:
    offset: int = 0
    limit: int | None = None
    distinct: bool = False
    projected: list[str] | None = None
    order: list[Any] = field(default_factory=list)


def _peel(node: Any) -> tuple[_Mods, Any]:
    mods = _Mods()
    if node.name == "Slice":
        mods.offset, mods.limit = int(node.start or 0), (None if node.length is None else int(node.length))
        node = node.p
    if node.name in ("Distinct", "Reduced"):
        mods.distinct = node.name == "Distinct"
        node = node.p
    if node.name == "Project":
        mods.projected = [str(v) for v in node.PV]
        node = node.p
    if node.name == "OrderBy":
        mods.order = list(node.expr)
        node = node.p
    return mods, node


def _solutions(ctx: Context, node: Any) -> Rel:
    """A pattern that may be an aggregation (Group/AggregateJoin at its root)."""
    if node.name == "AggregateJoin":
        return _aggregate(ctx, node)
    if node.name == "Extend" and _contains_aggregate(node):
        inner = _solutions(ctx, node.p)
        var = str(node.var)
        if var in inner.vars and not var.startswith("__agg_"):
            raise Unsupported("BIND of a variable already in scope")
        return replace(
            inner, vars={**inner.vars, var: value_of(ctx, inner, node.expr)}, maybe=inner.maybe | {var}
        )
    if node.name == "Filter" and _contains_aggregate(node):
        inner = _solutions(ctx, node.p)
        return replace(inner, conds=[*inner.conds, condition(ctx, inner, node.expr)])
    return _pattern(ctx, node)


def _contains_aggregate(node: Any) -> bool:
    while isinstance(node, CompValue) and node.name in ("Extend", "Filter"):
        node = node.p
    return isinstance(node, CompValue) and node.name == "AggregateJoin"


def _id_col(col: Col) -> Col:
    """A node's id column, a NULL one typed: PostgreSQL types a bare NULL column as text, and a
    later comparison with a term id then fails."""
    return cast(col, BigInteger) if isinstance(col, Null) else col


def _v_col(col: Col) -> Col:
    """A node's value column, a NULL one typed (see ``_id_col``)."""
    return cast(col, LargeBinary) if isinstance(col, Null) else col


def _ordered(ctx: Context, rel: Rel, mods: _Mods, names: list[str]) -> Select[Any]:
    """SELECT of ``names`` from ``rel`` with ORDER BY, DISTINCT and LIMIT/OFFSET applied."""
    if rel.dedup and not mods.distinct:
        rel = _materialise(ctx, rel)
    keys: list[Col] = []
    plain_keys: list[Col] = []
    for cond in mods.order:
        expr, desc = (
            (cond.expr, cond.order == "DESC")
            if getattr(cond, "name", "") == "OrderCondition"
            else (cond, False)
        )
        # A NULL key orders nothing, and PostgreSQL refuses a constant in ORDER BY.
        found = [k for k in _order_keys(ctx, rel, expr) if not isinstance(k, Null)]
        plain_keys += found
        # NULL sorts first ascending and last descending, as SQLite does by default (PostgreSQL's
        # default is the other way round).
        keys += [k.desc().nulls_last() if desc else k.asc().nulls_first() for k in found]
    if mods.distinct and keys:
        # DISTINCT before ORDER BY: order keys must be functions of the projected columns
        order_vars = {str(c.expr if getattr(c, "name", "") == "OrderCondition" else c) for c in mods.order}
        if not order_vars <= set(names):
            raise Unsupported("DISTINCT with ORDER BY on an unprojected expression")
    cols: list[Col] = []
    for k, name in enumerate(names):
        x = rel.vars.get(name, UNBOUND)
        cols += [_id_col(x.id).label(f"o{k}i"), _v_col(x.v).label(f"o{k}v")]
    if mods.distinct and keys and ctx.db.dialect.distinct_order_keys_selected:
        # Functions of the projected columns (checked above), so DISTINCT sees the same rows;
        # the decoder reads only the o<k> columns.
        cols += [k.label(f"ok{i}") for i, k in enumerate(plain_keys)]
    stmt = select(*(cols or [literal(1).label("one")]))
    if rel.froms:
        stmt = stmt.select_from(*rel.froms)
    if rel.conds:
        stmt = stmt.where(*rel.conds)
    if mods.distinct:
        stmt = stmt.distinct()
    if keys:
        stmt = stmt.order_by(*keys)
    if mods.offset:
        stmt = stmt.offset(mods.offset)
    if mods.limit is not None:
        stmt = stmt.limit(mods.limit)
    return stmt


def _subselect(ctx: Context, node: Any) -> Rel:
    mods, inner_node = _peel(node)
    rel = _solutions(ctx, inner_node)
    if rel.empty:
        return rel
    names = mods.projected if mods.projected is not None else sorted(rel.vars)
    stmt = _ordered(ctx, rel, mods, names)
    if not mods.distinct:  # a sub-select may return the same row twice; a row number tells them apart
        stmt = stmt.add_columns(func.row_number().over().label("kr"))
    sq = stmt.subquery(ctx.sub_name())
    out = Rel([sq], [], {}, set(), keys=[] if mods.distinct else [sq.c.kr])
    for k, name in enumerate(names):
        x = rel.vars.get(name, UNBOUND)
        out.vars[name] = Node(sq.c[f"o{k}i"], sq.c[f"o{k}v"], has_id=x.has_id, has_v=x.has_v, v_full=x.v_full)
        if name in rel.maybe or name not in rel.vars:
            out.maybe.add(name)
    return out


def _order_keys(ctx: Context, rel: Rel, expr: Any) -> list[Col]:
    """SPARQL ORDER BY: unbound, blank nodes, IRIs, then literals (numbers by value)."""
    x = value_of(ctx, rel, expr)
    iri = iri_text(ctx, x.id) if x.has_id else null()
    category = case(
        (x.id.is_not(None), case((func.substr(iri, 1, 2) == "_:", 1), else_=2)),
        (x.v.is_not(None) if x.has_v else false(), 3),
        else_=0,
    )
    if not x.has_v:
        return [category, null(), iri, null()]
    numeric = x.n if x.n is not None else func.q_num(x.v)
    # Numbers with one double shadow (2**53 and 2**53 + 1, or two integers past 2**1024) are
    # told apart by their exact value (q_numkey). A number that is its shadow keys b"1", as
    # q_numkey does, so the common case calls no function.
    exact = case(
        (or_(numeric.is_(None), shadow_is_value(x.v, numeric)), literal(b"1")), else_=func.q_numkey(x.v)
    )
    return [category, numeric, exact, iri, x.v]


# -- aggregation -----------------------------------------------------------------------------


def _aggregate(ctx: Context, node: CompValue) -> Rel:
    group = node.p
    inner = _pattern(ctx, group.p)
    if inner.empty:
        inner = Rel(conds=[false()])
    if inner.dedup:
        inner = _materialise(ctx, inner)
    keys: list[Col] = []
    key_vars: dict[str, Node] = {}
    for expr in group.expr or ():
        if not isinstance(expr, Variable):
            raise Unsupported("GROUP BY an expression")
        x = inner.vars.get(str(expr), UNBOUND)
        key_vars[str(expr)] = x
        keys += [x.id, x.v]
    cols: list[Col] = []
    out_names: list[tuple[str, bool]] = []  # (variable, value may be an IRI)
    for k, agg in enumerate(node.A):
        res = str(agg.res)
        label = f"a{k}"
        kind = agg.name
        distinct = agg.distinct == "DISTINCT"
        if kind == "Aggregate_Count":
            if agg.vars == "*":
                if distinct:
                    raise Unsupported("COUNT(DISTINCT *)")
                value: Col = func.q_int(func.count())
            else:
                x = value_of(ctx, inner, agg.vars)
                target = (x.id if not x.has_v else encoding(x)) if distinct else case((is_bound(x), 1))
                value = func.q_int(func.count(target.distinct() if distinct else target))
            cols += [_id_col(null()).label(label + "i"), value.label(label + "v")]
            out_names.append((res, False))
            continue
        if kind == "Aggregate_Sample" and isinstance(agg.vars, Variable) and str(agg.vars) in key_vars:
            x = key_vars[str(agg.vars)]
            cols += [_id_col(x.id).label(label + "i"), _v_col(x.v).label(label + "v")]
            out_names.append((res, True))
            continue
        x = value_of(ctx, inner, agg.vars)
        arg = encoding(x)
        if kind == "Aggregate_GroupConcat":
            if distinct:
                raise Unsupported("GROUP_CONCAT(DISTINCT ...)")
            sep = agg.separator
            sep = " " if sep is None else str(sep)
            # no values at all is ""; an IRI among them is an error (unbound)
            value = case(
                (func.count(arg) == 0, literal(values.string(""))), else_=func.q_group_concat(arg, sep)
            )
        else:
            fn = {
                "Aggregate_Sum": func.q_sum,
                "Aggregate_Avg": func.q_avg,
                "Aggregate_Min": func.q_min,
                "Aggregate_Max": func.q_max,
                "Aggregate_Sample": func.q_sample,
            }.get(kind)
            if fn is None:
                raise Unsupported(kind)
            if kind in ("Aggregate_Min", "Aggregate_Max"):  # DISTINCT changes neither
                value = fn(arg, iri_text(ctx, x.id) if x.has_id else null())
            else:
                value = fn(arg.distinct() if distinct else arg)
            if kind in ("Aggregate_Sum", "Aggregate_Avg"):
                # SQLite never finalises an aggregate that saw no rows; SUM and AVG of nothing are 0
                value = case((func.count(arg) == 0, literal(values.integer(0))), else_=value)
        cols += [func.q_refid(value).label(label + "i"), value.label(label + "v")]
        out_names.append((res, True))
    cols.append(func.row_number().over().label("kr"))  # two groups may give equal rows
    stmt = select(*cols)
    if inner.froms:
        stmt = stmt.select_from(*inner.froms)
    if inner.conds:
        stmt = stmt.where(*inner.conds)
    if keys:
        # PostgreSQL refuses a bare NULL as a grouping key; a typed one groups the same.
        stmt = stmt.group_by(*(cast(k, Integer) if isinstance(k, Null) else k for k in keys))
    sq = stmt.subquery(ctx.sub_name())
    out = Rel([sq], [], {}, set(), keys=[sq.c.kr])
    for k, (res, may_be_iri) in enumerate(out_names):
        out.vars[res] = Node(sq.c[f"a{k}i"], sq.c[f"a{k}v"], has_id=may_be_iri)
        out.maybe.add(res)
    return out


# -- queries ---------------------------------------------------------------------------------


def compile_pattern(
    db: Database,
    conn: Connection,
    node: CompValue,
    view: TemporalView,
    *,
    named: frozenset[int] | None = None,
) -> Compiled:
    """One graph pattern as a SELECT of its variables (for rdflib's evaluator to join with)."""
    ctx = Context(db, conn, view, named)
    ctx.pattern = _pattern
    rel = _solutions(ctx, node)
    names = sorted(v for v in rel.vars if not v.startswith("_:"))
    result = Compiled("SELECT", names, const_iris=ctx.const_iris)
    if not rel.empty:
        result.statement = _ordered(ctx, rel, _Mods(), names)
    result.mixed, result.grows = ctx.mixed, ctx.grows
    return _runnable(db, result)


def compile_query(
    db: Database,
    conn: Connection,
    main: CompValue,
    view: TemporalView,
    *,
    named: frozenset[int] | None = None,
    max_rows: int | None = None,
    pinned: Mapping[str, int] | None = None,
) -> Compiled:
    """Compile ``main`` (the query algebra) or raise ``Unsupported``. ``pinned`` gives ids for
    IRIs the store is not asked about (a query template's placeholders, quipu.sparql.templates)."""
    return _runnable(db, _compile_query(db, conn, main, view, named=named, max_rows=max_rows, pinned=pinned))


def _runnable(db: Database, compiled: Compiled) -> Compiled:
    """``compiled``, unless it calls value functions this backend's server does not have; the
    query is still answered then: rdflib's evaluator takes it over the same view."""
    available = db.dialect.functions
    if available is not None and compiled.statement is not None:
        missing = _own_functions(compiled.statement) - available
        if missing:
            raise Unsupported(f"{', '.join(sorted(missing))} on the {db.dialect.name} backend")
    return compiled


def _own_functions(statement: ClauseElement) -> set[str]:
    """The SPARQL value functions (``q_*``, SQLite UDFs) that ``statement`` calls."""
    return {
        element.name
        for element in visitors.iterate(statement)
        if isinstance(element, FunctionElement) and getattr(element, "name", "").startswith("q_")
    }


def _compile_query(
    db: Database,
    conn: Connection,
    main: CompValue,
    view: TemporalView,
    *,
    named: frozenset[int] | None,
    max_rows: int | None,
    pinned: Mapping[str, int] | None = None,
) -> Compiled:
    ctx = Context(db, conn, view, named)
    if pinned:
        ctx.ids.update(pinned)
    ctx.pattern = _pattern
    if main.name == "AskQuery":
        rel = _solutions(ctx, main.p)
        result = Compiled("ASK", [], const_iris=ctx.const_iris)
        if rel.empty:
            result.grows = ctx.grows
            return result
        sub = select(literal(1))
        if rel.froms:
            sub = sub.select_from(*rel.froms)
        result.statement = select(exists(sub.where(*rel.conds) if rel.conds else sub))
        result.mixed, result.grows = ctx.mixed, ctx.grows
        return result
    if main.name == "ConstructQuery":
        mods, node = _peel(main.p)
        if main.template is not None:
            template = list(main.template)
        elif node.name == "BGP":  # CONSTRUCT WHERE { ... }: the pattern is the template
            template = list(node.triples)
        else:
            raise Unsupported("CONSTRUCT WHERE over more than a basic graph pattern")
        rel = _solutions(ctx, node)
        names = sorted(
            {
                n
                for t in template
                for x in t
                if (n := variable_name(x)) is not None and isinstance(x, Variable)
            }
        )
        result = Compiled("CONSTRUCT", names, const_iris=ctx.const_iris, template=template)
        if not rel.empty:
            mods.projected = names
            result.statement = _ordered(ctx, rel, mods, names)
        result.mixed, result.grows = ctx.mixed, ctx.grows
        return result
    if main.name != "SelectQuery":
        raise Unsupported(main.name)
    mods, node = _peel(main.p)
    rel = _solutions(ctx, node)
    names = mods.projected if mods.projected is not None else sorted(rel.vars)
    result = Compiled("SELECT", names, const_iris=ctx.const_iris)
    if rel.empty:
        result.grows = ctx.grows
        return result
    if max_rows is not None:
        cap = max_rows + 1  # one extra row reveals truncation
        mods.limit = cap if mods.limit is None else min(mods.limit, cap)
    result.statement = _ordered(ctx, rel, mods, names)
    result.mixed, result.grows = ctx.mixed, ctx.grows
    return result
