"""``POST /reason``: Datalog rules to fixpoint over one graph (tools-core §3.11).

A write route (it writes derivations), strict: an unknown key is refused with 400. The work
lives in ``quipu.reasoning`` (``kb.reasoning``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Strict

router = APIRouter(tags=["reasoning"])


class ReasonRequest(Strict):
    rules: str | None = Field(
        None, description="rule Turtle (a rule:Rule resource each); absent: the rules stored with the shapes"
    )
    prefix: str | None = Field(None, description="fallback IRI prefix for bare predicate and constant names")
    graph: str | None = Field(None, description="premise graph IRI (absent: ROOT)")
    timestamp: str | None = Field(None, description="transaction time and valid_from of the derivations")


class RuleCount(BaseModel):
    rule: str
    asserted: int


class ReasonResponse(BaseModel):
    rules: int
    strata_run: int
    asserted: int
    retracted: int
    per_rule: list[RuleCount]
    inferred_graph: str = Field(description="the companion graph holding the derivations")


@router.post("/reason", response_model=ReasonResponse)
def reason(body: ReasonRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Evaluate the rules and persist the changes to their derivations, one transaction per rule."""
    return kb.reasoning.reason(**body.fields(), auth=auth).as_json()


class RuleQueryRequest(Strict):
    claim: dict[str, Any] = Field(
        description='{"subject": "<iri>", "predicate": "<iri>", "object": <value>}; the object in the '
        'JSON value forms ("text", {"iri": ...}, {"int": 5}, {"value": ..., "lang": ...} ...)'
    )
    graph: str | None = Field(None, description="graph holding the evidence (absent: ROOT)")
    include_inferred: bool = Field(True, description="also read the graph's companion for positive evidence")
    valid_at: str | None = Field(None, description="valid-time read point")
    tx: int | None = Field(None, ge=0, description="transaction-time read point")
    max_evidence: int = Field(10, ge=1, le=100, description="evidence items listed per side")


@router.post("/rule/query")
def rule_query(body: RuleQueryRequest, kb: KbDep) -> dict[str, Any]:
    """A four-valued answer about one grounded claim: SUPPORTED, REFUTED, BOTH, NEITHER or
    UNKNOWN, with its evidence, and any judgment reported beside it. Grants no authority."""
    return kb.reasoning.rule_query(**body.fields())
