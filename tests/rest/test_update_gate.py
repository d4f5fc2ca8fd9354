"""POST /update behind the vocabulary and SHACL gates (tools-core §3.10 rule 8 and Errors): a
refusal is a 400 problem whose body carries the report, and nothing is written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from .support import kb_of, problem, refused_write, serve

EX = "http://example.org/"
G = "http://example.org/g"
SPARQL_UPDATE = {"Content-Type": "application/sparql-update"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
SHAPES = (
    "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://example.org/> .\n"
    "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
    "ex:S a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ;\n"
    "  sh:property [ sh:path ex:knows ; sh:class ex:Person ] ."
)
U = "PREFIX ex: <http://example.org/>\n"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        c.post("/shapes", json={"action": "load", "name": "people", "turtle": SHAPES}).raise_for_status()
        yield c


def _update(client: TestClient, text: str) -> Any:
    return client.post("/update", content=text.encode(), headers=SPARQL_UPDATE)


def test_a_valid_update_is_written(client: TestClient) -> None:
    response = _update(client, U + "INSERT DATA { ex:a a ex:Person ; ex:age 3 }")
    assert response.status_code == 200, response.text
    assert response.json()["asserted"] == 2


def test_a_shacl_violation_is_a_400_with_the_report_and_writes_nothing(client: TestClient) -> None:
    body = refused_write(
        client,
        "/update",
        content=(U + 'INSERT DATA { ex:a a ex:Person ; ex:age "old" . ex:b ex:p 1 }').encode(),
        headers=SPARQL_UPDATE,
    )
    assert body["reason"] == "shacl_violation"
    assert body["error"].endswith("No facts were written")
    assert body["violations"] == 1 and body["conforms"] is False
    assert body["issues"][0]["focus_node"] == EX + "a"
    assert body["issues"][0]["allowed"] == ["http://www.w3.org/2001/XMLSchema#integer"]
    assert body["graph"] is None
    assert "propose a schema change" in body["hint"]


def test_a_form_encoded_update_is_gated_too(client: TestClient) -> None:
    form = urlencode({"update": U + 'INSERT DATA { ex:a a ex:Person ; ex:age "old" }'})
    body = refused_write(client, "/update", content=form.encode(), headers=FORM)
    assert body["reason"] == "shacl_violation"


def test_deletions_alone_are_not_gated(client: TestClient) -> None:
    kb_of(client).knot(f"<{EX}a> a <{EX}Person> ; <{EX}knows> <{EX}b> . <{EX}b> a <{EX}Person> .")
    # Deleting ex:b's type leaves ex:a knowing a non-Person: deletions are not validated.
    response = _update(client, U + "DELETE DATA { ex:b a ex:Person }")
    assert response.status_code == 200, response.text
    assert response.json()["retracted"] == 1


def test_a_multi_graph_update_is_gated_per_graph(client: TestClient) -> None:
    kb_of(client).create_graph(G)
    kb_of(client).knot(f"<{EX}b> a <{EX}Person> .", graph=G)  # a Person in G only
    refused = refused_write(
        client,
        "/update",
        content=(
            U + f"INSERT DATA {{ ex:a a ex:Person ; ex:knows ex:b . GRAPH <{G}> {{ ex:c a ex:Person ; "
            "ex:knows ex:b } }"
        ).encode(),
        headers=SPARQL_UPDATE,
    )
    assert refused["reason"] == "shacl_violation" and refused["graph"] is None
    assert [i["focus_node"] for i in refused["issues"]] == [EX + "a"]
    response = _update(client, U + f"INSERT DATA {{ GRAPH <{G}> {{ ex:c a ex:Person ; ex:knows ex:b }} }}")
    assert response.status_code == 200, response.text
    assert response.json()["graphs"][0]["graph"] == G


def test_a_violation_in_a_named_graph_names_it(client: TestClient) -> None:
    body = refused_write(
        client,
        "/update",
        content=(
            U + f'INSERT DATA {{ ex:a a ex:Person . GRAPH <{G}> {{ ex:z a ex:Person ; ex:age "x" }} }}'
        ).encode(),
        headers=SPARQL_UPDATE,
    )
    assert body["reason"] == "shacl_violation" and body["graph"] == G


def test_an_unsanctioned_type_is_refused_by_the_vocabulary_gate(client: TestClient) -> None:
    response = _update(client, U + "INSERT DATA { ex:a a ex:Robot }")
    body = problem(response, "unknown_type")
    assert body["field"] == "update" and body["unknown_types"] == [EX + "Robot"]
