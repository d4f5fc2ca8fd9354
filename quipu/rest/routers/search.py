"""The search family's routes: ``POST /embed_backfill`` today (tools-search §5.11).

The work lives in ``quipu.search`` (``KnowledgeBase.search``). A missing provider, or one that
fails part way, is a 200 answer with ``status: "error"``, as the original answers: callers branch
on ``status``. The route is a write (vectors are persisted), so it needs the bearer where one is
configured and is refused on a read-only server.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from quipu.rest.deps import KbDep
from quipu.rest.fields import Strict

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
