"""``quipu_search`` (tools-search §5.1) over ``POST /search``: dispatch, the semantic, keyword and
hybrid branches, scopes, and the numbered rules of §5.1.12, on the backend under test.

Semantic rows here rank caller vectors against vectors written straight into the vector table
(3 dimensions, no model), so each expected order is known exactly; the real model's relevance is
tests/search/test_relevance.py's business."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from quipu.search import fusion
from quipu.store import vectors as store_vectors
from tests.rest.support import kb_of, serve

EX = "http://ex.org/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
COMMENT = "http://www.w3.org/2000/01/rdf-schema#comment"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
ON = {"keyword": True, "hybrid": True, "named_graphs": True}
DIM = {"dimension": 3}


def _client(tmp_path: Path, **search: Any) -> Any:
    return serve(tmp_path, embedding=DIM, search={**ON, **search})


def _vectors(
    kb: KnowledgeBase,
    rows: dict[str, tuple[str, list[float]]],
    *,
    named_only: bool = False,
    stamp: str = "2026-01-01T00:00:00Z",
) -> None:
    with kb.db.write() as ctx:
        ids = kb.db.terms.intern(ctx, list(rows))
        store_vectors.write(
            ctx.conn,
            [(ids[iri], text, np.asarray(vec, dtype="<f4").tobytes()) for iri, (text, vec) in rows.items()],
            stamp,
            named_only=named_only,
        )


def _index(kb: KnowledgeBase) -> None:
    kb.search.keyword_backfill(10_000)


def _post(client: TestClient, **body: Any) -> Any:
    response = client.post("/search", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _refused(client: TestClient, phrase: str, **body: Any) -> dict[str, Any]:
    response = client.post("/search", json=body)
    assert response.status_code == 400, response.text
    assert phrase in response.json()["error"], response.json()
    return dict(response.json())


def _entities(body: dict[str, Any]) -> list[str]:
    return [row["entity"] for row in body["results"]]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with _client(tmp_path) as c:
        kb = kb_of(c)
        kb.knot(
            f"""<{EX}traefik> <{LABEL}> "traefik reverse proxy" ; <{COMMENT}> "routes web traffic" .
