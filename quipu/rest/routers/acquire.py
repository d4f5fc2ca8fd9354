"""Acquisition: ``POST /acquire`` and ``POST /acquire/composed`` (tools-graphs-governance §4.6,
§4.7), both reads. Both are strict (§0.5): an unknown key or a wrong JSON type is refused before
any work. The work lives in ``quipu.sharing.acquire`` (``kb.sharing``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from quipu.rest.deps import KbDep
from quipu.rest.fields import Strict

router = APIRouter(tags=["sharing"])


class AcquireRequest(Strict):
    source_store_id: str = Field(
        description="the MAIN store identity you expect (the store_id its shares carry)"
    )
    graphs: list[str] = Field(
        description="registered committed graph IRIs, at least one, each once (urn:quipu:graph:root for ROOT)"
    )
    tx: int | None = Field(None, description="the MAIN transaction to read as of (default: the latest)")
    max_bytes: int | None = Field(
        None, description="bound on the JSON-encoded response; may lower the server cap, never raise it"
    )


class AcquireComposedRequest(AcquireRequest):
    expected_generation: str | None = Field(
        None, description="the census generation you read before (sha256:<hex>); required with tx"
    )


@router.post("/acquire")
def acquire(body: AcquireRequest, kb: KbDep) -> dict[str, Any]:
    """Whole MAIN graphs as canonical N-Triples, in request order; refused whole, never partial."""
    return kb.sharing.acquire(**body.fields())


@router.post("/acquire/composed")
def acquire_composed(body: AcquireComposedRequest, kb: KbDep) -> dict[str, Any]:
    """MAIN graphs and frozen graphs from their mounted archives, each labelled with its provider,
    fenced by the census of mounted archives taken before and after the read."""
    return kb.sharing.acquire_composed(**body.fields())
