"""Cross-graph alignment (tools-graphs-governance §3): ``POST /align/propose`` and
``/align/decide`` (reads; decide touches no store) and ``POST /align/apply`` (a write: it registers
and writes the derived alignment graph). Three routes rather than one with a mode, so the two
reads keep a read-only annotation. All are annotating (§0.5); the work is ``kb.sharing``'s.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["sharing"])

_SET_TSV = "the SSSOM mapping set in its TSV form, as propose or decide returned it"


class AlignProposeRequest(Annotating):
    graph_a: str = Field(description="a known graph IRI (ROOT as urn:quipu:graph:root)")
    graph_b: str = Field(description="the other known graph IRI")
    mapping_set_id: str | None = Field(None, description="the set's IRI (default urn:quipu:align:mcp)")


class ProposeResponse(BaseModel):
    summary: str
    candidates: int
    set_aside: int = Field(description="entities left out for carrying more than one label")
    expected_version: str
    set_tsv: str
    ignored_fields: list[str] | None = None


@router.post("/align/propose", response_model=ProposeResponse, response_model_exclude_unset=True)
def align_propose(body: AlignProposeRequest, kb: KbDep) -> dict[str, Any]:
    """Score label pairs across two graphs into an undecided SSSOM set; nothing is written."""
    return body.annotate(kb.sharing.align_propose(**body.fields()))


class Verdict(BaseModel):
    model_config = ConfigDict(strict=True)

    subject_id: str = Field(description="one IRI of the pair (the pair is unordered)")
    object_id: str = Field(description="the other IRI of the pair")
    decision: str = Field(description="accept or negate")


class AlignDecideRequest(Annotating):
    set_tsv: str = Field(description=_SET_TSV)
    reviewer: str = Field(description="who decided; becomes author_id (non-blank)")
    decisions: list[Verdict] = Field(description="the operator's verdicts")


class Pair(BaseModel):
    subject_id: str
    object_id: str


class DecideResponse(BaseModel):
    set_tsv: str
    expected_version: str = Field(description="carry this, not propose's, into align apply")
    applied: int = Field(description="rows a decision landed on")
    unmatched: list[Pair] = Field(description="decided pairs no row of the set names")
    ignored_fields: list[str] | None = None


@router.post("/align/decide", response_model=DecideResponse, response_model_exclude_unset=True)
def align_decide(body: AlignDecideRequest, kb: KbDep) -> dict[str, Any]:
    """Record accept / negate verdicts on a mapping set; a pure function, the store is not read."""
    return body.annotate(kb.sharing.align_decide(**body.fields()))


class AlignApplyRequest(Annotating):
    # expected_version is required by the schema; a missing one gets the service's explanation
    # (it must be carried from the decision) rather than the generic message.
    model_config = ConfigDict(
        json_schema_extra={"required": ["set_tsv", "graph_a", "graph_b", "expected_version"]}
    )

    set_tsv: str = Field(description=_SET_TSV)
    graph_a: str = Field(description="the first source graph given to propose")
    graph_b: str = Field(description="the second source graph")
    expected_version: str | None = Field(
        None, description="the version decide returned for exactly this set (required, never defaulted)"
    )
    actor: str | None = Field(None, description="transaction actor (not an authenticated identity)")


class ApplyResponse(BaseModel):
    graph: str = Field(description="the derived alignment graph, urn:quipu:align:<12 hex>:<12 hex>")
    written: int = Field(description="the increase in live statements of that graph")
    distinct_from: int = Field(description="decided, negated rows in the set")
    ignored_fields: list[str] | None = None


@router.post("/align/apply", response_model=ApplyResponse, response_model_exclude_unset=True)
def align_apply(body: AlignApplyRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Write the decided rows as owl:sameAs / quipu:distinctFrom into the derived alignment graph."""
    return body.annotate(kb.sharing.align_apply(**body.fields(), auth=auth))
