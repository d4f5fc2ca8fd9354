"""Without the owl extra (§8): ``/ontology`` and ``/explain`` exist and answer 400 naming the
missing feature (never 404), no write is gated, and the two tools are not advertised."""

from __future__ import annotations

from pathlib import Path

import pytest

from quipu.config import load_settings, owl_installed
from quipu.mcp.registry import build_registry
from quipu.rest.app import create_app
from tests.owl.support import EX, ONTOLOGY, PREFIXES
from tests.rest.support import kb_of, problem, serve

pytestmark = pytest.mark.skipif(owl_installed(), reason="the owl extra is installed here")


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/ontology", {"action": "load", "name": "zoo", "turtle": ONTOLOGY}),
        ("/ontology", {}),
        ("/ontology", {"action": "nonsense"}),
        ("/explain", {"s": f"{EX}a", "p": f"{EX}b", "o": "c"}),
    ],
)
def test_the_routes_answer_an_explicit_feature_error(
    tmp_path: Path, route: str, body: dict[str, object]
) -> None:
    with serve(tmp_path) as client:
        error = problem(client.post(route, json=body), "owl_not_installed")
        assert "pip install 'quipu[owl]'" in error["error"] and "'owl' feature" in error["error"]


def test_no_write_is_gated_and_no_tool_is_advertised(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        assert kb_of(client).db.staged_checks == []
        done = client.post("/knot", json={"turtle": PREFIXES + "ex:b a ex:Person, ex:Robot ."})
        assert done.status_code == 200
        registry = build_registry(create_app(load_settings(store={"db": ":memory:"})).openapi())
        assert {"quipu_load_ontology", "quipu_explain"}.isdisjoint(registry.tools)
        assert {e.name for e in registry.missing if e.extra == "owl"} == {
            "quipu_load_ontology",
            "quipu_explain",
        }
