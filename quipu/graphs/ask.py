"""``quipu_ask``: the question catalog, and running one named query by name (tools-search §5.17).

Dispatch looks in the compiled-in catalog first and then in the stored registry, so a stored
query can never shadow a built-in. Parameters are resolved in declaration order, rendered by
kind, substituted in one pass and checked against the template's shape before the query runs
(quipu.graphs.query_shape). The query runs through the same engine path and budgets as
``POST /query`` (408 past the deadline, 422 past the join bound). A stored query's dataset is
its default graph unless the caller names ``graph``, which then scopes the default graph exactly
as ``quipu_query``'s ``graph`` option does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from quipu.errors import InvalidField
from quipu.graphs import ask_catalog, query_shape, stored_queries
from quipu.graphs.query_params import NamedQuery, render_all, resolve
from quipu.sparql.engine import QueryResult
from quipu.sparql.quipu_json import value_json
from quipu.store.database import Database

USAGE: Final = 'Call with {"name": "<query>", "params": {...}}. Call with no name to list.'
# The engine's query runner with the store's budgets bound (KnowledgeBase.query_result).
Runner = Callable[..., QueryResult]


def catalog(db: Database) -> dict[str, Any]:
    """Built-ins in their catalog order, then the stored queries by name. A stored query named
    like a built-in is left out: ``quipu_ask`` could never run it (``quipu_queries`` lists it)."""
    stored = [q for q in stored_queries.catalog(db) if q.name not in ask_catalog.BY_NAME]
    entries = [q.entry() for q in (*ask_catalog.BUILTINS, *stored)]
    return {"queries": entries, "usage": USAGE}


def ask(
    db: Database,
    run: Runner,
    *,
    name: object = None,
    params: Mapping[str, object] | None = None,
    graph: str | None = None,
) -> dict[str, Any]:
    """The catalog for no name (or a non-string one, or ``"list"``); else the named query's rows."""
    if not isinstance(name, str) or name == "list":
        return catalog(db)
    query = find(db, name)
    values = resolve(query, params)
    sparql = query_shape.guarded(query.template, query.params, values, render_all(query, values))
    result = run(sparql, graph=graph if graph is not None else query.dataset)
    return _answer(query, sparql, result)


def find(db: Database, name: str) -> NamedQuery:
    found = ask_catalog.BY_NAME.get(name) or stored_queries.current(db, name)
    if found is None:
        raise InvalidField(
            f"unknown named query '{name}'; call quipu_ask with no name to list available queries",
            field="name",
            reason="not_found",
        )
    return found


def _answer(query: NamedQuery, sparql: str, result: QueryResult) -> dict[str, Any]:
    columns = list(result.variables)
    rows = [
        {column: value_json(cell) for column, cell in zip(columns, row, strict=True) if cell is not None}
        for row in result.table
    ]
    out: dict[str, Any] = {
        "query": query.name,
        "sparql": sparql,
        "columns": columns,
        "rows": rows,
        "count": len(rows),
    }
    if result.truncated:  # past [quipu.search] max_sparql_rows: said, never silent
        out["truncated"] = True
    return out
