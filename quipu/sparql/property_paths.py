"""Property paths as SQL: sequences as joins, alternatives as UNION ALL, ``+`` and ``*`` as
recursive CTEs (UNION, so cycles end), negated property sets as NOT IN.
"""

from __future__ import annotations

import itertools
from typing import Any

from rdflib import Literal, URIRef, paths
from rdflib.term import Node as RdfNode
from sqlalchemy import Select, case, func, literal, literal_column, select, union_all

from quipu.errors import BadLiteral
from quipu.sparql.relations import Col, Context, Node, Rel, Unsupported, variable_name
from quipu.store import planner_stats, values
from quipu.store.views import primary

# A path compiles to a selectable of (s, o) node keys: a term id (an integer) for an IRI or
# blank node, the literal encoding (a blob) for a literal. SQLite compares the two storage
# classes as unequal, so one column carries both; only SQLite has this, like the SQL functions.


def _key_node(key: Col) -> Node:
    return Node(
        case((func.typeof(key) == "integer", key)),
        case((func.typeof(key) == "blob", key)),
    )


def _const_key(ctx: Context, term: RdfNode) -> Any:
    if isinstance(term, URIRef):
        return ctx.const_id(str(term))
    if isinstance(term, Literal):
        try:
            return values.literal(str(term), str(term.datatype) if term.datatype else None, term.language)
        except BadLiteral:
            return None
    return None


def _link(ctx: Context, predicates: list[int] | None, negated: bool, inverse: bool) -> Select[Any]:
    f = ctx.alias()
    obj = func.coalesce(f.c.v_ref, f.c.v)
    start, end = (obj, f.c.e) if inverse else (f.c.e, obj)
    stmt = select(start.label("s"), end.label("o")).select_from(f).where(ctx.view.where(f))
    if ctx.view.is_current:  # one claim per statement per graph (the live indexes)
        stmt = stmt.where(primary(f))
    if predicates is not None:
        items = [literal(p) for p in predicates]
        stmt = stmt.where(f.c.a.not_in(items) if negated else f.c.a.in_(items))
    return stmt


def _nodes(ctx: Context) -> Select[Any]:
    """Every subject and object in scope (the zero-length path between two variables)."""
    a, b = ctx.alias(), ctx.alias()
    subjects = select(a.c.e.label("n")).where(ctx.view.where(a))
    objects = select(func.coalesce(b.c.v_ref, b.c.v).label("n")).where(ctx.view.where(b))
    return subjects.union(objects)  # type: ignore[return-value]


def _path_sql(ctx: Context, path: Any, start: Any) -> Select[Any]:
    """SELECT s, o [, keys] for ``path``; ``start`` (a node key or None) seeds recursion."""
    if isinstance(path, URIRef):
        tid = ctx.term_id(str(path))
        return _link(ctx, [-1 if tid is None else tid], False, False)
    if isinstance(path, paths.InvPath):
        inner = _path_sql(ctx, path.arg, None).subquery(ctx.sub_name())
        return select(inner.c.o.label("s"), inner.c.s.label("o"))
    if isinstance(path, paths.SequencePath):
        parts = [_path_sql(ctx, p, None).subquery(ctx.sub_name()) for p in path.args]
        stmt = select(parts[0].c.s.label("s"), parts[-1].c.o.label("o")).select_from(parts[0])
        for i, (left, right) in enumerate(itertools.pairwise(parts)):
            stmt = stmt.join(right, right.c.s == left.c.o).add_columns(left.c.o.label(f"m{i}"))
        return stmt
    if isinstance(path, paths.AlternativePath):
        branches = [_path_sql(ctx, p, None).subquery(ctx.sub_name()) for p in path.args]
        return union_all(  # type: ignore[return-value]
            *(select(b.c.s, b.c.o, literal(i).label("m0")) for i, b in enumerate(branches))
        )
    if isinstance(path, paths.NegatedPath):
        forward: list[int] = []
        backward: list[int] = []
        for arg in path.args:
            if isinstance(arg, URIRef):
                forward.append(ctx.term_id(str(arg)) or -1)
            elif isinstance(arg, paths.InvPath) and isinstance(arg.arg, URIRef):
                backward.append(ctx.term_id(str(arg.arg)) or -1)
            else:
                raise Unsupported("this negated property set")
        parts_ = []
        if forward or not backward:
            parts_.append(_link(ctx, forward, True, False))
        if backward:
            parts_.append(_link(ctx, backward, True, True))
        if len(parts_) == 1:
            return parts_[0]
        return union_all(  # type: ignore[return-value]
            *(
                select(q.c.s, q.c.o, literal(i).label("m0"))
                for i, q in enumerate(p.subquery(ctx.sub_name()) for p in parts_)
            )
        )
    if isinstance(path, paths.MulPath):
        step = _path_sql(ctx, path.path, None).subquery(ctx.sub_name())
        reach: Select[Any] | None = None
        if path.mod in (paths.OneOrMore, paths.ZeroOrMore):
            seed = select(step.c.s, step.c.o)
            if start is not None:
                seed = seed.where(step.c.s == start)
            closure = seed.cte(ctx.sub_name(), recursive=True)
            again = _path_sql(ctx, path.path, None)
            if _bloom_probed(ctx, start):
                # Read the edges once (LIMIT -1 keeps them a subquery) instead of probing them
                # from the recursive step through a Bloom filter SQLite rebuilds for every row of
                # the queue: 115 ms instead of 6 for the closure of 2,436 edges in the SPARQL
                # benchmark's Q10, 96 ms instead of 3 for a two-step walk from one node.
                again = again.limit(literal_column("-1"))
            step2 = again.subquery(ctx.sub_name())
            closure = closure.union(
                select(closure.c.s, step2.c.o).select_from(closure.join(step2, step2.c.s == closure.c.o))
            )
            reach = select(closure.c.s, closure.c.o)
        else:
            reach = select(step.c.s, step.c.o)
        if path.mod in (paths.ZeroOrMore, paths.ZeroOrOne):
            if start is not None:
                zero = select(literal(start).label("s"), literal(start).label("o"))
            else:
                nodes = _nodes(ctx).subquery(ctx.sub_name())
                zero = select(nodes.c.n.label("s"), nodes.c.n.label("o"))
            return reach.union(zero)  # type: ignore[return-value]
        return reach.distinct()
    raise Unsupported(f"path {path!r}")


