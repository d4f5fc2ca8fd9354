"""Answer a SPARQL query at a read point, with Quipu's dataset semantics (DM §13, §15.1).

rdflib parses and evaluates over a ``QuipuView``. The dataset clause is resolved here and
removed from evaluation, so rdflib never dereferences a ``FROM`` IRI and the default graph is
ROOT unless the request says otherwise.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary

from pyparsing import ParseException
from rdflib import BNode, Graph, URIRef, Variable, paths
from rdflib.plugins.sparql.evaluate import evalPart
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.processor import prepareQuery
from rdflib.plugins.sparql.sparql import Query, QueryContext
from rdflib.term import Node
from sqlalchemy import Connection

from quipu.errors import InvalidField, QueryError
from quipu.sparql import limits, subplans, templates
from quipu.sparql.cells import BNODE, LITERAL, URI, Cell, from_node, iri_cell, literal_cell, to_node
from quipu.sparql.compiler import Compiled, Unsupported, compile_query
from quipu.sparql.cost import is_point_lookup
from quipu.sparql.lru import LruCache
from quipu.sparql.parse_lock import SPARQL_PARSE_LOCK
from quipu.sparql.tree import leaves, walk
from quipu.store import budget as budgets
from quipu.store import graph_scope, statement_limits, values
from quipu.store.database import Database
from quipu.store.dialect import Prepared
from quipu.store.rdflib_store import QuipuView, dataset
from quipu.store.reads import dictionary_generation
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
    # The composed label of the graphs read (None: none declares any; {"error"} when it cannot
    # be composed), folded once per query, not per row.
    labels: dict[str, Any] | None = None

    @property
    def rows(self) -> list[dict[str, Node]]:
        """SELECT solutions as dicts of rdflib terms; an unbound variable is absent."""
        names = self.variables
        if not self.table or not names:
            return [{} for _ in self.table]
        # Column by column: each distinct term becomes an rdflib term once (building one is
        # most of the cost: Q4 at 1M, 33k rows, took 2.1x pyoxigraph when done per cell).
        columns: list[Any] = []
        unbound = False
        for column in zip(*self.table, strict=True):
            node: dict[Cell | None, Node | None] = {c: to_node(c) for c in set(column) if c is not None}
            if None in column:
                node[None] = None
                unbound = True
            columns.append(map(node.__getitem__, column))
        rows = [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]
        if unbound:
            rows = [{k: v for k, v in row.items() if v is not None} for row in rows]
        return rows

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
    return _parse(text, base)


# Point-lookup answers kept for query texts up to _SHORT characters (a longer text is classified
# in a thread each time it comes: at most _REMEMBERED * _SHORT characters are held).
_REMEMBERED = 4096
_SHORT = 4096
_points: dict[str, bool] = {}


def point_query(text: str) -> bool:
    """Whether ``text`` is a point lookup (``quipu.sparql.cost``); parses it (cached) if new.

    Raises:
        QueryError: the text does not parse.
    """
    found = _points.get(text)
    if found is None:
        template = templates.split(text)  # the same shape, so the same answer
        found = is_point_lookup(prepare(text if template is None else template.text).algebra)
        if len(text) <= _SHORT:
            if len(_points) >= _REMEMBERED:
                _points.clear()
            _points[text] = found
    return found


def known_point_query(text: str) -> bool | None:
    """``point_query``'s answer for a text it has seen, else None. It never parses, so an event
    loop may ask (a parse takes milliseconds and a process-wide lock)."""
    return _points.get(text)


def _parse(text: str, base: str | None) -> Query:
    limits.check_query(text)  # before the parser: a hostile shape is refused in milliseconds
    try:
        with SPARQL_PARSE_LOCK:  # rdflib's grammar is not thread-safe
            query = prepareQuery(text, base=base)
    except ParseException as exc:
        raise QueryError(f"SPARQL parse error: {exc}", reason="sparql_parse_error") from None
    except RecursionError:
        raise limits.too_complex() from None
    except Exception as exc:  # rdflib raises bare Exceptions for some translation failures
        raise QueryError(f"SPARQL parse error: {exc}", reason="sparql_parse_error") from None
    _check_supported(query.algebra)
    _order_star(text, query.algebra)
    limits.bound_slices(query.algebra)
    limits.guard_expressions(query.algebra)
    return query


# Comments, IRIs and strings, blanked before looking for the outer SELECT's projection.
_NOT_CODE = re.compile(r"#[^\n]*|<[^<>\s]*>|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
_SELECT_STAR = re.compile(r"\bSELECT\s+(?:DISTINCT\s+|REDUCED\s+)?\*", re.IGNORECASE)
_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)


def _order_star(text: str, algebra: CompValue) -> None:
    """``SELECT *`` lists its variables in the order they first appear in the query.

    rdflib collects them in a set, so its order changes with the process's hash seed and the
    same query would print its columns differently from one run to the next.
    """
    code = _NOT_CODE.sub(lambda m: " " * len(m.group()), text)
    first = _SELECT.search(code)
    if first is None or not _SELECT_STAR.match(code, first.start()):
        return
    position: dict[str, int] = {}
    for match in re.finditer(r"[?$]([A-Za-z0-9_\u00b7-\uffff]+)", code):
        position.setdefault(match.group(1), match.start())
    nodes = [algebra, *(part for part in walk(algebra) if part.name == "Project")][:2]
    for node in nodes:
        pv = node.get("PV") if "PV" in node else None
        if isinstance(pv, list):
            pv.sort(key=lambda v: position.get(str(v), len(code)))


_RDF_TYPE = URIRef(values.RDF + "type")
_INFERRED_TYPE = paths.SequencePath(
    _RDF_TYPE, paths.MulPath(URIRef("http://www.w3.org/2000/01/rdf-schema#subClassOf"), "*")
)
INFERENCE_MODES = ("rdfs",)


@lru_cache(maxsize=128)
def _with_rdfs(text: str, base: str | None) -> Query:
    """The query with every ``?s rdf:type <T>`` pattern read as ``?s rdf:type/rdfs:subClassOf* <T>``
    (RDFS subclass entailment, on request only: plain ``a`` stays asserted-only, DM §13.3)."""
    query = _parse(text, base)  # a fresh tree: the cached one is shared
    for part in walk(query.algebra):
        if part.name == "BGP":
            part["triples"] = [(s, _INFERRED_TYPE if p == _RDF_TYPE else p, o) for s, p, o in part.triples]
    return query


def _check_supported(algebra: CompValue) -> None:
    for part in walk(algebra):
        if part.name in _UNSUPPORTED:
            raise QueryError(f"unsupported SPARQL construct: {_UNSUPPORTED[part.name]}", reason="unsupported")
    for leaf in leaves(algebra):
        # A \uD800-style escape decodes to a lone surrogate, which no RDF term (or UTF-8) can hold.
        if isinstance(leaf, str) and not leaf.isascii():
            try:
                leaf.encode("utf-8")
            except UnicodeEncodeError:
                raise QueryError(
                    "SPARQL parse error: the query holds a lone surrogate (U+D800-U+DFFF)",
                    reason="sparql_parse_error",
                ) from None


def _dataset_scope(
    db: Database,
    conn: Any,
    clause: Sequence[Mapping[str, Any]] | None,
    graph: str | None,
    include_kinds: Sequence[str] | None = None,
) -> tuple[frozenset[int], frozenset[int] | None]:
    """Default and named graph ids (DM §15.1 step 3); unknown IRIs contribute nothing, a
    dataset IRI contributes its registered members, and ``include_kinds`` widens the default
    graph with every graph of those declared kinds. The label floor is checked here, so the
    compiled and the rdflib path refuse alike."""
    # CompValue.get() answers a missing key with the key's name, so test membership instead.
    froms = [str(item["default"]) for item in clause or () if "default" in item]
    named_froms = [str(item["named"]) for item in clause or () if "named" in item]
    default: set[int] = set()
    sources: list[str | None] = list(froms) if froms else [graph]
    for iri in sources:
        default |= graph_scope.resolve(db, conn, iri)
    if include_kinds:
        default |= graph_scope.of_kinds(conn, include_kinds)
    named: frozenset[int] | None
    if named_froms:
        named = frozenset(g for iri in named_froms for g in graph_scope.resolve(db, conn, iri))
    else:
        # FROM without FROM NAMED activates no named graphs; neither clause means "all of them"
        # (those are floor-checked only when named: a query cannot be refused for a graph it
        # may never read).
        named = frozenset() if froms else None
    graph_scope.enforce(db, conn, default | (named or frozenset()))
    return frozenset(default), named


@dataclass(frozen=True)
class Statement:
    """The one SQL statement a query compiles to, with its bind parameters as the driver gets
    them; ``mixed``: rdflib evaluates the rest of the query around it."""

    sql: str
    params: Any
    mixed: bool


def _plan_of(db: Database, conn: Connection, key: Any, main: Any) -> _Plan:
    """The cached plan for ``key``, or a new one (``Unsupported`` when the compiler cannot)."""
    plan = _cached_plan(db, conn, key)
    return plan if plan is not None else _compile(db, conn, key, main)


def compiled_statement(db: Database, conn: Connection, text: str, *, row_cap: int | None) -> Statement | str:
    """The statement ``run_query`` runs for ``text`` (current state, default graph, the same
    plan cache key), for EXPLAIN in plan tests and benchmarks; a str says why there is none."""
    main = prepare(text, None).algebra
    default, named = _dataset_scope(db, conn, main.get("datasetClause"), None)
    scoped = TemporalView.at(as_of_tx=None, valid_at=None).with_graphs(default)
    try:
        plan = _plan_of(db, conn, (text, None, scoped, named, row_cap, None), main)
    except Unsupported as why:
        return f"not compiled: the compiler does not handle {why}; rdflib evaluates it"
    prepared = plan.prepared
    if prepared is None:
        return "compiled to no SQL statement: the answer is known without one"
    merged = prepared.defaults
    args: Any = merged
    if prepared.keys is not None:
        args = {n: merged[n] for n in prepared.keys}
    elif prepared.names is not None:
        args = tuple(merged[n] for n in prepared.names)
    return Statement(prepared.sql, args, plan.compiled.mixed)


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
    timeout_ms: int | None = None,
    max_join_rows: int | None = None,
    inference: str | None = None,
    default_graphs: Sequence[str] | None = None,
    named_graphs: Sequence[str] | None = None,
    include_kinds: Sequence[str] | None = None,
) -> QueryResult:
    """Evaluate ``text`` at the read point; results are fully materialised in one snapshot.

    ``timeout_ms`` and ``max_join_rows`` are the query's budgets (None or 0: unlimited), enforced
    as ``quipu.store.budget`` describes: QueryTimeout (408) and ResultTooLarge (422).

    The query is compiled to one SQL statement when the compiler handles it (``compiled=False``
    forces rdflib's evaluator, for comparison); ``QueryResult.plan`` says which path ran.
    ``inference="rdfs"`` makes ``rdf:type`` patterns match instances of subclasses too.
    ``default_graphs`` / ``named_graphs`` (the SPARQL Protocol's ``default-graph-uri`` and
    ``named-graph-uri``), when either is non-empty, replace the query's dataset clause exactly as
    ``FROM`` / ``FROM NAMED`` would (SPARQL 1.1 Protocol §2.1.4: the protocol dataset wins).
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError("missing 'query' parameter", reason="missing_field")
    if inference is not None and inference not in INFERENCE_MODES:
        raise InvalidField(f"unknown inference mode {inference!r} (known: rdfs)", field="inference")
    # A query that differs from an earlier one only in its IRIs reuses that one's parse and plan.
    template = templates.split(text) if compiled and inference is None else None
    if template is not None:
        query = prepare(template.text, base)
    else:
        query = _with_rdfs(text, base) if inference == "rdfs" else prepare(text, base)
    main = query.algebra
    view = TemporalView.at(as_of_tx=as_of_tx, valid_at=valid_at)
    graph_scope.refuse_tx_travel(db, as_of_tx)
    with (
        db.read(long=not is_point_lookup(main)) as conn,
        budgets.enforce(db, conn, timeout_ms=timeout_ms, max_join_rows=max_join_rows) as budget,
        _refused_when_too_complex(),
    ):
        cap = budget.row_cap(max_rows)  # final rows count against the join bound too
        clause = main.get("datasetClause")
        if default_graphs or named_graphs:
            clause = [{"default": iri} for iri in default_graphs or ()]
            clause += [{"named": iri} for iri in named_graphs or ()]
        default, named = _dataset_scope(db, conn, clause, graph, include_kinds)
        scoped = view.with_graphs(default)
        labels = graph_scope.composed(db, conn, default)
        if template is not None:
            answer = _run_template(db, conn, template, (base, scoped, named, cap), main)
            if answer is not None:
                return _labelled(budget.final(answer, max_rows), labels)
            query = prepare(text, base)  # the ordinary path, for this text
            main = query.algebra
        if compiled:
            plan = None
            try:
                plan = _plan_of(db, conn, (text, base, scoped, named, cap, inference), main)
            except Unsupported as why:
                log.debug("SPARQL via rdflib: the compiler does not handle %s", why)
            if plan is not None and not plan.beyond_sql_limits:
                log.debug("SPARQL via one SQL statement")
                try:
                    return _labelled(budget.final(_run_compiled(db, conn, plan, cap), max_rows), labels)
                except Exception as exc:
                    if not statement_limits.recoverable(db, exc):
                        raise
                    # The statement is past one of SQLite's own limits (expression depth, parser
                    # stack, terms of a compound SELECT, tables in a join): rdflib answers instead,
                    # and the parts of the query that fit still run as SQL.
                    log.debug("SPARQL via rdflib: the statement is past a limit of the database: %s", exc)
                    plan.beyond_sql_limits = True
        store = QuipuView(db, conn, scoped, named)
        subplans.install()
        if compiled:  # parts that compile still run as SQL inside rdflib's evaluation
            store.subplans = subplans.SubPlans(_decode_rows)
        ctx = QueryContext(dataset(store), initBindings={})  # rdflib reads it even when empty
        ctx.prologue = query.prologue
        res = evalPart(ctx, main)
        result = _materialise(main.name, res, cap)
        if compiled and store.subplans.used:
            result.plan = "mixed"
        return _labelled(budget.final(result, max_rows), labels)


def _labelled(result: QueryResult, labels: dict[str, Any] | None) -> QueryResult:
    result.labels = labels
    return result


@contextmanager
def _refused_when_too_complex() -> Iterator[None]:
    """A ``RecursionError`` (parser, compiler, rdflib's evaluator) and a statement past the
    database's own limits become 400 ``query_too_complex`` rather than a 500."""
    try:
        yield
    except RecursionError:
        raise limits.too_complex() from None
    except Exception as exc:
        beyond = statement_limits.exceeded(exc)
        if beyond is None:
            raise
        raise QueryError(
            f"the query is too complex for the database: {beyond}", reason=limits.REASON
        ) from exc


@dataclass
class _Plan:
    compiled: Compiled
    prepared: Prepared | None  # the statement compiled to SQL text once
    generation: tuple[int, int] | None  # dictionary generation the plan depends on, if any
    beyond_sql_limits: bool = False  # the database refused the statement: rdflib answers


_PLAN_CACHE_SIZE = 256
_plans: WeakKeyDictionary[Database, LruCache[Any, _Plan]] = WeakKeyDictionary()
# Checked query templates by template and read point; None for a refused template.
_templates: WeakKeyDictionary[Database, LruCache[Any, templates.Checked | None]] = WeakKeyDictionary()
_caches_lock = threading.Lock()


def _plan_cache(db: Database) -> LruCache[Any, _Plan]:
    with _caches_lock:
        return _plans.setdefault(db, LruCache(_PLAN_CACHE_SIZE))


def _template_cache(db: Database) -> LruCache[Any, templates.Checked | None]:
    with _caches_lock:
        return _templates.setdefault(db, LruCache(_PLAN_CACHE_SIZE))


def _cached_plan(db: Database, conn: Connection, key: Any) -> _Plan | None:
    """A compiled plan for this query text and read point, unless the store has since added a
    term or graph the plan looked for (building the SQL costs more than a point lookup)."""
    _, found = _plan_cache(db).find(key)
    if found is None:
        return None
    if found.generation is not None and found.generation != dictionary_generation(conn):
        return None
    return found


def _compile(db: Database, conn: Connection, key: Any, main: CompValue) -> _Plan:
    scoped, named, cap = key[2], key[3], key[4]
    try:
        compiled = compile_query(db, conn, main, scoped, named=named, max_rows=cap)
        prepared = None if compiled.statement is None else db.dialect.compile_statement(compiled.statement)
    except RecursionError:  # SQLAlchemy recurses per level of the statement
        raise Unsupported("a statement nested too deeply to build") from None
    plan = _Plan(compiled, prepared, dictionary_generation(conn) if compiled.grows else None)
    if not compiled.mixed:  # per-row rdflib callbacks are registered per compilation
        _plan_cache(db).put(key, plan)
    return plan


def _run_template(
    db: Database, conn: Connection, template: templates.Template, scope: tuple[Any, ...], main: CompValue
) -> QueryResult | None:
    """The answer through the template's checked plan; None when the ordinary path must answer
    (the template was refused, or the query names an IRI the store has never seen)."""
    ids = db.terms.lookup(conn, template.iris)
    if len(ids) < len(template.iris):
        return None
    cache = _template_cache(db)
    key = (template.parts, template.slots, *scope)
    known, checked = cache.find(key)
    if not known:
        checked = _check_template(db, conn, template, scope, main)
        cache.put(key, checked)
    if checked is None:
        return None
    slot_ids = {k: ids[iri] for k, iri in enumerate(template.iris)}
    try:
        return _run_compiled(db, conn, checked.plan, scope[3], checked.parameters(slot_ids))
    except Exception as exc:
        if not statement_limits.recoverable(db, exc):
            raise
        cache.put(key, None)  # past a limit of the database: the ordinary path handles it
        return None


def _check_template(
    db: Database, conn: Connection, template: templates.Template, scope: tuple[Any, ...], main: CompValue
) -> templates.Checked | None:
    base, scoped, named, cap = scope

    def compile_with(text: str, pinned: Mapping[str, int]) -> tuple[Any, Any, Mapping[str, Any], Any]:
        algebra = main if text == template.text else _parse(text, base).algebra
        compiled = compile_query(db, conn, algebra, scoped, named=named, max_rows=cap, pinned=pinned)
        if compiled.statement is None or compiled.mixed or compiled.grows:
            raise Unsupported("a plan that is not a pure function of the template's ids")
        prepared = db.dialect.compile_statement(compiled.statement)
        rest = (compiled.form, compiled.variables, compiled.const_iris, compiled.template, prepared.names)
        return _Plan(compiled, prepared, None), prepared.sql, prepared.defaults, rest

    return templates.check(template, compile_with)


def _run_compiled(
    db: Database,
    conn: Connection,
    compiled_plan: _Plan,
    max_rows: int | None,
    parameters: dict[str, Any] | None = None,
) -> QueryResult:
    plan = compiled_plan.compiled
    how = "mixed" if plan.mixed else "sql"
    prepared = compiled_plan.prepared
    rows: list[Any] = [] if prepared is None else prepared.run(conn, parameters).fetchall()
    if plan.form == "ASK":
        return QueryResult("ASK", boolean=bool(rows and rows[0][0]), plan=how)
    if plan.form == "SELECT":
        truncated = max_rows is not None and len(rows) > max_rows
        if truncated:
            rows = rows[:max_rows]
    table = _decode_rows(db, conn, plan, rows)
    if plan.form == "CONSTRUCT":
        triples = _instantiate(plan, table)
        truncated = max_rows is not None and len(triples) > max_rows
        return QueryResult(
            "CONSTRUCT", triples=triples[:max_rows] if truncated else triples, truncated=truncated, plan=how
        )
    return QueryResult("SELECT", variables=plan.variables, table=table, truncated=truncated, plan=how)


_TERM_CELLS = 500_000  # cells kept per store: term ids never change meaning
_cells: WeakKeyDictionary[Database, dict[int, Cell]] = WeakKeyDictionary()


def _term_cells(db: Database) -> dict[int, Cell]:
    found = _cells.get(db)
    if found is None:
        with _caches_lock:
            found = _cells.setdefault(db, {})
    return found


def _decode_rows(
    db: Database, conn: Connection, plan: Compiled, rows: list[Any]
) -> list[tuple[Cell | None, ...]]:
    """Cells from (id, v) column pairs: an id is an IRI or blank node, else v is a literal.

    Column by column: each distinct value is decoded once and the column is then mapped
    through a dict, which for 40k rows costs a tenth of decoding cell by cell (measured on the
    SPARQL benchmark's Q2). Where both are set, ``v`` encodes the same term as the id.
    """
    width = len(plan.variables)
    if not rows:
        return []
    if width == 0:
        return [() for _ in rows]
    columns = list(zip(*rows, strict=False))
    ids: set[int] = set()
    distinct: list[set[Any]] = []
    for k in range(width):
        ids.update(columns[2 * k])
        raws = set(columns[2 * k + 1])
        raws.discard(None)
        distinct.append(raws)
        for raw in raws:
            if (ref := values.ref_id(bytes(raw))) is not None:
                ids.add(ref)
    ids.discard(None)
    known = _term_cells(db)
    missing = [i for i in ids if i > 0 and i not in known]
    if missing:
        if len(known) + len(missing) > _TERM_CELLS:
            known = _cells[db] = {}  # a fresh dict: another query may be reading the old one
        for tid, iri in db.terms.iris(conn, missing).items():
            known[tid] = iri_cell(iri)
    terms: dict[int, Cell] = known
    if plan.const_iris:
        terms = {**known, **{tid: iri_cell(iri) for tid, iri in plan.const_iris.items()}}
    literals: dict[Any, Cell] = {}
    for raws in distinct:
        for raw in raws:
            if raw not in literals:
                encoded = bytes(raw)
                ref = values.ref_id(encoded)
                literals[raw] = terms[ref] if ref is not None else literal_cell(encoded)
    term_of, literal_of = terms.get, literals.get
    cells: list[Any] = []
    for k in range(width):
        id_col, v_col = columns[2 * k], columns[2 * k + 1]
        if not distinct[k]:  # no value column: ids only (None stays None)
            cells.append(map(term_of, id_col))
        elif None not in v_col:  # every row has its value, refs encoded too
            cells.append(map(literal_of, v_col))
        else:
            cells.append(
                [terms[t] if t is not None else literal_of(v) for t, v in zip(id_col, v_col, strict=True)]
            )
    return list(zip(*cells, strict=True))


def _instantiate(plan: Compiled, table: list[tuple[Cell | None, ...]]) -> list[tuple[Cell, Cell, Cell]]:
    """CONSTRUCT: the template per solution; blank nodes are fresh per solution, and a triple
    with an unbound or ill-placed term is left out (SPARQL 16.2)."""
    position = {name: k for k, name in enumerate(plan.variables)}
    out: set[tuple[Cell, Cell, Cell]] = set()
    for n, row in enumerate(table):
        made: list[Cell | None] = []
        for triple in plan.template:
            made.clear()
            for term in triple:
                if isinstance(term, Variable):
                    made.append(row[position[str(term)]])
                elif isinstance(term, BNode):
                    made.append(Cell(BNODE, f"c{n}_{term}"))
                else:
                    made.append(from_node(term))
            s, p, o = made
            if s is None or p is None or o is None or s.kind == LITERAL or p.kind != URI:
                continue
            out.add((s, p, o))
    return sorted(out)


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
