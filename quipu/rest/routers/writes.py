"""Write routes over ROOT and committed graphs: /knot, /retract, /set (tools-core §3.1, §3.6, §3.7).

All three are Annotating: unknown keys are reported as ``ignored_fields``, except that /retract
and /set refuse a ``graph`` key (even ``null``) before anything else, since they write ROOT only.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

from fastapi import APIRouter
from pydantic import BaseModel, model_validator

from quipu.documents.knot import response_body
from quipu.errors import InvalidField, ShaclViolation
from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating
from quipu.rest.routers.shapes import Issue

router = APIRouter(tags=["writes"])


# -- request bodies --------------------------------------------------------------------------


class KnotRequest(Annotating):
    turtle: str
    timestamp: str | None = None
    valid_from: str | None = None
    actor: str | None = None
    source: str | None = None
    graph: str | None = None
    blank_node_scope: str | None = None
    replace_snapshot: bool = False
    snapshot: str | None = None
    shapes: str | None = None


class _RootOnly(Annotating):
    """A body for a ROOT-only route: a ``graph`` key is refused before any other check."""

    route: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _refuse_graph(cls, data: Any) -> Any:
        # Raised as quipu's error (not a ValueError) so it wins over every field error.
        if isinstance(data, dict) and "graph" in data:
            raise InvalidField(
                f"'graph' is not accepted by {cls.route}: it writes ROOT statements only; remove the "
                "key (even a null one). For a named graph use quipu_retract_source with 'graph'",
                field="graph",
                reason="graph_not_accepted",
            )
        return data


class RetractRequest(_RootOnly):
    route: ClassVar[str] = "/retract"
    entity: str
    predicate: str | None = None
    value: Any = None  # DM §2.1 input forms, checked by the store
    timestamp: str | None = None
    actor: str | None = None
    source: str | None = None
    allow_orphan: bool = False


class SetRequest(_RootOnly):
    route: ClassVar[str] = "/set"
    entity: str
    predicate: str
    value: Any  # DM §2.1 input forms, checked by the store
    timestamp: str | None = None
    actor: str | None = None
    source: str | None = None


# -- responses -------------------------------------------------------------------------------


class KnotResponse(BaseModel):
    conforms: bool
    tx_id: int
    count: int
    snapshot: str | None
    replaced: bool
    valid_from: str
    ignored_fields: list[str] | None = None


class KnotRefusal(BaseModel):
    """A SHACL refusal: HTTP 200 with ``conforms: false``; nothing was written."""

    conforms: bool
    violations: int
    warnings: int
    infos: int
    issues: list[Issue]
    hint: str
    ignored_fields: list[str] | None = None


class RetractResponse(BaseModel):
    tx_id: int
    retracted: int
    entity: str
    ignored_fields: list[str] | None = None


class SetResponse(BaseModel):
    tx_id: int
    retracted: int
    asserted: int
    entity: str
    predicate: str
    ignored_fields: list[str] | None = None


# -- handlers --------------------------------------------------------------------------------


@router.post("/knot", response_model=KnotResponse | KnotRefusal, response_model_exclude_unset=True)
def knot(body: KnotRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Assert Turtle into ROOT or a registered graph, or replace a producer key's snapshot."""
    try:
        result = kb.knot(body.turtle, "turtle", **body.fields(exclude={"turtle"}), auth=auth)
    except ShaclViolation as refused:
        # On /knot a SHACL failure is not an HTTP error (§3.1 rule 4): 200, conforms false.
        return body.annotate(dict(refused.report))
    return body.annotate(
        response_body(result, replace_snapshot=body.replace_snapshot, snapshot=body.snapshot)
    )


@router.post("/retract", response_model=RetractResponse, response_model_exclude_unset=True)
def retract(body: RetractRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Close ROOT statements about an entity: all, one predicate's, or exactly one."""
    return body.annotate(asdict(kb.retract(**body.fields(), auth=auth)))


@router.post("/set", response_model=SetResponse, response_model_exclude_unset=True)
def set_value(body: SetRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Make one value the only current object of (entity, predicate) in ROOT."""
    return body.annotate(asdict(kb.set(**body.fields(), auth=auth)))
