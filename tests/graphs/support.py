"""Helpers shared by the named-graph tests: a REST client over a real store, and short calls."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.rest.support import raw

EX = "http://ex.org/"
G1, G2, G3 = EX + "g1", EX + "g2", EX + "g3"
ROOT_IRI = "urn:quipu:graph:root"
META_IRI = "urn:quipu:graph:meta"
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"


def ok(client: TestClient, route: str, **body: Any) -> dict[str, Any]:
    response = client.post(route, json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def refused(client: TestClient, route: str, phrase: str, status: int = 400, **body: Any) -> dict[str, Any]:
    response = client.post(route, json=body)
    assert response.status_code == status, response.text
    out: dict[str, Any] = response.json()
    assert phrase in out["error"], out
    return out


def knot(client: TestClient, turtle: str, graph: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"turtle": turtle}
    if graph is not None:
        body["graph"] = graph
    return ok(client, "/knot", **body)


def rows(client: TestClient, query: str, **fields: Any) -> list[dict[str, Any]]:
    out = ok(client, "/query", query=query, **fields)
    return list(out["rows"])


def subjects(client: TestClient, **fields: Any) -> list[str]:
    found = rows(client, "SELECT DISTINCT ?s WHERE { ?s ?p ?o } ORDER BY ?s", verbose=True, **fields)
    return [r["s"] for r in found]


def graph_rows(client: TestClient, **params: str) -> dict[str, Any]:
    response = client.get("/graphs", params=params)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def store_snapshot(client: TestClient) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables a graphs-family refusal must leave unchanged."""
    tables = (
        "facts",
        "transactions",
        "terms",
        "graphs",
        "datasets",
        "dataset_members",
        "frozen_packs",
        "events",
    )
    return {t: sorted(map(tuple, raw(client, f"SELECT * FROM {t}")), key=repr) for t in tables}
