"""The W3C RDF Dataset Canonicalization (RDFC-1.0) tests on ``quipu.sharing.canonical``.

Every entry of the rdf-canon manifest runs:

* ``rdfc:RDFC10EvalTest``: ``canonical_nquads`` of the input must equal the expected
  ``-rdfc10.nq`` file byte for byte. The same entry also checks the work-limit replay against
  it: relabelling the input with ``issued_identifiers`` must give the same bytes (the replay
  decides refusals and answers the map tests, so it must agree with the library on every input).
* ``rdfc:RDFC10MapTest``: ``issued_identifiers`` must equal the expected JSON map.
* ``rdfc:RDFC10NegativeEvalTest``: ``canonical_nquads`` must raise ``CanonicalisationTooComplex``
  within ``NEGATIVE_SECONDS``. It runs in a child process: were the guard broken, the library
  would search for hours holding the GIL, and only a process can be stopped.

``rdfc:hashAlgorithm`` (SHA384 on two entries) is passed through. One test per entry asserts
"passes exactly when it is not a known failure", so a newly passing or failing entry breaks the
run until ``rdf_canon_known_failures.toml`` is updated. The suite is read where it lies, in
``../shared/conformance/rdf-canon/tests`` beside the checkout (or the folder named by
``QUIPU_RDF_CANON_CONFORMANCE_DIR``); without it these tests skip, or fail under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyoxigraph as ox
import pytest
from rdflib import RDF, Graph, Literal, Namespace, URIRef

from quipu.sharing import canonical
from tests.conformance import w3c

pytestmark = pytest.mark.backend_independent

RDFC: Final = Namespace("https://w3c.github.io/rdf-canon/tests/vocab#")
MANIFEST_NAME: Final = "manifest.ttl"
ENV_DIR: Final = "QUIPU_RDF_CANON_CONFORMANCE_DIR"
KINDS: Final = ("RDFC10EvalTest", "RDFC10MapTest", "RDFC10NegativeEvalTest")
TEST_COUNTS: Final = {"RDFC10EvalTest": 64, "RDFC10MapTest": 21, "RDFC10NegativeEvalTest": 1}
NEGATIVE_SECONDS: Final = 5.0  # a poison graph must be refused this fast
CHILD_TIMEOUT: Final = 120.0  # the child's hard stop: interpreter start-up plus a broken guard


def suite_dir() -> Path:
    """``$QUIPU_RDF_CANON_CONFORMANCE_DIR``, else ``../shared/conformance/rdf-canon/tests``."""
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override).expanduser().resolve()
    return Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "rdf-canon" / "tests"


def find_manifest(root: Path) -> Path | None:
    for candidate in (root / MANIFEST_NAME, root / "tests" / MANIFEST_NAME):
        if candidate.is_file():
            return candidate
    return None


def missing_message(root: Path) -> str:
    return (
        f"W3C rdf-canon suite not found: no {MANIFEST_NAME} in {root}. The suite is read from "
        "../shared/conformance/rdf-canon/tests beside the checkout: put the tests folder of "
        f"https://github.com/w3c/rdf-canon there, or set {ENV_DIR}."
    )


@dataclass(frozen=True)
class CanonTest:
    id: str  # the entry's local name, e.g. "test001c"
    kind: str  # one of KINDS
    name: str
    action: Path
    result: Path | None  # None for a negative test
    hash_algorithm: str


def load_tests(manifest: Path) -> list[CanonTest]:
    graph = Graph()
    graph.parse(manifest, format="turtle", publicID=manifest.as_uri())
    tests: list[CanonTest] = []
    for head in graph.subjects(RDF.type, w3c.MF.Manifest):
        for entry in w3c._items(graph, graph.value(head, w3c.MF.entries)):
            kinds = [str(k).removeprefix(str(RDFC)) for k in graph.objects(entry, RDF.type)]
            kind = next((k for k in kinds if k in KINDS), None)
            if kind is None:
                raise ValueError(f"{entry}: unknown test type {kinds}")
            action, result = graph.value(entry, w3c.MF.action), graph.value(entry, w3c.MF.result)
            if not isinstance(action, URIRef) or (result is not None and not isinstance(result, URIRef)):
                raise ValueError(f"{entry}: mf:action and mf:result must be IRIs")
            algorithm = graph.value(entry, RDFC.hashAlgorithm)
            tests.append(
                CanonTest(
                    id=str(entry).rsplit("#", 1)[-1],
                    kind=kind,
                    name=str(graph.value(entry, w3c.MF.name) or entry),
                    action=w3c.local_path(str(action)),
                    result=w3c.local_path(str(result)) if result is not None else None,
                    hash_algorithm=str(algorithm) if isinstance(algorithm, Literal) else "SHA256",
                )
            )
    duplicates = sorted(i for i, n in Counter(t.id for t in tests).items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate test ids: {duplicates}")
    return tests


ROOT = suite_dir()
MANIFEST = find_manifest(ROOT)
TESTS = load_tests(MANIFEST) if MANIFEST is not None else []
BY_ID = {t.id: t for t in TESTS}
KNOWN_FAILURES_FILE = Path(__file__).with_name("rdf_canon_known_failures.toml")
KNOWN_FAILURES: dict[str, str] = w3c.known_failures(KNOWN_FAILURES_FILE)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str = ""
    seconds: float = 0.0


_verdicts: dict[str, Verdict] = {}  # one run per entry per session


def verdict(test: CanonTest) -> Verdict:
    if test.id not in _verdicts:
        started = time.perf_counter()
        checks = {"RDFC10EvalTest": _eval, "RDFC10MapTest": _map, "RDFC10NegativeEvalTest": _negative}
        try:
            detail = checks[test.kind](test)
        except Exception as exc:
            detail = f"raised {type(exc).__name__}: {exc}"
        _verdicts[test.id] = Verdict(detail is None, detail or "", time.perf_counter() - started)
    return _verdicts[test.id]


def relabelled(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every blank node renamed by ``mapping``, as sorted canonical N-Quads lines."""
    lines: set[str] = set()
    for q in ox.parse(text, ox.RdfFormat.N_QUADS):
        s, o, g = q.subject, q.object, q.graph_name
        s = ox.BlankNode(mapping[s.value]) if isinstance(s, ox.BlankNode) else s
        o = ox.BlankNode(mapping[o.value]) if isinstance(o, ox.BlankNode) else o
        g = ox.BlankNode(mapping[g.value]) if isinstance(g, ox.BlankNode) else g
        lines.add(f"{ox.Quad(s, q.predicate, o, g)} .\n")
    return "".join(sorted(lines))


