"""The W3C SPARQL 1.1 update-evaluation tests on quipu, with rdflib's in-memory Dataset as a yardstick.

Each test loads the "before" graph store into a fresh quipu store (``knot`` into ROOT, or into a
registered named graph), runs the request with ``kb.update`` and compares every graph with the
"after" store by isomorphism. One test per suite entry asserts "passes exactly when it is not a
known failure", so a newly passing or newly failing entry breaks the run until
``sparql11_update_known_failures.toml`` is updated. The suite is read from
``../shared/conformance/sparql`` (see ``w3c.suite_dir``); without it these tests skip, or fail
under ``CI=true``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance import w3c

ROOT = w3c.suite_dir()
MANIFEST = w3c.find_update_manifest(ROOT)
TESTS = w3c.load_update_tests(MANIFEST) if MANIFEST is not None else []
BY_ID = {t.id: t for t in TESTS}
KNOWN_FAILURES_FILE = Path(__file__).with_name("sparql11_update_known_failures.toml")
KNOWN_FAILURES: dict[str, str] = w3c.known_failures(KNOWN_FAILURES_FILE)

ENGINES: dict[str, w3c.UpdateEngine] = {
    "quipu": w3c.QuipuUpdateEngine(),
    "rdflib": w3c.RdflibUpdateEngine(),
}
_verdicts: dict[tuple[str, str], w3c.Verdict] = {}  # one run per engine and test per session


def verdict(engine: str, test: w3c.UpdateTest) -> w3c.Verdict:
    key = (engine, test.id)
    if key not in _verdicts:
        _verdicts[key] = w3c.check_update(ENGINES[engine], test)
    return _verdicts[key]


def require_suite() -> None:
    w3c.require_suite(MANIFEST, w3c.missing_message(ROOT).replace(w3c.QUERY_MANIFEST, w3c.UPDATE_MANIFEST))


@pytest.mark.parametrize("test_id", [t.id for t in TESTS] or ["suite-missing"])
def test_update_evaluation(test_id: str) -> None:
    require_suite()
    test = BY_ID[test_id]
    result = verdict("quipu", test)
    known = KNOWN_FAILURES.get(test_id)
    where = f"request {w3c.local_path(test.request)}"
    if known is None:
        assert result.passed, f"{test_id} ({test.name}) fails on quipu; {where}\n{result.detail}"
    else:
        assert not result.passed, (
            f"{test_id} now passes: remove it from {KNOWN_FAILURES_FILE.name} (it was listed as: {known})"
        )


def test_manifest_lists_94_update_evaluation_tests() -> None:
    require_suite()
    assert len(TESTS) == w3c.UPDATE_TEST_COUNT, f"{MANIFEST} yields {len(TESTS)} UpdateEvaluationTest entries"


def test_known_failures_name_suite_tests_with_reasons() -> None:
    require_suite()
    w3c.check_known_failures(KNOWN_FAILURES, BY_ID, KNOWN_FAILURES_FILE.name)


def test_pass_counts_quipu_against_rdflib_in_memory() -> None:
    require_suite()
    passed = {name: sum(verdict(name, t).passed for t in TESTS) for name in ENGINES}
    total = len(TESTS)
    summary = (
        f"W3C SPARQL 1.1 update: quipu {passed['quipu']}/{total}, rdflib in-memory {passed['rdflib']}/{total}"
    )
    print(summary)
    only_rdflib = sorted(
        t.id for t in TESTS if verdict("rdflib", t).passed and not verdict("quipu", t).passed
    )
    # Every test rdflib passes and quipu fails must be a listed, explained failure.
    unexplained = sorted(set(only_rdflib) - set(KNOWN_FAILURES))
    assert not unexplained, f"{summary}; rdflib passes, quipu fails: {unexplained}"
