"""Answer a SPARQL query at a read point, with Quipu's dataset semantics (DM §13, §15.1).

rdflib parses and evaluates over a ``QuipuView``. The dataset clause is resolved here and
removed from evaluation, so rdflib never dereferences a ``FROM`` IRI and the default graph is
ROOT unless the request says otherwise.
"""

from __future__ import annotations

import logging
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
from sqlalchemy import Connection

from quipu.errors import QueryError
from quipu.sparql.cells import Cell, from_node, iri_cell, literal_cell, to_node
from quipu.sparql.compiler import TERM, Compiled, Unsupported, compile_query
from quipu.store import values
from quipu.store.database import Database
from quipu.store.rdflib_store import QuipuView, dataset
from quipu.store.reads import resolve_graph
from quipu.store.views import TemporalView

_UNSUPPORTED = {"ServiceGraphPattern": "SERVICE"}
log = logging.getLogger(__name__)


@dataclass
class QueryResult:
    """SELECT: ``variables`` and ``table``; ASK: ``boolean``; CONSTRUCT/DESCRIBE: ``triples``.

    Cells are plain tuples so results go to the wire without rdflib terms; ``rows`` and
    ``graph`` build rdflib terms for Python callers.
    """

    form: str
    variables: list[str] = field(default_factory=list)
    table: list[tuple[Cell | None, ...]] = field(default_factory=list)  # cells in variables' order
    boolean: bool | None = None
    triples: list[tuple[Cell, Cell, Cell]] = field(default_factory=list)
    truncated: bool = False
    plan: str = "rdflib"  # "sql": one SQL statement; "mixed": rdflib with SQL sub-plans

    @property
    def rows(self) -> list[dict[str, Node]]:
        """SELECT solutions as dicts of rdflib terms; an unbound variable is absent."""
        names = self.variables
        return [
            {name: to_node(cell) for name, cell in zip(names, row, strict=True) if cell is not None}
            for row in self.table
        ]

    @property
    def graph(self) -> Graph | None:
        """CONSTRUCT/DESCRIBE results as an rdflib Graph (None for SELECT and ASK)."""
        if self.form not in ("CONSTRUCT", "DESCRIBE"):
            return None
        out = Graph()
        for s, p, o in self.triples:
            out.add((to_node(s), to_node(p), to_node(o)))
        return out


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
    base: str | None = None,
    compiled: bool = True,
) -> QueryResult:
    """Evaluate ``text`` at the read point; results are fully materialised in one snapshot.

    The query is compiled to one SQL statement when the compiler handles it (``compiled=False``
    forces rdflib's evaluator, for comparison); ``QueryResult.plan`` says which path ran.
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError("missing 'query' parameter", reason="missing_field")
    query = prepare(text, base)
    main = query.algebra
    view = TemporalView.at(as_of_tx=as_of_tx, valid_at=valid_at)
    with db.read() as conn:
        default, named = _dataset_scope(db, conn, main.get("datasetClause"), graph)
        scoped = view.with_graphs(default)
        if compiled:
            try:
                plan = compile_query(db, conn, main, scoped, max_rows=max_rows)
            except Unsupported as why:
                log.debug("SPARQL via rdflib: the compiler does not handle %s", why)
            else:
                log.debug("SPARQL via one SQL statement")
                return _run_compiled(db, conn, plan, max_rows)
        ds = dataset(QuipuView(db, conn, scoped, named))
        ctx = QueryContext(ds, initBindings={})  # rdflib reads it even when empty
        ctx.prologue = query.prologue
        res = evalPart(ctx, main)
        return _materialise(main.name, res, max_rows)


def _run_compiled(db: Database, conn: Connection, plan: Compiled, max_rows: int | None) -> QueryResult:
    if plan.form == "ASK":
        answer = plan.statement is not None and bool(conn.execute(plan.statement).scalar())
        return QueryResult("ASK", boolean=answer, plan="sql")
    rows: list[tuple[Any, ...]] = (
        [] if plan.statement is None else [tuple(r) for r in conn.execute(plan.statement)]
    )
    truncated = max_rows is not None and len(rows) > max_rows
    if truncated:
        rows = rows[:max_rows]
    width = len(plan.variables)
    kinds = [plan.kinds.get(name) for name in plan.variables]
    ids: set[int] = set()
    for row in rows:
        for kind, cell in zip(kinds, row[:width], strict=True):
            if cell is None:
                continue
            if kind == TERM:
                ids.add(cell)
            elif (ref := values.ref_id(cell)) is not None:
                ids.add(ref)
    terms = {tid: iri_cell(iri) for tid, iri in db.terms.iris(conn, ids).items()} if ids else {}
    literals: dict[bytes, Cell] = {}

    def cell_of(kind: str | None, raw: Any) -> Cell | None:
        if raw is None:
            return None
        if kind == TERM:
            return terms[raw]
        raw = bytes(raw)
        if (ref := values.ref_id(raw)) is not None:
            return terms[ref]
        found = literals.get(raw)
        if found is None:
            found = literals[raw] = literal_cell(raw)
        return found

    table = [tuple(cell_of(k, raw) for k, raw in zip(kinds, row[:width], strict=True)) for row in rows]
    return QueryResult("SELECT", variables=plan.variables, table=table, truncated=truncated, plan="sql")


def _materialise(name: str, res: Any, max_rows: int | None) -> QueryResult:
    if name == "SelectQuery":
        variables = [str(v) for v in res["vars_"]]
        table: list[tuple[Cell | None, ...]] = []
        truncated = False
        for solution in res["bindings"]:
            if max_rows is not None and len(table) >= max_rows:
                truncated = True
                break
            table.append(tuple(_cell(solution.get(Variable(v))) for v in variables))
        return QueryResult("SELECT", variables=variables, table=table, truncated=truncated)
    if name == "AskQuery":
        return QueryResult("ASK", boolean=bool(res["askAnswer"]))
    triples = sorted(res["graph"])  # sorted, so a cut keeps the same triples every time
    truncated = max_rows is not None and len(triples) > max_rows
    kept = triples[:max_rows] if truncated else triples
    return QueryResult(
        "CONSTRUCT" if name == "ConstructQuery" else "DESCRIBE",
        triples=[(from_node(s), from_node(p), from_node(o)) for s, p, o in kept],
        truncated=truncated,
    )


def _cell(node: Node | None) -> Cell | None:
    return None if node is None else from_node(node)
