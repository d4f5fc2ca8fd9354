"""``quipu_search_query`` (tools-search §5.6) over ``POST /search/query``: search hits seed one
variable of a SELECT, below every solution modifier; on the backend under test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from quipu.search.search_query import with_seeds
from quipu.store import vectors as store_vectors
from tests.rest.support import kb_of, serve

EX = "http://ex.org/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SERVICES = f"PREFIX ex: <{EX}> SELECT ?s ?o WHERE {{ ?s ex:runsOn ?o }} ORDER BY ?s"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(
        tmp_path, embedding={"dimension": 2}, search={"keyword": True, "rrf_k": 5, "fusion": "rrf"}
    ) as c:
        kb = kb_of(c)
        kb.knot(
            f"""@prefix ex: <{EX}> .
ex:web <{LABEL}> "web proxy" ; ex:runsOn ex:hostA ; a ex:Service .
ex:db <{LABEL}> "proxy database" ; ex:runsOn ex:hostB ; a ex:Service .
ex:cache <{LABEL}> "cache" ; ex:runsOn ex:hostA ; a ex:Service ."""
        )
        with kb.db.write() as ctx:
            ids = kb.db.terms.intern(ctx, [f"{EX}web", f"{EX}db", f"{EX}cache"])
            rows = {"web": [1.0, 0.0], "db": [0.0, 1.0], "cache": [0.7, 0.7]}
            store_vectors.write(
                ctx.conn,
                [(ids[f"{EX}{k}"], k, np.asarray(v, dtype="<f4").tobytes()) for k, v in rows.items()],
                "2026-01-01T00:00:00Z",
            )
        kb.search.keyword_backfill(1000)
        yield c


def _ok(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/search/query", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _refused(client: TestClient, phrase: str, **body: Any) -> None:
    response = client.post("/search/query", json=body)
    assert response.status_code == 400, response.text
    assert phrase in response.json()["error"], response.json()


def test_keyword_seeds_bind_the_variable(client: TestClient) -> None:
    body = _ok(client, sparql=SERVICES, query="proxy", query_options={"verbose": True})
    assert [row["s"] for row in body["result"]["rows"]] == [f"{EX}db", f"{EX}web"]
    assert {s["entity"] for s in body["seeds"]} == {f"{EX}web", f"{EX}db"}
    assert body["seed_count"] == body["candidate_count"] == 2 and body["seeds_truncated"] is False
    assert body["retrieval_mode"] == "keyword" and body["lexical_plane"] == "ROOT"
    assert body["rrf_k"] == 60 and body["scope_note"]


def test_rule_1_search_is_never_complete(client: TestClient) -> None:
    body = _ok(client, sparql=SERVICES, query="nothingmatches")
    assert body["seeds"] == [] and body["result"]["rows"] == [] and body["search_complete"] is False


def test_rule_2_limit_cuts_the_joined_rows_not_the_seeds(client: TestClient) -> None:
    body = _ok(client, sparql=SERVICES + " LIMIT 1", query="proxy")
    assert body["seed_count"] == 2 and body["result"]["count"] == 1


def test_aggregates_apply_after_seeding(client: TestClient) -> None:
    sparql = f"PREFIX ex: <{EX}> SELECT (COUNT(?s) AS ?n) WHERE {{ ?s a ex:Service }}"
    body = _ok(client, sparql=sparql, query="proxy")
    assert body["result"]["rows"][0]["n"] in (2, "2", {"value": "2"}) or "2" in str(
        body["result"]["rows"][0]["n"]
    )


def test_rule_5_unweighted_rrf_with_k_60_whatever_the_config(client: TestClient) -> None:
    body = _ok(client, sparql=SERVICES, mode="hybrid", query="proxy", embedding=[1.0, 0.0], seed_limit=3)
    by = {s["entity"]: s for s in body["seeds"]}
    web = by[f"{EX}web"]
    assert web["semantic_rank"] == 1 and web["keyword_rank"] is not None
    assert web["rrf_score"] == pytest.approx(1 / 61 + 1 / (60 + web["keyword_rank"]))
    assert by[f"{EX}cache"]["keyword_rank"] is None
    assert body["seeds"][0]["entity"] == f"{EX}web"
    assert body["seed_count"] == 3


def test_seed_limit_truncates(client: TestClient) -> None:
    body = _ok(client, sparql=SERVICES, mode="semantic", embedding=[1.0, 0.0], seed_limit=1)
    assert body["seed_count"] == 1 and body["candidate_count"] == 1


def test_rule_3_providers(client: TestClient) -> None:
    _refused(client, "[quipu.embedding]", sparql=SERVICES, mode="semantic", query="proxy")


def test_rule_4_valid_at_only_at_the_top(client: TestClient) -> None:
    _refused(
        client, "top-level valid_at", sparql=SERVICES, query="proxy", query_options={"valid_at": "2026-01-01"}
    )
    assert _ok(client, sparql=SERVICES, query="proxy", valid_at="2020-01-01T00:00:00Z")["seeds"] == []


@pytest.mark.parametrize(
    ("body", "phrase"),
    [
        ({"mode": "fuzzy"}, "mode must be"),
        ({"seed_limit": 0}, "seed_limit"),
        ({"seed_limit": 101}, "seed_limit"),
        ({"seed_variable": "?s"}, "seed_variable"),
        ({"sparql": "SELECT ?s WHERE { ?s ?p }"}, "SPARQL:"),
        ({"sparql": "ASK { ?s ?p ?o }"}, "SELECT"),
        ({"sparql": "SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?o } } }"}, "subqueries"),
        ({"sparql": "SELECT ?s WHERE { ?s ?p ?o OPTIONAL { ?s ?q ?r } }"}, "OPTIONAL"),
        ({"sparql": "SELECT ?s WHERE { { ?s ?p ?o } UNION { ?o ?p ?s } }"}, "UNION"),
        ({"sparql": "SELECT ?s WHERE { ?s <http://x/p>+ ?o }"}, "not"),
        ({"sparql": "SELECT ?x WHERE { ?x ?p ?o }"}, "not in scope"),
        ({"embedding": []}, "embedding"),
        ({"embedding": [1.0, 0.0]}, "keyword mode"),
        ({"query_options": {"tx": 3}}, "query_options.tx"),
        ({"query_options": {"colour": "red"}}, "unknown query option"),
        ({"query_options": {"verbose": "yes"}}, "wrong type"),
    ],
)
def test_bad_requests_are_refused_before_any_search(
    client: TestClient, body: dict[str, Any], phrase: str
) -> None:
    _refused(client, phrase, **{"sparql": SERVICES, "query": "proxy", **body})


def test_strict_fields(client: TestClient) -> None:
    response = client.post("/search/query", json={"sparql": SERVICES, "query": "proxy", "limit": 3})
    assert response.status_code == 400 and response.json()["reason"] == "unknown_field"
    response = client.post("/search/query", json={"sparql": SERVICES, "seed_limit": "5"})
    assert response.status_code == 400 and response.json()["reason"] == "wrong_type"


def test_the_seeds_open_the_where_group() -> None:
    sparql = '# a { brace in a comment\nSELECT (CONCAT("{", STR(?s)) AS ?x) WHERE { ?s ?p ?o }'
    out = with_seeds(sparql, "s", [f"{EX}a"])
    assert out.endswith(f"WHERE {{ VALUES ?s {{ <{EX}a> }}  ?s ?p ?o }}")
    assert with_seeds("SELECT ?s { ?s ?p ?o }", "s", []) == "SELECT ?s { VALUES ?s {  }  ?s ?p ?o }"
