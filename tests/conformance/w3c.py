"""The W3C SPARQL 1.1 query-evaluation tests: manifests, expected results, two engines, a comparison.

The suite is read where it lies, beside the checkout in ``../shared/conformance/sparql`` (or the
folder named by ``QUIPU_CONFORMANCE_DIR``); nothing of it is copied into the repository.

Datasets, the same for both engines:

* each ``qt:data`` file goes into the default graph (quipu: ROOT);
* each ``qt:graphData`` file goes into a named graph called after its IRI (or its ``rdfs:label``);
* each ``FROM``/``FROM NAMED`` IRI of the query that names a suite file is loaded, by the harness,
  into a named graph with exactly that IRI. Quipu never dereferences ``FROM`` (DM §13.2): it
  reads registered graphs. rdflib runs with ``SPARQL_LOAD_GRAPHS`` off, so it reads the same
  pre-loaded graphs and never fetches anything either.

Comparison: SELECT as a multiset of solutions (blank nodes up to a consistent renaming), ASK as a
boolean, CONSTRUCT/DESCRIBE by graph isomorphism. Before comparing, a plain literal equals its
``xsd:string`` twin, a language tag compares case-insensitively (RDF 1.1 allows lower-casing it),
and numeric literals of one datatype compare by value (``"01"^^xsd:integer`` = ``"1"^^xsd:integer``).
"""

from __future__ import annotations

import io
import math
import os
import tomllib
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
import rdflib
import rdflib.plugins.sparql as rdflib_sparql
from rdflib import RDF, RDFS, BNode, Dataset, Graph, Literal, Namespace, URIRef, Variable
from rdflib.collection import Collection
from rdflib.compare import graph_diff, isomorphic
from rdflib.plugins.sparql.processor import prepareQuery
from rdflib.query import Result
from rdflib.term import Identifier, Node

import quipu
from tests.backends import scratch_location

T = TypeVar("T")
MF: Final = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT: Final = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")
RS: Final = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/result-set#")
XSD: Final = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING: Final = XSD + "string"

QUERY_MANIFEST: Final = "manifest-sparql11-query.ttl"
QUERY_TEST_COUNT: Final = 225
ENV_DIR: Final = "QUIPU_CONFORMANCE_DIR"

_INTEGER_TYPES: Final = frozenset(
    XSD + name
    for name in (
        "integer",
        "nonPositiveInteger",
        "negativeInteger",
        "long",
        "int",
        "short",
        "byte",
        "nonNegativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
        "positiveInteger",
    )
)
_DECIMAL_TYPES: Final = _INTEGER_TYPES | {XSD + "decimal"}
_FLOAT_TYPES: Final = frozenset({XSD + "double", XSD + "float"})
GRAPH_FORMS: Final = frozenset({"CONSTRUCT", "DESCRIBE"})

# Formats by file suffix: (quipu's knot format, rdflib's parser name).
_RDF_FORMATS: Final = {
    ".ttl": ("turtle", "turtle"),
    ".nt": ("nt", "nt"),
    ".rdf": ("rdfxml", "xml"),
    ".nq": ("nq", "nquads"),
    ".trig": ("trig", "trig"),
}
_RESULT_FORMATS: Final = {".srx": "xml", ".srj": "json", ".csv": "csv", ".tsv": "tsv"}


# -- where the suite is ----------------------------------------------------------------------------


def suite_dir() -> Path:
    """``$QUIPU_CONFORMANCE_DIR``, else ``../shared/conformance/sparql`` beside the checkout."""
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override).expanduser().resolve()
    return Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "sparql"


def find_manifest(root: Path) -> Path | None:
    """The query manifest, directly in ``root`` or in its ``sparql11`` folder (w3c/rdf-tests layout)."""
    for candidate in (root / QUERY_MANIFEST, root / "sparql11" / QUERY_MANIFEST):
        if candidate.is_file():
            return candidate
    return None