<{EX}pg> <{LABEL}> "postgres database" ; <{EX}note> "stores orders" .
<{EX}redis> <{LABEL}> "redis cache" ; <{EX}note> "proxy for hot keys" ."""
        )
        _vectors(
            kb,
            {
                f"{EX}traefik": ("traefik reverse proxy", [1.0, 0.0, 0.0]),
                f"{EX}pg": ("postgres database", [0.0, 1.0, 0.0]),
                f"{EX}redis": ("redis cache", [0.6, 0.8, 0.0]),
            },
        )
        _index(kb)
        yield c


# -- dispatch and validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "phrase"),
    [
        ({"mode": "fuzzy", "query": "x"}, "mode must be semantic, keyword, or hybrid"),
        ({"mode": "hybrid", "alpha": 1.5, "query": "x"}, "alpha"),
        ({"mode": "hybrid", "fusion": "max", "query": "x"}, "fusion"),
        ({"mode": "hybrid", "rrf_k": 0, "query": "x"}, "rrf_k"),
        (
            {"mode": "semantic", "ranking": "fresh", "embedding": [1, 0, 0]},
            "ranking must be 'content' or 'semantic'",
        ),
        ({"mode": "semantic"}, "missing 'embedding' array or 'query' text parameter"),
        ({"mode": "semantic", "query": "proxy"}, "[quipu.embedding]"),
        ({"mode": "semantic", "embedding": [1.0, 0.0]}, "dimension"),
        ({"mode": "keyword", "query": '"open phrase'}, "unclosed keyword phrase"),
        ({"mode": "keyword", "query": "   "}, "keyword query is empty"),
        ({"mode": "keyword"}, "keyword mode requires query text"),
        ({"graph": f"{EX}nowhere", "embedding": [1, 0, 0]}, "unknown graph"),
        ({"graph": "all", "graphs": [f"{EX}g"], "embedding": [1, 0, 0]}, "not multiple selectors"),
        ({"structured_query": "a AND b", "embedding": [1, 0, 0]}, "structured"),
    ],
)
def test_bad_requests_are_400_naming_the_problem(
    client: TestClient, body: dict[str, Any], phrase: str
) -> None:
    body_out = _refused(client, phrase, **body)
    assert "field" in body_out


def test_an_empty_vector_table_has_no_dimension_to_disagree_with(tmp_path: Path) -> None:
    # Before any backfill, a vector of any length finds nothing (no error, and never a 500).
    with _client(tmp_path) as fresh:
        assert _post(fresh, embedding=[1.0, 0.0])["results"] == []


def test_explain_must_be_a_boolean(client: TestClient) -> None:
    assert client.post("/search", json={"mode": "keyword", "query": "x", "explain": "yes"}).status_code == 400


def test_hybrid_disabled_is_refused_before_the_alpha_shortcuts(tmp_path: Path) -> None:
    with _client(tmp_path, hybrid=False) as c:
        for alpha in (0, 0.5, 1):
            _refused(
                c,
                "hybrid search is disabled ([quipu.search] hybrid = false)",
                mode="hybrid",
                alpha=alpha,
                query="x",
            )


def test_hybrid_limit_over_1000_is_refused(tmp_path: Path) -> None:
    with _client(tmp_path, max_limit=5000) as c:
        _refused(
            c,
            "intermediate hybrid limit must not exceed 1000",
            mode="hybrid",
            alpha=0.5,
            query="x",
            embedding=[1, 0, 0],
            limit=1001,
        )


def test_keyword_disabled(tmp_path: Path) -> None:
    with _client(tmp_path, keyword=False) as c:
        _refused(c, "keyword search is disabled ([quipu.search] keyword = false)", mode="keyword", query="x")


def test_unknown_fields_are_reported(client: TestClient) -> None:
    assert _post(client, embedding=[1, 0, 0], colour="red")["ignored_fields"] == ["colour"]


# -- semantic ---------------------------------------------------------------------------------------


def test_semantic_ranks_by_cosine_with_raw_similarity(client: TestClient) -> None:
    body = _post(client, embedding=[1.0, 0.0, 0.0], limit=2)
    assert _entities(body) == [f"{EX}traefik", f"{EX}redis"]
    top = body["results"][0]
    assert top["similarity"] == pytest.approx(1.0) and top["score"] == top["similarity"]
    assert top["ranking_reason"] == "semantic" and top["source"] == "knowledge"
    assert top["text"] == "traefik reverse proxy" and top["valid_to"] is None
    assert body["ranking"] == "semantic" and body["scoped"] is False and body["count"] == 2
    # a caller vector need not be normalised: cosine, not the dot product
    assert _post(client, embedding=[10.0, 0.0, 0.0], limit=1)["results"][0]["similarity"] == pytest.approx(
        1.0
    )


def test_rule_17_the_embeddings_block_is_on_every_response(client: TestClient) -> None:
    empty = _post(client, embedding=[1, 0, 0], entity_type=f"{EX}Nothing")
    assert empty["results"] == [] and empty["embeddings"] == {"configured": False, "embedded_entities": 3}
    assert "embeddings" in _post(client, mode="keyword", query="zzzz")


def test_rule_6_named_only_entities_are_not_in_default_semantic_search(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(f"{EX}g")
    kb.knot(f'<{EX}ghost> <{LABEL}> "ghost entity" .', graph=f"{EX}g")
    _vectors(kb, {f"{EX}ghost": ("ghost entity", [1.0, 0.0, 0.0])}, named_only=True)
    assert f"{EX}ghost" not in _entities(_post(client, embedding=[1, 0, 0]))
    scoped = _post(client, embedding=[1, 0, 0], graph=f"{EX}g")
    assert _entities(scoped) == [f"{EX}ghost"]
    assert scoped["results"][0]["graph"] == f"{EX}g" and scoped["results"][0]["graphs"] == [f"{EX}g"]
    assert scoped["scoped"] is True


def test_explicit_semantic_scope_needs_named_graphs(tmp_path: Path) -> None:
    with _client(tmp_path, named_graphs=False) as c:
        _refused(c, "named_graphs = true", embedding=[1, 0, 0], graph="urn:quipu:graph:root")
        kb_of(c).knot(f'<{EX}a> <{LABEL}> "alpha" .')
        _index(kb_of(c))  # keyword needs only keyword = true and a complete index
        assert _entities(
            _post(c, mode="keyword", query="alpha", graph="urn:quipu:graph:root", verbose=True)
        ) == [f"{EX}a"]


def test_rule_4_scopes_filter_before_the_limit(tmp_path: Path) -> None:
    with _client(tmp_path) as c:
        kb = kb_of(c)
        lines = [f'<{EX}n{i:02}> <{LABEL}> "commonword {i}" .' for i in range(30)]
        lines.append(f"<{EX}n29> <{RDF_TYPE}> <{EX}Rare> .")
        kb.knot("\n".join(lines))
        # the scoped entity is the worst semantic match of all 30
        _vectors(kb, {f"{EX}n{i:02}": (f"commonword {i}", [1.0, 0.0, float(i)]) for i in range(30)})
        _index(kb)
        semantic = _post(c, embedding=[1, 0, 0], entity_type=f"{EX}Rare", limit=1, verbose=True)
        keyword = _post(c, mode="keyword", query="commonword", entity_type=f"{EX}Rare", limit=1, verbose=True)
        assert _entities(semantic) == _entities(keyword) == [f"{EX}n29"]
        assert semantic["scoped"] is keyword["scoped"] is True


def test_rule_8_content_ranking_demotes_a_nameonly_artifact(tmp_path: Path) -> None:
    aegis = "http://aegis.gastown.local/ontology/"
    with _client(tmp_path) as c:
        kb = kb_of(c)
        kb.knot(
            f"""<{EX}s1> a <{aegis}Section> ; <{LABEL}> "Installation" .
