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