def missing_message(root: Path) -> str:
    return (
        f"W3C SPARQL 1.1 suite not found: no {QUERY_MANIFEST} in {root} (or its sparql11/ folder). "
        "The suite is read from ../shared/conformance/sparql beside the checkout: put the "
        "sparql/sparql11 folder of https://github.com/w3c/rdf-tests there, or set "
        f"{ENV_DIR} to a folder holding it."
    )


# -- manifests -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphFile:
    """A data file loaded into a named graph."""

    name: str  # the graph IRI
    location: str  # the file's IRI


@dataclass(frozen=True)
class QueryTest:
    """One ``mf:QueryEvaluationTest``; every location is a ``file:`` IRI."""

    id: str  # e.g. "aggregates/agg01"
    name: str
    query: str
    data: tuple[str, ...]
    graph_data: tuple[GraphFile, ...]
    result: str
    lax: bool

    def query_text(self) -> str:
        return local_path(self.query).read_text(encoding="utf-8")


def local_path(iri: str) -> Path:
    parsed = urlparse(iri)
    if parsed.scheme != "file":
        raise ValueError(f"not a file IRI: {iri}")
    return Path(url2pathname(parsed.path))


def _items(graph: Graph, head: Node | None) -> list[Node]:
    return [] if head is None else list(Collection(graph, head))


def _local_name(iri: str) -> str:
    return iri.rsplit("#", 1)[1] if "#" in iri else iri.rstrip("/").rsplit("/", 1)[-1]


def _entry(graph: Graph, entry: Node, manifest: Path, root: Path) -> QueryTest:
    action = graph.value(entry, MF.action)
    result = graph.value(entry, MF.result)
    query = graph.value(action, QT.query) if action is not None else None
    if not isinstance(query, URIRef) or not isinstance(result, URIRef):
        raise ValueError(f"{entry}: a query test needs qt:query and mf:result IRIs")
    graphs: list[GraphFile] = []
    for item in graph.objects(action, QT.graphData):
        if isinstance(item, URIRef):
            graphs.append(GraphFile(str(item), str(item)))
            continue
        location = graph.value(item, QT.graph)
        label = graph.value(item, RDFS.label)
        if not isinstance(location, URIRef):
            raise ValueError(f"{entry}: a qt:graphData node needs qt:graph")
        graphs.append(GraphFile(str(label if label is not None else location), str(location)))
    folder = manifest.parent.relative_to(root).as_posix()
    local = _local_name(str(entry))
    return QueryTest(
        id=local if folder == "." else f"{folder}/{local}",
        name=str(graph.value(entry, MF.name) or local),
        query=str(query),
        data=tuple(sorted(str(d) for d in graph.objects(action, QT.data))),
        graph_data=tuple(sorted(graphs, key=lambda g: (g.name, g.location))),
        result=str(result),
        lax=graph.value(entry, MF.resultCardinality) == MF.LaxCardinality,
    )


def _read_entries(
    path: Path, root: Path, seen: set[Path], kind: URIRef, make: Callable[..., T]
) -> Iterator[T]:
    """Entries of type ``kind`` in a manifest and every manifest it includes, in order."""
    if path in seen:
        return
    seen.add(path)
    graph = Graph()
    graph.parse(path, format="turtle", publicID=path.as_uri())
    for manifest in graph.subjects(RDF.type, MF.Manifest):
        for included in _items(graph, graph.value(manifest, MF.include)):
            yield from _read_entries(local_path(str(included)), root, seen, kind, make)
        for entry in _items(graph, graph.value(manifest, MF.entries)):
            if (entry, RDF.type, kind) in graph:
                yield make(graph, entry, path, root)


