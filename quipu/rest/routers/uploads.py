"""Staged snapshot uploads: ``POST /knot/stage`` and ``POST /knot/promote`` (tools-core §3.2, §3.3).

Both bodies are strict. Both routes are write routes, promote polls included. The work lives in
``quipu.uploads``; a completed promotion answers with the ``/knot`` response models.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Strict
from quipu.rest.routers.writes import KnotRefusal, KnotResponse

router = APIRouter(tags=["uploads"])

_HASH = "'sha256:' followed by 64 lowercase hex digits"


class StageRequest(Strict):
    upload_id: str = Field(
        description='"sha256:" + hex(SHA-256(snapshot + "\\n" + content_hash)), over UTF-8 bytes'
    )
    snapshot: str = Field(description="the producer key the promotion will replace")
    content_hash: str = Field(description=f"SHA-256 of the complete Turtle's UTF-8 bytes: {_HASH}")
    part_hash: str = Field(description=f"SHA-256 of this part's UTF-8 bytes: {_HASH}")
    payload: str = Field(
        description="this part's text, 1 byte to 512 KiB of UTF-8; split the document on character boundaries"
    )
    part_number: int = Field(description="0-based, less than total_parts")
    total_parts: int = Field(description="1 to 512")
    total_bytes: int = Field(
        description="UTF-8 bytes of the whole document: at least this part, at most 128 MiB"
    )
    timestamp: str | None = Field(None, description="transaction time used at promotion (empty = then)")
    actor: str | None = Field(None, description="actor recorded at promotion")
    source: str | None = Field(None, description="recorded; replacement's source is snapshot:<key>")
    graph: str | None = Field(None, description="target graph at promotion, checked then with /knot rules")


class StageResponse(BaseModel):
    upload_id: str
    part_number: int
    received_parts: int
    total_parts: int
    idempotent: bool = Field(description="true when this exact part was already stored")
    expires_in_seconds: int = Field(
        description="seconds until the upload expires (one hour after its first part)"
    )


class PromoteRequest(Strict):
    upload_id: str = Field(description="the upload_id every part was staged under")


class PromotePending(BaseModel):
    upload_id: str
    pending: Literal[True] = Field(description="not finished: call again with the same upload_id")


class PromoteComplete(KnotResponse):
    upload_id: str
    content_hash: str
    parts: int
    total_bytes: int
    promoted: Literal[True]


class PromoteRefusal(KnotRefusal):
    """The snapshot failed SHACL: nothing was written and the staged parts are kept."""

    upload_id: str


@router.post("/knot/stage", response_model=StageResponse)
def knot_stage(body: StageRequest, kb: KbDep) -> dict[str, Any]:
    """Stage one immutable, numbered part of a large snapshot upload (no facts change)."""
    return kb.uploads.stage(**body.fields()).as_json()


@router.post(
    "/knot/promote",
    response_model=PromotePending | PromoteComplete | PromoteRefusal,
    response_model_exclude_unset=True,
)
def knot_promote(body: PromoteRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Start, or read back, the atomic promotion of a fully staged upload; poll while pending."""
    return kb.uploads.promote(body.upload_id, auth=auth)
