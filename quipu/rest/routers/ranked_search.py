"""``POST /search`` (``quipu_search``, tools-search §5.1): one entry point for entity retrieval; and
``POST /search/query`` (``quipu_search_query``, §5.6): search hits as the seeds of a SELECT.

Semantic (the default), keyword (bm25 over the keyword index) or hybrid (both, fused), with time,
provenance-group, type and graph scopes, and optional anchoring on an entity. The work and every
check of the spec's numbered rules live in ``quipu.search.modes``; this module declares the fields
(so agents see their types, and unknown keys come back as ``ignored_fields``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from quipu.rest.deps import KbDep
from quipu.rest.fields import Annotating, ClampedLimit, Strict

router = APIRouter(tags=["search"])


class SearchRequest(Annotating):
    query: str | None = Field(
        None, description="text: embedded (semantic), matched (keyword), or both (hybrid)"
    )
    embedding: list[float] | None = Field(
        None, description="a pre-computed query vector, used instead of embedding query"
    )
    mode: str | None = Field(None, description="semantic, keyword or hybrid; default [quipu.search] mode")
    limit: ClampedLimit | None = Field(
        None,
        description="result count (default 10, at most [quipu.search] max_limit)",
    )
    valid_at: str | None = Field(None, description="read vectors, facts and scopes as live at this instant")
    group_ids: list[Any] | None = Field(
        None, description="only entities some episode of these groups generated"
    )
    entity_type: str | None = Field(None, description="only entities with this rdf:type IRI")
    infer_types: bool | None = Field(
        None, description="entity_type admits subclass instances (semantic default true)"
    )
    ranking: str | None = Field(
        None, description="semantic (default) or content (demote content-less artifacts)"
    )
    alpha: float | None = Field(None, description="hybrid: semantic weight in [0, 1]")
    fusion: str | None = Field(None, description="hybrid: weighted or rrf")
    rrf_k: float | None = Field(None, description="hybrid rrf: positive constant (default 60)")
    explain: bool | None = Field(None, description="add per-row explanations and highlighted snippets")
    graph: str | None = Field(None, description='one graph IRI, urn:quipu:graph:root, or "all"')
    graphs: list[str] | None = Field(None, description="a non-empty list of graph IRIs")
    all_graphs: bool | None = Field(None, description="ROOT plus every registered named graph")
    anchor: str | None = Field(
        None, description="IRI, CURIE or exact label of an entity to rank by graph distance from"
    )
    max_hops: int | None = Field(None, description="anchor walk depth (default 3, at most 4)")
    anchor_mode: str | None = Field(None, description="decay (default), sort or filter")
    decay: float | None = Field(None, description="per-hop multiplier in (0, 1] (default 0.5)")
    via: list[str] | None = Field(None, description="only walk these predicates (IRIs or CURIEs)")
    direction: str | None = Field(None, description="out, in or both (default)")
    verbose: bool | None = Field(None, description="full IRIs instead of CURIEs")
    structured_query: str | None = Field(None, description="structured-query extension (not served here)")
    filters: dict[str, Any] | None = Field(None, description="structured-query extension (not served here)")


@router.post("/search")
def search(kb: KbDep, body: SearchRequest) -> dict[str, Any]:
    """Ranked entities for a text or a vector, as one bounded, explained list."""
    request = body.model_dump(include=set(SearchRequest.model_fields), exclude_unset=True)
    return body.annotate(kb.search.find(request))


class SearchQueryRequest(Strict):
    sparql: str = Field(
        description="a SELECT whose root pattern is basic graph patterns, GRAPH blocks and joins"
    )
    mode: str | None = Field(None, description="keyword (default), semantic or hybrid (both retrievers)")
    query: str | None = Field(None, description="the search text passed to the retrievers")
    embedding: list[float] | None = Field(None, description="a query vector for the semantic retriever")
    seed_variable: str | None = Field(None, description="the variable (without ?) the seeds bind; default s")
    seed_limit: int | None = Field(None, description="seeds kept after fusion, 1..100 (default 20)")
    valid_at: str | None = Field(None, description="read point of both the search and the query")
    entity_type: str | None = Field(None, description="passed to the retrievers")
    group_ids: list[Any] | None = Field(None, description="passed to the retrievers")
    query_options: dict[str, Any] | None = Field(
        None,
        description="graph, fork, entailment (strings), verbose, row_labels (booleans), include_kinds (strings)",
    )


@router.post("/search/query")
def search_query(kb: KbDep, body: SearchQueryRequest) -> dict[str, Any]:
    """Run a SELECT from the best search hits: they seed one of its variables (bounded, not complete)."""
    return kb.search.search_query(body.model_dump(exclude_none=True))
