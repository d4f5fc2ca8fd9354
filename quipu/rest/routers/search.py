"""The search family's embedding routes: ``POST /embed_backfill`` (tools-search §5.11),
``POST /embed_backfill/graph`` (§5.12) and ``POST /hybrid_search`` (§5.2).

The work lives in ``quipu.search`` (``KnowledgeBase.search``). For ``/embed_backfill`` a missing
provider, or one that fails part way, is a 200 answer with ``status: "error"``, as the original
answers: callers branch on ``status``; ``/embed_backfill/graph`` refuses a missing provider with
400 instead (§5.12). Both are writes (vectors are persisted), so they need the bearer where one
is configured and are refused on a read-only server. ``/hybrid_search`` is a read.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic_core import PydanticCustomError

from quipu.rest.deps import KbDep
from quipu.rest.fields import Annotating, ClampedLimit, Strict

router = APIRouter(tags=["search"])


class EmbedBackfillRequest(Strict):
    """No fields: any argument is refused."""


class EmbedBackfillDone(BaseModel):
    status: Literal["ok"]
    entities_embedded: int = Field(description="vectors written by this call (0: nothing was missing)")
    stale_retries: int = Field(
        description="entities whose text changed while their batch was embedded, re-queued"
    )


class EmbedBackfillError(BaseModel):
    status: Literal["error"]
    error: str = Field(
        description="why nothing more was embedded: no provider configured, or the provider failed"
    )


@router.post("/embed_backfill", response_model=EmbedBackfillDone | EmbedBackfillError)
def embed_backfill(kb: KbDep, body: EmbedBackfillRequest | None = None) -> dict[str, Any]:
    """Embed the ROOT entities that have no current vector, or one built from an older text."""
    return kb.search.embed_backfill()


class EmbedBackfillGraphRequest(Strict):
    """The named graph, and how many of its named-only entities to embed at most."""

    # "graph" is required: the schema says so, and a missing one gets the spec's own message
    # (tools-search §5.12) from the service rather than the generic one.
    model_config = ConfigDict(json_schema_extra={"required": ["graph"]})

    graph: str | None = Field(None, description="IRI of a registered named graph (required; not ROOT)")
    max_entities: int | None = Field(
        None, description="most entities embedded by this call (default 256; clamped to 1..2000)"
    )


class EmbedBackfillGraphDone(BaseModel):
    status: Literal["ok"]
    graph: str
    max_entities: int = Field(description="the bound this call used, after clamping")
    entities_embedded: int
    remaining: int = Field(description="missing named-only entities left: call again while above 0")
    stale_skipped: int = Field(description="entities whose text or plane changed while embedded, left")


@router.post("/embed_backfill/graph", response_model=EmbedBackfillGraphDone | EmbedBackfillError)
def embed_backfill_graph(body: EmbedBackfillGraphRequest, kb: KbDep) -> dict[str, Any]:
    """Embed a bounded number of the named-only entities of one named graph."""
    return kb.search.embed_backfill_graph(body.graph, body.max_entities)


class HybridSearchRequest(Annotating):
    """A query vector (or text to embed), and an optional SPARQL SELECT naming the candidates."""

    query: str | None = Field(None, description="text embedded by the provider")
    embedding: list[float] | None = Field(
        None, description="a pre-computed query vector of finite numbers; wins over query"
    )

    @field_validator("embedding", mode="wrap")
    @classmethod
    def _finite_numbers(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> list[float] | None:
        # The whole field is named in the refusal, not one entry of it (tools-search §5.1.1).
        try:
            numbers: list[float] | None = handler(value)
        except ValidationError:
            raise PydanticCustomError("embedding_type", "must be an array of numbers") from None
        if numbers is not None and not all(math.isfinite(x) for x in numbers):
            raise PydanticCustomError("embedding_finite", "every entry must be a finite number")
        return numbers

    sparql: str | None = Field(
        None, description="SELECT whose first projected variable yields the candidate entity IRIs"
    )
    limit: ClampedLimit | None = Field(
        None,
        description="result count (default 10; at most search.max_limit)",
    )
    valid_at: str | None = Field(None, description="instant for both the SPARQL scope and the vectors")


class HybridSearchRow(BaseModel):
    entity: str
    text: str = Field(description="the text of the vector version scored")
    score: float = Field(description="cosine similarity, -1..1")
    source: Literal["knowledge"]
    valid_from: str
    valid_to: str | None


class EmbeddingsBlock(BaseModel):
    configured: bool
    embedded_entities: int


class HybridSearchResponse(BaseModel):
    results: list[HybridSearchRow]
    count: int
    sparql_candidates: int | None = Field(
        description="candidate values, duplicates included; null without sparql"
    )
    pushdown_filter: str | None = Field(
        description="entity_type = '<IRI>' when the SELECT names one class and no UNION, OPTIONAL, "
        "FILTER or MINUS (what a delegated backend could push down); else null"
    )
    embeddings: EmbeddingsBlock
    ignored_fields: list[str] | None = None


@router.post("/hybrid_search", response_model=HybridSearchResponse, response_model_exclude_unset=True)
def hybrid_search(body: HybridSearchRequest, kb: KbDep) -> dict[str, Any]:
    """Rank by vector similarity the entities a SPARQL SELECT names (or all, without one)."""
    return body.annotate(kb.search.hybrid_search(**body.fields()))