def _eval(test: CanonTest) -> str | None:
    assert test.result is not None
    text = test.action.read_text(encoding="utf-8")
    expected = test.result.read_text(encoding="utf-8")
    actual = canonical.canonical_nquads(text, test.hash_algorithm)
    if actual != expected:
        return f"canonical_nquads differs\n--- expected\n{expected}--- actual\n{actual}"
    replayed = relabelled(text, canonical.issued_identifiers(text, test.hash_algorithm))
    if replayed != expected:
        return (
            f"the library is right, the replay's map is not\n--- expected\n{expected}--- replay\n{replayed}"
        )
    return None


def _map(test: CanonTest) -> str | None:
    assert test.result is not None
    expected = json.loads(test.result.read_text(encoding="utf-8"))
    actual = canonical.issued_identifiers(test.action.read_text(encoding="utf-8"), test.hash_algorithm)
    return None if actual == expected else f"expected map {expected}, got {actual}"


# The child reports what happened as one JSON line: the exception's type and message, and time.
_CHILD = """
import json, sys, time
from quipu.sharing import canonical
text = open(sys.argv[1], encoding="utf-8").read()
started = time.perf_counter()
try:
    canonical.canonical_nquads(text, sys.argv[2])
    outcome = {"raised": None, "message": ""}
except Exception as exc:
    outcome = {"raised": type(exc).__name__, "message": str(exc)}
outcome["seconds"] = time.perf_counter() - started
print(json.dumps(outcome))
"""


def _negative(test: CanonTest) -> str | None:
    command = [sys.executable, "-c", _CHILD, str(test.action), test.hash_algorithm]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        return f"not refused: still canonicalising after {CHILD_TIMEOUT:.0f} s (the child was stopped)"
    if done.returncode != 0 or not done.stdout.strip():
        return f"the child failed (exit {done.returncode}): {done.stderr[-2000:]}"
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if outcome["raised"] != canonical.CanonicalisationTooComplex.__name__:
        got = outcome["raised"] or "a canonical form"
        return f"expected CanonicalisationTooComplex, got {got}: {outcome['message']}"
    if outcome["seconds"] > NEGATIVE_SECONDS:
        return f"refused, but only after {outcome['seconds']:.1f} s (limit {NEGATIVE_SECONDS} s)"
    if "too complex to canonicalise" not in outcome["message"]:
        return f"the refusal does not say why: {outcome['message']}"
    return None


def require_suite() -> None:
    w3c.require_suite(MANIFEST, missing_message(ROOT))


@pytest.mark.parametrize("test_id", [t.id for t in TESTS] or ["suite-missing"])
def test_rdf_canon(test_id: str) -> None:
    require_suite()
    test = BY_ID[test_id]
    result = verdict(test)
    known = KNOWN_FAILURES.get(test_id)
    where = f"input {test.action}" + (f", expected {test.result}" if test.result else "")
    if known is None:
        assert result.passed, f"{test_id} ({test.name}, {test.kind}) fails; {where}\n{result.detail}"
    else:
        assert not result.passed, (
            f"{test_id} now passes: remove it from {KNOWN_FAILURES_FILE.name} (it was listed as: {known})"
        )


def test_manifest_lists_every_test_kind() -> None:
    require_suite()
    counts = {kind: sum(t.kind == kind for t in TESTS) for kind in KINDS}
    assert counts == TEST_COUNTS, f"{MANIFEST} yields {counts}"


def test_known_failures_name_suite_tests_with_reasons() -> None:
    require_suite()
    w3c.check_known_failures(KNOWN_FAILURES, BY_ID, KNOWN_FAILURES_FILE.name)


def test_pass_counts() -> None:
    require_suite()
    parts = []
    for kind, label in zip(KINDS, ("eval", "map", "negative refused"), strict=True):
        tests = [t for t in TESTS if t.kind == kind]
        parts.append(f"{label} {sum(verdict(t).passed for t in tests)}/{len(tests)}")
    seconds = sum(verdict(t).seconds for t in TESTS)
    summary = f"W3C rdf-canon (RDFC-1.0): {', '.join(parts)}; {len(KNOWN_FAILURES)} known failure(s); {seconds:.1f} s"
    print(summary)
    failing = sorted(t.id for t in TESTS if not verdict(t).passed)
    assert failing == sorted(KNOWN_FAILURES), f"{summary}; failing: {failing}"
