"""quipu_report (tools-search §5.15): hubs, surprising bridges, questions and the summary, over
REST and a real store. Each numbered rule has a test named after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from fastapi.testclient import TestClient

from tests.rest.support import serve

from .support import EX, knot, ok, store_snapshot

Q = "https://quipu.dev/ontology/"
PREFIX = f"@prefix ex: <{EX}> .\n"


def clique(names: str) -> str:
    return " ".join(f"ex:{a} ex:to ex:{b} ." for a in names for b in names if a != b)


# Two dense clusters and one bridge b -> y; x -> z twice over different predicates
CLUSTERS = PREFIX + clique("abcd") + " " + clique("wxyz") + " ex:b ex:bridge ex:y ."


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def report(client: TestClient, **body: object) -> dict[str, Any]:
    return ok(client, "/report", **body)


def test_rule_2_a_single_bridge_between_dense_clusters_has_rarity_1_and_ranks_first(
    client: TestClient,
) -> None:
    knot(client, CLUSTERS)
    out = report(client)
    assert out["graph"]["nodes"] == 8 and out["graph"]["edges"] == 25 and out["graph"]["communities"] == 2
    (bridge,) = out["surprising_connections"]
    assert bridge == {
        "from": EX + "b",
        "to": EX + "y",
        "predicate": EX + "bridge",
        "community_from": Q + "community_0",
        "community_to": Q + "community_1",
        "bridge_rarity": 1,
    }


def test_bridges_rank_by_rarity_then_pagerank_weight(client: TestClient) -> None:
    # two a-side/w-side bridges (rarity 2) and one bridge to a third cluster (rarity 1)
    knot(
        client,
        PREFIX
        + clique("abcd")
        + " "
        + clique("wxyz")
        + " "
        + clique("pqrs")
        + " ex:a ex:link ex:w . ex:b ex:link ex:x . ex:c ex:link ex:p .",
    )
    out = report(client)
    rarities = [s["bridge_rarity"] for s in out["surprising_connections"]]
    assert rarities == [1, 2, 2]
    assert out["surprising_connections"][0]["from"] == EX + "c"


def test_hubs_are_global_pagerank_with_in_degree(client: TestClient) -> None:
    knot(client, CLUSTERS + " ex:a a ex:Thing . ex:b a ex:Thing . ex:c a ex:Thing .")
    out = report(client, hubs=20)
    graph = nx.MultiDiGraph()
    for r in ok(client, "/query", query="SELECT ?s ?o WHERE { ?s ?p ?o FILTER(isIRI(?o)) }", verbose=True)[
        "rows"
    ]:
        graph.add_edge(r["s"], r["o"])
    expected = nx.pagerank(graph, alpha=0.85, tol=1e-12, max_iter=1000)
    hubs = out["hubs"]
    assert len(hubs) == 9
    for hub in hubs:
        assert hub["pagerank"] == pytest.approx(expected[hub["entity"]], rel=1e-4)
    # rule 5: rdf:type edges make the class a candidate hub, and in_degree counts them
    (thing,) = [h for h in hubs if h["entity"] == EX + "Thing"]
    assert thing["in_degree"] == 3
    scores = [h["pagerank"] for h in hubs]
    assert scores == sorted(scores, reverse=True)


def test_rule_1_default_questions_are_all_hub_questions_on_eight_nodes(client: TestClient) -> None:
    knot(client, CLUSTERS)
    out = report(client)
    assert len(out["hubs"]) == 8 and len(out["suggested_questions"]) == 8
    assert all(q.endswith(", and why is it so central?") for q in out["suggested_questions"])
    assert (
        out["suggested_questions"][0]
        == f"What is {out['hubs'][0]['entity'][len(EX) :]}, and why is it so central?"
    )


def test_bridge_and_cluster_questions_fill_the_room_left(client: TestClient) -> None:
    knot(client, CLUSTERS)
    out = report(client, hubs=1, surprises=1, questions=5)
    assert out["suggested_questions"][1:] == [
        "Why is b connected to y across otherwise-separate clusters?",
        # rule 4: both clusters have 4 members; the last tied group in canonical order wins
        "What ties together the largest cluster (4 entities, e.g. w)?",
    ]
    assert report(client, hubs=0, surprises=0, questions=0)["suggested_questions"] == []


def test_names_are_short_forms_after_hash_slash_or_colon(client: TestClient) -> None:
    knot(
        client,
        "<urn:x:alpha> <http://ex.org/to> <http://ex.org/ns#beta> . "
        "<http://ex.org/ns#beta> <http://ex.org/to> <urn:x:alpha> .",
    )
    out = report(client, hubs=2)
    assert sorted(out["suggested_questions"][:2]) == [
        "What is alpha, and why is it so central?",
        "What is beta, and why is it so central?",
    ]


def test_rule_3_two_identical_calls_return_identical_json_and_write_nothing(client: TestClient) -> None:
    knot(client, CLUSTERS)
    before = store_snapshot(client)
    first = client.post("/report", json={}).content
    assert client.post("/report", json={}).content == first
    assert client.get("/report").content == first  # GET is the all-defaults form
    assert store_snapshot(client) == before


def test_type_and_predicate_filters_shape_the_projection(client: TestClient) -> None:
    knot(client, CLUSTERS)
    assert report(client, predicate=EX + "bridge")["graph"] == {
        "nodes": 2,
        "edges": 1,
        "communities": 1,
        "modularity": 0.0,
    }
    assert report(client, type=EX + "Nothing")["graph"]["nodes"] == 0


def test_an_empty_store_reports_an_empty_graph(client: TestClient) -> None:
    assert report(client) == {
        "graph": {"nodes": 0, "edges": 0, "communities": 0, "modularity": 0.0},
        "hubs": [],
        "surprising_connections": [],
        "suggested_questions": [],
    }


def test_bad_input_names_the_field(client: TestClient) -> None:
    for field, value in (("hubs", -1), ("questions", "3"), ("type", 5)):
        response = client.post("/report", json={field: value})
        assert response.status_code == 400 and field in response.text, (field, response.text)
    assert report(client, colour=1)["ignored_fields"] == ["colour"]


def test_a_read_only_server_still_reports(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as c:
        assert c.get("/report").status_code == 200
        assert c.post("/report", json={}).status_code == 200
