"""Read routes other than /query: export, cord, unravel, entity, entity history, fragments and
the transaction log (tools-core §1.3-§1.9).

POST bodies follow §0.4: ``/export``, ``/cord`` and ``/unravel`` annotate unknown keys,
``/entity_history`` refuses them; the GET routes refuse unknown query parameters.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from quipu.api import KnowledgeBase
from quipu.errors import MissingField
from quipu.rdfio.jsonld import compact_document
from quipu.rest import entity_page
from quipu.rest.deps import KbDep, SettingsDep
from quipu.rest.fields import Annotating, Strict, strict_params
from quipu.rest.negotiation import preferred
from quipu.shacl import registry

router = APIRouter(tags=["reads"])

TURTLE = "text/turtle"
NTRIPLES = "application/n-triples"
JSON_LD = "application/ld+json"
HTML = "text/html"
_TEXT = {"schema": {"type": "string"}}

# A stored value in its JSON output form (DM §2.1, values.to_json): IRI or string, number,
# boolean, or {"value", "lang"} / {"value", "datatype"} (a non-finite double too, no longer null).
JsonValue = str | int | float | bool | dict[str, str] | None


class JsonLdResponse(JSONResponse):
    media_type = JSON_LD


# -- models -----------------------------------------------------------------------------------


class ExportRequest(Annotating):
    graph: str | None = None
    group_id: str | None = None
    # not ``construct``: that name is a (deprecated) BaseModel classmethod
    construct_query: str | None = Field(None, alias="construct")
    format: str | None = None


class ExportScope(BaseModel):
    kind: Literal["root", "graph", "group", "construct"]
    value: str | None


class ExportDocument(BaseModel):
    rdf: str
    format: str
    scope: ExportScope
    graph: str | None
    triples: int
    ignored_fields: list[str] = []


class CordRequest(Annotating):
    type: str | None = None
    predicate: str | None = None
    limit: int | None = Field(None, ge=1, description="maximum entities, at least 1 (default 100)")


class Fact(BaseModel):
    predicate: str
    value: JsonValue


class CordEntity(BaseModel):
    iri: str
    facts: list[Fact]


class CordResult(BaseModel):
    entities: list[CordEntity]
    count: int
    ignored_fields: list[str] = []


class UnravelRequest(Annotating):
    tx: int | None = None
    valid_at: str | None = None


class Claim(BaseModel):
    entity: str
    predicate: str
    value: JsonValue
    valid_from: str
    valid_to: str | None
    tx: int
    retracted_tx: int | None


class UnravelResult(BaseModel):
    facts: list[Claim]
    count: int
    ignored_fields: list[str] = []


class EntityDocument(BaseModel):
    """A JSON-LD node: ``@id``, optional ``@context`` and ``@type``, then one key per predicate."""

    model_config = ConfigDict(extra="allow")

    context: dict[str, str] | None = Field(None, alias="@context")
    id: str = Field(alias="@id")
    type: str | list[str] | None = Field(None, alias="@type")


class EntityHistoryRequest(Strict):
    iri: str


class HistoryRow(BaseModel):
    op: Literal["assert", "retract"]
    predicate: str
    value: JsonValue
    tx: int
    valid_from: str
    valid_to: str | None


class EntityHistory(BaseModel):
    iri: str
    history: list[HistoryRow]
    count: int


class Triple(BaseModel):
    subject: str
    predicate: str
    object: JsonValue


class FragmentControls(BaseModel):
    next: str | None = None


class Fragment(BaseModel):
    triples: list[Triple]
    total_count: int = Field(alias="totalCount")
    page: int
    page_size: int = Field(alias="pageSize")
    controls: FragmentControls


class TransactionAuth(BaseModel):
    principal: str
    credential_id: str | None
    auth_class: str


class Transaction(BaseModel):
    id: int
    timestamp: str
    actor: str | None
    source: str | None
    authenticated: TransactionAuth | None


class TransactionLog(BaseModel):
    transactions: list[Transaction]
    count: int


# -- export -----------------------------------------------------------------------------------


@router.post(
    "/export",
    response_model=ExportDocument,
    response_model_exclude_unset=True,
    responses={200: {"content": {TURTLE: _TEXT, NTRIPLES: _TEXT}}},
)
def export(kb: KbDep, settings: SettingsDep, request: Request, body: ExportRequest | None = None) -> Any:
    """Deterministic RDF of one scope: ROOT (default), a `graph`, an episode `group_id`, or a
    `construct` query. The RDF document itself (`text/turtle` or `application/n-triples`, ignored
    fields in `X-Quipu-Ignored-Fields`), or the JSON wrapper when `Accept: application/json`."""
    body = body or ExportRequest()
    requested = body.format if body.format is not None else "turtle"
    scope = body.fields(exclude={"construct_query", "format"})
    result = kb.export_result(
        **scope, construct=body.construct_query, format=requested, base_ns=settings.base_ns
    )
    offers = {"application/json": True, TURTLE: False, NTRIPLES: False}
    if preferred(request.headers.get("accept"), offers, False):
        return body.annotate(
            {
                "rdf": result.rdf,
                "format": requested,
                "scope": {"kind": result.scope_kind, "value": result.scope_value},
                "graph": result.graph,
                "triples": result.triples,
            }
        )
    media = TURTLE if result.format == "turtle" else NTRIPLES
    return Response(result.rdf, media_type=media, headers=body.ignored_header())


# -- cord and unravel -------------------------------------------------------------------------


@router.post("/cord", response_model=CordResult, response_model_exclude_unset=True)
def cord(kb: KbDep, body: CordRequest | None = None) -> dict[str, Any]:
    """ROOT's entities ordered by IRI (optionally of one asserted `type`, or using one
    `predicate`; `type` wins), each with all its current statements."""
    body = body or CordRequest()
    limit = body.limit if body.limit is not None else 100
    return body.annotate(kb.cord(type=body.type, predicate=body.predicate, limit=limit))


@router.post("/unravel", response_model=UnravelResult, response_model_exclude_unset=True)
def unravel(kb: KbDep, body: UnravelRequest | None = None) -> dict[str, Any]:
    """Every ROOT claim visible at transaction `tx` and/or valid instant `valid_at` (at least one)."""
    body = body or UnravelRequest()
    return body.annotate(kb.unravel(tx=body.tx, valid_at=body.valid_at))


# -- entity -----------------------------------------------------------------------------------

Flag = Literal["true", "false", "1", "0"]
ExpandedParam = Annotated[Flag, Query(description="full IRIs, and labels on referenced nodes")]
_FORMATS = {"json": "jsonld", "ttl": "turtle", "html": "html"}
_SUFFIX = re.compile(r"/(json|ttl|html)$")
_COLLAPSED = re.compile(r"^(https?):/(?!/)")


def _entity_document(kb: KnowledgeBase, iri: str, expanded: bool) -> dict[str, Any]:
    doc = kb.entity(iri, expanded=expanded)
    return doc if expanded else compact_document(doc, registry.loaded_prefixes(kb.db))


@router.get(
    "/entity",
    response_model=EntityDocument,
    response_class=JsonLdResponse,
    dependencies=[Depends(strict_params("iri", "expanded"))],
)
def entity(kb: KbDep, iri: Annotated[str, Query()], expanded: ExpandedParam = "false") -> Response:
    """The current ROOT description of `iri` (as subject) as JSON-LD: compact with CURIEs and an
    `@context`, or `expanded` with full IRIs and the labels of referenced nodes."""
    return JsonLdResponse(_entity_document(kb, iri, expanded in ("true", "1")))


def split_entity_path(path: str) -> tuple[str, str | None]:
    """The IRI and pinned format of an ``/entity/{iri}`` path. A trailing ``/json``, ``/ttl`` or
    ``/html`` always pins the format (use ``/entity?iri=`` for an IRI that ends in one), and
    ``http:/x`` — a ``//`` some clients collapse — is read as ``http://x``."""
    pinned = None
    found = _SUFFIX.search(path)
    if found is not None:
        pinned = _FORMATS[found.group(1)]
        path = path[: found.start()]
    return _COLLAPSED.sub(r"\1://", path), pinned