# SQLite (3.40) takes a CTE for 2**20 rows and probes a joined table through a Bloom filter when
# it expects more probes than the table has rows: a store with fewer facts gets one per step.
_CTE_ROWS = 2**20


def _bloom_probed(ctx: Context, start: Any) -> bool:
    """Whether the recursive step should read its edges once rather than probe them by index:
    always for a closure from every node (it reads every edge anyway), and from one node when
    SQLite would otherwise build a Bloom filter for each step. PostgreSQL has no such filter."""
    if ctx.db.dialect.name != "sqlite":
        return False
    if start is None:
        return True
    rows = planner_stats.facts_rows(ctx.conn)
    return rows is not None and rows < _CTE_ROWS


def _invert(path: Any) -> Any:
    if isinstance(path, paths.MulPath):
        return paths.MulPath(_invert(path.path), path.mod)
    if isinstance(path, paths.InvPath):
        return path.arg
    return paths.InvPath(path)


def path_pattern(ctx: Context, s: RdfNode, path: Any, o: RdfNode) -> Rel:
    if not ctx.db.dialect.sparql_functions:
        raise Unsupported("property paths need the SQLite node keys")
    s_var, o_var = variable_name(s), variable_name(o)
    s_key = None if s_var is not None else _const_key(ctx, s)
    o_key = None if o_var is not None else _const_key(ctx, o)
    if (s_var is None and s_key is None) or (o_var is None and o_key is None):
        return Rel(empty=True)  # an ill-typed literal end matches nothing
    if s_var is not None and o_var is None:
        # Walk backwards from the bound object: the closure of the inverse path, seeded there,
        # so a zero-length match yields the object even when it is in no triple.
        back = _path_sql(ctx, _invert(path), o_key).subquery(ctx.sub_name())
        extra = [c for c in back.c if c.key not in ("s", "o")]
        sq = select(back.c.o.label("s"), back.c.s.label("o"), *extra).subquery(ctx.sub_name())
    else:
        sq = _path_sql(ctx, path, s_key).subquery(ctx.sub_name())
    keys: list[Col] = [c for c in sq.c if c.key not in ("s", "o")]
    rel = Rel([sq], [], {}, set(), dedup=not ctx.primary_claims(None), keys=keys)
    if s_var is None:
        rel.conds.append(sq.c.s == s_key)
    else:
        rel.vars[s_var] = _key_node(sq.c.s)
    if o_var is None:
        rel.conds.append(sq.c.o == o_key)
    elif o_var == s_var:
        rel.conds.append(sq.c.o == sq.c.s)
    else:
        rel.vars[o_var] = _key_node(sq.c.o)
    return rel
