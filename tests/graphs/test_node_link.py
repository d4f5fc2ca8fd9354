"""quipu_graph (tools-search §5.13): the node-link view, over REST and a real store. Each
numbered rule has a test named after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import serve

from .support import EX, knot, ok, store_snapshot

PREFIXES = (
    f"@prefix ex: <{EX}> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def view(client: TestClient, **body: object) -> dict[str, Any]:
    return ok(client, "/graph", **body)


def test_an_empty_store_draws_nothing_and_says_so(client: TestClient) -> None:
    assert view(client) == {
        "nodes": [],
        "edges": [],
        "types": [],
        "truncated": {"shown": 0, "of": 0, "edges_shown": 0, "edges_of": 0},
        "stats": {"nodes": 0, "edges": 0},
    }


def test_nodes_edges_labels_types_and_census(client: TestClient) -> None:
    knot(
        client,
        PREFIXES
        + 'ex:api a ex:Old, ex:Service ; rdfs:label "API"@en, "second" ; ex:dependsOn ex:db, ex:Class . '
        + "ex:db a ex:Store ; ex:backs ex:api . ex:web a ex:Service ; ex:dependsOn ex:api .",
    )
    out = view(client)
    # api: 3 edges (db out, db in, web in); db: 2; web: 1 — rank by degree, then IRI
    assert [n["iri"] for n in out["nodes"]] == [EX + "api", EX + "db", EX + "web"]
    api = out["nodes"][0]
    assert api["deg"] == 3 and api["label"] in ("API", "second")
    assert out["nodes"][1] == {"iri": EX + "db", "label": "db", "type": EX + "Store", "deg": 2}
    # rule 1: rdf:type is an attribute, never an edge; rule 2: ex:Class is never a subject
    assert sorted(map(tuple, out["edges"])) == [(0, 1, "dependsOn"), (1, 0, "backs"), (2, 0, "dependsOn")]
    assert out["truncated"] == {"shown": 3, "of": 3, "edges_shown": 3, "edges_of": 3}
    assert out["stats"] == {"nodes": 3, "edges": 3}
    assert {t["iri"]: t["count"] for t in out["types"]}[EX + "Store"] == 1


def test_the_last_type_and_the_first_label_win(client: TestClient) -> None:
    knot(client, PREFIXES + 'ex:a a ex:First ; rdfs:label "one" .')
    knot(client, PREFIXES + 'ex:a a ex:Second ; rdfs:label "two" .')
    (node,) = view(client)["nodes"]
    assert node["type"] == EX + "Second" and node["label"] == "one"


def test_rule_2_an_edge_to_a_non_subject_adds_no_degree(client: TestClient) -> None:
    knot(client, PREFIXES + "ex:a ex:mentions ex:external .")
    out = view(client)
    assert out["nodes"] == [{"iri": EX + "a", "label": "a", "type": None, "deg": 0}] and out["edges"] == []


def test_rule_3_degree_counts_edges_to_nodes_cut_by_the_limit(client: TestClient) -> None:
    knot(client, PREFIXES + " ".join(f"ex:hub ex:to ex:n{i} . ex:n{i} ex:x 1 ." for i in range(5)))
    out = view(client, limit=1)
    assert out["nodes"] == [{"iri": EX + "hub", "label": "hub", "type": None, "deg": 5}]
    assert out["edges"] == []
    # rule 4: truncated is the only signal that the caps applied
    assert out["truncated"] == {"shown": 1, "of": 6, "edges_shown": 0, "edges_of": 0}
    assert view(client, limit=0)["nodes"] == []


def test_the_edge_budget_keeps_edges_among_the_highest_ranked_nodes(client: TestClient) -> None:
    knot(
        client,
        PREFIXES + "ex:a ex:to ex:b, ex:c, ex:d . ex:b ex:to ex:c . ex:c ex:to ex:d . "
        "ex:b ex:x 1 . ex:c ex:x 1 . ex:d ex:x 1 .",
    )
    full = view(client)
    names = [n["iri"][len(EX) :] for n in full["nodes"]]
    assert names == ["a", "c", "b", "d"]  # a: 3, c: 3 (ties by IRI), b: 2, d: 2
    out = view(client, edge_budget=2)
    assert out["truncated"]["edges_shown"] == 2 and out["truncated"]["edges_of"] == 5
    assert out["edges"] == sorted(full["edges"], key=lambda e: (max(e[0], e[1]), e[0], e[1], e[2]))[:2]


def test_a_self_loop_adds_two_and_duplicate_claims_are_one_edge(client: TestClient) -> None:
    knot(client, PREFIXES + "ex:a ex:likes ex:a .")
    ok(client, "/knot", turtle=PREFIXES + "ex:a ex:likes ex:a .", source="another-owner")
    out = view(client)
    assert out["nodes"][0]["deg"] == 2 and out["edges"] == [[0, 0, "likes"]]


def test_episodes_and_provenance_are_scaffolding_unless_asked(client: TestClient) -> None:
    knot(
        client,
        PREFIXES + "ex:ep a prov:Activity ; ex:touched ex:a . ex:a prov:wasGeneratedBy ex:ep ; ex:to ex:b . "
        "ex:b ex:x 1 .",
    )
    out = view(client)
    assert [n["iri"] for n in out["nodes"]] == [EX + "a", EX + "b"]
    with_episodes = view(client, include_episodes=True)
    assert EX + "ep" in [n["iri"] for n in with_episodes["nodes"]]
    # the prov: predicate is never drawn; the ep -> a reference edge is
    assert sorted(e[2] for e in with_episodes["edges"]) == ["to", "touched"]


def test_rule_6_a_type_filter_drops_edges_to_other_types(client: TestClient) -> None:
    knot(
        client,
        PREFIXES
        + "ex:s1 a ex:Service ; ex:calls ex:s2 ; ex:uses ex:db . ex:s2 a ex:Service . ex:db a ex:Store .",
    )
    out = view(client, type=EX + "Service")
    assert [n["iri"] for n in out["nodes"]] == [EX + "s1", EX + "s2"]
    assert out["edges"] == [[0, 1, "calls"]]
    assert out["types"] == [{"iri": EX + "Service", "label": "Service", "count": 2}]


def test_rule_5_the_same_store_gives_byte_identical_output_and_reads_write_nothing(
    client: TestClient,
) -> None:
    knot(client, PREFIXES + " ".join(f"ex:n{i} ex:to ex:n{(i * 7) % 11} ." for i in range(11)))
    before = store_snapshot(client)
    first = client.post("/graph", json={}).content
    assert all(client.post("/graph", json={}).content == first for _ in range(3))
    assert store_snapshot(client) == before


def test_bad_input_names_the_field(client: TestClient) -> None:
    for field, value in (("limit", -1), ("edge_budget", -5), ("limit", "10"), ("include_episodes", "yes")):
        response = client.post("/graph", json={field: value})
        assert response.status_code == 400 and field in response.text, (field, response.text)
    assert view(client, shape="round")["ignored_fields"] == ["shape"]
