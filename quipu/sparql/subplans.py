"""rdflib's evaluator with compiled sub-plans: when a query as a whole cannot be compiled, the
parts of it that can still run as one SQL statement each (plan "mixed").

rdflib consults ``CUSTOM_EVALS`` for every algebra node it evaluates. The hook installed here
answers a graph-pattern node from SQL when the node compiles and rdflib has bound none of its
variables yet; otherwise it declines and rdflib evaluates the node itself, over the Store view.
It acts only for a ``QuipuView`` that asked for it, so the forced-off path stays pure rdflib.
A node that compiles to a statement past SQLite's own limits (``statement_limits``) is declined
too. Two more hooks correct rdflib for every ``QuipuView``: GROUP BY over no solutions, and
ORDER BY on an expression that is an error for some solutions.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from rdflib import URIRef, Variable
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID, Dataset
from rdflib.plugins.sparql import CUSTOM_EVALS
from rdflib.plugins.sparql.aggregates import Aggregator
from rdflib.plugins.sparql.evaluate import evalPart
from rdflib.plugins.sparql.evalutils import _eval, _val
from rdflib.plugins.sparql.parserutils import CompValue, value
from rdflib.plugins.sparql.sparql import FrozenBindings, QueryContext

from quipu.sparql.cells import Cell, to_node
from quipu.sparql.compiler import Unsupported, compile_pattern
from quipu.store import budget as budgets
from quipu.store import statement_limits
from quipu.store.rdflib_store import QuipuView

_KEY = "quipu-subplans"
_GROUPS_KEY = "quipu-groups"
_ORDER_KEY = "quipu-order-by"
_PARTS = frozenset({"BGP", "Join", "LeftJoin", "Filter", "Union", "Minus", "Extend", "ToMultiSet"})
_install_lock = threading.Lock()


class SubPlans:
    """Per-query switch and counter, attached to the query's ``QuipuView``."""

    def __init__(self, decode: Any) -> None:
        self.decode = decode  # (db, conn, compiled, rows) -> cells per row
        self.used = 0


def install() -> None:
    """Register the hooks once per process (rdflib's registry is global)."""
    with _install_lock:
        CUSTOM_EVALS.setdefault(_KEY, _evaluate)
        CUSTOM_EVALS.setdefault(_GROUPS_KEY, _groups)
        CUSTOM_EVALS.setdefault(_ORDER_KEY, _order_by)


def _groups(ctx: QueryContext, part: CompValue) -> Iterator[FrozenBindings]:
    """GROUP BY over no solutions has no groups (SPARQL 18.5.1); rdflib answers one empty
    solution. Quipu's views group here instead, on either path."""
    if part.name != "AggregateJoin" or part.p.expr is None:
        raise NotImplementedError
    if not isinstance(getattr(ctx.graph, "store", None), QuipuView):
        raise NotImplementedError
    keys = list(part.p.expr)

    def solutions() -> Iterator[FrozenBindings]:
        groups: dict[tuple[Any, ...], Aggregator] = {}
        for row in evalPart(ctx, part.p):
            key = tuple(_eval(e, row, False) for e in keys)
            found = groups.get(key)
            if found is None:
                found = groups[key] = Aggregator(aggregations=part.A)
            found.update(row)
        for aggregator in groups.values():
            yield FrozenBindings(ctx, aggregator.get_bindings())

    return solutions()


def _order_by(ctx: QueryContext, part: CompValue) -> list[FrozenBindings]:
    """ORDER BY with a key for every solution: rdflib's has none for an expression that is an
    error (``xsd:integer("x")``), and its sort then fails comparing two of them. An error sorts
    as unbound does, first (SPARQL 15.1), as on the compiled path."""
    if part.name != "OrderBy" or not isinstance(getattr(ctx.graph, "store", None), QuipuView):
        raise NotImplementedError
    res = list(evalPart(ctx, part.p))
    for condition in reversed(part.expr):
        descending = bool(condition.order and condition.order == "DESC")
        res.sort(key=lambda row: _order_key(value(row, condition.expr, variables=True)), reverse=descending)
    return res


def _order_key(found: Any) -> tuple[Any, ...]:
    key: tuple[Any, ...] | None = _val(found)
    return (0,) if key is None else key


def _evaluate(ctx: QueryContext, part: CompValue) -> Iterator[FrozenBindings]:
    if part.name not in _PARTS:
        raise NotImplementedError
    # ctx.graph, not ctx.dataset: the latter raises for queries on a plain rdflib Graph, and
    # this hook sees every rdflib query in the process
    store = getattr(ctx.graph, "store", None)
    plans = getattr(store, "subplans", None)
    if not isinstance(store, QuipuView) or not isinstance(plans, SubPlans):
        raise NotImplementedError
    bound = ctx.solution()
    if any(bound.get(v) is not None for v in part._vars or ()):
        raise NotImplementedError  # rdflib is joining on these: its own lookups are indexed
    view = store.view
    # rdflib reads the default graph through the Dataset itself, and GRAPH through a context
    ident = None if ctx.graph is None or isinstance(ctx.graph, Dataset) else ctx.graph.identifier
    if ident is not None and ident != DATASET_DEFAULT_GRAPH_ID:
        if not isinstance(ident, URIRef):
            raise NotImplementedError
        gid = store.db.terms.lookup(store.conn, (str(ident),)).get(str(ident))
        view = view.with_graphs(() if gid is None or gid not in store.named_graphs else (gid,))
    budget = budgets.current()
    if budget is not None:  # compiling costs time too, and a query may try many parts
        budget.check_deadline()
    try:
        compiled = compile_pattern(store.db, store.conn, part, view, named=store.named_graphs)
        rows = [] if compiled.statement is None else list(store.conn.execute(compiled.statement))
    except (Unsupported, RecursionError):  # SQLAlchemy recurses per level of the statement
        raise NotImplementedError from None
    except Exception as exc:
        if statement_limits.recoverable(store.db, exc):
            raise NotImplementedError from None  # past SQLite's own limits: rdflib evaluates the node
        raise
    table: list[tuple[Cell | None, ...]] = plans.decode(store.db, store.conn, compiled, rows)
    plans.used += 1
    names = [Variable(n) for n in compiled.variables]

    def solutions() -> Iterator[FrozenBindings]:
        for row in table:
            found = {name: to_node(cell) for name, cell in zip(names, row, strict=True) if cell is not None}
            yield FrozenBindings(ctx, {**bound, **found})

    return solutions()