<{EX}s2> a <{aegis}Section> ; <{LABEL}> "Setup" ; <{aegis}content> "how to install the service" ."""
        )
        _vectors(kb, {f"{EX}s1": ("Installation", [1.0, 0.0, 0.0]), f"{EX}s2": ("Setup", [0.8, 0.6, 0.0])})
        plain = _post(c, embedding=[1, 0, 0], verbose=True)
        assert _entities(plain) == [f"{EX}s1", f"{EX}s2"]
        content = _post(c, embedding=[1, 0, 0], query="install steps", ranking="content", verbose=True)
        assert _entities(content) == [f"{EX}s2", f"{EX}s1"]
        demoted = content["results"][1]
        assert demoted["ranking_reason"] == "contentless_artifact"
        assert demoted["similarity"] == pytest.approx(1.0) and demoted["score"] == pytest.approx(0.5)
        assert content["ranking"] == "content"
        named = _post(c, embedding=[1, 0, 0], query="  INSTALLATION ", ranking="content", verbose=True)
        assert named["results"][0]["ranking_reason"] == "semantic"  # the query is its name


def test_historical_semantic_search_reads_the_vectors_live_then(client: TestClient) -> None:
    kb = kb_of(client)
    _vectors(kb, {f"{EX}traefik": ("traefik, renamed", [0.0, 0.0, 1.0])}, stamp="2026-06-01T00:00:00Z")
    then = _post(client, embedding=[1, 0, 0], limit=1, valid_at="2026-03-01T00:00:00Z", verbose=True)
    assert (
        then["results"][0]["entity"] == f"{EX}traefik"
        and then["results"][0]["text"] == "traefik reverse proxy"
    )
    now = _post(client, embedding=[1, 0, 0], limit=1, verbose=True)
    assert now["results"][0]["entity"] == f"{EX}redis"


# -- keyword ----------------------------------------------------------------------------------------


def test_rule_10_keyword_scores_are_negated_bm25_in_ascending_order(client: TestClient) -> None:
    body = _post(client, mode="keyword", query="proxy", verbose=True)
    assert set(_entities(body)) == {f"{EX}traefik", f"{EX}redis"}
    bm25 = [row["bm25"] for row in body["results"]]
    assert bm25 == sorted(bm25)
    for row in body["results"]:
        assert row["score"] > 0 and row["bm25"] == -row["score"] and row["ranking_reason"] == "keyword"
        assert row["plane"] == "ROOT" and row["source"] == "knowledge"
    assert (
        body["ranking"] == "keyword" and body["indexed_types"] == "asserted" and body["infer_types"] is False
    )


def test_rule_7_one_row_per_entity(client: TestClient) -> None:
    kb = kb_of(client)
    kb.knot(f'<{EX}traefik> <{EX}alias> "edge proxy" .')
    assert _entities(_post(client, mode="keyword", query="proxy", verbose=True)).count(f"{EX}traefik") == 1


def test_rule_9_terms_must_share_one_fact(client: TestClient) -> None:
    assert _entities(_post(client, mode="keyword", query="cache hot")) == []  # label and note
    assert _entities(_post(client, mode="keyword", query="hot keys", verbose=True)) == [f"{EX}redis"]
    assert _entities(_post(client, mode="keyword", query='"keys hot"')) == []  # a phrase keeps its order


def test_caller_text_is_never_index_syntax(client: TestClient) -> None:
    for text in ("proxy OR database", "label:proxy", "prox*", "NEAR(proxy web)", "-proxy"):
        assert client.post("/search", json={"mode": "keyword", "query": text}).status_code == 200


def test_rule_3_keyword_refuses_what_it_cannot_honour(client: TestClient) -> None:
    phrase = "keyword mode does not accept embedding, anchor, or content ranking"
    _refused(client, phrase, mode="keyword", query="proxy", embedding=[1, 0, 0])
    _refused(client, phrase, mode="keyword", query="proxy", ranking="content")
    _refused(client, phrase, mode="hybrid", alpha=0, query="proxy", embedding=[1, 0, 0])


def test_rule_11_an_incomplete_index_is_refused_and_not_built(tmp_path: Path) -> None:
    with _client(tmp_path) as c:
        kb = kb_of(c)
        kb.knot(f'<{EX}a> <{LABEL}> "alpha" .\n<{EX}b> <{LABEL}> "beta" .')
        _refused(c, "keyword index is not ready", mode="keyword", query="alpha")
        assert kb.search.keyword_index() is None
        kb.search.keyword_backfill(1)
        _refused(c, "keyword index is not ready", mode="keyword", query="alpha")
        assert kb.search.keyword_index()["cursor"] == 1  # type: ignore[index]


def test_rule_12_historical_keyword_search(tmp_path: Path) -> None:
    with _client(tmp_path) as c:
        kb = kb_of(c)
        kb.knot(f'<{EX}old> <{LABEL}> "lantern" ; a <{EX}Lamp> .', timestamp="2020-01-01T00:00:00Z")
        kb.retract(f"{EX}old", LABEL, timestamp="2022-01-01T00:00:00Z")
        kb.retract(f"{EX}old", RDF_TYPE, timestamp="2022-01-01T00:00:00Z")
        kb.knot(f'<{EX}old> <{EX}note> "lantern again" .', timestamp="2023-01-01T00:00:00Z")
        _index(kb)
        at = {"mode": "keyword", "query": "lantern", "verbose": True}
        assert _entities(_post(c, **at, valid_at="2021-01-01T00:00:00Z")) == [f"{EX}old"]
        assert _post(c, **at, valid_at="2021-01-01T00:00:00Z")["results"][0]["text"] == "lantern"
        assert _entities(_post(c, **at, valid_at="2022-01-01T00:00:00Z")) == []
        assert _post(c, **at)["results"][0]["text"] == "lantern again"
        typed = {**at, "entity_type": f"{EX}Lamp"}
        assert _entities(_post(c, **typed, valid_at="2021-01-01T00:00:00Z")) == [f"{EX}old"]
        assert _entities(_post(c, **typed)) == []  # no longer a Lamp


def test_rule_13_explicit_keyword_scope_covers_named_graphs(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(f"{EX}g")
    kb.knot(f'<{EX}inner> <{LABEL}> "proxy inside a graph" .', graph=f"{EX}g")
    assert f"{EX}inner" not in _entities(_post(client, mode="keyword", query="proxy", verbose=True))
    scoped = _post(client, mode="keyword", query="proxy", graph=f"{EX}g", verbose=True)
    assert _entities(scoped) == [f"{EX}inner"]
    assert scoped["results"][0]["plane"] == "named" and scoped["results"][0]["graph"] == f"{EX}g"
    both = _post(client, mode="keyword", query="proxy", all_graphs=True, verbose=True)
    assert set(_entities(both)) == {f"{EX}inner", f"{EX}traefik", f"{EX}redis"}
    _refused(client, "unknown graph", mode="keyword", query="proxy", graphs=[f"{EX}g", f"{EX}missing"])


def test_explain_marks_the_matched_terms(client: TestClient) -> None:
    kb_of(client).knot(f'<{EX}x> <{LABEL}> "<b>proxy</b> & friends" .')
    body = _post(client, mode="keyword", query="proxy", explain=True, verbose=True)
    for row in body["results"]:
        assert "<mark>proxy</mark>" in row["snippet"] and len(row["snippet"]) <= 320
        assert row["explain"]["bm25"] == row["bm25"] and row["explain"]["cosine"] is None
        assert row["matched_fields"]
    escaped = next(r for r in body["results"] if r["entity"] == f"{EX}x")
    assert "&lt;b&gt;" in escaped["snippet"] and "&amp;" in escaped["snippet"]


# -- hybrid ------------------------------------------------------------------------------------------


def test_rule_1_alpha_endpoints_are_the_pure_answers(client: TestClient) -> None:
    semantic = _post(client, mode="semantic", embedding=[1, 0, 0])
    assert _post(client, mode="hybrid", alpha=1, embedding=[1, 0, 0]) == semantic
    keyword = _post(client, mode="keyword", query="proxy")
    assert _post(client, mode="hybrid", alpha=0, query="proxy") == keyword


def test_rule_1_alpha_one_works_with_keyword_off(tmp_path: Path) -> None:
    with _client(tmp_path, keyword=False) as c:
        _vectors(kb_of(c), {f"{EX}a": ("a", [1.0, 0.0, 0.0])})
        assert _post(c, mode="hybrid", alpha=1, embedding=[1, 0, 0])["ranking"] == "semantic"


def test_rule_2_keyword_needs_no_provider(client: TestClient) -> None:
    assert kb_of(client).search.provider() is None
    assert _post(client, mode="hybrid", alpha=0, query="proxy")["count"] == 2


def test_hybrid_fuses_bounded_pools(client: TestClient) -> None:
    body = _post(
        client, mode="hybrid", alpha=0.5, query="proxy", embedding=[1, 0, 0], verbose=True, explain=True
    )
    # semantic pool: traefik 1.0, redis 0.6, pg 0.0; keyword pool: both proxies
    assert _entities(body)[0] == f"{EX}traefik"
    assert body["ranking"] == "hybrid" and body["fusion"] == "weighted" and body["alpha"] == 0.5
    assert body["candidate_limit"] == 100 and body["infer_types"] is True
    pg = next(r for r in body["results"] if r["entity"] == f"{EX}pg")
    assert pg["bm25"] is None and pg["explain"]["keyword_rank"] is None
    for row in body["results"]:
        assert row["ranking_reason"] == "hybrid"
    rrf = _post(
        client, mode="hybrid", alpha=0.5, fusion="rrf", query="proxy", embedding=[1, 0, 0], verbose=True
    )
    assert rrf["fusion"] == "rrf" and rrf["rrf_k"] == 60


def test_hybrid_refuses_anchor_content_and_inference_off(client: TestClient) -> None:
    _refused(
        client,
        "hybrid fusion does not accept anchor or content ranking",
        mode="hybrid",
        alpha=0.5,
        query="p",
        ranking="content",
    )
    _refused(client, "infer_types", mode="hybrid", alpha=0.5, query="p", infer_types=False)


def test_fusion_worked_examples() -> None:
    """tools-search §6.3's worked checks, and rule 14 (ties by IRI; a flat pool is all 1.0)."""
    s = [{"entity": "A", "score": 0.9}, {"entity": "B", "score": 0.7}]
    k = [{"entity": "B", "score": 12.0}, {"entity": "C", "score": 4.0}]
    weighted = fusion.fuse(s, k, alpha=0.5, method="weighted", rrf_k=60, limit=10)
    assert [(f.entity, f.score) for f in weighted] == [("A", 0.5), ("B", 0.5), ("C", 0.0)]
    rrf = fusion.fuse(s, k, alpha=0.5, method="rrf", rrf_k=60, limit=10)
    assert [f.entity for f in rrf] == ["B", "A", "C"]
    assert rrf[0].score == pytest.approx(0.0162612, abs=1e-7) and rrf[1].score == pytest.approx(
        0.0081967, abs=1e-7
    )
    flat = fusion.fuse(
        [{"entity": "Z", "score": 0.3}, {"entity": "Y", "score": 0.3}],
        [],
        alpha=1.0,
        method="weighted",
        rrf_k=60,
        limit=10,
    )
    assert [(f.entity, f.score) for f in flat] == [("Y", 1.0), ("Z", 1.0)]


