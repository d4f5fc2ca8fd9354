"""quipu_project (tools-search §5.14, §6.5, §6.6): the projection, its algorithms and their
persistence, over REST and a real store. Each numbered rule has a test named after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from fastapi.testclient import TestClient

from tests.rest.support import kb_of, raw, serve

from .support import EX, G1, T0, T1, knot, ok, refused, store_snapshot

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
Q = "https://quipu.dev/ontology/"
PREFIX = f"@prefix ex: <{EX}> .\n"
# Two directed triangles joined by one edge c -> d: the check of §6.6.
TRIANGLES = PREFIX + (
    "ex:a ex:to ex:b . ex:b ex:to ex:c . ex:c ex:to ex:a . "
    "ex:d ex:to ex:e . ex:e ex:to ex:f . ex:f ex:to ex:d . ex:c ex:link ex:d ."
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def project(client: TestClient, **body: object) -> dict[str, Any]:
    return ok(client, "/project", **body)


def test_rule_1_one_type_fact_is_two_nodes_and_one_edge(client: TestClient) -> None:
    knot(client, PREFIX + "ex:a a ex:C .")
    assert project(client, algorithm="stats") == {"nodes": 2, "edges": 1}
    assert project(client) == {"nodes": 2, "edges": 1}  # stats is the default


def test_literal_facts_add_nothing_and_parallel_edges_all_count(client: TestClient) -> None:
    knot(client, PREFIX + 'ex:a ex:name "A" ; ex:x ex:b ; ex:y ex:b .')
    assert project(client) == {"nodes": 2, "edges": 2}
    out = project(client, algorithm="in_degree")
    assert out == {
        "algorithm": "in_degree",
        "results": [{"entity": EX + "b", "in_degree": 2}, {"entity": EX + "a", "in_degree": 0}],
        "count": 2,
    }


def test_rule_2_type_filter_keeps_edges_of_the_typed_source_only(client: TestClient) -> None:
    knot(client, PREFIX + "ex:svc a ex:Service ; ex:runsOn ex:host . ex:host ex:serves ex:svc .")
    out = project(client, algorithm="in_degree", type=EX + "Service")
    # svc -> host and svc -> Service (its own type edge) survive; host -> svc does not
    assert {r["entity"]: r["in_degree"] for r in out["results"]} == {
        EX + "host": 1,
        EX + "Service": 1,
        EX + "svc": 0,
    }
    assert project(client, type=EX + "Service") == {"nodes": 3, "edges": 2}
    assert project(client, type=EX + "NeverSeen") == {"nodes": 0, "edges": 0}


def test_rule_3_an_unknown_predicate_is_empty_but_an_unknown_graph_is_an_error(client: TestClient) -> None:
    knot(client, PREFIX + "ex:a ex:to ex:b .")
    assert project(client, predicate=EX + "nothing") == {"nodes": 0, "edges": 0}
    assert project(client, predicate=EX + "to") == {"nodes": 2, "edges": 1}
    refused(client, "/project", "unknown graph: http://ex.org/nowhere", graph=EX + "nowhere")


def test_a_named_graph_projects_its_own_facts_only(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    knot(client, PREFIX + "ex:a ex:to ex:b .")
    knot(client, PREFIX + "ex:x ex:to ex:y . ex:y ex:to ex:z .", graph=G1)
    assert project(client, graph=G1) == {"nodes": 3, "edges": 2}
    assert project(client) == {"nodes": 2, "edges": 1}


def test_a_dataset_projects_the_union_of_its_members(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    knot(client, PREFIX + "ex:a ex:to ex:b .")
    knot(client, PREFIX + "ex:b ex:to ex:c .", graph=G1)
    ok(client, "/datasets", action="create", name=EX + "both", members=["urn:quipu:graph:root", G1])
    assert project(client, graph=EX + "both") == {"nodes": 3, "edges": 2}
    path = project(client, algorithm="shortest_path", graph=EX + "both", **{"from": EX + "a", "to": EX + "c"})
    assert path["length"] == 2


def test_rule_4_components_are_strongly_connected(client: TestClient) -> None:
    knot(client, PREFIX + "ex:a ex:to ex:b . ex:b ex:to ex:c .")
    out = project(client, algorithm="components")
    assert out["count"] == 3
    assert [c["entities"] for c in out["components"]] == [[EX + "a"], [EX + "b"], [EX + "c"]]


def test_components_order_by_size_then_smallest_member(client: TestClient) -> None:
    knot(
        client,
        PREFIX + "ex:z ex:to ex:y . ex:y ex:to ex:z . ex:b ex:to ex:a . ex:a ex:to ex:b . ex:a ex:to ex:c .",
    )
    out = project(client, algorithm="components")
    assert out["components"] == [
        {"entities": [EX + "a", EX + "b"], "size": 2},
        {"entities": [EX + "y", EX + "z"], "size": 2},
        {"entities": [EX + "c"], "size": 1},
    ]


def test_louvain_finds_the_two_triangles_of_the_spec_check(client: TestClient) -> None:
    knot(client, TRIANGLES)
    out = project(client, algorithm="louvain")
    assert out["algorithm"] == "louvain" and out["count"] == 2 and out["persisted"] is None
    assert [c["entities"] for c in out["communities"]] == [
        [EX + "a", EX + "b", EX + "c"],
        [EX + "d", EX + "e", EX + "f"],
    ]
    assert [c["community"] for c in out["communities"]] == [Q + "community_0", Q + "community_1"]
    assert out["modularity"] == pytest.approx(2 * (3 / 7 - 0.25), abs=1e-12)  # 0.357142...
    assert project(client, algorithm="community") == out  # the alias


def test_rule_5_louvain_is_deterministic(client: TestClient) -> None:
    knot(client, TRIANGLES + " ex:a ex:to ex:f . ex:b ex:to ex:e .")
    first = project(client, algorithm="louvain")
    assert all(project(client, algorithm="louvain") == first for _ in range(3))


def test_rule_6_persisted_louvain_rerun_on_an_unchanged_graph_writes_nothing(client: TestClient) -> None:
    knot(client, TRIANGLES)
    out = project(client, algorithm="louvain", persist=True, timestamp=T0)
    assert out["persisted"] == 6
    members = _values(client, Q + "memberOfCommunity")
    assert members == sorted(
        [(EX + x, Q + "community_0") for x in "abc"] + [(EX + x, Q + "community_1") for x in "def"]
    )
    before = store_snapshot(client)
    again = project(client, algorithm="louvain", persist=True, timestamp=T1)
    assert again == out
    assert store_snapshot(client) == before  # no transaction, no retraction, no event


def test_persisted_louvain_supersedes_changed_membership(client: TestClient) -> None:
    knot(client, TRIANGLES)
    project(client, algorithm="louvain", persist=True, timestamp=T0)
    txs = _transactions(client)
    # f leaves the graph (its two edges retracted) and g joins the second triangle
    for subject, target in (("e", "f"), ("f", "d")):
        ok(client, "/retract", entity=EX + subject, predicate=EX + "to", value={"iri": EX + target})
    knot(client, PREFIX + "ex:g ex:to ex:d, ex:e .")
    out = project(client, algorithm="louvain", persist=True, timestamp=T1)
    assert [c["entities"] for c in out["communities"]] == [
        [EX + "a", EX + "b", EX + "c"],
        [EX + "d", EX + "e", EX + "g"],
    ]
    assert _values(client, Q + "memberOfCommunity") == [
        (EX + x, Q + ("community_0" if x in "abc" else "community_1")) for x in "abcdeg"
    ]
    new = [t[1] for t in _transactions(client) if t not in txs]
    assert new[-1] == "algo:louvain" and new.count("algo:louvain") == 1
    # d kept its claim from T0; g's is new at T1; f's closed at T1
    assert _claims(client, "d") == [(T0, None)]
    assert _claims(client, "g") == [(T1, None)]
    assert _claims(client, "f") == [(T0, T1)]


def _claims(client: TestClient, local: str) -> list[tuple[str, str | None]]:
    found = raw(
        client,
        "SELECT f.valid_from, f.valid_to FROM facts f JOIN terms t ON t.id = f.e "
        f"WHERE t.iri = '{EX}{local}' AND f.op = 1 AND f.a = "
        f"(SELECT id FROM terms WHERE iri = '{Q}memberOfCommunity') ORDER BY f.id",
    )
    return [(r[0], r[1]) for r in found]


def test_persisted_facts_land_in_root_even_from_a_named_graph(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    knot(client, TRIANGLES, graph=G1)
    assert project(client, algorithm="louvain", graph=G1, persist=True)["persisted"] == 6
    assert len(_values(client, Q + "memberOfCommunity")) == 6
    assert project(client, graph=G1) == {"nodes": 6, "edges": 7}  # nothing written into G1


def test_pagerank_matches_networkx_with_the_same_settings(client: TestClient) -> None:
    knot(client, TRIANGLES + " ex:a ex:to ex:b . ex:f ex:to ex:sink . ex:b a ex:Thing .")
    out = project(client, algorithm="pagerank", limit=100, tolerance=1e-12, max_iters=1000)
    assert out["algorithm"] == "pagerank" and out["personalized"] is False and out["persisted"] is None
    graph = _networkx(client)
    expected = nx.pagerank(graph, alpha=0.85, tol=1e-14, max_iter=1000)
    got = {r["entity"]: r["score"] for r in out["results"]}
    assert got.keys() == expected.keys()
    for node, score in expected.items():
        assert got[node] == pytest.approx(score, rel=1e-5)
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True) and sum(scores) == pytest.approx(1.0)


def test_personalized_pagerank_matches_networkx_and_spreads_dangling_mass_along_the_seeds(
    client: TestClient,
) -> None:
    knot(client, TRIANGLES + " ex:f ex:to ex:sink . ex:x ex:to ex:a .")
    seeds = [EX + "d", EX + "d", EX + "a"]  # a seed listed twice weighs twice
    out = project(client, algorithm="ppr", seeds=seeds, limit=100, tolerance=1e-12, max_iters=1000)
    assert out["personalized"] is True
    personalization = {EX + "d": 2 / 3, EX + "a": 1 / 3}
    graph = _networkx(client)
    expected = nx.pagerank(
        graph, alpha=0.85, personalization=personalization, dangling=personalization, tol=1e-14, max_iter=1000
    )
    got = {r["entity"]: r["score"] for r in out["results"]}
    for node, score in expected.items():
        assert got[node] == pytest.approx(score, rel=1e-5, abs=1e-15)
    assert got[EX + "x"] == 0.0  # nothing restarts at x and nothing points to it


def test_rule_7_only_unknown_seeds_give_global_pagerank(client: TestClient) -> None:
    knot(client, TRIANGLES)
    glob = project(client, algorithm="pagerank", limit=6)
    out = project(client, algorithm="ppr", seeds=[EX + "never-seen"], limit=6)
    assert out["personalized"] is False and out["results"] == glob["results"]
    assert project(client, algorithm="ppr", limit=6)["results"] == glob["results"]  # no seeds


def test_a_known_seed_outside_the_projection_restarts_uniformly_but_reports_personalized(
    client: TestClient,
) -> None:
    knot(client, TRIANGLES + ' ex:lonely ex:name "x" .')
    glob = project(client, algorithm="pagerank", limit=6)
    out = project(client, algorithm="ppr", seeds=[EX + "lonely"], limit=6)
    assert out["personalized"] is True and out["results"] == glob["results"]


def test_persisted_pagerank_rewrites_only_changed_scores(client: TestClient) -> None:
    knot(client, TRIANGLES)
    out = project(client, algorithm="pagerank", persist=True, timestamp=T0)
    assert out["persisted"] == 6
    scores = dict(_values(client, Q + "pageRank"))
    assert set(scores) == {EX + x for x in "abcdef"}
    before = store_snapshot(client)
    project(client, algorithm="pagerank", persist=True, timestamp=T1)
    assert store_snapshot(client) == before  # the transaction happens only when something changed
    refused(
        client,
        "/project",
        "'persist' applies to the global ranking",
        algorithm="ppr",
        seeds=[EX + "a"],
        persist=True,
    )
    assert store_snapshot(client) == before


def test_shortest_path(client: TestClient) -> None:
    knot(client, TRIANGLES)
    out = project(client, algorithm="shortest_path", **{"from": EX + "a", "to": EX + "e"})
    assert out == {
        "algorithm": "shortest_path",
        "from": EX + "a",
        "to": EX + "e",
        "path": [EX + "a", EX + "b", EX + "c", EX + "d", EX + "e"],
        "length": 4,
    }
    back = project(client, algorithm="shortest_path", **{"from": EX + "e", "to": EX + "a"})
    assert back["path"] is None and back["length"] is None  # directed: no way back
    same = project(client, algorithm="shortest_path", **{"from": EX + "a", "to": EX + "a"})
    assert same["path"] == [EX + "a"] and same["length"] == 0
    unknown = project(client, algorithm="shortest_path", **{"from": EX + "a", "to": EX + "zz"})
    assert unknown["path"] is None
    refused(
        client, "/project", "missing 'from' IRI for shortest_path", algorithm="shortest_path", to=EX + "a"
    )
    response = client.post("/project", json={"algorithm": "shortest_path", "from": EX + "a"})
    assert response.status_code == 400 and "missing 'to' IRI for shortest_path" in response.json()["error"]


def test_bad_input_names_the_field(client: TestClient) -> None:
    knot(client, TRIANGLES)
    refused(client, "/project", "unknown algorithm: magic (try: stats, in_degree", algorithm="magic")
    for field, value in (("limit", -1), ("max_iters", -3), ("damping", 1.5), ("limit", "5"), ("seeds", "x")):
        response = client.post("/project", json={"algorithm": "pagerank", field: value})
        assert response.status_code == 400, (field, response.text)
        assert field in response.text
    refused(client, "/project", "predicate", predicate="not an iri")


def test_unknown_fields_are_reported(client: TestClient) -> None:
    out = project(client, algorithm="stats", colour="blue")
    assert out == {"nodes": 0, "edges": 0, "ignored_fields": ["colour"]}


def test_rule_8_a_read_only_server_refuses_even_stats(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as c:
        response = c.post("/project", json={"algorithm": "stats"})
        assert response.status_code == 403
        error = response.json()["error"]
        assert "read-only" in error and "read-only algorithms" in error  # says why stats is refused


def test_the_projection_is_memoised_until_a_transaction_commits(client: TestClient) -> None:
    knot(client, PREFIX + "ex:a ex:to ex:b .")
    analytics = kb_of(client).analytics
    assert project(client) == {"nodes": 2, "edges": 1}
    cached = dict(analytics.projections._built)
    assert project(client, algorithm="in_degree")["count"] == 2
    assert dict(analytics.projections._built) == cached  # same head: no new read
    knot(client, PREFIX + "ex:b ex:to ex:c .")
    assert project(client) == {"nodes": 3, "edges": 2}


def _values(client: TestClient, predicate: str) -> list[tuple[str, object]]:
    found = ok(
        client, "/query", query=f"SELECT ?s ?o WHERE {{ ?s <{predicate}> ?o }} ORDER BY ?s ?o", verbose=True
    )["rows"]
    return [(r["s"], r["o"]) for r in found]


def _transactions(client: TestClient) -> list[tuple[int, str]]:
    return [(int(r[0]), str(r[1])) for r in raw(client, "SELECT id, source FROM transactions ORDER BY id")]


def _networkx(client: TestClient) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    for r in ok(client, "/query", query="SELECT ?s ?o WHERE { ?s ?p ?o FILTER(isIRI(?o)) }", verbose=True)[
        "rows"
    ]:
        graph.add_edge(r["s"], r["o"])
    return graph
