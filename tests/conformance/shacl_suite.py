"""The W3C SHACL test suite (data-shapes ``tests/``): manifests, expected reports, two runs.

Read where it lies, in ``../shared/conformance/shacl/tests`` beside the checkout (or the folder
named by ``QUIPU_SHACL_CONFORMANCE_DIR``); nothing of it is copied into the repository.

Each ``sht:Validate`` entry names a data graph and a shapes graph (usually the test file itself)
and either an expected ``sh:ValidationReport`` or ``sht:Failure``. The quipu run loads the data
file into a fresh in-memory store and validates the rdflib Store view (``QuipuView`` at the
current read point) through ``quipu.shacl.validate.validate``; the yardstick run validates
rdflib's in-memory graph with the same function.

Comparison: ``sh:conforms`` and the multiset of results, each as (focus node, path, severity,
constraint component, source shape, value). Blank nodes of the data graph are renamed by the
store (skolem keys), so a blank focus node or value compares as "some blank node"; blank source
shapes come from the one parse of the shapes file and compare exactly; paths compare as
SPARQL property-path text.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from rdflib import RDF, BNode, Graph, Literal, Namespace, URIRef
from rdflib.namespace import SH
from rdflib.term import Node

import quipu
from quipu.shacl.validate import Issue, Report, _curie, path_text, term_json, validate
from quipu.store.rdflib_store import QuipuView, dataset
from quipu.store.views import TemporalView
from tests.backends import scratch_location
from tests.conformance.w3c import MF, _items, local_path, rdflib_flags

SHT: Final = Namespace("http://www.w3.org/ns/shacl-test#")
MANIFEST: Final = "manifest.ttl"
TEST_COUNT: Final = 121
ENV_DIR: Final = "QUIPU_SHACL_CONFORMANCE_DIR"


def suite_dir() -> Path:
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override).expanduser().resolve()
    return Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "shacl" / "tests"


def find_manifest(root: Path) -> Path | None:
    for candidate in (root / MANIFEST, root / "tests" / MANIFEST):
        if candidate.is_file():
            return candidate
    return None


def missing_message(root: Path) -> str:
    return (
        f"W3C SHACL suite not found: no {MANIFEST} in {root}. The suite is read from "
        "../shared/conformance/shacl/tests beside the checkout: put the tests folder of "
        f"https://github.com/w3c/data-shapes (data-shapes-test-suite) there, or set {ENV_DIR}."
    )


@dataclass(frozen=True)
class ShaclTest:
    id: str  # e.g. "core/node/class-001"
    label: str
    file: str  # the manifest file holding the entry (file: IRI)
    data: str  # data graph file IRI
    shapes: str  # shapes graph file IRI
    failure: bool  # expects sht:Failure (the shapes cannot be evaluated)


def _read(path: Path, root: Path, seen: set[Path], out: list[ShaclTest]) -> None:
    if path in seen:
        return
    seen.add(path)
    graph = Graph()
    graph.parse(path, format="turtle", publicID=path.as_uri())
    for manifest in graph.subjects(RDF.type, MF.Manifest):
        for included in graph.objects(manifest, MF.include):
            _read(local_path(str(included)), root, seen, out)
        for entry in _items(graph, graph.value(manifest, MF.entries)):
            if (entry, RDF.type, SHT.Validate) not in graph:
                continue
            action = graph.value(entry, MF.action)
            data = graph.value(action, SHT.dataGraph)
            shapes = graph.value(action, SHT.shapesGraph)
            if not isinstance(data, URIRef) or not isinstance(shapes, URIRef):
                raise ValueError(f"{entry}: a validation test needs sht:dataGraph and sht:shapesGraph")
            folder = path.parent.relative_to(root).as_posix()
            local = str(entry).rsplit("/", 1)[-1]
            out.append(
                ShaclTest(
                    id=f"{folder}/{local}",
                    label=str(graph.value(entry, RDFS_LABEL) or local),
                    file=path.as_uri(),
                    data=str(data),
                    shapes=str(shapes),
                    failure=graph.value(entry, MF.result) == SHT.Failure,
                )
            )


RDFS_LABEL: Final = URIRef("http://www.w3.org/2000/01/rdf-schema#label")


def load_tests(manifest: Path) -> list[ShaclTest]:
    """Every ``sht:Validate`` entry: those the manifests include, then those of test files no
    manifest includes (``sparql/component/nodeValidator-001``), which the suite counts too."""
    root = manifest.resolve().parent
    out: list[ShaclTest] = []
    seen: set[Path] = set()
    _read(manifest.resolve(), root, seen, out)
    for path in sorted(root.rglob("*.ttl")):
        if path not in seen and "sht:Validate" in path.read_text(encoding="utf-8"):
            _read(path, root, seen, out)
    duplicates = sorted(i for i, n in Counter(t.id for t in out).items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate test ids: {duplicates}")
    return out


@cache
def _graph(location: str) -> Graph:
    graph = Graph()
    with rdflib_flags(NORMALIZE_LITERALS=False):  # lexical forms as written, as the store keeps them
        graph.parse(local_path(location), format="turtle", publicID=location)
    return graph


Result = tuple[Any, ...]


def _blank_or(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("_:"):
        return "_:"
    return repr(value) if isinstance(value, dict) else value


def issue_key(issue: Issue) -> Result:
    return (
        _blank_or(issue.focus_node),
        issue.path,
        issue.severity,
        issue.component,
        issue.source_shape,
        _blank_or(issue.value),
    )


def _expected_term(graph: Graph, node: Node | None) -> Any:
    return _blank_or(term_json(node))


def expected_report(test: ShaclTest) -> tuple[bool, Counter[Result]]:
    """(conforms, results) of the entry's ``mf:result`` report."""
    graph = _graph(test.file)
    entry = URIRef(test.file.rsplit("/", 1)[0] + "/" + test.id.rsplit("/", 1)[-1])
    report = graph.value(entry, MF.result)
    conforms = graph.value(report, SH.conforms)
    assert isinstance(conforms, Literal), f"{test.id}: no sh:conforms"
    results: Counter[Result] = Counter()
    severities = {SH.Violation: "Violation", SH.Warning: "Warning", SH.Info: "Info"}
    for result in graph.objects(report, SH.result):
        component = graph.value(result, SH.sourceConstraintComponent)
        shape = graph.value(result, SH.sourceShape)
        severity = graph.value(result, SH.resultSeverity)
        results[
            (
                _expected_term(graph, graph.value(result, SH.focusNode)),
                path_text(graph, graph.value(result, SH.resultPath)),
                severities.get(severity, str(severity)),  # type: ignore[call-overload]
                _curie(component),
                term_json(shape) if not isinstance(shape, BNode) else f"_:{shape}",
                _expected_term(graph, graph.value(result, SH.value)),
            )
        ] += 1
    return bool(conforms.toPython()), results


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str = ""


