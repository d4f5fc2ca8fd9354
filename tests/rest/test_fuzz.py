"""Schema fuzzing: schemathesis drives every route of the OpenAPI document against a real server.

Bounded per route and generation mode (``QUIPU_FUZZ_EXAMPLES``, default 25). The checks are the
acceptance's: no 5xx, and no response that breaks the schema the app itself publishes. Cases
come from ``APIOperation.as_strategy`` under a plain ``@given`` (schemathesis' own pytest
plugin does not run under pytest 9).

A second, short run (``QUIPU_FUZZ_HOSTILE_EXAMPLES`` per route, default 3) puts the values a
schema-driven generator never draws into valid cases: a lone surrogate (``\\ud800`` in the raw
JSON) into a string of a JSON body, and 10**30 into an integer, wherever they sit (issue 15).
Only the first check applies there: no 5xx.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

import quipu
from quipu.config import load_settings
from quipu.rest import route_table
from quipu.rest.app import create_app
from tests.rest.live_server import live_server

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

SEED = """@prefix : <http://ex.org/> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:s a :Thing ; :name "s"@en ; :n 3 ; :x 2.5e0 ; :ok true ; :d "2026-01-01"^^xsd:date ; :knows :t , [ :name "anon" ] .
:Thing <http://www.w3.org/2000/01/rdf-schema#subClassOf> :Top .
:t <http://www.w3.org/2000/01/rdf-schema#label> "t" .
"""
EXAMPLES = int(os.environ.get("QUIPU_FUZZ_EXAMPLES", "25"))
HOSTILE_EXAMPLES = int(os.environ.get("QUIPU_FUZZ_HOSTILE_EXAMPLES", "3"))
# One call's bound: schemathesis' default (10 s) refused a slow read on a loaded 2-core CI machine
# (GET /report under both test halves); a slow answer is not a server error, a hang still fails.
CALL_TIMEOUT = 60.0
# The app's schema needs no store: create_app opens it only in the lifespan.
SCHEMA = schemathesis.openapi.from_dict(create_app(load_settings(store={"db": ":memory:"})).openapi())
OPERATIONS = {op.label: op for op in (result.ok() for result in SCHEMA.get_all_operations())}  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = Path(tmp_path_factory.mktemp("fuzz")) / "fuzz.db"
    with quipu.open(str(db)) as kb:  # something to find: typed, tagged, blank and reference values
        kb.knot(SEED, "turtle", valid_from="2026-01-01T00:00:00Z")
        kb.create_graph("http://ex.org/g")
    settings_ = load_settings(store={"db": str(db)}, search={"query_timeout_ms": 2000})
    with live_server(settings_) as base:
        yield base


def test_every_route_is_fuzzed() -> None:
    documented = {label.replace("{iri}", "{iri:path}") for label in OPERATIONS}
    assert documented == {f"{method} {path}" for method, path in route_table.ROUTES}


def _takes_input(label: str) -> bool:
    op = OPERATIONS[label]
    return any(len(part) for part in (op.query, op.body, op.path_parameters, op.headers))


# An SSE stream that follows the log never ends, so no generated case could finish:
# tests/events/test_changes_stream.py and test_events_stream.py drive them over real HTTP instead.
STREAMS = frozenset({"GET /changes/stream", "GET /events/stream"})
FUZZED = sorted(set(OPERATIONS) - STREAMS)

# Negative cases (invalid input) only exist for routes that take some input.
CASES = [(label, GenerationMode.POSITIVE) for label in FUZZED] + [
    (label, GenerationMode.NEGATIVE) for label in FUZZED if _takes_input(label)
]


@pytest.mark.parametrize(("label", "mode"), CASES, ids=[f"{label} {mode.value}" for label, mode in CASES])
def test_no_server_error_and_responses_match_the_schema(
    label: str, mode: GenerationMode, fuzz_server: str
) -> None:
    operation = OPERATIONS[label]

    @given(case=operation.as_strategy(mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: Any) -> None:
        case.call_and_validate(
            base_url=fuzz_server,
            checks=[not_a_server_error, response_schema_conformance],
            timeout=CALL_TIMEOUT,
        )

    run()


# -- hostile values: lone surrogates and huge integers --------------------------------------------

SURROGATE = "\ud800"  # sent as the JSON escape: the client's encoder writes ASCII
HUGE = 10**30  # past every 64-bit column and parameter


def _spots(case: Any) -> list[tuple[Any, Any, Any]]:
    """(container, key, hostile value) for each leaf of the case that can take one: every string
    and integer of a JSON body (also inside lists and objects), every integer query parameter.
    A surrogate cannot be sent in a query string or a form (they are UTF-8), so only JSON takes one."""
    spots: list[tuple[Any, Any, Any]] = []
    pending: list[Any] = [case.body] if case.media_type == "application/json" else []
    while pending:
        node = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in list(items):
            if isinstance(value, str):
                spots.append((node, key, SURROGATE))
            elif isinstance(value, int) and not isinstance(value, bool):
                spots.append((node, key, HUGE))
            elif isinstance(value, dict | list):
                pending.append(value)
    if isinstance(case.query, dict):
        spots += [
            (case.query, k, HUGE)
            for k, v in case.query.items()
            if isinstance(v, int) and not isinstance(v, bool)
        ]
    return spots


@st.composite
def hostile_cases(draw: st.DrawFn, label: str) -> Any:
    """A valid case of ``label`` with one string or integer leaf made hostile (all of them, at times)."""
    case = draw(OPERATIONS[label].as_strategy(GenerationMode.POSITIVE))
    spots = _spots(case)
    if spots:
        chosen = spots if draw(st.booleans()) else [draw(st.sampled_from(spots))]
        for container, key, value in chosen:
            container[key] = value
    return case


HOSTILE = [label for label in FUZZED if _takes_input(label)]


@pytest.mark.parametrize("label", HOSTILE)
def test_no_server_error_for_surrogates_and_huge_integers(label: str, fuzz_server: str) -> None:
    @given(case=hostile_cases(label))
    @settings(
        max_examples=HOSTILE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    def run(case: Any) -> None:
        case.call_and_validate(base_url=fuzz_server, checks=[not_a_server_error], timeout=CALL_TIMEOUT)

    run()