def _load(manifest: Path, kind: URIRef, make: Callable[..., T], ids: Callable[[T], str]) -> list[T]:
    tests = list(_read_entries(manifest.resolve(), manifest.resolve().parent, set(), kind, make))
    counts = Counter(ids(t) for t in tests)
    duplicates = sorted(i for i, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate test ids: {duplicates}")
    return tests


def load_tests(manifest: Path) -> list[QueryTest]:
    """Every query-evaluation test reachable from ``manifest`` through ``mf:include``, in order."""
    return _load(manifest, MF.QueryEvaluationTest, _entry, lambda t: t.id)


# -- results ---------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """A query's answer, from an engine or from the expected-result file."""

    form: str  # SELECT, ASK, CONSTRUCT or DESCRIBE
    variables: tuple[str, ...] = ()
    rows: list[dict[str, Node]] = field(default_factory=list)
    boolean: bool | None = None
    graph: Graph | None = None
    plan: str = ""  # for quipu: "sql" when the compiler answered, "rdflib" for the fallback


@contextmanager
def rdflib_flags(**flags: bool) -> Iterator[None]:
    """Set rdflib module flags for the duration of a block, then put the old values back.

    Names: ``NORMALIZE_LITERALS`` (on ``rdflib``), ``SPARQL_LOAD_GRAPHS`` and
    ``SPARQL_DEFAULT_GRAPH_UNION`` (on ``rdflib.plugins.sparql``).
    """
    saved: list[tuple[Any, str, bool]] = []
    try:
        for name, value in flags.items():
            module: Any = rdflib if name == "NORMALIZE_LITERALS" else rdflib_sparql
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)


def from_result(result: Result) -> Outcome:
    """An rdflib ``Result`` (parsed or evaluated), fully materialised."""
    if result.type == "ASK":
        return Outcome("ASK", boolean=bool(result.askAnswer))
    if result.type == "SELECT":
        rows: list[dict[str, Node]] = [
            {str(k): v for k, v in row.items() if v is not None} for row in result.bindings
        ]
        return Outcome("SELECT", tuple(str(v) for v in result.vars or ()), rows)
    graph = Graph()
    if result.graph is not None:
        for triple in result.graph:
            graph.add(triple)
    return Outcome(result.type, graph=graph)


def read_result_set(graph: Graph) -> Outcome | None:
    """An RDF-encoded result set (``rs:ResultSet``); None when the graph is not one."""
    result_set = graph.value(predicate=RDF.type, object=RS.ResultSet)
    if result_set is None:
        return None
    answer = graph.value(result_set, RS.boolean)
    if answer is not None:
        assert isinstance(answer, Literal), answer
        return Outcome("ASK", boolean=answer.value is True or str(answer) in ("true", "1"))
    variables = tuple(sorted(str(v) for v in graph.objects(result_set, RS.resultVariable)))
    rows: list[dict[str, Node]] = []
    for solution in graph.objects(result_set, RS.solution):
        row: dict[str, Node] = {}
        for binding in graph.objects(solution, RS.binding):
            var, value = graph.value(binding, RS.variable), graph.value(binding, RS.value)
            if var is not None and value is not None:
                row[str(var)] = value
        rows.append(row)
    return Outcome("SELECT", variables, rows)


def rdf_formats(location: str) -> tuple[str, str]:
    """(quipu format, rdflib format) of an RDF file, from its suffix."""
    suffix = local_path(location).suffix.lower()
    if suffix not in _RDF_FORMATS:
        raise ValueError(f"no RDF format known for {location}")
    return _RDF_FORMATS[suffix]


@cache
def expected_outcome(test: QueryTest) -> Outcome:
    """The expected answer, parsed with rdflib keeping every lexical form as written."""
    path = local_path(test.result)
    suffix = path.suffix.lower()
    with rdflib_flags(NORMALIZE_LITERALS=False):
        if suffix in _RESULT_FORMATS:
            with path.open("rb") as source:
                return from_result(Result.parse(source, format=_RESULT_FORMATS[suffix]))
        graph = Graph()
        graph.parse(data=path.read_bytes(), format=rdf_formats(test.result)[1], publicID=test.result)
        return read_result_set(graph) or Outcome("CONSTRUCT", graph=graph)