# -- anchored --------------------------------------------------------------------------------------


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[TestClient]:
    """a -knows-> b -knows-> c, and d unlinked; d is the best text match, a the worst."""
    with _client(tmp_path, anchored=True) as c:
        kb = kb_of(c)
        kb.knot(
            f"""<{EX}a> <{LABEL}> "alpha node" ; <{EX}knows> <{EX}b> .
<{EX}b> <{LABEL}> "beta node" ; <{EX}knows> <{EX}c> .
<{EX}c> <{LABEL}> "gamma node" .
<{EX}d> <{LABEL}> "delta node" ."""
        )
        _vectors(
            kb,
            {
                f"{EX}a": ("alpha node", [0.0, 1.0, 0.0]),
                f"{EX}b": ("beta node", [0.6, 0.8, 0.0]),
                f"{EX}c": ("gamma node", [0.8, 0.6, 0.0]),
                f"{EX}d": ("delta node", [1.0, 0.0, 0.0]),
            },
        )
        yield c


def test_rule_16_decay_keeps_the_unreachable_one_hop_beyond(chain: TestClient) -> None:
    body = _post(chain, embedding=[1, 0, 0], anchor=f"{EX}a", verbose=True, explain=True)
    assert _entities(body) == [f"{EX}b", f"{EX}c", f"{EX}d", f"{EX}a"]
    scores = {r["entity"]: (r["score"], r["text_score"], r["hops"]) for r in body["results"]}
    assert scores[f"{EX}d"] == pytest.approx((1.0 * 0.5**4, 1.0, None))  # s x decay^(max_hops+1)
    assert scores[f"{EX}c"][0] == pytest.approx(0.8 * 0.25) and scores[f"{EX}c"][2] == 2
    assert body["ranking"] == "anchored"
    block = body["anchor"]
    assert block["iri"] == f"{EX}a" and block["mode"] == "decay" and block["reached"] == 3
    assert block["candidate_sources"] == ["global", "neighbourhood"] and block["truncated"] is False
    path = next(r["path"] for r in body["results"] if r["entity"] == f"{EX}c")
    assert path == f"{EX}a -[{EX}knows]-> {EX}b -[{EX}knows]-> {EX}c"


