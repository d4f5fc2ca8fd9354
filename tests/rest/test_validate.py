"""POST /validate: a dry run against request or stored shapes (tools-core §2.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from .support import problem, raw, refused_write, serve, state

EX = "http://ex.org/"
P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
PEOPLE = P + (
    "ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ;\n"
    "  sh:property [ sh:path ex:knows ; sh:class ex:Person ] .\n"
)
NAMES = (
    P
    + "ex:NameShape a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:name ; sh:minCount 1 ] ."
)
T1, T2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def validate(client: TestClient, data: str, **body: Any) -> dict[str, Any]:
    response = client.post("/validate", json={"data": P + data, **body})
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def load(client: TestClient, name: str, turtle: str, timestamp: str | None = None) -> None:
    response = client.post(
        "/shapes", json={"action": "load", "name": name, "turtle": turtle, "timestamp": timestamp}
    )
    assert response.status_code == 200, response.text


def test_validate_answers_the_documented_shape(client: TestClient) -> None:
    out = validate(client, 'ex:a a ex:Person ; ex:age "x" .', shapes=PEOPLE)
    assert (out["conforms"], out["violations"], out["warnings"], out["infos"]) == (False, 1, 0, 0)
    (issue,) = out["issues"]
    assert issue["severity"] == "Violation"
    assert issue["focus_node"] == EX + "a" and issue["path"] == EX + "age" and issue["value"] == "x"
    assert issue["component"] == "sh:DatatypeConstraintComponent"
    assert issue["allowed"] == ["http://www.w3.org/2001/XMLSchema#integer"]
    assert issue["source_shape"].startswith("_:") and issue["message"]
    assert validate(client, "ex:a a ex:Person ; ex:age 3 .", shapes=PEOPLE)["conforms"] is True


def test_rule1_never_writes_or_interns(client: TestClient) -> None:
    load(client, "people", PEOPLE)
    before = state(client)
    validate(client, "ex:brand_new a ex:Person ; ex:knows ex:other_new .")
    assert state(client) == before
    assert raw(client, "SELECT COUNT(*) FROM terms WHERE iri LIKE ?", EX + "%new") == [(0,)]


def test_rule2_validation_is_payload_only(client: TestClient) -> None:
    load(client, "people", PEOPLE)
    assert client.post("/knot", json={"turtle": P + "ex:bob a ex:Person ."}).json()["conforms"] is True
    doc = "ex:alice a ex:Person ; ex:knows ex:bob ."
    assert validate(client, doc)["conforms"] is False  # bob's stored type is not context here
    assert client.post("/knot", json={"turtle": P + doc}).json()["conforms"] is True  # but is on /knot


def test_rule3_a_warning_alone_makes_conforms_false(client: TestClient) -> None:
    warn = (
        P
        + "ex:W a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:name ; sh:minCount 1 ; sh:severity sh:Warning ] ."
    )
    out = validate(client, "ex:a a ex:Person .", shapes=warn)
    assert (out["conforms"], out["violations"], out["warnings"]) == (False, 0, 1)


def test_rule4_valid_at_and_as_of_tx_choose_stored_versions(client: TestClient) -> None:
    load(client, "people", PEOPLE, timestamp=T1)
    client.post("/knot", json={"turtle": P + "ex:x ex:p 1 ."})  # tx 1
    load(client, "people", NAMES, timestamp=T2)
    doc = 'ex:a a ex:Person ; ex:age "x" .'
    assert validate(client, doc)["issues"][0]["component"] == "sh:MinCountConstraintComponent"
    early = validate(client, doc, valid_at="2026-01-15T00:00:00Z")
    assert early["issues"][0]["component"] == "sh:DatatypeConstraintComponent"
    assert validate(client, doc, as_of_tx=0)["issues"][0]["component"] == "sh:DatatypeConstraintComponent"
    assert validate(client, doc, as_of_tx=1)["issues"][0]["component"] == "sh:MinCountConstraintComponent"
    out = problem(
        client.post("/validate", json={"data": P + doc, "valid_at": "2025-01-01T00:00:00Z"}), "no_shapes"
    )
    assert "pass 'shapes', or load some and retry" in out["error"]


def test_rule5_request_shapes_replace_stored_ones(client: TestClient) -> None:
    load(client, "people", PEOPLE)
    out = validate(client, 'ex:a a ex:Person ; ex:age "x" .', shapes=NAMES)
    assert [i["component"] for i in out["issues"]] == ["sh:MinCountConstraintComponent"]


def test_validate_is_a_read_route_on_a_read_only_server(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True, "auth_token": "t" * 24}) as client:
        assert validate(client, "ex:a a ex:Person .", shapes=PEOPLE)["conforms"] is True


def test_validate_reports_unknown_fields(client: TestClient) -> None:
    assert validate(client, "ex:a ex:p 1 .", shapes=PEOPLE, zeta=1)["ignored_fields"] == ["zeta"]


@pytest.mark.parametrize(
    ("body", "reason", "field"),
    [
        ({"shapes": PEOPLE}, "missing_field", "data"),
        ({"data": P + "ex:a ex:p 1 ."}, "no_shapes", "shapes"),
        ({"data": P + "ex:a ex:p 1 .", "shapes": "nope nope"}, "invalid_shapes", "shapes"),
        ({"data": "ex:a ex:p", "shapes": PEOPLE}, "rdf_parse_error", None),
        ({"data": P + "ex:a ex:p 1 .", "shapes": PEOPLE, "as_of_tx": "1"}, "wrong_type", "as_of_tx"),
        ({"data": P + "ex:a ex:p 1 .", "as_of_tx": -1}, "invalid_field", "as_of_tx"),
        (
            {"data": P + "ex:a ex:p 1 .", "as_of_tx": -(10**23)},
            "invalid_field",
            "as_of_tx",
        ),  # found by fuzzing
        ({"data": P + "ex:a ex:p 1 .", "as_of_tx": 2**63}, "invalid_field", "as_of_tx"),
    ],
)
def test_validate_errors(client: TestClient, body: dict[str, Any], reason: str, field: str | None) -> None:
    out = refused_write(client, "/validate", field=field, json=body)
    assert out["reason"] == reason