# -- engines ---------------------------------------------------------------------------------------


class Engine(Protocol):
    name: str

    def run(self, test: QueryTest) -> Outcome: ...


@cache
def graph_files(test: QueryTest) -> tuple[GraphFile, ...]:
    """``qt:graphData`` plus the suite files the query's ``FROM``/``FROM NAMED`` clauses name."""
    files = list(test.graph_data)
    names = {g.name for g in files}
    try:
        algebra = prepareQuery(test.query_text(), base=test.query).algebra
    except Exception:  # the engines report the parse error themselves
        return tuple(files)
    for clause in algebra.get("datasetClause") or ():
        # CompValue.get() answers a missing key with its name, so test membership.
        iri = str(clause["default"] if "default" in clause else clause["named"])
        if iri not in names and iri.startswith("file:") and local_path(iri).is_file():
            files.append(GraphFile(iri, iri))
            names.add(iri)
    return tuple(files)


class QuipuEngine:
    """A fresh quipu store per test (in memory; a scratch database on PostgreSQL); the query runs
    through ``kb.query_result``.

    ``compiled=False`` forces rdflib's evaluator over the store, for the fallback run.
    """

    def __init__(self, compiled: bool = True) -> None:
        self.compiled = compiled
        self.name = "quipu" if compiled else "quipu, compiler off"

    def run(self, test: QueryTest) -> Outcome:
        with scratch_location() as location:
            return self._run(location, test)

    def _run(self, location: str, test: QueryTest) -> Outcome:
        kb = quipu.open(location, sparql_compiler=self.compiled)
        try:
            for location in test.data:
                data = local_path(location).read_bytes()
                kb.knot(data, rdf_formats(location)[0], base_iri=location)
            for graph in graph_files(test):
                kb.create_graph(graph.name)
                data = local_path(graph.location).read_bytes()
                kb.knot(data, rdf_formats(graph.location)[0], graph=graph.name, base_iri=graph.location)
            res = kb.query_result(test.query_text(), base=test.query)
            return Outcome(res.form, tuple(res.variables), list(res.rows), res.boolean, res.graph, res.plan)
        finally:
            kb.close()


class RdflibEngine:
    """rdflib's in-memory ``Dataset`` with the flags the suite needs, set only while it runs."""

    name = "rdflib in-memory"

    def run(self, test: QueryTest) -> Outcome:
        with rdflib_flags(
            NORMALIZE_LITERALS=False, SPARQL_LOAD_GRAPHS=False, SPARQL_DEFAULT_GRAPH_UNION=False
        ):
            ds = Dataset(default_union=False)
            for location in test.data:
                data = local_path(location).read_bytes()
                ds.default_graph.parse(data=data, format=rdf_formats(location)[1], publicID=location)
            for graph in graph_files(test):
                data = local_path(graph.location).read_bytes()
                ds.graph(URIRef(graph.name)).parse(
                    data=data, format=rdf_formats(graph.location)[1], publicID=graph.location
                )
            return from_result(ds.query(test.query_text(), base=test.query))


# -- comparison ------------------------------------------------------------------------------------

_BLANK: Final = ("bnode",)


def _number(term: Literal, datatype: str) -> Hashable | None:
    """A numeric literal's value, or None when its lexical form is not valid for the datatype."""
    text = str(term).strip()
    try:
        if datatype in _DECIMAL_TYPES:
            value = Decimal(text)
            if not value.is_finite() or (datatype in _INTEGER_TYPES and value != value.to_integral_value()):
                return None
            return Decimal(0) if value.is_zero() else value.normalize()
        number = float(text.replace("INF", "inf"))
    except (InvalidOperation, ValueError):
        return None
    return "NaN" if math.isnan(number) else number


