"""quipu_datasets (tools-graphs-governance §1.6): rules DS-1..DS-6, and FROM <dataset> /
graph=<dataset> reading the union of the members, in SQL (never the rdflib fallback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quipu.store.schema import ROOT_IRI
from tests.rest.support import kb_of, serve

from .support import EX, G1, G2, G3, META_IRI, knot, ok, refused, rows, store_snapshot, subjects

DS = EX + "ds"
Q = "https://quipu.dev/ontology/"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        for i, g in enumerate((G1, G2, G3), start=1):
            ok(c, "/graph/create", graph=g)
            knot(c, f"<{EX}s{i}> <{EX}p> {i} .", graph=g)
        knot(c, f"<{EX}root> <{EX}p> 0 .")
        yield c


def test_create_list_show_remove(client: TestClient) -> None:
    assert ok(client, "/datasets") == {"datasets": []}  # list is the default action
    out = ok(
        client,
        "/datasets",
        action="create",
        name=DS,
        members=[G1, {"graph": G2, "ord": 2}, {"graph": G3, "ord": 1}],
    )
    assert out == {"created": DS, "members": 3}
    assert ok(client, "/datasets", action="list") == {"datasets": [DS]}
    # Ranked ascending first, then unranked by IRI.
    assert ok(client, "/datasets", action="show", name=DS) == {
        "name": DS,
        "members": [{"graph": G3, "ord": 1}, {"graph": G2, "ord": 2}, {"graph": G1, "ord": None}],
    }
    assert ok(client, "/datasets", action="remove", name=DS) == {"removed": True}
    assert ok(client, "/datasets", action="remove", name=DS) == {"removed": False}
    refused(client, "/datasets", "no such dataset", action="show", name=DS)


def test_ds1_create_replaces_the_member_set(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[G1, G2])
    ok(client, "/datasets", action="create", name=DS, members=[G3])
    assert ok(client, "/datasets", action="show", name=DS)["members"] == [{"graph": G3, "ord": None}]
    assert subjects(client, graph=DS) == [EX + "s3"]


def test_a_dataset_reads_as_the_union_of_its_members_in_sql(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[G1, G2])
    assert subjects(client, graph=DS) == [EX + "s1", EX + "s2"]
    text = f"SELECT DISTINCT ?s FROM <{DS}> WHERE {{ ?s ?p ?o }} ORDER BY ?s"
    assert [r["s"] for r in rows(client, text, verbose=True)] == [EX + "s1", EX + "s2"]
    # FROM overrides the graph parameter (tools-core §1.1 rule 4).
    assert [r["s"] for r in rows(client, text, graph=G3, verbose=True)] == [EX + "s1", EX + "s2"]
    # FROM NAMED <dataset> makes its members the named graphs.
    named = f"SELECT DISTINCT ?g FROM NAMED <{DS}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }} ORDER BY ?g"
    assert [r["g"] for r in rows(client, named, verbose=True)] == [G1, G2]
    # The compiler answers it in one SQL statement.
    kb = kb_of(client)
    for query in (text, "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?s"):
        assert kb.query_result(query, graph=DS).plan == "sql"


def test_ds2_an_unregistered_member_contributes_nothing_and_never_root(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[EX + "later"])
    assert subjects(client, graph=DS) == []  # not ROOT's subjects
    ok(client, "/graph/create", graph=EX + "later")
    knot(client, f"<{EX}late> <{EX}p> 1 .", graph=EX + "later")
    assert subjects(client, graph=DS) == [EX + "late"]


def test_root_and_the_meta_graph_as_members(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[ROOT_IRI, META_IRI, G1])
    # ROOT counts when named; the meta-graph is read only by naming it directly.
    assert subjects(client, graph=DS) == [EX + "root", EX + "s1"]


def test_ds3_the_dataset_is_mirrored_into_the_meta_graph_as_history(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[G1, G2])
    ok(client, "/datasets", action="create", name=DS, members=[G3])
    found = rows(client, f"SELECT ?p ?o WHERE {{ <{DS}> ?p ?o }}", graph=META_IRI, verbose=True)
    assert sorted((r["p"], r["o"]) for r in found) == sorted(
        [
            ("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", Q + "Dataset"),
            (Q + "includesGraph", G1),
            (Q + "includesGraph", G2),
            (Q + "includesGraph", G3),
        ]
    )


def test_ds4_a_dataset_is_never_implicitly_active(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[G1, G2])
    assert subjects(client) == [EX + "root"]


def test_ds5_mixed_ranked_and_unranked_members(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[{"graph": G1, "ord": 5}, G2, {"graph": G3}])
    assert [m["ord"] for m in ok(client, "/datasets", action="show", name=DS)["members"]] == [5, None, None]


@pytest.mark.parametrize("action", ["create", "remove"])
def test_ds6_the_frozen_dataset_is_not_managed_here(client: TestClient, action: str) -> None:
    refused(
        client,
        "/datasets",
        "maintained by freeze",
        action=action,
        name="urn:quipu:dataset:frozen",
        members=[G1],
    )


@pytest.mark.parametrize(
    "body, field, phrase",
    [
        ({"action": "drop"}, "action", "unknown action 'drop'"),
        ({"action": "create", "members": [G1]}, "name", "missing 'name'"),
        ({"action": "show"}, "name", "missing 'name'"),
        ({"action": "create", "name": DS}, "members", "missing 'members'"),
        ({"action": "create", "name": DS, "members": []}, "members", "an empty dataset names nothing"),
        ({"action": "create", "name": DS, "members": [5]}, "members", "members[0]"),
        ({"action": "create", "name": DS, "members": [{"ord": 1}]}, "members", "members[0]"),
        ({"action": "create", "name": DS, "members": [{"graph": G1, "ord": "1"}]}, "members", "integer rank"),
        ({"action": "create", "name": DS, "members": [{"graph": G1, "ord": 1.5}]}, "members", "integer rank"),
        (
            {"action": "create", "name": DS, "members": [{"graph": G1, "ord": 1}, {"graph": G2, "ord": 1}]},
            "members",
            f"<{G1}> and <{G2}> both declare ord 1",
        ),
        ({"action": "create", "name": DS, "members": [G1, G1]}, "members", "listed twice"),
        ({"action": "create", "name": G1, "members": [G2]}, "name", "registered graph"),
        ({"action": "create", "name": "no iri", "members": [G2]}, "name", "IRI"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    client: TestClient, body: dict[str, object], field: str, phrase: str
) -> None:
    ok(client, "/datasets", action="create", name=EX + "other", members=[G1])
    before = store_snapshot(client)
    response = client.post("/datasets", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field and phrase in response.json()["error"], response.json()
    assert store_snapshot(client) == before


def test_export_of_a_dataset_is_the_union(client: TestClient) -> None:
    ok(client, "/datasets", action="create", name=DS, members=[G1, G2])
    text = client.post("/export", json={"graph": DS, "format": "ntriples"}).text
    assert f"<{EX}s1>" in text and f"<{EX}s2>" in text and f"<{EX}s3>" not in text
