"""Portable shares: ``POST /share`` (read), ``POST /import`` and ``POST /import/promote`` (writes)
(tools-graphs-governance §4.1–§4.3). All three are strict (§0.5): an unknown key or a wrong JSON
type is refused before any work, and none takes a server-local path. The work lives in
``quipu.sharing`` (``kb.sharing``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Strict

router = APIRouter(tags=["sharing"])


class ShareRequest(Strict):
    scope: dict[str, Any] = Field(
        description='the exact slice: {"kind": "root", "value": null}, or kind graph (an IRI), '
        "group (an episode group id) or construct (a CONSTRUCT/DESCRIBE query) with its value"
    )
    shapes: list[str] | None = Field(
        None, description="shape-set names to bundle (default: every loaded set)"
    )
    no_shapes: bool = Field(False, description="produce a shapes-free share")
    queries: list[str] | None = Field(
        None, description="stored-query names to carry; [] carries none (default: by scope)"
    )
    alignments_turtle: str | None = Field(None, description="alignment evidence to seal as alignments.ttl")
    parent_share: str | None = Field(None, description="the lineage parent's share id (sha256:<64 hex>)")
    turtle_view: bool = Field(False, description="also return export.ttl, a readable Turtle view")
    max_bytes: int | None = Field(
        None, description="bound on the JSON-encoded response; may lower the server cap, never raise it"
    )


@router.post("/share")
def share(body: ShareRequest, kb: KbDep) -> dict[str, Any]:
    """The canonical manifest and every member's text for one slice; nothing is written."""
    return kb.sharing.share(**body.fields())


class ImportRequest(Strict):
    manifest: dict[str, Any] = Field(description="the share manifest, exactly as produced")
    export_ntriples: str = Field(description="the exact export.nt member")
    shapes_turtle: str = Field(description='the exact shapes.ttl member (may be "")')
    source: str = Field(description="where the share came from (provenance)")
    queries_turtle: str | None = Field(None, description="the exact queries.ttl; required iff declared")
    alignments_turtle: str | None = Field(None, description="the exact alignments.ttl; required iff declared")
    query_namespace: str | None = Field(
        None, description="one path segment carried queries install under (default pack-<12 hex>)"
    )
    replace_queries: bool = Field(False, description="let the namespace follow the share")
    actor: str | None = Field(None, description="a claimed actor, recorded as a claim only")
    accept_exact: bool = Field(False, description="rewrite exact canonical-name matches to local IRIs")
    attestation: dict[str, Any] | None = Field(
        None, description="a producer envelope over the manifest identity"
    )


@router.post("/import")
def import_share(body: ImportRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Verify, gate and stage a share in its own graph; ROOT is never written."""
    fields = body.fields(exclude=("attestation",))
    return kb.sharing.import_share(attestation_envelope=body.attestation, auth=auth, **fields)


class ImportPromoteRequest(Strict):
    share_id: str = Field(description="the staged share's id (sha256:<64 hex>)")
    actor: str | None = Field(None, description="a claimed actor, recorded as a claim only")


@router.post("/import/promote")
def promote(body: ImportPromoteRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Move an eligible staged share into ROOT in one transaction."""
    return kb.sharing.promote(**body.fields(), auth=auth)
