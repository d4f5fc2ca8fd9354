"""Answer a SPARQL query at a read point, with Quipu's dataset semantics (DM §13, §15.1).

rdflib parses and evaluates over a ``QuipuView``. The dataset clause is resolved here and
removed from evaluation, so rdflib never dereferences a ``FROM`` IRI and the default graph is
ROOT unless the request says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pyparsing import ParseException
from rdflib import Graph, Variable
from rdflib.paths import Path
from rdflib.plugins.sparql.evaluate import evalPart
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.processor import prepareQuery
from rdflib.plugins.sparql.sparql import Query, QueryContext
from rdflib.term import Node

from quipu.errors import QueryError
from quipu.store.database import Database
from quipu.store.rdflib_store import QuipuView, dataset
from quipu.store.reads import resolve_graph
from quipu.store.views import TemporalView

_UNSUPPORTED = {"ServiceGraphPattern": "SERVICE"}


@dataclass
class QueryResult:
    """SELECT: ``variables`` and ``rows``; ASK: ``boolean``; CONSTRUCT/DESCRIBE: ``graph``."""

    form: str
    variables: list[str] = field(default_factory=list)
    rows: list[dict[str, Node]] = field(default_factory=list)
    boolean: bool | None = None
    graph: Graph | None = None
    truncated: bool = False


@lru_cache(maxsize=512)
def prepare(text: str, base: str | None = None) -> Query:
    """Parse and translate once per distinct query text and base (parsing costs 1-5 ms)."""
    try:
        query = prepareQuery(text, base=base)
    except ParseException as exc:
        raise QueryError(f"SPARQL parse error: {exc}", reason="sparql_parse_error") from None
    except Exception as exc:  # rdflib raises bare Exceptions for some translation failures
        raise QueryError(f"SPARQL parse error: {exc}", reason="sparql_parse_error") from None
    _check_supported(query.algebra)
    return query


def _walk(node: Any) -> Any:
    if isinstance(node, CompValue):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _walk(item)


def _has_path(node: Any) -> bool:
    for part in _walk(node):
        if part.name == "BGP" and any(isinstance(t[1], Path) for t in part.triples):
            return True
        if part.name == "path" or isinstance(part.get("path"), Path):
            return True
    return False


def _check_supported(algebra: CompValue) -> None:
    for part in _walk(algebra):
        if part.name in _UNSUPPORTED:
            raise QueryError(f"unsupported SPARQL construct: {_UNSUPPORTED[part.name]}", reason="unsupported")
        if part.name == "Graph" and isinstance(part.term, Variable) and _has_path(part.p):
            raise QueryError(
                "a property path inside GRAPH ?g is not supported; name the graph or use FROM",
                reason="unsupported",
            )


def _dataset_scope(
    db: Database, conn: Any, clause: list[CompValue] | None, graph: str | None
) -> tuple[frozenset[int], frozenset[int] | None]:
    """Default and named graph ids (DM §15.1 step 3); unknown IRIs contribute nothing."""
    # CompValue.get() answers a missing key with the key's name, so test membership instead.
    froms = [str(item["default"]) for item in clause or () if "default" in item]
    named_froms = [str(item["named"]) for item in clause or () if "named" in item]
    if froms:
        default = {gid for iri in froms if (gid := resolve_graph(db, conn, iri)) is not None}
    else:
        gid = resolve_graph(db, conn, graph)
        default = set() if gid is None else {gid}
    if named_froms:
        named = {gid for iri in named_froms if (gid := resolve_graph(db, conn, iri)) is not None}
        return frozenset(default), frozenset(named)
    # FROM without FROM NAMED activates no named graphs; neither clause means "all of them".
    return frozenset(default), (frozenset() if froms else None)


def run_query(
    db: Database,
    text: str,
    *,
    valid_at: str | None = None,
    as_of_tx: int | None = None,
    graph: str | None = None,
    max_rows: int | None = None,
    init_bindings: dict[str, Node] | None = None,
    base: str | None = None,
) -> QueryResult:
    """Evaluate ``text`` at the read point; results are fully materialised in one snapshot."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError("missing 'query' parameter", reason="missing_field")
    query = prepare(text, base)
    main = query.algebra
    view = TemporalView.at(as_of_tx=as_of_tx, valid_at=valid_at)
    with db.read() as conn:
        default, named = _dataset_scope(db, conn, main.get("datasetClause"), graph)
        store = QuipuView(db, conn, view.with_graphs(default), named)
        ds = dataset(store)
        bindings: dict[str, Any] = {Variable(k): v for k, v in (init_bindings or {}).items()}
        ctx = QueryContext(ds, initBindings=bindings)
        ctx.prologue = query.prologue
        res = evalPart(ctx, main)
        return _materialise(main.name, res, max_rows)


def _materialise(name: str, res: Any, max_rows: int | None) -> QueryResult:
    if name == "SelectQuery":
        variables = [str(v) for v in res["vars_"]]
        rows: list[dict[str, Node]] = []
        truncated = False
        for solution in res["bindings"]:
            if max_rows is not None and len(rows) >= max_rows:
                truncated = True
                break
            rows.append({str(k): v for k, v in solution.items() if v is not None})
        return QueryResult("SELECT", variables=variables, rows=rows, truncated=truncated)
    if name == "AskQuery":
        return QueryResult("ASK", boolean=bool(res["askAnswer"]))
    triples = sorted(res["graph"])  # sorted, so a cut keeps the same triples every time
    truncated = max_rows is not None and len(triples) > max_rows
    out = Graph()
    for triple in triples[:max_rows] if truncated else triples:
        out.add(triple)
    return QueryResult(
        "CONSTRUCT" if name == "ConstructQuery" else "DESCRIBE", graph=out, truncated=truncated
    )
