"""Schema-evolution proposals (tools-graphs-governance §7): ``POST /propose``, ``POST /proposals``
(read), ``POST /proposal/accept`` and ``POST /proposal/reject``. All four are Annotating: unknown
keys come back as ``ignored_fields``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from quipu.governance.proposals import Proposal
from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["proposals"])

_TIMESTAMP = "ISO-8601 instant, normalised to YYYY-MM-DDTHH:MM:SSZ; default now"
_DECIDED_BY = "who decides (declared, not an authenticated identity)"


class ProposeRequest(Annotating):
    kind: str = Field(description="what the change is to: shape, ontology, class or property")
    target: str = Field(description="shape-set name, class IRI or property IRI")
    diff: str = Field(description="the proposed change: a Turtle fragment or a JSON patch (not validated)")
    proposer: str = Field(description="who proposes")
    rationale: str | None = Field(None, description="why")
    trigger_ref: str | None = Field(None, description="validation-failure ref or work-item id")
    timestamp: str | None = Field(None, description=f"created_at: {_TIMESTAMP}")


class ProposeResponse(BaseModel):
    proposal_id: int
    status: str
    ignored_fields: list[str] | None = None


class ProposalsRequest(Annotating):
    status: str | None = Field(None, description="pending, accepted or rejected; absent lists all")


class ProposalsResponse(BaseModel):
    proposals: list[Proposal]  # the queue's own record: its fields are the wire's
    count: int
    ignored_fields: list[str] | None = None


class AcceptRequest(Annotating):
    id: int = Field(description="the proposal id")
    decided_by: str = Field(description=_DECIDED_BY)
    note: str | None = Field(None, description="decision note")
    timestamp: str | None = Field(
        None, description=f"decided_at (and a shape set's version start): {_TIMESTAMP}"
    )


class AcceptResponse(BaseModel):
    proposal_id: int
    status: str
    target: str
    kind: str
    ignored_fields: list[str] | None = None


class RejectRequest(Annotating):
    id: int = Field(description="the proposal id")
    note: str = Field(description="the reason for rejecting")
    decided_by: str = Field(description=_DECIDED_BY)
    timestamp: str | None = Field(None, description=f"decided_at: {_TIMESTAMP}")


class RejectResponse(BaseModel):
    proposal_id: int
    status: str
    target: str
    ignored_fields: list[str] | None = None


@router.post("/propose", response_model=ProposeResponse, response_model_exclude_unset=True)
def propose_schema_change(body: ProposeRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """File a schema-change proposal; nothing changes until it is accepted."""
    filed = kb.propose(**body.fields(), auth=auth)
    return body.annotate({"proposal_id": filed.id, "status": filed.status})


@router.post("/proposals", response_model=ProposalsResponse, response_model_exclude_unset=True)
def list_proposals(body: ProposalsRequest, kb: KbDep) -> dict[str, Any]:
    """The proposal queue, newest first, optionally narrowed to one status."""
    found = kb.proposals(body.status)
    return body.annotate({"proposals": [p.as_json() for p in found], "count": len(found)})


@router.post("/proposal/accept", response_model=AcceptResponse, response_model_exclude_unset=True)
def accept_proposal(body: AcceptRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Accept a pending proposal; a shape proposal is validated and installed as a shape set."""
    decided = kb.accept_proposal(body.id, **body.fields(exclude={"id"}), auth=auth)
    return body.annotate(
        {"proposal_id": decided.id, "status": decided.status, "target": decided.target, "kind": decided.kind}
    )


@router.post("/proposal/reject", response_model=RejectResponse, response_model_exclude_unset=True)
def reject_proposal(body: RejectRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Reject a pending proposal, recording the reason."""
    decided = kb.reject_proposal(body.id, **body.fields(exclude={"id"}), auth=auth)
    return body.annotate({"proposal_id": decided.id, "status": decided.status, "target": decided.target})
