"""quipu_graph (tools-search §5.13): the node-link view, over REST and a real store. Each
numbered rule has a test named after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.errors import InvalidField
from tests.rest.support import RDF_TYPE, RDFS_LABEL, kb_of, problem, serve

from .support import EX, T0, T1, knot, ok, store_snapshot

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


# -- [designed here] time travel: valid_at and as_of_tx ---------------------------------------

BEFORE = "2026-01-15T00:00:00Z"  # between T0 and T1
OLD: dict[str, Any] = {  # ROOT as it was before the changes at T1
    "nodes": [
        {"iri": EX + "api", "label": "API", "type": EX + "Service", "deg": 2},
        {"iri": EX + "db", "label": "DB", "type": EX + "Store", "deg": 1},
        {"iri": EX + "web", "label": "web", "type": EX + "Service", "deg": 1},
    ],
    "edges": [[0, 1, "dependsOn"], [2, 0, "dependsOn"]],
    "types": [
        {"iri": EX + "Service", "label": "Service", "count": 2},
        {"iri": EX + "Store", "label": "Store", "count": 1},
    ],
    "truncated": {"shown": 3, "of": 3, "edges_shown": 2, "edges_of": 2},
    "stats": {"nodes": 3, "edges": 2},
}
NEW: dict[str, Any] = {  # ROOT now: web calls db instead of depending on api, api renamed, db retyped
    "nodes": [
        {"iri": EX + "db", "label": "DB", "type": EX + "Database", "deg": 2},
        {"iri": EX + "api", "label": "Gateway", "type": EX + "Service", "deg": 1},
        {"iri": EX + "web", "label": "web", "type": EX + "Service", "deg": 1},
    ],
    "edges": [[1, 0, "dependsOn"], [2, 0, "calls"]],
    "types": [
        {"iri": EX + "Service", "label": "Service", "count": 2},
        {"iri": EX + "Database", "label": "Database", "count": 1},
    ],
    "truncated": {"shown": 3, "of": 3, "edges_shown": 2, "edges_of": 2},
    "stats": {"nodes": 3, "edges": 2},
}
EMPTY: dict[str, Any] = {
    "nodes": [],
    "edges": [],
    "types": [],
    "truncated": {"shown": 0, "of": 0, "edges_shown": 0, "edges_of": 0},
    "stats": {"nodes": 0, "edges": 0},
}


def history(client: TestClient) -> tuple[int, int]:
    """Three services at T0, changed at T1: an edge retracted and another added, a label and a
    type replaced. Returns the last transaction before the changes and the last of all."""
    kb = kb_of(client)
    kb.knot(PREFIXES + 'ex:api a ex:Service ; rdfs:label "API" ; ex:dependsOn ex:db .', timestamp=T0)
    kb.knot(PREFIXES + 'ex:db a ex:Store ; rdfs:label "DB" .', timestamp=T0)
    before = kb.knot(PREFIXES + "ex:web a ex:Service ; ex:dependsOn ex:api .", timestamp=T0).tx_id
    kb.retract(EX + "web", EX + "dependsOn", {"iri": EX + "api"}, timestamp=T1)
    kb.knot(PREFIXES + "ex:web ex:calls ex:db .", timestamp=T1)
    kb.set(EX + "api", RDFS_LABEL, {"str": "Gateway"}, timestamp=T1)
    head = kb.set(EX + "db", RDF_TYPE, {"iri": EX + "Database"}, timestamp=T1).tx_id
    return before, head


def test_valid_at_draws_what_was_true_then_from_current_knowledge(client: TestClient) -> None:
    history(client)
    assert view(client) == NEW
    assert view(client, valid_at=BEFORE) == OLD
    assert view(client, valid_at="2026-01-15T01:00:00+01:00") == OLD  # the same instant
    assert view(client, valid_at=T1) == NEW  # a valid window holds its start, not its end
    assert view(client, valid_at="2025-12-31T23:59:59Z") == EMPTY


def test_as_of_tx_draws_what_the_store_knew_after_that_transaction(client: TestClient) -> None:
    before, head = history(client)
    assert view(client, as_of_tx=before) == OLD
    assert view(client, as_of_tx=0) == EMPTY
    assert view(client, as_of_tx=head) == view(client, as_of_tx=2**63 - 1) == NEW
    # both: the instant after the changes, as known before them
    assert view(client, as_of_tx=before, valid_at="2026-03-01T00:00:00Z") == OLD
    assert view(client, as_of_tx=head, valid_at=BEFORE) == OLD
    # each point keeps its own cached view, and the current one is untouched by them
    assert client.post("/graph", json={}).content == client.post("/graph", json={}).content
    assert view(client) == NEW


def test_the_options_apply_at_a_past_point_too(client: TestClient) -> None:
    before, _ = history(client)
    out = view(client, as_of_tx=before, type=EX + "Store")
    assert out["nodes"] == [{"iri": EX + "db", "label": "DB", "type": EX + "Store", "deg": 0}]
    assert view(client, type=EX + "Store")["nodes"] == []  # db is a Database now
    past = view(client, valid_at=BEFORE, limit=1, edge_budget=0)
    assert past["nodes"] == OLD["nodes"][:1] and past["edges"] == []
    assert past["truncated"] == {"shown": 1, "of": 3, "edges_shown": 0, "edges_of": 0}


def test_a_statement_claimed_twice_is_one_edge_in_the_past_too(client: TestClient) -> None:
    """facts.dup marks the primary claim of the current state only: after the first owner's
    claim is retracted, history holds two claims that were each primary once."""
    kb = kb_of(client)
    kb.knot(PREFIXES + "ex:a ex:likes ex:b .", timestamp=T0, source="first")
    second = kb.knot(PREFIXES + "ex:a ex:likes ex:b . ex:b ex:x 1 .", timestamp=T0, source="second").tx_id
    kb.retract_source("first", "test", apply=True, expect=1, timestamp=T1)
    # a claim whose valid time starts before the primary's is a second owner's too
    kb.knot(PREFIXES + "ex:c ex:likes ex:d . ex:d ex:x 1 .", timestamp=T1, source="late")
    kb.knot(PREFIXES + "ex:c ex:likes ex:d .", timestamp=T0, source="early")
    ab = [
        {"iri": EX + "a", "label": "a", "type": None, "deg": 1},
        {"iri": EX + "b", "label": "b", "type": None, "deg": 1},
    ]
    cd = [
        {"iri": EX + "c", "label": "c", "type": None, "deg": 1},
        {"iri": EX + "d", "label": "d", "type": None, "deg": 1},
    ]
    for point in ({}, {"as_of_tx": second}, {"valid_at": BEFORE}, {"as_of_tx": second, "valid_at": BEFORE}):
        out = view(client, **point)
        assert out["nodes"][:2] == ab and out["edges"][0] == [0, 1, "likes"], point
    assert view(client, as_of_tx=second)["edges"] == [[0, 1, "likes"]]
    # before T1 only the early owner's claim of c likes d holds, and ex:d is no subject yet
    c_alone = {"iri": EX + "c", "label": "c", "type": None, "deg": 0}
    assert view(client, valid_at=BEFORE)["nodes"] == [*ab, c_alone]
    now = view(client)
    assert now["nodes"] == [*ab, *cd] and now["edges"] == [[0, 1, "likes"], [2, 3, "likes"]]


def test_a_past_label_and_type_are_read_at_that_point(client: TestClient) -> None:
    kb = kb_of(client)
    t0 = kb.knot(PREFIXES + 'ex:a a ex:First ; rdfs:label "one" .', timestamp=T0).tx_id
    kb.knot(PREFIXES + 'ex:a a ex:Second ; rdfs:label "two" .', timestamp=T1)
    kb.knot(PREFIXES + "ex:a a ex:First .", timestamp=T1, source="again")  # a second claim: no move
    kb.retract(EX + "a", RDFS_LABEL, {"str": "one"}, timestamp="2026-03-01T00:00:00Z")
    assert view(client)["nodes"] == [{"iri": EX + "a", "label": "two", "type": EX + "Second", "deg": 0}]
    first = [{"iri": EX + "a", "label": "one", "type": EX + "First", "deg": 0}]
    assert view(client, as_of_tx=t0)["nodes"] == view(client, valid_at=BEFORE)["nodes"] == first
    both = [{"iri": EX + "a", "label": "one", "type": EX + "Second", "deg": 0}]
    assert view(client, valid_at="2026-02-15T00:00:00Z")["nodes"] == both


def test_rule_5_a_past_view_is_byte_identical_and_writes_nothing(client: TestClient) -> None:
    before, _ = history(client)
    snapshot = store_snapshot(client)
    for body in ({"valid_at": BEFORE}, {"as_of_tx": before}):
        first = client.post("/graph", json=body).content
        assert all(client.post("/graph", json=body).content == first for _ in range(2))
    assert store_snapshot(client) == snapshot


def test_a_bad_read_point_is_a_400_naming_the_field(client: TestClient) -> None:
    for body, reason, field in (
        ({"valid_at": "yesterday"}, "invalid_field", "valid_at"),
        ({"valid_at": ""}, "invalid_field", "valid_at"),
        ({"valid_at": 20260101}, "wrong_type", "valid_at"),
        ({"as_of_tx": -1}, "invalid_field", "as_of_tx"),
        ({"as_of_tx": 2**63}, "invalid_field", "as_of_tx"),
        ({"as_of_tx": "3"}, "wrong_type", "as_of_tx"),
        ({"as_of_tx": 1.5}, "wrong_type", "as_of_tx"),
        ({"as_of_tx": True}, "wrong_type", "as_of_tx"),
        ({"as_of_tx": 1, "valid_at": "soon"}, "invalid_field", "valid_at"),
    ):
        assert problem(client.post("/graph", json=body), reason)["field"] == field, body
    # the domain names the caller's field too, not /query's "tx"
    with pytest.raises(InvalidField) as refused:
        kb_of(client).analytics.graph(as_of_tx=-1)
    assert refused.value.field == "as_of_tx"