def term_key(term: Node) -> Hashable:
    """A term's identity for comparison; every blank node gets the same key."""
    if isinstance(term, BNode):
        return _BLANK
    if isinstance(term, Literal):
        if term.language:
            return ("lang", str(term), term.language.lower())
        datatype = str(term.datatype) if term.datatype is not None else XSD_STRING
        if datatype in _DECIMAL_TYPES or datatype in _FLOAT_TYPES:
            value = _number(term, datatype)
            if value is not None:
                return ("number", datatype, value)
        return ("literal", str(term), datatype)
    if isinstance(term, URIRef):
        return ("iri", str(term))
    return ("not an RDF term", repr(term))  # an engine fault, e.g. a bare Python value


def _n3(term: Node) -> str:
    return term.n3() if isinstance(term, URIRef | BNode | Literal) else f"<not an RDF term: {term!r}>"


def _row_key(row: Mapping[str, Node]) -> tuple[tuple[str, Hashable], ...]:
    return tuple(sorted((var, term_key(value)) for var, value in row.items()))


def _row_text(row: Mapping[str, Node]) -> str:
    return "{ " + " ".join(f"?{var}={_n3(row[var])}" for var in sorted(row)) + " }"


def _blank_mapping(expected: Sequence[Mapping[str, Node]], actual: Sequence[Mapping[str, Node]]) -> bool:
    """Whether a one-to-one renaming of blank nodes pairs every expected row with an actual one.

    Only called once the rows agree with all blank nodes collapsed. Backtracking pairs rows with
    the same collapsed key; the search gives up (and agrees) after a generous number of steps.
    """
    by_key: dict[Hashable, list[int]] = {}
    for i, row in enumerate(actual):
        by_key.setdefault(_row_key(row), []).append(i)
    order = sorted(range(len(expected)), key=lambda i: len(by_key[_row_key(expected[i])]))
    used = [False] * len(actual)
    forward: dict[Node, Node] = {}
    backward: dict[Node, Node] = {}
    budget = [200_000]

    def extend(exp: Mapping[str, Node], act: Mapping[str, Node]) -> list[Node] | None:
        added: list[Node] = []
        for var, e in exp.items():
            a = act[var]
            if not isinstance(e, BNode):
                continue
            if forward.get(e, a) != a or backward.get(a, e) != e:
                for b in added:
                    del backward[forward.pop(b)]
                return None
            if e not in forward:
                forward[e], backward[a] = a, e
                added.append(e)
        return added

    def search(position: int) -> bool:
        if position == len(order):
            return True
        budget[0] -= 1
        if budget[0] < 0:
            return True
        exp = expected[order[position]]
        for j in by_key[_row_key(exp)]:
            if used[j]:
                continue
            added = extend(exp, actual[j])
            if added is None:
                continue
            used[j] = True
            if search(position + 1):
                return True
            used[j] = False
            for b in added:
                del backward[forward.pop(b)]
        return False

    return search(0)


def _compare_rows(expected: Outcome, actual: Outcome, lax: bool) -> str | None:
    exp_counts = Counter(_row_key(r) for r in expected.rows)
    act_counts = Counter(_row_key(r) for r in actual.rows)
    if lax:
        exp_counts = Counter(set(exp_counts))
        act_counts = Counter(set(act_counts))
    if exp_counts == act_counts:
        has_blank = any(isinstance(v, BNode) for r in expected.rows for v in r.values())
        if lax or not has_blank or _blank_mapping(expected.rows, actual.rows):
            return None
        return "the solutions agree only if blank nodes are renamed inconsistently"
    samples: dict[Hashable, Mapping[str, Node]] = {}
    for row in [*expected.rows, *actual.rows]:
        samples.setdefault(_row_key(row), row)
    missing, extra = exp_counts - act_counts, act_counts - exp_counts
    lines = [f"{len(expected.rows)} expected solution(s), {len(actual.rows)} actual"]
    for title, counts in (("missing", missing), ("unexpected", extra)):
        shown = sorted(counts.items(), key=lambda kv: _row_text(samples[kv[0]]))
        for key, n in shown[:15]:
            lines.append(f"  {title}: {_row_text(samples[key])}" + (f" x{n}" if n > 1 else ""))
        if len(shown) > 15:
            lines.append(f"  ... and {len(shown) - 15} more {title}")
    return "\n".join(lines)


