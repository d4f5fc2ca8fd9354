"""Three-way merge of an incoming share into ROOT: ``POST /merge/decisions`` (read) and
``POST /merge/apply`` (write) (tools-graphs-governance §4.4, §4.5).

The two halves are separate routes so the read half keeps ``readOnlyHint`` (§0.2). Both bodies are
annotating (§0.5): an unknown top-level key comes back in ``ignored_fields``; the decisions
document inside ``/merge/apply`` is checked strictly by the service (a field merge-decisions/v1
does not define is refused). Neither takes a server path. The work lives in
``quipu.sharing.merge`` (``kb.sharing``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["sharing"])

_SHARE = "an inline share {manifest, export_ntriples, shapes_turtle[, queries_turtle, alignments_turtle]}"


class MergeDecisionsRequest(Annotating):
    incoming: dict[str, Any] = Field(description=f"the share to merge into ROOT: {_SHARE}")
    base: dict[str, Any] = Field(description=f"the incoming share's parent_share: {_SHARE}")
    propose: bool = Field(False, description="give each row a mechanical proposal (never a decision)")


@router.post("/merge/decisions")
def merge_decisions(body: MergeDecisionsRequest, kb: KbDep) -> dict[str, Any]:
    """The merge-decisions/v1 document: one row per conflicting slot, pinned to ROOT's graph hash
    and the incoming share's id. Nothing is written."""
    return body.annotate(kb.sharing.merge_decisions(**body.fields()))


class MergeApplyRequest(Annotating):
    incoming: dict[str, Any] = Field(description=f"the share to merge into ROOT: {_SHARE}")
    base: dict[str, Any] = Field(description=f"the incoming share's parent_share: {_SHARE}")
    decisions: dict[str, Any] = Field(description="the merge-decisions/v1 document with every row decided")
    reviewer: str = Field(description="who decided (non-blank); recorded in the transaction source")
    actor: str | None = Field(None, description="the transaction actor (a declaration, not an identity)")
    dry_run: bool = Field(False, description="run every check and report the counts without writing")


@router.post("/merge/apply")
def merge_apply(body: MergeApplyRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """The clean merge plus every decided slot, in one ROOT transaction (or a dry run of it)."""
    return body.annotate(kb.sharing.merge_apply(**body.fields(), auth=auth))
