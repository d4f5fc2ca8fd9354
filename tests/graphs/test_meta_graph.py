"""The label meta-graph ``urn:quipu:graph:meta`` [decided here]: callers read it only by naming
it (``graph=``, ``FROM``, ``FROM NAMED``); it never shows in ``GRAPH ?g`` or datasets; and nothing but the label, dataset and lifecycle tools writes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import serve

from .support import EX, G1, META_IRI, T0, knot, ok, refused, rows, store_snapshot

Q = "https://quipu.dev/ontology/"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        ok(c, "/graph/create", graph=G1)
        ok(c, "/graph/label", graph=G1, timestamp=T0, freshness="fresh")
        knot(c, f"<{EX}a> <{EX}p> 1 .", graph=G1)
        yield c


def test_named_directly_it_is_readable(client: TestClient) -> None:
    expected = [{"s": G1, "o": "fresh"}]
    assert rows(client, "SELECT ?s ?o WHERE { ?s ?p ?o }", graph=META_IRI, verbose=True) == expected
    assert rows(client, f"SELECT ?s ?o FROM <{META_IRI}> WHERE {{ ?s ?p ?o }}", verbose=True) == expected
    named = f"SELECT ?s ?o FROM NAMED <{META_IRI}> WHERE {{ GRAPH <{META_IRI}> {{ ?s ?p ?o }} }}"
    assert rows(client, named, verbose=True) == expected


def test_it_never_appears_among_the_named_graphs(client: TestClient) -> None:
    found = rows(client, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", verbose=True)
    assert found == [{"g": G1}]


@pytest.mark.parametrize(
    "route, body",
    [
        ("/knot", {"turtle": f'<{EX}a> <{Q}freshness> "stale" .', "graph": META_IRI}),
        ("/graph/create", {"graph": META_IRI}),
        ("/overlay/create", {"overlay": META_IRI}),
    ],
)
def test_writes_into_it_are_refused(client: TestClient, route: str, body: dict[str, object]) -> None:
    before = store_snapshot(client)
    response = client.post(route, json=body)
    assert response.status_code == 400 and response.json()["field"] in ("graph", "overlay"), response.text
    assert store_snapshot(client) == before


def test_knot_into_it_names_the_tools_that_write_it(client: TestClient) -> None:
    refused(client, "/knot", "quipu_graph_label", turtle=f"<{EX}a> <{EX}p> 1 .", graph=META_IRI)


def test_sparql_update_into_it_is_refused(client: TestClient) -> None:
    before = store_snapshot(client)
    response = client.post(
        "/update",
        content=f'INSERT DATA {{ GRAPH <{META_IRI}> {{ <{G1}> <{Q}freshness> "stale" }} }}',
        headers={"Content-Type": "application/sparql-update"},
    )
    assert response.status_code == 400 and "quipu_graph_label" in response.json()["error"], response.text
    assert store_snapshot(client) == before