def _canonical_term(term: Node) -> Node:
    key = term_key(term)
    if not isinstance(term, Literal) or not isinstance(key, tuple):
        return term
    if key[0] == "lang":
        return Literal(str(term), lang=str(key[2]))
    if key[0] == "number":
        return Literal(str(key[2]), datatype=URIRef(str(key[1])), normalize=False)
    return Literal(str(term), datatype=URIRef(str(key[2])), normalize=False)


def _canonical_graph(graph: Graph) -> Graph:
    out = Graph()
    for s, p, o in graph:
        out.add((s, p, _canonical_term(o)))
    return out


def _compare_graphs(expected: Graph, actual: Graph) -> str | None:
    exp, act = _canonical_graph(expected), _canonical_graph(actual)
    if isomorphic(exp, act):
        return None
    _, missing, extra = graph_diff(exp, act)
    lines = [f"{len(exp)} expected triple(s), {len(act)} actual; not isomorphic"]
    for title, part in (("missing", missing), ("unexpected", extra)):
        rendered = sorted(" ".join(_n3(t) for t in triple) for triple in part)
        lines += [f"  {title}: {text}" for text in rendered[:15]]
        if len(rendered) > 15:
            lines.append(f"  ... and {len(rendered) - 15} more {title}")
    return "\n".join(lines)


def _as_csv(outcome: Outcome) -> Outcome:
    """An actual SELECT answer as a CSV result reads back (CSV keeps only lexical forms)."""
    result = Result("SELECT")
    result.vars = [Variable(v) for v in outcome.variables]
    result.bindings = [
        {Variable(k): v for k, v in row.items() if isinstance(v, Identifier)} for row in outcome.rows
    ]
    buffer = io.BytesIO()
    result.serialize(buffer, format="csv")
    buffer.seek(0)
    return from_result(Result.parse(buffer, format="csv"))


def compare(test: QueryTest, expected: Outcome, actual: Outcome) -> str | None:
    """None when ``actual`` answers ``test``; otherwise what differs."""
    if expected.form in GRAPH_FORMS and actual.form in GRAPH_FORMS:
        assert expected.graph is not None and actual.graph is not None
        return _compare_graphs(expected.graph, actual.graph)
    if expected.form != actual.form:
        return f"expected a {expected.form} result, got {actual.form}"
    if expected.form == "ASK":
        if expected.boolean == actual.boolean:
            return None
        return f"expected ASK {expected.boolean}, got {actual.boolean}"
    if test.result.lower().endswith(".csv"):
        actual = _as_csv(actual)
    return _compare_rows(expected, actual, test.lax)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str = ""
    plan: str = ""  # which quipu path answered (empty for other engines or on an error)


def check(engine: Engine, test: QueryTest) -> Verdict:
    """Run ``test`` on ``engine`` and judge the answer. A harness fault (bad result file) raises."""
    expected = expected_outcome(test)
    try:
        actual = engine.run(test)
    except Exception as exc:
        return Verdict(False, f"{engine.name} raised {type(exc).__name__}: {exc}")
    difference = compare(test, expected, actual)
    return Verdict(difference is None, difference or "", actual.plan)


# -- SPARQL 1.1 Update evaluation tests ------------------------------------------------------------
#
# An update test names a graph store before (ut:data for the default graph, ut:graphData with an
# rdfs:label for named graphs), a request, and the graph store after. Both engines load the
# "before" store, run the request and are compared graph by graph (isomorphism, with the literal
# canonicalisation above); a named graph absent from the expected store must be empty, since
# quipu keeps a dropped graph's registration (its statements are retracted, never deleted).

