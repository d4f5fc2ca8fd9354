"""``quipu_reconcile`` (tools-search §5.10): the manifest (checked against the W3C Reconciliation
Service API 0.1 schema that OpenRefine clients follow), keyed queries scored 0-100 (checked
against the published result schema), the five rules, the errors, and the MCP tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from quipu.mcp.http import served_registry
from quipu.search.reconcile import manifest, score
from tests.rest.support import kb_of, problem, serve, state
from tests.search.retrieval_support import call_tool

SCHEMAS = Path(__file__).parents[1] / "fixtures" / "reconciliation" / "0.1"
EX = "http://ex.org/"
MANIFEST = {
    "name": "Quipu Knowledge Graph",
    "identifierSpace": "https://quipu.dev/entity/",
    "schemaSpace": "https://quipu.dev/ontology/",
    "view": {"url": "/entity/{{id}}"},
    "preview": {"url": "/preview/{{id}}", "width": 400, "height": 300},
    "defaultTypes": [],
}
DATA = f"""@prefix ex: <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:kota rdfs:label "Kota Service" ; a ex:WebService .
ex:e1 rdfs:label "kota" .
ex:e2 rdfs:label "café" ; a ex:Place .
ex:e3 rdfs:label "Kotaro" .
ex:e4 rdfs:label "unrelated"@en .
"""


def validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with serve(tmp_path_factory.mktemp("reconcile")) as c:
        kb = kb_of(c)
        for line in DATA.splitlines()[2:]:  # one entity per write: term ids follow this order
            kb.knot("\n".join([*DATA.splitlines()[:2], line]))
        kb.knot(f"<{EX}e1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Person> .", "ntriples")
        kb.knot(f"<{EX}e1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Agent> .", "ntriples")
        kb.create_graph(f"{EX}g")
        kb.knot(
            f'<{EX}named> <http://www.w3.org/2000/01/rdf-schema#label> "kota" .', "ntriples", graph=f"{EX}g"
        )
        yield c


def reconcile(client: TestClient, queries: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/reconcile", json={"queries": queries})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == set(queries)
    validator("reconciliation-result-batch.json").validate(body)
    return body


def rows(body: dict[str, Any], key: str = "q") -> list[tuple[str, str, float, bool]]:
    return [(r["id"], r["type"][0]["id"], r["score"], r["match"]) for r in body[key]["result"]]


# -- the manifest ----------------------------------------------------------------------------------


@pytest.mark.parametrize("request_body", [{"json": {}}, {}], ids=["empty object", "no body"])
def test_a_body_without_queries_gets_the_manifest(client: TestClient, request_body: dict[str, Any]) -> None:
    response = client.post("/reconcile", **request_body)
    assert response.status_code == 200, response.text
    assert response.json() == MANIFEST


def test_the_manifest_validates_against_the_w3c_0_1_schema() -> None:
    check = validator("manifest.json")
    check.validate(manifest())
    schema = check.schema
    assert isinstance(schema, dict) and schema["required"] == ["name", "identifierSpace", "schemaSpace"]
    # the validator is live: what the schema requires, it refuses without
    broken = {k: v for k, v in manifest().items() if k != "identifierSpace"}
    assert not check.is_valid(broken)
    assert not check.is_valid({**manifest(), "view": {"url": "/entity/"}})  # no {{id}} in the template


def test_a_w3c_query_batch_is_accepted(client: TestClient) -> None:
    """OpenRefine sends type_strict and properties too: they are valid W3C and not refused."""
    batch = {
        "q0": {"query": "kota", "type": f"{EX}Person", "type_strict": "should", "limit": 3},
        "q1": {"query": "café", "properties": [{"pid": "p1", "v": "x"}], "limit": 2.0},
    }
    validator("reconciliation-query-batch.json").validate(batch)
    body = reconcile(client, batch)
    assert rows(body, "q0") == [(f"{EX}e1", f"{EX}Person", 100.0, True)]
    assert [r["id"] for r in body["q1"]["result"]] == [f"{EX}e2"]


# -- scoring and the rules -----------------------------------------------------------------------------


def test_exact_label_or_local_name_scores_100_and_partial_ones_by_byte_length(client: TestClient) -> None:
    body = reconcile(client, {"q": {"query": "KOTA", "limit": 10}})
    by_id: dict[str, list[tuple[float, bool]]] = {}
    for iri, _type, s, match in rows(body):
        by_id.setdefault(iri, []).append((s, match))
    assert by_id[f"{EX}kota"] == [(100.0, True)]  # the IRI local name is "kota"
    assert by_id[f"{EX}e1"] == [(100.0, True), (100.0, True)]
    assert by_id[f"{EX}e3"] == [(80.0 * 4 / 6, False)]  # "kotaro"
    assert f"{EX}named" not in by_id  # only ROOT labels
    scores = [s for _iri, _type, s, _match in rows(body)]
    assert scores == sorted(scores, reverse=True)


def test_partial_scores_count_utf8_bytes() -> None:
    assert score("caf", "café", "e2") == pytest.approx(80 * 3 / 5)  # é is two bytes
    assert score("kota", "kota", "x") == 100.0
    assert score("x", "kota", "e1") is None
    assert score("", "kota", "e1") == 0.0


def test_rule_1_an_empty_query_matches_every_row_with_score_0_in_store_order(client: TestClient) -> None:
    body = reconcile(client, {"q": {"query": ""}})
    assert [(iri, s) for iri, _type, s, _match in rows(body)] == [
        (f"{EX}kota", 0.0),
        (f"{EX}e1", 0.0),
        (f"{EX}e1", 0.0),
        (f"{EX}e2", 0.0),
        (f"{EX}e3", 0.0),
    ]  # the default limit is 5; e4's label is language-tagged
    assert len(rows(reconcile(client, {"q": {}}))) == 5  # no query at all is the empty one


def test_rule_2_an_entity_with_two_types_appears_once_per_type(client: TestClient) -> None:
    body = reconcile(client, {"q": {"query": "kota", "type": f"{EX}"}})
    assert [(i, t) for i, t, _s, _m in rows(body) if i == f"{EX}e1"] == [
        (f"{EX}e1", f"{EX}Person"),
        (f"{EX}e1", f"{EX}Agent"),
    ]
    assert body["q"]["result"][1]["type"] == [{"id": f"{EX}Person", "name": "Person"}]


def test_rule_3_match_only_at_100(client: TestClient) -> None:
    body = reconcile(client, {"q": {"query": "kot", "limit": 10}})
    assert all(not m and 0 < s < 100 for _i, _t, s, m in rows(body))
    assert rows(reconcile(client, {"q": {"query": "kotaro"}})) == [(f"{EX}e3", "", 100.0, True)]


def test_rule_4_scores_are_on_a_0_to_100_scale(client: TestClient) -> None:
    (result,) = reconcile(client, {"q": {"query": "Kota Service"}})["q"]["result"]
    assert result == {
        "id": f"{EX}kota",
        "name": "Kota Service",
        "type": [{"id": f"{EX}WebService", "name": "WebService"}],
        "score": 100.0,
        "match": True,
    }


def test_rule_5_type_filters_by_substring_of_the_type_iri(client: TestClient) -> None:
    body = reconcile(
        client, {"q": {"query": "kota", "type": "Service"}, "none": {"query": "kota", "type": "Robot"}}
    )
    assert [i for i, _t, _s, _m in rows(body)] == [f"{EX}kota"]  # .../WebService; untyped rows go
    assert body["none"] == {"result": []}
    either = reconcile(client, {"q": {"query": "kota", "type": ["Agent", "Service"]}})
    assert [(i, t) for i, t, _s, _m in rows(either)] == [
        (f"{EX}kota", f"{EX}WebService"),
        (f"{EX}e1", f"{EX}Agent"),
    ]


def test_limit_cuts_each_key(client: TestClient) -> None:
    body = reconcile(client, {"one": {"query": "kota", "limit": 1}, "none": {"query": "kota", "limit": 0}})
    assert len(body["one"]["result"]) == 1 and body["none"] == {"result": []}


def test_an_untyped_row_has_an_empty_type(client: TestClient) -> None:
    (result,) = reconcile(client, {"q": {"query": "kotaro"}})["q"]["result"]
    assert result["type"] == [{"id": "", "name": ""}] and result["name"] == "Kotaro"


def test_reconcile_commits_nothing(client: TestClient) -> None:
    before = state(client)
    reconcile(client, {"q": {"query": "kota"}})
    client.post("/reconcile", json={})
    assert state(client) == before


# -- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [5, [], "kota", None, True])
def test_queries_must_be_an_object(client: TestClient, bad: Any) -> None:
    body = problem(client.post("/reconcile", json={"queries": bad}), "wrong_type")
    assert "'queries' must be an object" in body["error"] and body["field"] == "queries"


def test_unknown_top_level_fields_are_refused(client: TestClient) -> None:
    body = problem(client.post("/reconcile", json={"query": "kota"}), "unknown_field")
    assert body["field"] == "query"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("kota", "queries.q"),
        ({"query": 5}, "queries.q.query"),
        ({"query": "k", "limit": "3"}, "queries.q.limit"),
        ({"query": "k", "limit": 2.5}, "queries.q.limit"),
        ({"query": "k", "limit": True}, "queries.q.limit"),
        ({"query": "k", "limit": -1}, "queries.q.limit"),
        ({"query": "k", "type": 3}, "queries.q.type"),
        ({"query": "k", "type": ["a", 3]}, "queries.q.type"),
    ],
)
def test_a_bad_query_object_is_a_400_naming_its_field(client: TestClient, query: Any, field: str) -> None:
    response = client.post("/reconcile", json={"queries": {"q": query}})
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field


# -- over MCP -----------------------------------------------------------------------------------------


def test_the_mcp_tool(client: TestClient) -> None:
    app: FastAPI = client.app  # type: ignore[assignment]
    spec = served_registry(app, app.state.settings).get("quipu_reconcile")
    assert spec is not None and spec.read_only
    assert spec.annotations() == {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True}
    assert set(spec.input_schema["properties"]) == {"queries"}
    assert call_tool(client, "quipu_reconcile", {}) == (False, MANIFEST)
    is_error, body = call_tool(client, "quipu_reconcile", {"queries": {"k": {"query": "kotaro"}}})
    assert not is_error and [r["id"] for r in body["k"]["result"]] == [f"{EX}e3"]
    is_error, body = call_tool(client, "quipu_reconcile", {"queries": {}, "extend": {}})
    assert is_error and body["reason"] == "unknown_field" and body["field"] == "extend"
    is_error, body = call_tool(client, "quipu_reconcile", {"queries": "kota"})
    assert is_error and body["reason"] == "wrong_type" and "'queries' must be an object" in body["error"]