@router.get(
    "/entity/{iri:path}",
    response_model=EntityDocument,
    response_class=JsonLdResponse,
    responses={200: {"content": {TURTLE: _TEXT, HTML: _TEXT}}},
    dependencies=[Depends(strict_params("expanded"))],
)
def entity_by_path(kb: KbDep, iri: str, request: Request, expanded: ExpandedParam = "false") -> Response:
    """The older path form: JSON-LD for `Accept: application/ld+json` or `application/json`,
    Turtle for `text/turtle`, else an HTML page; a trailing `/json`, `/ttl` or `/html` pins the
    format. The Turtle form is 400 `entity not found` for an IRI the store has never seen."""
    target, pinned = split_entity_path(iri)
    offers = {JSON_LD: "jsonld", "application/json": "jsonld", TURTLE: "turtle", HTML: "html"}
    chosen = pinned or preferred(request.headers.get("accept"), offers, "html")
    if chosen == "turtle":
        return Response(kb.entity_turtle(target), media_type=TURTLE)
    if chosen == "html":
        return HTMLResponse(entity_page.render(kb.entity(target, expanded=True)))
    return JsonLdResponse(_entity_document(kb, target, expanded in ("true", "1")))


@router.post("/entity_history", response_model=EntityHistory)
def entity_history(kb: KbDep, body: EntityHistoryRequest) -> dict[str, Any]:
    """Every ROOT fact-log row with `iri` as subject (assertions and retraction records), by `tx`."""
    if not body.iri:
        raise MissingField("missing 'iri' parameter", field="iri")
    return kb.entity_history(body.iri)