def test_rule_16_filter_drops_and_sort_orders_by_hops(chain: TestClient) -> None:
    filtered = _post(chain, embedding=[1, 0, 0], anchor="alpha node", anchor_mode="filter", verbose=True)
    assert _entities(filtered) == [f"{EX}c", f"{EX}b", f"{EX}a"]  # by text score, d gone
    by_hops = _post(chain, embedding=[1, 0, 0], anchor=f"{EX}a", anchor_mode="sort", verbose=True)
    assert _entities(by_hops) == [f"{EX}a", f"{EX}b", f"{EX}c", f"{EX}d"]
    assert by_hops["results"][0]["score"] == by_hops["results"][0]["text_score"]


def test_rule_15_max_hops_is_capped_at_four(chain: TestClient) -> None:
    assert _post(chain, embedding=[1, 0, 0], anchor=f"{EX}a", max_hops=9)["anchor"]["max_hops"] == 4


def test_anchored_refusals(chain: TestClient, tmp_path: Path) -> None:
    _refused(chain, "ROOT graph only", embedding=[1, 0, 0], anchor=f"{EX}a", graph="urn:quipu:graph:root")
    _refused(chain, "keyword mode does not accept", mode="keyword", query="node", anchor=f"{EX}a")
    _refused(
        chain, "hybrid fusion does not accept anchor", mode="hybrid", alpha=0.5, query="n", anchor=f"{EX}a"
    )
    _refused(chain, "is not an IRI, CURIE or exact label", embedding=[1, 0, 0], anchor="nobody")
    _refused(chain, "decay", embedding=[1, 0, 0], anchor=f"{EX}a", decay=0)
    assert _post(chain, mode="hybrid", alpha=1, embedding=[1, 0, 0], anchor=f"{EX}a")["ranking"] == "anchored"
    (tmp_path / "off").mkdir()
    with _client(tmp_path / "off") as off:
        _refused(
            off,
            "anchored search is disabled on this server ([quipu.search] anchored = false)",
            embedding=[1, 0, 0],
            anchor="x",
        )
