"""The graph registry, labels, datasets and overlays (tools-graphs-governance §1-§2).

``GET /graphs`` and ``POST /overlay/compose`` are reads; every other route here is a write,
``/datasets`` included for its list and show actions (the route is write-classified, §0.3). All
are Annotating: unknown keys come back as ``ignored_fields``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field, WithJsonSchema

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["graphs"])

_TIMESTAMP = "RFC 3339 instant, normalised to YYYY-MM-DDTHH:MM:SSZ"
_ACTOR = "declared actor (not an authenticated identity)"


class LabelsOut(BaseModel):
    freshness: str | None
    durability: str | None
    trust_rank: int | None
    trust_chain: str | None
    policy: str | None
    kind: str | None


class Creation(BaseModel):
    timestamp: str
    actor: str | None


class GraphRow(BaseModel):
    iri: str
    g: int
    class_: str = Field(alias="class")
    source: str | None
    lifecycle: str | None
    creation: Creation
    labels: LabelsOut


class GraphListResponse(BaseModel):
    count: int
    graphs: list[GraphRow]
    ignored_fields: list[str] | None = None


_LIST_PARAMS = frozenset({"kind", "lifecycle"})


@router.get(
    "/graphs",
    response_model=GraphListResponse,
    response_model_exclude_unset=True,
    response_model_by_alias=True,
    # Annotating, as every tool of its group (tools-graphs-governance §0.5): unknown parameters
    # are reported, so the MCP schema admits them.
    openapi_extra={"x-quipu-annotating": True},
)
def graph_list(
    request: Request,
    kb: KbDep,
    kind: Annotated[
        str | None, Query(description="keep graphs whose declared data kind is this token")
    ] = None,
    lifecycle: Annotated[str | None, Query(description="keep graphs in this lifecycle state: frozen")] = None,
) -> dict[str, Any]:
    """The graph registry: ROOT and every registered graph but the meta-graph, by id."""
    out = kb.graphs.list(kind=kind, lifecycle=lifecycle)
    ignored = sorted(set(request.query_params) - _LIST_PARAMS)
    if ignored:
        out["ignored_fields"] = ignored
    return out


class CreateRequest(Annotating):
    graph: str = Field(description="the graph IRI to register")
    timestamp: str | None = Field(None, description=f"creation instant: {_TIMESTAMP}; default now")
    actor: str | None = Field(None, description=f"{_ACTOR}; non-empty when given")


class CreateResponse(BaseModel):
    graph: str
    g: int
    created: bool
    creation: Creation
    ignored_fields: list[str] | None = None


@router.post("/graph/create", response_model=CreateResponse, response_model_exclude_unset=True)
def graph_create(body: CreateRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Register a committed named graph; a repeat changes nothing and keeps the first provenance."""
    return body.annotate(kb.graphs.create(**body.fields(), auth=auth))


Trust = Annotated[
    dict[str, Any],
    WithJsonSchema(
        {
            "type": "object",
            "properties": {
                "iri": {"type": "string", "description": "the trust value's IRI"},
                "chain": {"type": "string", "description": "the chain IRI that ranks it"},
                "rank": {"type": "integer", "description": "its rank within that chain"},
            },
            "required": ["iri", "chain", "rank"],
        }
    ),
]


class LabelRequest(Annotating):
    graph: str = Field(description="a registered graph (ROOT as urn:quipu:graph:root)")
    timestamp: str = Field(description=f"valid-from of this declaration: {_TIMESTAMP}")
    freshness: str | None = Field(None, description="fresh, recomputing or stale")
    durability: str | None = Field(None, description="soleRecord, reproducible or backed")
    trust: Trust | None = Field(None, description="{iri, chain, rank}")
    policy: list[Any] | None = Field(None, description="obligation tokens, e.g. pii, no-export")
    kind: str | None = Field(None, description="data-kind token [a-z][a-z0-9-]*")
    valid_to: str | None = Field(None, description="expiry, canonical UTC YYYY-MM-DDTHH:MM:SSZ")
    actor: str | None = Field(None, description=_ACTOR)


class TxResponse(BaseModel):
    tx_id: int
    ignored_fields: list[str] | None = None


