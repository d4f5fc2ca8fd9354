"""``quipu_search_nodes`` and ``quipu_search_facts`` (tools-search §5.3, §5.4) over the REST app
and through the MCP dispatcher, on the backend under test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from tests.rest.support import kb_of, problem, serve
from tests.search.retrieval_support import call_tool

EX = "http://ex.org/"
AEGIS = "http://aegis.gastown.local/ontology/"
QUECHUA_GROUP = "https://scbrown.github.io/quechua/ns#groupId"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
P = (
    f"@prefix : <{EX}> . @prefix rdfs: <{RDFS}> . @prefix prov: <http://www.w3.org/ns/prov#> . "
    "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
)
SHAPES = (
    f"@prefix ex: <{EX}> . @prefix sh: <http://www.w3.org/ns/shacl#> .\n"
    "ex:AnyShape a sh:NodeShape ; sh:targetClass ex:Nothing .\n"
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def knot(client: TestClient, turtle: str, **options: Any) -> None:
    kb_of(client).knot(P + turtle, **options)


def nodes(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/search_nodes", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    assert out["count"] == len(out["nodes"])
    return out


def found_nodes(client: TestClient, **body: Any) -> list[str]:
    return [n["iri"] for n in nodes(client, verbose=True, **body)["nodes"]]


def facts(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/search_facts", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    assert out["count"] == len(out["facts"])
    return out


def triples(client: TestClient, **body: Any) -> list[tuple[str, str, str]]:
    return [(f["source"], f["predicate"], f["target"]) for f in facts(client, verbose=True, **body)["facts"]]


def term_order(kb: KnowledgeBase, iris: list[str]) -> list[str]:
    with kb.db.read() as conn:
        ids = kb.db.terms.lookup(conn, iris)
    return sorted(iris, key=ids.__getitem__)


# -- quipu_search_nodes ------------------------------------------------------------------------------


def test_nodes_rule1_matching_is_substring_not_token(client: TestClient) -> None:
    knot(client, ':kota rdfs:label "Kota" . :other rdfs:label "Dakota Jones" . :none rdfs:label "K o t a" .')
    assert found_nodes(client, query="kot") == [EX + "kota", EX + "other"]
    assert found_nodes(client, query="KOTA") == [EX + "kota", EX + "other"]  # case-insensitive


def test_nodes_rule2_an_iri_object_counts_as_a_value(client: TestClient) -> None:
    knot(client, ":web :runs_on :traefik . :db :runs_on :postgres .")
    assert found_nodes(client, query="traefik") == [EX + "web"]  # traefik has no facts: not an entity


def test_nodes_rule3_an_empty_group_list_is_no_scope(client: TestClient) -> None:
    knot(client, ':a rdfs:label "thing" .')
    assert found_nodes(client, query="thing", group_ids=[]) == [EX + "a"]
    assert found_nodes(client, query="thing", group_ids=[1, None]) == [EX + "a"]  # non-strings ignored
    assert found_nodes(client, query="thing", group_ids=["team"]) == []


def test_nodes_rule4_score_is_one_and_order_is_store_order(client: TestClient) -> None:
    knot(client, ':zeta :note "a long text that mentions match somewhere" .')
    knot(client, ':alpha rdfs:label "match" .')
    out = nodes(client, query="match", verbose=True)["nodes"]
    assert [n["iri"] for n in out] == [EX + "zeta", EX + "alpha"]  # not by name, not by relevance
    assert [n["score"] for n in out] == [1.0, 1.0]
    assert term_order(kb_of(client), [EX + "alpha", EX + "zeta"]) == [EX + "zeta", EX + "alpha"]


def test_nodes_rule5_both_group_vocabularies_list_an_entity_once(client: TestClient) -> None:
    knot(
        client,
        f"""
        :a1 <{AEGIS}groupId> "team" . :a2 <{QUECHUA_GROUP}> "team" .
        :svc prov:wasGeneratedBy :a1, :a2 ; rdfs:label "service" .
        :knotted rdfs:label "service too" .
        """,
    )
    assert found_nodes(client, query="service", group_ids=["team"]) == [EX + "svc"]
    assert found_nodes(client, query="service") == term_order(kb_of(client), [EX + "svc", EX + "knotted"])


def test_nodes_group_scope_from_episodes_drops_knot_entities(client: TestClient) -> None:
    kb = kb_of(client)
    kb.episode("e1", group_id="team", nodes=[{"name": "gateway", "type": "Service"}])
    kb.episode("e2", group_id="other", nodes=[{"name": "gateway-b", "type": "Service"}])
    knot(client, ':gateway-c rdfs:label "gateway c" .')
    assert found_nodes(client, query="gateway", group_ids=["team"]) == [AEGIS + "gateway"]
    assert found_nodes(client, query="gateway", group_ids=["team", "other"]) == [
        AEGIS + "gateway",
        AEGIS + "gateway-b",
    ]


def test_nodes_scan_every_candidate_not_an_oversampled_window(client: TestClient) -> None:
    knot(client, "\n".join(f':n{i:03d} rdfs:label "filler {i}" .' for i in range(150)))
    knot(client, ':late rdfs:label "needle" .')
    assert found_nodes(client, query="needle", max_results=1) == [EX + "late"]


def test_nodes_stop_at_max_results_which_is_clamped(client: TestClient) -> None:
    knot(client, "\n".join(f':m{i:02d} rdfs:label "match {i}" .' for i in range(15)))
    assert len(found_nodes(client, query="match")) == 10  # default_limit
    assert len(found_nodes(client, query="match", max_results=12)) == 12
    assert len(found_nodes(client, query="match", max_results=0)) == 1  # never below 1
    assert len(found_nodes(client, query="match", max_results=-4)) == 1


def test_nodes_max_results_is_clamped_by_max_limit(tmp_path: Path) -> None:
    with serve(tmp_path, search={"max_limit": 3}) as client:
        knot(client, "\n".join(f':m{i:02d} rdfs:label "match {i}" .' for i in range(6)))
        assert len(found_nodes(client, query="match", max_results=50)) == 3


def test_nodes_entity_type_filter_uses_asserted_types(client: TestClient) -> None:
    knot(client, ':rex a :Dog ; rdfs:label "rex the pet" . :tom a :Cat ; rdfs:label "tom the pet" . '
         ":Dog rdfs:subClassOf :Animal .")  # fmt: skip
    assert found_nodes(client, query="pet", entity_type_filter=EX + "Dog") == [EX + "rex"]
    assert found_nodes(client, query="pet", entity_type_filter=EX + "Animal") == []  # no inference
    assert found_nodes(client, query="pet", entity_type_filter=EX + "Unknown") == []
    assert found_nodes(client, query="pet", entity_type_filter="") == [EX + "rex", EX + "tom"]


def test_nodes_values_of_every_literal_kind_match(client: TestClient) -> None:
    knot(
        client,
        """
        :lang :greeting "Bonjour le monde"@fr .
        :typed :day "2024-01-02"^^xsd:date .
        :int :count 4242 .
        :float :ratio "2.5"^^xsd:double .
        :whole :ratio "3.0"^^xsd:double .
        :bool :flag true .
        """,
    )
    assert found_nodes(client, query="bonjour") == [EX + "lang"]
    assert found_nodes(client, query="2024-01") == [EX + "typed"]
    assert found_nodes(client, query="424") == [EX + "int"]
    assert found_nodes(client, query="2.5") == [EX + "float"]
    assert found_nodes(client, query="TRUE") == [EX + "bool"]
    assert found_nodes(client, query="3.0") == []  # a whole double prints as 3 (tools-search §0.5)


def test_nodes_are_described_from_all_their_facts(client: TestClient) -> None:
    # The label's predicate is interned last, so it is the last fact read: a description from
    # the first max_results facts would lose it (the spec's recommendation: read all facts).
    knot(client, ':e :p1 "needle" ; :p2 "b" ; a :Widget .')
    knot(client, ':e rdfs:label "Old" . :e rdfs:comment "About e" .')
    knot(client, ':e :label "Newest" .')
    (node,) = nodes(client, query="needle", max_results=1, verbose=True)["nodes"]
    assert node == {
        "iri": EX + "e",
        "label": "Newest",  # ends in /label, read after rdfs:label: the last one read wins
        "types": [EX + "Widget"],
        "summary": "About e",
        "score": 1.0,
    }


def test_nodes_without_verbose_compact_iris_with_the_shape_prefixes(client: TestClient) -> None:
    knot(client, ':kota a :Widget ; rdfs:label "kota" . <http://other.org/kota2> rdfs:label "kota 2" .')
    assert [n["iri"] for n in nodes(client, query="kota")["nodes"]] == [EX + "kota", "http://other.org/kota2"]
    assert client.post("/shapes", json={"action": "load", "name": "s", "turtle": SHAPES}).status_code == 200
    out = nodes(client, query="kota")["nodes"]
    assert [(n["iri"], n["types"]) for n in out] == [
        ("ex:kota", ["ex:Widget"]),
        ("http://other.org/kota2", []),
    ]
    assert nodes(client, query="kota", verbose=True)["nodes"][0]["iri"] == EX + "kota"


def test_nodes_errors_and_ignored_fields(client: TestClient) -> None:
    problem(client.post("/search_nodes", json={}), "missing_field")
    assert "missing 'query' parameter" in client.post("/search_nodes", json={}).json()["error"]
    assert problem(client.post("/search_nodes", json={"query": ""}), "invalid_field")["field"] == "query"
    assert problem(client.post("/search_nodes", json={"query": "x", "max_results": "5"}), "wrong_type")
    assert problem(client.post("/search_nodes", json={"query": 5}), "wrong_type")["field"] == "query"
    out = nodes(client, query="x", zeta=1, alpha=2)
    assert out == {"nodes": [], "count": 0, "ignored_fields": ["alpha", "zeta"]}
    declared = {
        "query": "x",
        "group_ids": None,
        "max_results": 2,
        "entity_type_filter": None,
        "verbose": False,
    }
    assert "ignored_fields" not in nodes(client, **declared)


def test_nodes_scan_is_bounded_by_the_query_deadline(tmp_path: Path) -> None:
    with serve(tmp_path, search={"query_timeout_ms": 1}) as client:
        knot(client, "\n".join(f':n{i:04d} :v "filler {i}" ; :w "more {i}" .' for i in range(3000)))
        problem(client.post("/search_nodes", json={"query": "absent"}), "query_timeout", 408)
        problem(client.post("/search_facts", json={"query": "absent"}), "query_timeout", 408)


# -- quipu_search_facts ------------------------------------------------------------------------------


def test_facts_rule1_a_predicate_namespace_match_matches_every_such_fact(client: TestClient) -> None:
    knot(client, ":web :runs_on :host1 .")
    knot(client, ':db :runs_on :host2 . :db rdfs:label "database" .')
    assert triples(client, query="runs_on") == [
        (EX + "web", EX + "runs_on", EX + "host1"),
        (EX + "db", EX + "runs_on", EX + "host2"),
    ]


def test_facts_rule2_provenance_is_null_for_knot_subjects(client: TestClient) -> None:
    kb = kb_of(client)
    kb.episode("e1", group_id="team", nodes=[{"name": "svc", "type": "Service", "description": "a gateway"}])
    kb.episode("e2", group_id="team", nodes=[{"name": "svc", "type": "Service", "description": "gateway v2"}])
    knot(client, ':plain rdfs:comment "gateway by hand" .')
    out = facts(client, query="gateway", verbose=True)["facts"]
    by_source = {(f["source"], f["target"]): f["provenance"] for f in out}
    assert by_source == {
        # the subject's first prov:wasGeneratedBy: episode e1 generated svc first
        (AEGIS + "svc", "a gateway"): {"episode": AEGIS + "episode_e1"},
        (AEGIS + "svc", "gateway v2"): {"episode": AEGIS + "episode_e1"},
        (EX + "plain", "gateway by hand"): None,
    }


def test_facts_rule3_results_are_facts_so_an_entity_repeats(client: TestClient) -> None:
    knot(client, ':svc :alias "edge proxy" ; :role "edge router" ; rdfs:label "svc" .')
    assert triples(client, query="edge") == [
        (EX + "svc", EX + "alias", "edge proxy"),
        (EX + "svc", EX + "role", "edge router"),
    ]


def test_facts_match_objects_of_every_kind_and_render_them(client: TestClient) -> None:
    knot(
        client,
        """
        :a :greeting "Bonjour"@fr . :a :day "2024-01-02"^^xsd:date . :a :count 4242 .
        :a :ratio "1.0"^^xsd:double . :a :flag false . :a :points_at :bonjour_page .
        """,
    )
    assert triples(client, query="bonjour") == [
        (EX + "a", EX + "greeting", "Bonjour"),
        (EX + "a", EX + "points_at", EX + "bonjour_page"),
    ]
    assert triples(client, query="2024-01") == [(EX + "a", EX + "day", "2024-01-02")]
    assert triples(client, query="424") == [(EX + "a", EX + "count", "4242")]
    assert triples(client, query="FALSE") == [(EX + "a", EX + "flag", "false")]
    assert triples(client, query="ratio") == [(EX + "a", EX + "ratio", "1")]


def test_facts_group_scope_is_on_the_subject(client: TestClient) -> None:
    kb = kb_of(client)
    kb.episode("e1", group_id="team", nodes=[{"name": "svc", "type": "Service", "description": "needle"}])
    kb.episode("e2", group_id="other", nodes=[{"name": "db", "type": "Database", "description": "needle"}])
    knot(client, ':k rdfs:comment "needle" .')
    assert [f[0] for f in triples(client, query="needle", group_ids=["team"])] == [AEGIS + "svc"]
    assert len(triples(client, query="needle", group_ids=[])) == 3


def test_facts_scan_all_and_stop_at_max_results(client: TestClient) -> None:
    knot(client, "\n".join(f':n{i:03d} :v "filler {i}" .' for i in range(120)))
    knot(client, ':late :v "needle 1" . :later :v "needle 2" . :latest :v "needle 3" .')
    assert [s for s, _p, _o in triples(client, query="needle", max_results=1)] == [EX + "late"]
    assert len(triples(client, query="needle", max_results=2)) == 2
    assert len(triples(client, query="filler")) == 10


def test_facts_without_verbose_are_compacted(client: TestClient) -> None:
    knot(client, ":web :runs_on :host1 . :web :runs_on <http://other.org/h> .")
    assert client.post("/shapes", json={"action": "load", "name": "s", "turtle": SHAPES}).status_code == 200
    out = facts(client, query="runs_on")["facts"]
    assert [(f["source"], f["predicate"], f["target"]) for f in out] == [
        ("ex:web", "ex:runs_on", "ex:host1"),
        ("ex:web", "ex:runs_on", "http://other.org/h"),
    ]


def test_facts_errors_and_ignored_fields(client: TestClient) -> None:
    problem(client.post("/search_facts", json={"max_results": 3}), "missing_field")
    problem(client.post("/search_facts", json={"query": "  "}), "invalid_field")
    problem(client.post("/search_facts", json={"query": "x", "verbose": "yes"}), "wrong_type")
    assert facts(client, query="x", entity_type_filter="t")["ignored_fields"] == ["entity_type_filter"]


# -- MCP -----------------------------------------------------------------------------------------------


def test_mcp_search_nodes(client: TestClient) -> None:
    knot(client, ':kota rdfs:label "Kota" .')
    ok = call_tool(client, "quipu_search_nodes", {"query": "kot", "verbose": True, "extra": 1})
    assert ok == (
        False,
        {
            "nodes": [{"iri": EX + "kota", "label": "Kota", "types": [], "summary": None, "score": 1.0}],
            "count": 1,
            "ignored_fields": ["extra"],
        },
    )
    is_error, body = call_tool(client, "quipu_search_nodes", {})
    assert is_error and body["reason"] == "missing_field"


def test_mcp_search_facts(client: TestClient) -> None:
    knot(client, ":web :runs_on :host .")
    ok = call_tool(client, "quipu_search_facts", {"query": "runs_on", "group_ids": []})
    assert ok == (
        False,
        {
            "facts": [
                {"source": EX + "web", "predicate": EX + "runs_on", "target": EX + "host", "provenance": None}
            ],
            "count": 1,
        },
    )
