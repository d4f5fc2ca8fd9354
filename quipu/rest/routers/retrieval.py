"""Substring search and knowledge context: ``POST /search_nodes``, ``/search_facts``,
``/context`` and ``/unified_search`` (tools-search §5.3, §5.4, §5.7, §5.5).

All four are reads that annotate unknown keys (``ignored_fields``). Every field a handler reads
is declared, ``ppr_rerank`` included, so none is ever reported as ignored. The work lives in
``kb.search``.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from quipu.rest.deps import KbDep
from quipu.rest.fields import Annotating, ClampedLimit

router = APIRouter(tags=["search"])

_QUERY = "the text to find: one case-insensitive substring"
_GROUPS = (
    "provenance scope: entities some episode of one of these groups generated (aegis: or Quechua "
    "groupId); absent or empty: no scope; non-string entries are ignored"
)
_VERBOSE = "full IRIs instead of CURIEs of the loaded shape sets' prefixes"


# -- requests ---------------------------------------------------------------------------------------


class SearchNodesRequest(Annotating):
    query: str = Field(description=_QUERY)
    group_ids: list[Any] | None = Field(None, description=_GROUPS)
    max_results: int | None = Field(None, description="result count (default 10, clamped to 1..max_limit)")
    entity_type_filter: str | None = Field(None, description="keep entities with this asserted rdf:type IRI")
    verbose: bool = Field(False, description=_VERBOSE)


class SearchFactsRequest(Annotating):
    query: str = Field(description=_QUERY + ", matched against predicate IRIs and object values")
    group_ids: list[Any] | None = Field(None, description=_GROUPS + " (on the fact's subject)")
    max_results: int | None = Field(None, description="result count (default 10, clamped to 1..max_limit)")
    verbose: bool = Field(False, description=_VERBOSE)


_PPR = "order the candidates by Personalized PageRank from the direct hits before truncation"


class ContextRequest(Annotating):
    query: str = Field(description=_QUERY + " (matched verbatim, spaces included)")
    max_entities: int | None = Field(None, description="entities returned (default 20)")
    expand_links: bool | None = Field(None, description="add the direct hits' neighbours (default true)")
    ppr_rerank: bool | None = Field(None, description=_PPR + " (default false)")


class UnifiedSearchRequest(Annotating):
    query: str = Field(
        description=_QUERY + "; also embedded for the semantic half when a model is configured"
    )
    embedding: list[float] | None = Field(
        None, description="a query vector to use instead of embedding 'query'"
    )
    limit: ClampedLimit | None = Field(None, description="results (default 10, clamped to 1..max_limit)")
    expand_links: bool | None = Field(None, description="add the direct hits' neighbours (default true)")
    max_facts_per_entity: int | None = Field(None, description="facts shown per entity (default 10)")
    ppr_rerank: bool | None = Field(None, description=_PPR + " (default false)")


# -- responses --------------------------------------------------------------------------------------


class Node(BaseModel):
    iri: str
    label: str | None
    types: list[str]
    summary: str | None
    score: float = Field(description="always 1.0: nodes come in store order, not by relevance")


class SearchNodesResponse(BaseModel):
    nodes: list[Node]
    count: int
    ignored_fields: list[str] = []


class Provenance(BaseModel):
    episode: str


class FoundFact(BaseModel):
    source: str
    predicate: str
    target: str = Field(description="the object: an IRI, or a literal's lexical form")
    provenance: Provenance | None = Field(description="the subject's first prov:wasGeneratedBy, or null")


class SearchFactsResponse(BaseModel):
    facts: list[FoundFact]
    count: int
    ignored_fields: list[str] = []


class ContextFact(BaseModel):
    predicate: str
    value: str | bool | int | float
    value_type: Literal["Entity", "Literal"]


Relevance = Literal["Direct", "Linked", "Semantic"]


class ContextEntity(BaseModel):
    iri: str
    label: str | None
    types: list[str]
    relevance: Relevance
    score: float
    source: Literal["knowledge"]
    facts: list[ContextFact]
    facts_capped: bool = Field(description="the entity has more facts than shown")


class Embeddings(BaseModel):
    configured: bool
    embedded_entities: int


class Truncation(BaseModel):
    entities_shown: int
    entities_considered: int
    more_available: bool
    entities_with_more_facts: int


class Summary(BaseModel):
    total_entities: int
    total_facts: int
    direct_hits: int
    linked_additions: int
    embeddings: Embeddings
    truncated: Truncation


class ContextResponse(BaseModel):
    query: str
    entities: list[ContextEntity]
    summary: Summary
    ignored_fields: list[str] = []


class UnifiedResult(BaseModel):
    entity: str
    text: str = Field(description="the label, else the IRI")
    score: float = Field(description="0-1: direct 1.0/0.9/0.7, linked 0.5, semantic the cosine clamped")
    source: Literal["knowledge"]
    relevance: Relevance
    types: list[str]
    facts: list[ContextFact]
    facts_capped: bool


class UnifiedSearchResponse(BaseModel):
    results: list[UnifiedResult]
    count: int
    summary: Summary
    ignored_fields: list[str] = []


# -- routes -----------------------------------------------------------------------------------------


@router.post("/search_nodes", response_model=SearchNodesResponse, response_model_exclude_unset=True)
def search_nodes(kb: KbDep, body: SearchNodesRequest) -> dict[str, Any]:
    """Entities whose IRI, or any current value, contains the query (Graphiti's search_nodes)."""
    return body.annotate(kb.search.search_nodes(**body.fields()))


@router.post("/search_facts", response_model=SearchFactsResponse, response_model_exclude_unset=True)
def search_facts(kb: KbDep, body: SearchFactsRequest) -> dict[str, Any]:
    """Facts whose predicate IRI or object contains the query (Graphiti's search_memory_facts)."""
    return body.annotate(kb.search.search_facts(**body.fields()))


@router.post("/context", response_model=ContextResponse, response_model_exclude_unset=True)
def context(kb: KbDep, body: ContextRequest) -> dict[str, Any]:
    """Knowledge context for a topic: direct hits, their neighbours and their facts, budgeted."""
    return body.annotate(kb.search.context(**body.fields()))


@router.post("/unified_search", response_model=UnifiedSearchResponse, response_model_exclude_unset=True)
def unified_search(kb: KbDep, body: UnifiedSearchRequest) -> dict[str, Any]:
    """The context pipeline plus semantic additions, every result tagged source "knowledge"."""
    return body.annotate(kb.search.unified_search(**body.fields()))
