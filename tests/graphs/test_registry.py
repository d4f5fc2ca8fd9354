"""quipu_graph_list and quipu_graph_create (tools-graphs-governance §1.1-§1.2): rules GL-1..GL-7
and GC-1..GC-5, over REST and a real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import serve

from .support import EX, G1, G2, META_IRI, ROOT_IRI, T0, T1, graph_rows, knot, ok, refused, store_snapshot


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def test_gl7_an_empty_store_lists_root_only(client: TestClient) -> None:
    out = graph_rows(client)
    assert out["count"] == 1
    (root,) = out["graphs"]
    # GL-1: ROOT is listed by its IRI with id 0; GL-5: undeclared axes are null, never defaults;
    # GL-6: a row from before creation provenance has a null actor and the registry's created_at.
    assert root == {
        "iri": ROOT_IRI,
        "g": 0,
        "class": "committed",
        "source": None,
        "lifecycle": None,
        "creation": {"timestamp": "1970-01-01T00:00:00Z", "actor": None},
        "labels": {
            "freshness": None,
            "durability": None,
            "trust_rank": None,
            "trust_chain": None,
            "policy": None,
            "kind": None,
        },
    }


def test_gl1_the_meta_graph_is_never_listed(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    iris = [g["iri"] for g in graph_rows(client)["graphs"]]
    assert iris == [ROOT_IRI, G1] and META_IRI not in iris


def test_gl2_filters_read_the_cache_and_gl7_an_empty_filter_is_200(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    ok(client, "/graph/create", graph=G2)
    ok(client, "/graph/label", graph=G2, timestamp=T0, kind="operational")
    assert [g["iri"] for g in graph_rows(client, kind="operational")["graphs"]] == [G2]
    assert graph_rows(client, kind="knowledge") == {"count": 0, "graphs": []}
    assert graph_rows(client, lifecycle="frozen") == {"count": 0, "graphs": []}
    # A later declaration without kind replaces the cache: the filter no longer matches.
    ok(client, "/graph/label", graph=G2, timestamp=T1, freshness="fresh")
    assert graph_rows(client, kind="operational")["count"] == 0


@pytest.mark.parametrize(
    "params, phrase",
    [
        ({"kind": "Bad Kind"}, "[a-z][a-z0-9-]*"),
        ({"kind": ""}, "[a-z][a-z0-9-]*"),
        ({"lifecycle": "thawed"}, "the only lifecycle state is 'frozen'"),
    ],
)
def test_list_filters_are_parsed_strictly(client: TestClient, params: dict[str, str], phrase: str) -> None:
    response = client.get("/graphs", params=params)
    assert response.status_code == 400 and phrase in response.json()["error"]
    assert response.json()["field"] == next(iter(params))


def test_list_reports_unknown_parameters_as_ignored(client: TestClient) -> None:
    assert graph_rows(client, colour="red")["ignored_fields"] == ["colour"]


def test_gl3_a_local_graph_has_no_source(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    assert graph_rows(client)["graphs"][1]["source"] is None


def test_create_reports_its_provenance(client: TestClient) -> None:
    out = ok(client, "/graph/create", graph=G1, actor="agent/x", timestamp="2026-01-01T02:00:00+02:00")
    assert out["graph"] == G1 and out["created"] is True and isinstance(out["g"], int)
    # §0.6: the timestamp is normalised to canonical UTC.
    assert out["creation"] == {"timestamp": T0, "actor": "agent/x"}
    row = graph_rows(client)["graphs"][1]
    assert row["creation"] == {"timestamp": T0, "actor": "agent/x"} and row["g"] == out["g"]


def test_gc1_a_repeat_keeps_the_first_provenance(client: TestClient) -> None:
    first = ok(client, "/graph/create", graph=G1, actor="first", timestamp=T0)
    again = ok(client, "/graph/create", graph=G1, actor="second", timestamp=T1)
    assert again == {**first, "created": False}


def test_gc2_created_means_this_call_inserted_the_row(client: TestClient) -> None:
    # The IRI is interned (mentioned as an object) before it is ever registered.
    knot(client, f"<{EX}a> <{EX}p> <{G1}> .")
    assert ok(client, "/graph/create", graph=G1)["created"] is True


def test_gc3_registration_writes_no_facts_and_enables_writes(client: TestClient) -> None:
    refused(client, "/knot", "create and register it first", turtle=f"<{EX}a> <{EX}p> 1 .", graph=G1)
    ok(client, "/graph/create", graph=G1)
    assert ok(client, "/query", query="SELECT * WHERE { ?s ?p ?o }", graph=G1)["count"] == 0
    knot(client, f"<{EX}a> <{EX}p> 1 .", graph=G1)
    assert ok(client, "/query", query="SELECT * WHERE { ?s ?p ?o }", graph=G1)["count"] == 1


def test_gc4_committed_graphs_have_no_parent(client: TestClient) -> None:
    from tests.rest.support import raw

    gid = ok(client, "/graph/create", graph=G1)["g"]
    assert raw(client, "SELECT class, parent_branch FROM graphs WHERE g = ?", gid) == [("committed", None)]


@pytest.mark.parametrize("iri", [ROOT_IRI, META_IRI, G1 + "#inferred", "urn:quipu:graph:root#inferred"])
def test_gc5_reserved_iris_are_refused(client: TestClient, iri: str) -> None:
    before = store_snapshot(client)
    body = refused(client, "/graph/create", "reserved", graph=iri)
    assert body["field"] == "graph"
    assert store_snapshot(client) == before


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "graph"),
        ({"graph": 5}, "graph"),
        ({"graph": "not an iri"}, "graph"),
        ({"graph": G1, "actor": ""}, "actor"),
        ({"graph": G1, "actor": "  "}, "actor"),
        ({"graph": G1, "timestamp": "yesterday"}, "timestamp"),
    ],
)
def test_create_refuses_bad_input_naming_the_field(
    client: TestClient, body: dict[str, object], field: str
) -> None:
    before = store_snapshot(client)
    response = client.post("/graph/create", json=body)
    assert response.status_code == 400 and response.json()["field"] == field, response.text
    assert store_snapshot(client) == before


def test_a_graph_class_is_fixed_at_create(client: TestClient) -> None:
    ok(client, "/overlay/create", overlay=G1)
    before = store_snapshot(client)
    refused(client, "/graph/create", "a graph's class is fixed at create", graph=G1)
    assert store_snapshot(client) == before


def test_unknown_fields_are_reported(client: TestClient) -> None:
    assert ok(client, "/graph/create", graph=G1, colour="red")["ignored_fields"] == ["colour"]
