"""Write routes over ROOT and committed graphs: /knot, /retract, /set (tools-core §3.1, §3.6, §3.7).

All three are Annotating: unknown keys are reported as ``ignored_fields``, except that /retract
and /set refuse a ``graph`` key (even ``null``) before anything else, since they write ROOT only.
An object ``value`` is validated by the store (DM §2.1); its published schema lists those forms.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, ClassVar, Final

from fastapi import APIRouter
from pydantic import BaseModel, WithJsonSchema, model_validator

from quipu.documents.knot import response_body
from quipu.errors import InvalidField, ShaclViolation
from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating
from quipu.rest.routers.shapes import Issue

router = APIRouter(tags=["writes"])


# -- request bodies --------------------------------------------------------------------------


def _form(**keys: str) -> dict[str, Any]:
    """A JSON value form of DM §2.1: an object with exactly these keys, of these JSON types."""
    return {
        "type": "object",
        "properties": {key: {"type": kind} for key, kind in keys.items()},
        "required": list(keys),
        "additionalProperties": False,
    }


# The input forms of an object value (DM §2.1, parsed by quipu.store.values.from_json). Published
# only: the field itself stays ``Any`` so REST's refusals keep the store's own wording.
VALUE_FORMS: Final[list[dict[str, Any]]] = [
    {"type": "string"},
    _form(iri="string"),
    _form(str="string"),
    _form(int="integer"),
    _form(float="number"),
    _form(bool="boolean"),
    _form(value="string", lang="string"),
    _form(value="string", datatype="string"),
]
_VALUE_HELP: Final = (
    'the object: a bare string is a plain literal (even when it looks like an IRI); {"iri": …} a '
    'reference; {"str": …}, {"int": …}, {"float": …} or {"bool": …} a literal of that type; '
    '{"value": …, "lang": …} a language-tagged string; {"value": …, "datatype": …} a typed literal'
)
Value = Annotated[Any, WithJsonSchema({"anyOf": VALUE_FORMS, "description": _VALUE_HELP})]
AnyValue = Annotated[
    Any,
    WithJsonSchema(
        {
            "anyOf": [*VALUE_FORMS, {"type": "null"}],
            "description": f"{_VALUE_HELP}; null or absent: any value",
        }
    ),
]


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
    value: AnyValue = None
    timestamp: str | None = None
    actor: str | None = None
    source: str | None = None
    allow_orphan: bool = False


class SetRequest(_RootOnly):
    route: ClassVar[str] = "/set"
    entity: str
    predicate: str
    value: Value
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
