"""Golden paths: the provenance cone and the backtest of trajectories (tools-graphs-governance §6).

Both routes are reads: they take no credential, are served read-only and write nothing. Both are
Annotating (§0.5): an unknown key comes back as ``ignored_fields``, a wrong JSON type is refused.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from quipu.rest.deps import KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["golden paths"])

_BASE_NS = "vocabulary namespace of the golden-path terms (default: the store's base_ns)"


class ConeRequest(Annotating):
    trajectory: str = Field(description="IRI of the Trajectory to analyse")
    via: list[str] | None = Field(
        None, description="derivation predicate IRIs walked in addition to verifiedBy (always walked)"
    )
    hops: int = Field(8, ge=0, description="depth bound of the derivation walk")
    base_ns: str | None = Field(None, description=_BASE_NS)


@router.post("/path/cone")
def path_cone(body: ConeRequest, kb: KbDep) -> dict[str, Any]:
    """Each step of a finished trajectory as InCone, OutOfCone or CannotEvaluate with respect to
    its falsifier-gated verifications."""
    return body.annotate(kb.golden_paths.cone(**body.fields()))


class BacktestRequest(Annotating):
    exemplar: str = Field(description="IRI of the exemplar Trajectory")
    omit: list[str] | None = Field(None, description="IRIs of the exemplar's steps the candidate omits")
    base_ns: str | None = Field(None, description=_BASE_NS)


@router.post("/path/backtest")
def path_backtest(body: BacktestRequest, kb: KbDep) -> dict[str, Any]:
    """The candidate (exemplar minus omitted steps) replayed under gp-grammar/1 over the
    trajectories whose work items share a topic with the exemplar's."""
    return body.annotate(kb.golden_paths.backtest(**body.fields()))