UT: Final = Namespace("http://www.w3.org/2009/sparql/tests/test-update#")
UPDATE_MANIFEST: Final = "manifest-sparql11-update.ttl"
UPDATE_TEST_COUNT: Final = 94

# A graph store's contents: None is the default graph, a string a named graph's IRI.
GraphState = dict[str | None, Graph]


def find_update_manifest(root: Path) -> Path | None:
    """The update manifest, directly in ``root`` or in its ``sparql11`` folder."""
    for candidate in (root / UPDATE_MANIFEST, root / "sparql11" / UPDATE_MANIFEST):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class GraphStore:
    """Files making up a graph store: default-graph data and named graphs."""

    data: tuple[str, ...] = ()
    graph_data: tuple[GraphFile, ...] = ()


@dataclass(frozen=True)
class UpdateTest:
    """One ``mf:UpdateEvaluationTest``; every location is a ``file:`` IRI."""

    id: str
    name: str
    request: str
    before: GraphStore
    after: GraphStore

    def request_text(self) -> str:
        return local_path(self.request).read_text(encoding="utf-8")


def _graph_store(graph: Graph, node: Node | None, entry: Node) -> GraphStore:
    if node is None:
        return GraphStore()
    named: list[GraphFile] = []
    for item in graph.objects(node, UT.graphData):
        if isinstance(item, URIRef):
            named.append(GraphFile(str(item), str(item)))
            continue
        location = graph.value(item, UT.graph)
        label = graph.value(item, RDFS.label)
        if not isinstance(location, URIRef):
            raise ValueError(f"{entry}: a ut:graphData node needs ut:graph")
        named.append(GraphFile(str(label if label is not None else location), str(location)))
    return GraphStore(
        tuple(sorted(str(d) for d in graph.objects(node, UT.data))),
        tuple(sorted(named, key=lambda g: (g.name, g.location))),
    )


def _update_entry(graph: Graph, entry: Node, manifest: Path, root: Path) -> UpdateTest:
    action = graph.value(entry, MF.action)
    request = graph.value(action, UT.request) if action is not None else None
    if not isinstance(request, URIRef):
        raise ValueError(f"{entry}: an update test needs a ut:request IRI")
    folder = manifest.parent.relative_to(root).as_posix()
    local = _local_name(str(entry))
    return UpdateTest(
        id=local if folder == "." else f"{folder}/{local}",
        name=str(graph.value(entry, MF.name) or local),
        request=str(request),
        before=_graph_store(graph, action, entry),
        after=_graph_store(graph, graph.value(entry, MF.result), entry),
    )


def load_update_tests(manifest: Path) -> list[UpdateTest]:
    """Every update-evaluation test reachable from ``manifest`` through ``mf:include``, in order."""
    return _load(manifest, MF.UpdateEvaluationTest, _update_entry, lambda t: t.id)


def _parse_into(graph: Graph, location: str) -> None:
    graph.parse(data=local_path(location).read_bytes(), format=rdf_formats(location)[1], publicID=location)


@cache
def expected_state(test: UpdateTest) -> GraphState:
    """The graph store after the request, parsed keeping every lexical form as written."""
    state: GraphState = {None: Graph()}
    with rdflib_flags(NORMALIZE_LITERALS=False):
        for location in test.after.data:
            _parse_into(state[None], location)
        for named in test.after.graph_data:
            _parse_into(state.setdefault(named.name, Graph()), named.location)
    return state


class UpdateEngine(Protocol):
    name: str

    def run(self, test: UpdateTest) -> GraphState: ...