def run_quipu(test: ShaclTest) -> Report:
    """Load the data graph into a fresh store; validate the Store view at the current point."""
    with scratch_location() as location, quipu.open(location) as kb:
        kb.knot(local_path(test.data).read_bytes(), "turtle", base_iri=test.data)
        with kb.db.read() as conn:
            view = QuipuView(kb.db, conn, TemporalView())
            return validate(dataset(view), _graph(test.shapes))


def run_rdflib(test: ShaclTest) -> Report:
    data = Graph()
    with rdflib_flags(NORMALIZE_LITERALS=False):
        data.parse(local_path(test.data), format="turtle", publicID=test.data)
    return validate(data, _graph(test.shapes))


def check(test: ShaclTest, engine: str = "quipu") -> Verdict:
    run = run_quipu if engine == "quipu" else run_rdflib
    try:
        report = run(test)
    except Exception as exc:
        if test.failure:
            return Verdict(True)
        return Verdict(False, f"raised {type(exc).__name__}: {exc}")
    if test.failure:
        return Verdict(False, "expected a failure (sht:Failure), got a report")
    conforms, expected = expected_report(test)
    actual = Counter(issue_key(i) for i in report.issues)
    if report.conforms != conforms or actual != expected:
        return Verdict(
            False,
            f"conforms {report.conforms} (expected {conforms})\n"
            f"missing: {sorted(map(str, (expected - actual).elements()))}\n"
            f"unexpected: {sorted(map(str, (actual - expected).elements()))}",
        )
    return Verdict(True)