@router.post("/graph/label", response_model=TxResponse, response_model_exclude_unset=True)
def graph_label(body: LabelRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Declare a versioned label on a graph; it replaces the whole cached label."""
    return body.annotate(kb.graphs.label(**body.fields(), auth=auth))


Member = Annotated[
    Any,  # checked by the service, so a bad member is named by its position
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {"graph": {"type": "string"}, "ord": {"type": "integer"}},
                    "required": ["graph"],
                },
            ]
        }
    ),
]


class DatasetsRequest(Annotating):
    action: str | None = Field(None, description="create, list (default), show or remove")
    name: str | None = Field(None, description="the dataset IRI (create, show, remove)")
    members: list[Member] | None = Field(None, description="graph IRIs or {graph, ord} (create)")
    timestamp: str | None = Field(None, description=f"valid-from of the meta-graph mirror: {_TIMESTAMP}")
    actor: str | None = Field(None, description=_ACTOR)


class DatasetMember(BaseModel):
    graph: str
    ord: int | None


class DatasetsResponse(BaseModel):
    created: str | None = None
    members: int | list[DatasetMember] | None = None
    datasets: list[str] | None = None
    name: str | None = None
    removed: bool | None = None
    ignored_fields: list[str] | None = None


@router.post("/datasets", response_model=DatasetsResponse, response_model_exclude_unset=True)
def datasets(body: DatasetsRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Create, list, show or remove a named dataset (a set of graphs read as one by FROM)."""
    return body.annotate(kb.graphs.datasets(**body.fields(), auth=auth))


class FreezeRequest(Annotating):
    graph: str = Field(description="a committed named graph")
    timestamp: str = Field(description=f"recorded on the lifecycle facts, label and registry: {_TIMESTAMP}")
    out_dir: str | None = Field(
        None,
        description="server directory for the pack, inside [quipu.graphs] archive_dir; default that directory",
    )
    actor: str | None = Field(None, description=_ACTOR)


class FreezeResponse(BaseModel):
    graph: str
    pack: str
    alias: str
    content_hash: str
    facts: int
    transactions: int
    vectors: int
    vectors_omitted: str | None
    ignored_fields: list[str] | None = None


@router.post("/graph/freeze", response_model=FreezeResponse, response_model_exclude_unset=True)
def graph_freeze(body: FreezeRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Move a graph's whole history into a verified archive pack; it stays readable by name."""
    return body.annotate(kb.graphs.freeze(**body.fields(), auth=auth))


class ThawRequest(Annotating):
    graph: str = Field(description="a frozen graph")
    timestamp: str = Field(description=f"recorded on the lifecycle change and the label: {_TIMESTAMP}")
    actor: str | None = Field(None, description=_ACTOR)


class ThawResponse(BaseModel):
    graph: str
    facts_restored: int
    vectors_restored: int
    ignored_fields: list[str] | None = None


@router.post("/graph/thaw", response_model=ThawResponse, response_model_exclude_unset=True)
def graph_thaw(body: ThawRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Restore a frozen graph's full history from its pack and make it writable again."""
    return body.annotate(kb.graphs.thaw(**body.fields(), auth=auth))


class OverlayCreateRequest(Annotating):
    overlay: str = Field(description="the overlay graph IRI")
    parent_branch: str | None = Field(None, description="a committed graph IRI; absent or null: ROOT")


class OverlayCreateResponse(BaseModel):
    g: int
    parent_branch: int
    ignored_fields: list[str] | None = None


@router.post("/overlay/create", response_model=OverlayCreateResponse, response_model_exclude_unset=True)
def overlay_create(body: OverlayCreateRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Create an overlay bound once and for all to its committed parent."""
    return body.annotate(kb.graphs.overlay_create(body.overlay, body.parent_branch, auth=auth))


RdfObject = Annotated[
    Any,
    WithJsonSchema(
        {
            "description": 'a bare string is a plain literal; {"iri"} an edge; {"str"}, {"int"}, '
            '{"float"}, {"bool"}, {"value","lang"} or {"value","datatype"} a literal'
        }
    ),
]


class OverlayWriteRequest(Annotating):
    overlay: str = Field(description="a registered overlay")
    op: str = Field(description="assert, retract or tombstone")
    subject: str = Field(description="subject IRI")
    predicate: str = Field(description="predicate IRI")
    object: RdfObject = Field(description="the object")
    timestamp: str | None = Field(None, description=f"valid-from: {_TIMESTAMP}; default now")


@router.post("/overlay/write", response_model=TxResponse, response_model_exclude_unset=True)
def overlay_write(body: OverlayWriteRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Assert, retract or tombstone one triple in an overlay; the parent is never written."""
    return body.annotate(kb.graphs.overlay_write(**body.fields(), auth=auth))


class OverlayComposeRequest(Annotating):
    overlay: str = Field(description="a registered overlay")
    precedence: str | None = Field(None, description="nearest (default) or governed")


class ComposedTriple(BaseModel):
    subject: str
    predicate: str
    object: Any


class OverlayComposeResponse(BaseModel):
    count: int
    triples: list[ComposedTriple]
    precedence: str
    ignored_fields: list[str] | None = None


@router.post("/overlay/compose", response_model=OverlayComposeResponse, response_model_exclude_unset=True)
def overlay_compose(body: OverlayComposeRequest, kb: KbDep) -> dict[str, Any]:
    """What a reader of the overlay sees: the overlay stacked on its parent. Writes nothing."""
    return body.annotate(kb.graphs.overlay_compose(body.overlay, body.precedence))