# -- fragments and transactions ---------------------------------------------------------------


@router.get(
    "/fragments",
    response_model=Fragment,
    response_model_exclude_unset=True,
    dependencies=[Depends(strict_params("subject", "predicate", "object", "page", "pageSize"))],
)
def fragments(
    kb: KbDep,
    response: Response,
    subject: str | None = None,
    predicate: str | None = None,
    object: str | None = None,
    page: int = 1,
    page_size: Annotated[
        int, Query(alias="pageSize", ge=1, description="triples per page, from 1 (capped at 1000)")
    ] = 100,
) -> dict[str, Any]:
    """One page of the Triple Pattern Fragment over ROOT's current statements; absent terms are
    wildcards, `object` is an IRI when it starts with http://, https:// or urn: (else a string)."""
    out = kb.fragments(subject=subject, predicate=predicate, object=object, page=page, page_size=page_size)
    controls: dict[str, str] = {}
    if out["page"] * out["pageSize"] < out["totalCount"]:
        terms = [(k, v) for k, v in (("subject", subject), ("predicate", predicate), ("object", object)) if v]
        query = urlencode([*terms, ("page", out["page"] + 1), ("pageSize", out["pageSize"])], quote_via=quote)
        controls["next"] = f"/fragments?{query}"
    response.headers["Cache-Control"] = "public, max-age=60"
    return {**out, "controls": controls}


@router.get(
    "/transactions",
    response_model=TransactionLog,
    dependencies=[Depends(strict_params("since", "limit"))],
)
def transactions(
    kb: KbDep,
    since: int | None = None,
    limit: Annotated[
        int | None, Query(ge=1, description="at most this many, from 1 (capped at 10000)")
    ] = None,
) -> dict[str, Any]:
    """Transactions with `id > since`, oldest first, at most `limit` (1-10000, default 1000);
    with neither parameter, the whole log."""
    if since is None and limit is None:
        return kb.transactions(since=0, limit=None)
    return kb.transactions(since=since or 0, limit=1000 if limit is None else limit)