class QuipuUpdateEngine:
    """A fresh in-memory quipu store per test: knot the "before" store, then ``kb.update``.

    The result is read back with ``kb.export`` for ROOT and every registered named graph.
    """

    name = "quipu"

    def run(self, test: UpdateTest) -> GraphState:
        with scratch_location() as location:
            return self._run(location, test)

    def _run(self, location: str, test: UpdateTest) -> GraphState:
        kb = quipu.open(location)
        try:
            for location in test.before.data:
                kb.knot(local_path(location).read_bytes(), rdf_formats(location)[0], base_iri=location)
            for named in test.before.graph_data:
                kb.create_graph(named.name)
                data = local_path(named.location).read_bytes()
                kb.knot(data, rdf_formats(named.location)[0], graph=named.name, base_iri=named.location)
            kb.update(test.request_text())
            # The registry, not a GRAPH ?g query: the read-back should not depend on the query engine.
            from quipu.store.reads import named_graph_ids  # (helpers live at the end of this module)

            with kb.db.read() as conn:
                ids = named_graph_ids(conn, kb.db)
                names: list[str | None] = [None, *sorted(kb.db.terms.iris(conn, ids).values())]
            state: GraphState = {}
            with rdflib_flags(NORMALIZE_LITERALS=False):
                for name in names:
                    graph = Graph()
                    graph.parse(data=kb.export(graph=name), format="nt")
                    state[name] = graph
            return state
        finally:
            kb.close()


class RdflibUpdateEngine:
    """rdflib's in-memory ``Dataset`` running ``ds.update`` (never loading anything remote)."""

    name = "rdflib in-memory"

    def run(self, test: UpdateTest) -> GraphState:
        with rdflib_flags(
            NORMALIZE_LITERALS=False, SPARQL_LOAD_GRAPHS=False, SPARQL_DEFAULT_GRAPH_UNION=False
        ):
            ds = Dataset(default_union=False)
            for location in test.before.data:
                _parse_into(ds.default_graph, location)
            for named in test.before.graph_data:
                _parse_into(ds.graph(URIRef(named.name)), named.location)
            ds.update(test.request_text())
            state: GraphState = {}
            for graph in ds.graphs():
                copy = Graph()
                for triple in graph:
                    copy.add(triple)
                key = None if graph.identifier == ds.default_graph.identifier else str(graph.identifier)
                state[key] = copy
            return state


def compare_states(expected: GraphState, actual: GraphState) -> str | None:
    """None when every graph matches; a graph missing on one side counts as empty."""
    problems: list[str] = []
    names = sorted(set(expected) | set(actual), key=lambda n: (n is not None, n or ""))
    for name in names:
        difference = _compare_graphs(expected.get(name, Graph()), actual.get(name, Graph()))
        if difference is not None:
            problems.append(f"{'default graph' if name is None else '<' + name + '>'}: {difference}")
    return "\n".join(problems) or None


def check_update(engine: UpdateEngine, test: UpdateTest) -> Verdict:
    """Run ``test`` on ``engine`` and judge the resulting graph store."""
    expected = expected_state(test)
    try:
        actual = engine.run(test)
    except Exception as exc:
        return Verdict(False, f"{engine.name} raised {type(exc).__name__}: {exc}")
    difference = compare_states(expected, actual)
    return Verdict(difference is None, difference or "")


def require_suite(manifest: Path | None, message: str) -> None:
    """Skip when the suite is missing, or fail under ``CI=true`` (CI must run it)."""
    if manifest is not None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} Under CI=true a missing suite is a failure.")
    pytest.skip(message)


def known_failures(path: Path) -> dict[str, str]:
    """The ``[failures]`` table of a known-failures file: test id -> reason."""
    return dict(tomllib.loads(path.read_text(encoding="utf-8"))["failures"])


def check_known_failures(known: Mapping[str, str], suite_ids: Iterable[str], file_name: str) -> None:
    """Every known failure names a test of the suite and gives its reason."""
    unknown = sorted(set(known) - set(suite_ids))
    assert not unknown, f"{file_name} lists ids that are not suite tests: {unknown}"
    blank = sorted(k for k, reason in known.items() if not reason.strip())
    assert not blank, f"known failures need a reason: {blank}"
