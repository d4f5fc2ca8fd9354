"""Finding entities by name: ``POST /resolve``, ``POST /spotlight`` and ``POST /reconcile``
(tools-search §5.8-§5.10). All three are reads and commit nothing.

``/resolve`` annotates unknown keys; ``/spotlight`` and ``/reconcile`` are strict (an unknown
key or a wrongly typed one is refused before any work). The work lives in ``quipu.search``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from quipu.errors import WrongType
from quipu.rest.deps import KbDep
from quipu.rest.fields import Annotating, Strict

router = APIRouter(tags=["search"])


# -- /resolve ---------------------------------------------------------------------------------------


class ResolveRequest(Annotating):
    name: str = Field(description="canonical name of the proposed entity")
    properties: dict[str, Any] = Field(
        default_factory=dict,
        description="extra context folded into the embedded text: string values only, by key",
    )
    # Any JSON value: one that is not an integer >= 0 falls back to the default (§5.8).
    top_k: Any = Field(
        None, description="maximum candidates, an integer >= 0 (default [quipu.resolution] top_k)"
    )
    threshold: float | None = Field(
        None,
        allow_inf_nan=False,
        description="minimum similarity for either matcher (default [quipu.resolution] threshold)",
    )


class ResolveCandidate(BaseModel):
    iri: str
    score: float = Field(description="cosine, 1.0 for an exact label, or Jaro-Winkler (0..1)")
    matched_on: str = Field(
        description='"embedding:0.xx", "canonical_name:exact" or "canonical_name:jaro_winkler:0.xx"'
    )


class VectorScope(BaseModel):
    kind: str = Field(description='"whole_store": the vector half saw every layer the name half read')
    attached_layers: int | None = None


class ResolveResult(BaseModel):
    has_matches: bool
    candidates: list[ResolveCandidate]
    count: int
    vector_scope: VectorScope
    ignored_fields: list[str] = []


@router.post("/resolve", response_model=ResolveResult, response_model_exclude_unset=True)
def resolve(kb: KbDep, body: ResolveRequest) -> dict[str, Any]:
    """Is this entity already in the store? Scored candidates by embedding and by label."""
    result = kb.search.resolve(body.name, body.properties, body.top_k, body.threshold)
    return body.annotate(result)


# -- /spotlight -------------------------------------------------------------------------------------


class SpotlightRequest(Strict):
    text: str = Field(description="text to annotate")
    confidence: float = Field(
        0.5, allow_inf_nan=False, description="minimum confidence: 0.95 label matches, 0.85 IRI local names"
    )


class Annotation(BaseModel):
    surface: str = Field(description="the text's own characters at the match")
    iri: str
    type: str = Field(description='local name of the entity\'s type, "Thing" when it has none')
    confidence: float
    offset: int = Field(description="UTF-8 byte offset of the match")


class SpotlightResult(BaseModel):
    text: str
    annotations: list[Annotation]


@router.post("/spotlight", response_model=SpotlightResult)
def spotlight(kb: KbDep, body: SpotlightRequest) -> dict[str, Any]:
    """Known entities mentioned in a text. An empty list is no proof of absence: a request that
    finds the label cache being refilled by another answers at once with none."""
    return kb.search.spotlight(body.text, body.confidence)


# -- /reconcile -------------------------------------------------------------------------------------


class ReconcileRequest(Strict):
    # Any value, checked here: "'queries' must be an object" whatever came (§5.10 errors).
    queries: Any = Field(
        None,
        json_schema_extra={"type": "object"},
        description="key -> {query, limit (default 5), type}; absent: the service manifest",
    )


@router.post("/reconcile")
def reconcile(kb: KbDep, body: ReconcileRequest | None = None) -> dict[str, Any]:
    """The W3C reconciliation service: its manifest, or candidates (0-100 scores) per keyed query."""
    if body is None or "queries" not in body.model_fields_set:
        return kb.search.reconcile(None)
    if not isinstance(body.queries, dict):
        raise WrongType("'queries' must be an object", field="queries")
    return kb.search.reconcile(body.queries)
