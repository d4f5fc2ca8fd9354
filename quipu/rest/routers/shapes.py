"""Shapes and validation: ``POST /shapes`` (write, every action) and ``POST /validate`` (read)
(tools-core §2.1, §2.2). Both are Annotating: unknown keys come back as ``ignored_fields``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from quipu.errors import InvalidField
from quipu.rest.deps import KbDep
from quipu.rest.fields import Annotating
from quipu.shacl import registry

router = APIRouter(tags=["shapes"])

ACTIONS = ("load", "list", "get", "remove", "vocabulary")


class ShapesRequest(Annotating):
    action: str | None = None
    name: str | None = None
    turtle: str | None = None
    timestamp: str | None = None


class ValidateRequest(Annotating):
    data: str
    shapes: str | None = None
    valid_at: str | None = None
    as_of_tx: int | None = None


class Issue(BaseModel):
    severity: str
    focus_node: Any
    component: str | None
    path: str | None
    value: Any
    source_shape: Any
    message: str
    allowed: list[Any] | None = None


class ValidateResponse(BaseModel):
    conforms: bool
    violations: int
    warnings: int
    infos: int
    issues: list[Issue]
    ignored_fields: list[str] | None = None


@router.post("/shapes")
def shapes(body: ShapesRequest, kb: KbDep) -> dict[str, Any]:
    """Manage stored SHACL shape sets: load, list, get, remove, vocabulary."""
    action = "list" if body.action is None else body.action
    if action == "load":
        loaded = kb.load_shapes(body.name, body.turtle, timestamp=body.timestamp)
        return body.annotate({"action": "loaded", "name": loaded.name})
    if action == "remove":
        found = kb.remove_shapes(body.name, timestamp=body.timestamp)
        return body.annotate({"action": "removed", "name": body.name, "found": found})
    if action == "get":
        got = registry.get(kb.db, body.name)
        return body.annotate({"name": got.name, "turtle": got.turtle, "loaded_at": got.loaded_at})
    if action == "list":
        sets = kb.shape_sets()
        return body.annotate(
            {"shapes": [{"name": s.name, "loaded_at": s.loaded_at} for s in sets], "count": len(sets)}
        )
    if action == "vocabulary":
        sets = kb.shape_sets()
        classes = sorted(registry.bundle(s.turtle for s in sets).vocabulary) if sets else []
        return body.annotate({"classes": classes, "count": len(classes)})
    # Never fall through to list (§2.2 rule 1).
    raise InvalidField(
        f"unknown shapes action '{action}' (expected: {', '.join(ACTIONS)})",
        field="action",
        reason="unknown_action",
    )


@router.post("/validate", response_model=ValidateResponse, response_model_exclude_unset=True)
def validate(body: ValidateRequest, kb: KbDep) -> dict[str, Any]:
    """Dry-run SHACL validation of a Turtle document; never writes."""
    report = kb.validate(**body.fields())
    return body.annotate(report.as_json())
