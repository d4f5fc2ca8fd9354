"""The W3C SPARQL 1.1 query-evaluation tests on quipu, with rdflib's in-memory Dataset as a yardstick.

One test per suite entry asserts "passes exactly when it is not a known failure", so a newly
passing or newly failing entry breaks the run until ``sparql11_query_known_failures.toml`` is
updated. The suite is read from ``../shared/conformance/sparql`` (see ``w3c.suite_dir``); without
it these tests skip, or fail under ``CI=true``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import on_postgres
from tests.conformance import w3c

ROOT = w3c.suite_dir()
MANIFEST = w3c.find_manifest(ROOT)
TESTS = w3c.load_tests(MANIFEST) if MANIFEST is not None else []
BY_ID = {t.id: t for t in TESTS}
KNOWN_FAILURES_FILE = Path(__file__).with_name("sparql11_query_known_failures.toml")
KNOWN_FAILURES: dict[str, str] = w3c.known_failures(KNOWN_FAILURES_FILE)
# PostgreSQL answers some queries on rdflib's evaluator that SQLite compiles (see that file).
POSTGRES_FAILURES_FILE = Path(__file__).with_name("sparql11_query_known_failures_postgresql.toml")
POSTGRES_FAILURES: dict[str, str] = w3c.known_failures(POSTGRES_FAILURES_FILE)
if on_postgres():
    KNOWN_FAILURES = {**KNOWN_FAILURES, **POSTGRES_FAILURES}

ENGINES: dict[str, w3c.Engine] = {
    "quipu": w3c.QuipuEngine(),
    "fallback": w3c.QuipuEngine(compiled=False),
    "rdflib": w3c.RdflibEngine(),
}
_verdicts: dict[tuple[str, str], w3c.Verdict] = {}  # one run per engine and test per session


def verdict(engine: str, test: w3c.QueryTest) -> w3c.Verdict:
    key = (engine, test.id)
    if key not in _verdicts:
        _verdicts[key] = w3c.check(ENGINES[engine], test)
    return _verdicts[key]


def require_suite() -> None:
    w3c.require_suite(MANIFEST, w3c.missing_message(ROOT))


@pytest.mark.parametrize("test_id", [t.id for t in TESTS] or ["suite-missing"])
def test_query_evaluation(test_id: str) -> None:
    require_suite()
    test = BY_ID[test_id]
    result = verdict("quipu", test)
    known = KNOWN_FAILURES.get(test_id)
    where = f"query {w3c.local_path(test.query)}, expected {w3c.local_path(test.result)}"
    if known is None:
        assert result.passed, f"{test_id} ({test.name}) fails on quipu; {where}\n{result.detail}"
    else:
        assert not result.passed, (
            f"{test_id} now passes: remove it from {KNOWN_FAILURES_FILE.name} (it was listed as: {known})"
        )


def test_manifest_lists_225_query_evaluation_tests() -> None:
    require_suite()
    assert len(TESTS) == w3c.QUERY_TEST_COUNT, f"{MANIFEST} yields {len(TESTS)} QueryEvaluationTest entries"


def test_known_failures_name_suite_tests_with_reasons() -> None:
    require_suite()
    w3c.check_known_failures(KNOWN_FAILURES, BY_ID, KNOWN_FAILURES_FILE.name)
    w3c.check_known_failures(POSTGRES_FAILURES, BY_ID, POSTGRES_FAILURES_FILE.name)


def test_pass_counts_quipu_against_rdflib_in_memory() -> None:
    require_suite()
    passed = {name: sum(verdict(name, t).passed for t in TESTS) for name in ENGINES}
    total = len(TESTS)
    sql = sum(1 for t in TESTS if verdict("quipu", t).plan == "sql")
    mixed = sum(1 for t in TESTS if verdict("quipu", t).plan == "mixed")
    summary = (
        f"W3C SPARQL 1.1 query: quipu {passed['quipu']}/{total} ({sql} plan sql, {mixed} plan mixed), "
        f"quipu with the compiler off {passed['fallback']}/{total}, rdflib in-memory {passed['rdflib']}/{total}"
    )
    print(summary)
    only_rdflib = sorted(
        t.id for t in TESTS if verdict("rdflib", t).passed and not verdict("fallback", t).passed
    )
    assert passed["fallback"] >= passed["rdflib"], f"{summary}; rdflib passes, quipu fails: {only_rdflib}"
    assert passed["quipu"] >= 205, summary
    # The compiler may only add passes: nothing that the fallback answers right may break.
    broken = sorted(t.id for t in TESTS if verdict("fallback", t).passed and not verdict("quipu", t).passed)
    assert not broken, f"{summary}; pass with the compiler off but fail compiled: {broken}"
