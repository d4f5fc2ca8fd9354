"""Named questions: ``POST /ask``, ``POST /queries`` and ``POST /cooccurrence`` (tools-search
§5.16-§5.18).

``/ask`` and ``/cooccurrence`` are reads that commit nothing; ``/queries`` is a write for every
action, ``list`` and ``get`` included (the route is write-classified, §0.2), so a read-only server
refuses it with 403. All three are Annotating: unknown keys come back as ``ignored_fields``. The
work lives in ``quipu.graphs`` (``kb.questions``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, Field, WithJsonSchema

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["questions"])

MAX_TX = 2**63 - 1  # transaction ids are 64-bit integers


# -- /ask -------------------------------------------------------------------------------------------


class AskRequest(Annotating):
    # Any JSON value: a non-string name asks for the catalog, as an absent one does (§5.17).
    name: Annotated[Any, WithJsonSchema({"type": "string"})] = Field(
        None, description='query to run; absent or "list": the catalog of every query and its params'
    )
    params: dict[str, Any] | None = Field(
        None, description="parameter values by name: strings, numbers or booleans"
    )
    graph: str | None = Field(
        None,
        description="graph (or dataset) IRI that becomes the default graph, as in quipu_query; "
        "a stored query's own dataset is then not used",
    )


class AskResponse(BaseModel):
    query: str | None = None
    sparql: str | None = Field(None, description="the exact query text executed")
    columns: list[str] | None = None
    rows: list[dict[str, Any]] | None = None
    count: int | None = None
    truncated: bool | None = None
    queries: list[dict[str, Any]] | None = Field(None, description="the catalog: built-ins, then stored")
    usage: str | None = None
    ignored_fields: list[str] | None = None


@router.post("/ask", response_model=AskResponse, response_model_exclude_unset=True)
def ask(body: AskRequest, kb: KbDep) -> dict[str, Any]:
    """Run a curated named query by name, or list the catalog; parameters are checked by type."""
    return body.annotate(kb.questions.ask(body.name, body.params, body.graph))


# -- /queries ---------------------------------------------------------------------------------------

ParamSpecJson = Annotated[
    Any,  # checked by the service, so a bad spec is refused with the spec's own words
    WithJsonSchema(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "type": {"type": "string", "enum": ["iri", "text", "int"]},
                "kind": {"type": "string", "enum": ["iri", "text", "int"]},
                "required": {"type": "boolean"},
                "default": {"type": "string"},
                "description": {"type": "string"},
            },
            "required": ["name"],
        }
    ),
]


class QueriesRequest(Annotating):
    action: str | None = Field(None, description="load, list (default), get or remove")
    name: str | None = Field(None, description="query name (load, get, remove)")
    description: str | None = Field(None, description="what the query answers (load)")
    template: str | None = Field(None, description="SPARQL SELECT with {param} placeholders (load)")
    dataset: str | None = Field(None, description="dataset IRI the query reads by default (load)")
    params: list[ParamSpecJson] | None = Field(
        None, description="ordered specs {name, type: iri|text|int, required, default, description}"
    )
    timestamp: str | None = Field(None, description="version instant for load and remove; default now")


class QueriesResponse(BaseModel):
    loaded: str | None = None
    params: int | None = None
    queries: list[dict[str, Any]] | None = None
    query: dict[str, Any] | None = None
    template: str | None = None
    removed: bool | None = None
    ignored_fields: list[str] | None = None


@router.post("/queries", response_model=QueriesResponse, response_model_exclude_unset=True)
def queries(body: QueriesRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Load (a new version), list, get or remove stored named queries."""
    return body.annotate(kb.questions.queries(**body.fields(), auth=auth))


# -- /cooccurrence ----------------------------------------------------------------------------------


class CooccurrenceRequest(Annotating):
    work_item: str = Field(description="the work item (bead) IRI")
    valid_at: str | None = Field(None, description="valid-time instant for every fact of the chain")
    tx: int | None = Field(None, ge=0, le=MAX_TX, description="only transactions with id <= tx")


class Cooccurring(BaseModel):
    work_item: str
    shared_entities: int


class CooccurrenceResponse(BaseModel):
    work_item: str
    count: int
    cooccurring: list[Cooccurring]
    ignored_fields: list[str] | None = None


@router.post("/cooccurrence", response_model=CooccurrenceResponse, response_model_exclude_unset=True)
def cooccurrence(body: CooccurrenceRequest, kb: KbDep) -> dict[str, Any]:
    """Other work items whose commits modified the same entities, most shared first."""
    result = kb.questions.cooccurrence(body.work_item, valid_at=body.valid_at, tx=body.tx)
    return body.annotate(result)
