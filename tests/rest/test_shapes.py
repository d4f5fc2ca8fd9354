"""POST /shapes (tools-core §2.2) and the gates it arms on POST /knot (§3.1 rules 3-6, DM §12)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from .support import kb_of, objects, problem, raw, refused_write, serve, state

EX = "http://ex.org/"
G = "http://ex.org/graph/g"
P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
PEOPLE = P + (
    "ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ;\n"
    "  sh:property [ sh:path ex:knows ; sh:class ex:Person ] .\n"
    "ex:Employee rdfs:subClassOf ex:Person .\n"
    "ex:EmployeeShape a sh:NodeShape ; sh:targetClass ex:Employee .\n"
)
T1, T2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"
TOKEN = "shapes-token-0123456789abcdef"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def shapes(client: TestClient, status: int = 200, **body: Any) -> dict[str, Any]:
    response = client.post("/shapes", json=body)
    assert response.status_code == status, response.text
    out: dict[str, Any] = response.json()
    return out


def load(client: TestClient, name: str = "people", turtle: str = PEOPLE, **extra: Any) -> dict[str, Any]:
    return shapes(client, action="load", name=name, turtle=turtle, **extra)


def knot(client: TestClient, turtle: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/knot", json={"turtle": P + turtle, **fields})
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


# == §2.2 quipu_shapes ==========================================================================


def test_load_answers_loaded_and_get_returns_the_turtle(client: TestClient) -> None:
    assert load(client) == {"action": "loaded", "name": "people"}
    got = shapes(client, action="get", name="people")
    assert got["name"] == "people" and got["turtle"] == PEOPLE and got["loaded_at"]


def test_rule1_missing_action_means_list(client: TestClient) -> None:
    load(client)
    listed = shapes(client)
    assert listed["count"] == 1 and [s["name"] for s in listed["shapes"]] == ["people"]


def test_rule1_unknown_action_is_refused_never_a_list(client: TestClient) -> None:
    body = problem(client.post("/shapes", json={"action": "lsit"}), "unknown_action")
    assert "unknown shapes action 'lsit' (expected: load, list, get, remove, vocabulary)" in body["error"]


def test_rule2_reload_closes_the_open_version_and_opens_a_new_one(client: TestClient) -> None:
    load(client, timestamp=T1)
    load(client, turtle=PEOPLE + "ex:X a sh:NodeShape .", timestamp=T2)
    assert raw(client, "SELECT valid_from, valid_to FROM shapes ORDER BY valid_from") == [
        (T1, T2),
        (T2, None),
    ]
    assert shapes(client)["count"] == 1
    assert shapes(client, action="get", name="people")["turtle"].endswith("ex:X a sh:NodeShape .")


def test_rule2_reload_at_the_same_timestamp_replaces_that_version(client: TestClient) -> None:
    load(client, timestamp=T1)
    load(client, turtle=PEOPLE + "ex:X a sh:NodeShape .", timestamp=T1)
    assert raw(client, "SELECT valid_from, valid_to FROM shapes") == [(T1, None)]


def test_rule2_remove_closes_keeps_history_and_is_idempotent(client: TestClient) -> None:
    load(client, timestamp=T1)
    assert shapes(client, action="remove", name="people", timestamp=T2) == {
        "action": "removed",
        "name": "people",
        "found": True,
    }
    assert shapes(client, action="remove", name="people")["found"] is False
    assert raw(client, "SELECT valid_from, valid_to FROM shapes") == [(T1, T2)]
    assert shapes(client) == {"shapes": [], "count": 0}
    body = problem(client.post("/shapes", json={"action": "get", "name": "people"}), "not_found")
    assert "no shape set named 'people'" in body["error"]


def test_rule4_loaded_shapes_immediately_gate_later_knots(client: TestClient) -> None:
    assert knot(client, 'ex:a a ex:Person ; ex:age "old" .')["conforms"] is True
    load(client)
    refused = knot(client, 'ex:b a ex:Person ; ex:age "old" .')
    assert refused["conforms"] is False
    assert objects(client, EX + "b", EX + "age") == []
    shapes(client, action="remove", name="people")
    assert knot(client, 'ex:b a ex:Person ; ex:age "old" .')["conforms"] is True


def test_rule5_vocabulary_is_target_classes_and_subclass_objects(client: TestClient) -> None:
    assert shapes(client, action="vocabulary") == {"classes": [], "count": 0}
    load(client)
    load(client, name="pets", turtle=P + "ex:Dog rdfs:subClassOf ex:Animal .")
    assert shapes(client, action="vocabulary") == {
        "classes": [EX + "Animal", EX + "Employee", EX + "Person"],
        "count": 3,
    }


def test_rule7_even_list_needs_the_bearer_and_a_writable_server(tmp_path: Path) -> None:
    with serve(tmp_path, server={"auth_token": TOKEN}) as client:
        problem(client.post("/shapes", json={}), "missing_or_invalid_bearer_token", 401)
        ok = client.post("/shapes", json={}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200
    with serve(tmp_path, server={"read_only": True}) as client:
        problem(client.post("/shapes", json={"action": "list"}), "server_is_read_only", 403)


@pytest.mark.parametrize(
    ("body", "reason", "field"),
    [
        ({"action": "load", "turtle": PEOPLE}, "missing_field", "name"),
        ({"action": "load", "name": "people"}, "missing_field", "turtle"),
        ({"action": "get"}, "missing_field", "name"),
        ({"action": "remove"}, "missing_field", "name"),
        ({"action": "load", "name": "x", "turtle": "not turtle at all"}, "invalid_shapes", "turtle"),
        (
            {"action": "load", "name": "x", "turtle": P + "ex:S a sh:NodeShape ; sh:path ex:a ."},
            "invalid_shapes",
            "turtle",
        ),
    ],
)
def test_bad_shapes_requests_store_nothing(
    client: TestClient, body: dict[str, Any], reason: str, field: str
) -> None:
    out = refused_write(client, "/shapes", field=field, json=body)
    assert out["reason"] == reason
    assert raw(client, "SELECT COUNT(*) FROM shapes") == [(0,)]


def test_shapes_reports_unknown_fields(client: TestClient) -> None:
    assert shapes(client, action="list", zeta=1)["ignored_fields"] == ["zeta"]


def test_loaded_prefixes_compact_query_results(client: TestClient) -> None:
    knot(client, "ex:a a ex:Thing .")
    load(client, turtle=PEOPLE + "ex:T a sh:NodeShape ; sh:targetClass ex:Thing .")
    rows = client.post("/query", json={"query": "SELECT ?s WHERE { ?s a ?t }"}).json()["rows"]
    assert rows == [{"s": "ex:a"}]


# == §3.1 /knot gates ===========================================================================


def test_knot_rule3_malformed_valid_from_is_refused_before_the_gates(client: TestClient) -> None:
    load(client)
    body = {"turtle": P + "ex:a a ex:Unsanctioned .", "valid_from": "yesterday"}
    assert refused_write(client, "/knot", field="valid_from", json=body)["reason"] == "invalid_valid_from"


def test_knot_rule4_a_shacl_failure_is_200_conforms_false_and_writes_nothing(client: TestClient) -> None:
    load(client)
    before = state(client)
    out = knot(client, 'ex:a a ex:Person ; ex:age "old" ; ex:knows ex:nobody .')
    assert out["conforms"] is False and out["violations"] == 2 and out["warnings"] == 0
    assert out["hint"] == "propose a schema change via quipu_propose_schema_change"
    assert {i["component"] for i in out["issues"]} == {
        "sh:DatatypeConstraintComponent",
        "sh:ClassConstraintComponent",
    }
    assert "tx_id" not in out
    assert state(client) == before
    # nothing interned either
    assert raw(client, "SELECT COUNT(*) FROM terms WHERE iri = ?", EX + "nobody") == [(0,)]


def test_knot_rule4_a_conforming_write_passes_the_gate(client: TestClient) -> None:
    load(client)
    out = knot(client, "ex:a a ex:Person ; ex:age 30 .")
    assert out["conforms"] is True and out["tx_id"] > 0


def test_knot_rule5_request_shapes_apply_together_with_stored_ones(client: TestClient) -> None:
    load(client)
    extra = (
        P
        + "ex:NameShape a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:name ; sh:minCount 1 ] ."
    )
    out = knot(client, 'ex:a a ex:Person ; ex:age "x" .', shapes=extra)
    assert {i["component"] for i in out["issues"]} == {
        "sh:DatatypeConstraintComponent",
        "sh:MinCountConstraintComponent",
    }
    assert knot(client, 'ex:a a ex:Person ; ex:age 3 ; ex:name "A" .', shapes=extra)["conforms"] is True


def test_knot_rule5_request_shapes_alone_gate_without_stored_sets(client: TestClient) -> None:
    extra = (
        P + "ex:S a sh:NodeShape ; sh:targetClass ex:Any ; sh:property [ sh:path ex:name ; sh:minCount 1 ] ."
    )
    assert knot(client, "ex:a a ex:Any .", shapes=extra)["conforms"] is False
    # no stored set: the vocabulary gate stays off, whatever the request shapes say
    assert knot(client, 'ex:a a ex:Other ; ex:name "n" .', shapes=extra)["conforms"] is True


def test_knot_rule5_bad_request_shapes_are_a_400(client: TestClient) -> None:
    out = refused_write(
        client, "/knot", field="shapes", json={"turtle": P + "ex:a ex:p 1 .", "shapes": "nope nope"}
    )
    assert out["reason"] == "invalid_shapes"


def test_knot_rule5_emit_shapes_do_not_gate(client: TestClient) -> None:
    soft = P + (
        '@prefix q: <https://quipu.dev/ontology/> .\nex:Soft a sh:NodeShape ; q:onViolation "emit" ; '
        "sh:targetClass ex:Person ; sh:property [ sh:path ex:name ; sh:minCount 1 ] ."
    )
    load(client, name="soft", turtle=soft)
    load(client)
    assert knot(client, "ex:a a ex:Person ; ex:age 1 .")["conforms"] is True
    assert knot(client, 'ex:b a ex:Person ; ex:age "x" .')["conforms"] is False  # the reject half still gates


def test_knot_rule5_store_context_types_referenced_nodes(client: TestClient) -> None:
    load(client)
    kb_of(client).create_graph(G)
    # chunk 1 types ex:bob in the named graph; chunk 2 references him: sh:class passes
    assert knot(client, "ex:bob a ex:Person .", graph=G)["conforms"] is True
    assert knot(client, "ex:alice a ex:Person ; ex:knows ex:bob .", graph=G)["conforms"] is True
    # typed in ROOT counts too; typed in an unrelated graph does not
    assert knot(client, "ex:carol a ex:Person .")["conforms"] is True
    assert knot(client, "ex:dave a ex:Person ; ex:knows ex:carol .", graph=G)["conforms"] is True
    kb_of(client).create_graph(G + "2")
    assert knot(client, "ex:erin a ex:Person ; ex:knows ex:bob .", graph=G + "2")["conforms"] is False


def test_knot_rule5_subclasses_declared_in_shapes_satisfy_sh_class(client: TestClient) -> None:
    load(client)
    assert knot(client, "ex:bob a ex:Employee .")["conforms"] is True
    assert knot(client, "ex:alice a ex:Person ; ex:knows ex:bob .")["conforms"] is True


def test_knot_rule6_vocabulary_gate_is_off_without_shape_sets(client: TestClient) -> None:
    assert knot(client, "ex:a a ex:Anything .")["conforms"] is True


def test_knot_rule6_unsanctioned_type_refuses_the_whole_write(client: TestClient) -> None:
    load(client)
    body = {"turtle": P + "ex:a a ex:Person . ex:b a ex:Robot ."}
    out = refused_write(client, "/knot", field="turtle", json=body)
    assert out["reason"] == "unknown_type"
    assert out["unknown_types"] == [EX + "Robot"]
    assert "unknown rdf:type <http://ex.org/Robot>" in out["error"]
    assert objects(client, EX + "a", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type") == []
