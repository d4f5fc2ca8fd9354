"""POST /retract/source: retract-only repair of what one exact source owns (tools-core §3.9).

A write route even for a preview (planning reads the live claims under the writer). There is no
Turtle input, so the call can clear a producer's facts but never write under its name.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["repair"])


class RetractSourceRequest(Annotating):
    # Optional here so that the store's refusal (which says where to find a source) answers.
    source: str | None = None
    repair: str | None = None
    apply: bool = False
    expect: int | None = None
    graph: str | None = None
    timestamp: str | None = None
    actor: str | None = None


class Statement(BaseModel):
    entity: str
    predicate: str
    value: Any


class RetractSourceResponse(BaseModel):
    source: str
    graph: str | None
    planned: int
    entities: int
    applied: bool
    tx_id: int | None
    retracted: int | None
    repair_source: str
    sample: list[Statement]
    sample_truncated: bool
    remaining: int | None = None
    ignored_fields: list[str] | None = None


@router.post("/retract/source", response_model=RetractSourceResponse, response_model_exclude_unset=True)
def retract_source(body: RetractSourceRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Plan, or apply after confirming the planned count, the retraction of one source's live facts."""
    fields = body.fields(exclude={"source", "repair"})
    return body.annotate(kb.retract_source(body.source or "", body.repair or "", **fields, auth=auth))
