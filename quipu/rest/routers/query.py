"""``GET /query`` and ``POST /query``: SPARQL queries (tools-core §1.1).

One route, four ways in:

* ``POST`` with a JSON body (``Content-Type: application/json``, or none): Quipu's fields.
* ``POST`` with ``application/sparql-query``: the body is the query text (at most 1 MiB).
* ``POST`` with ``application/x-www-form-urlencoded``: a ``query`` field (at most 1 MiB).
* ``GET /query?query=…``: the request target is at most 8 KiB.

The three protocol forms take ``default-graph-uri`` / ``named-graph-uri`` (the protocol dataset,
which replaces the query's ``FROM`` / ``FROM NAMED``) and Quipu's own fields as parameters, from
the query string and, for a form, the body; an integer is decimal and a boolean ``true`` /
``false`` (or ``1`` / ``0``). Any other parameter is reported, not refused, like an unknown JSON
key (the annotating regime of §0.4): ``ignored_fields`` in the JSON shape,
``X-Quipu-Ignored-Fields`` on a standard format.

The answer is Quipu's JSON shape unless ``Accept`` names a standard format that fits the
result's form (SPARQL JSON/XML, CSV, TSV for SELECT/ASK; Turtle, N-Triples for
CONSTRUCT/DESCRIBE); ``application/json``, ``*/*``, ``application/*`` and anything that does not
fit fall back to the JSON shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from quipu.api import KnowledgeBase
from quipu.errors import (
    BadRequest,
    InvalidField,
    MissingField,
    PayloadTooLarge,
    UnsupportedMediaType,
    UriTooLong,
    WrongType,
)
from quipu.rest.deps import KbDep, LanesDep
from quipu.rest.fields import IGNORED_HEADER, Annotating
from quipu.rest.lanes import Lanes
from quipu.rest.problems import PROBLEM_JSON, from_validation
from quipu.rest.route_table import HEAVY, POINT, Lane
from quipu.shacl import registry
from quipu.sparql import withheld
from quipu.sparql.engine import QueryResult, known_point_query, point_query
from quipu.sparql.quipu_json import result_json
from quipu.sparql.results import (
    ALIASES,
    CSV,
    NTRIPLES,
    SPARQL_JSON,
    SPARQL_XML,
    TSV,
    TURTLE,
    media_ranges,
    media_types,
    serialise,
)
from quipu.store.graph_scope import check_kind

router = APIRouter(tags=["query"])

JSON: Final = "application/json"
SPARQL_QUERY: Final = "application/sparql-query"
FORM: Final = "application/x-www-form-urlencoded"
INFERENCE_HEADER: Final = "X-Quipu-Inference"
MAX_TARGET: Final = 8 * 1024  # bytes of the request target (path and query string)
MAX_QUERY_BODY: Final = 1024 * 1024  # bytes of a protocol body (sparql-query or form)
DEFAULT_GRAPH: Final = "default-graph-uri"
NAMED_GRAPH: Final = "named-graph-uri"
MAX_TX: Final = 2**63 - 1  # transaction ids are 64-bit integers


class QueryBody(Annotating):
    """The JSON body of ``POST /query``; unknown keys come back as ``ignored_fields``."""

    query: str = Field(description="the SPARQL text (SELECT, ASK, CONSTRUCT or DESCRIBE)")
    valid_at: str | None = Field(None, description="valid-time read point (DM §6)")
    tx: int | None = Field(None, ge=0, le=MAX_TX, description="transaction-time read point")
    graph: str | None = Field(None, description="named-graph IRI that becomes the default graph")
    fork: str | None = Field(None, description="fork name (no forks exist in this build)")
    include_kinds: list[str] | None = Field(None, description="graph kinds widening the default graph")
    row_labels: bool = Field(False, description="per-row graph labels under GRAPH ?g")
    federated: bool = Field(False, description="fan out to configured remotes")
    verbose: bool = Field(False, description="full IRIs instead of CURIEs")


_INTEGERS: Final = frozenset({"tx"})
_BOOLEANS: Final = frozenset({"row_labels", "federated", "verbose"})
_LISTS: Final = frozenset({"include_kinds"})
_FIELDS: Final = frozenset(QueryBody.model_fields)
_TRUTH: Final[dict[str, bool]] = {"true": True, "1": True, "false": False, "0": False}


@dataclass(frozen=True, slots=True)
class _Call:
    """One parsed request, whichever way it came in."""

    body: QueryBody
    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # sorted unknown keys and parameters


# -- request parsing ------------------------------------------------------------------------------


def _validated(load: Callable[[Any], QueryBody], data: Any, where: str) -> QueryBody:
    try:
        body = load(data)
    except ValidationError as exc:
        errors = [{**err, "loc": (where, *err["loc"])} for err in exc.errors()]
        raise from_validation(RequestValidationError(errors)) from None
    if not body.query.strip():
        raise MissingField("missing 'query' parameter", field="query")
    return body


def _from_json(raw: bytes, url_names: Iterable[str]) -> _Call:
    if not raw.strip():
        raise MissingField("missing 'query' parameter", field="query")
    body = _validated(QueryBody.model_validate_json, raw, "body")
    return _Call(body, ignored=tuple(sorted({*body.ignored_fields(), *url_names})))


def _from_pairs(pairs: list[tuple[str, str]]) -> _Call:
    """Protocol parameters and Quipu's fields from query-string or form pairs."""
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    defaults = tuple(grouped.pop(DEFAULT_GRAPH, ()))
    named = tuple(grouped.pop(NAMED_GRAPH, ()))
    data: dict[str, Any] = {}
    ignored: list[str] = []
    for name, given in grouped.items():
        if name not in _FIELDS:
            ignored.append(name)
        elif name in _LISTS:
            data[name] = given
        elif len(given) > 1:
            raise InvalidField(f"'{name}' was given {len(given)} times", field=name)
        else:
            data[name] = _typed(name, given[0])
    body = _validated(QueryBody.model_validate, data, "query")
    return _Call(body, defaults, named, tuple(sorted(ignored)))


def _typed(name: str, text: str) -> Any:
    if name in _INTEGERS:
        digits = text[1:] if text.startswith("-") else text
        if not (digits.isascii() and digits.isdigit()):
            raise WrongType(f"'{name}': expected a decimal integer, got {text!r}", field=name)
        return int(text)
    if name in _BOOLEANS:
        value = _TRUTH.get(text.lower())
        if value is None:
            raise WrongType(f"'{name}': expected true or false, got {text!r}", field=name)
        return value
    return text


def _check_target(request: Request) -> None:
    scope = request.scope
    path = scope.get("raw_path") or scope["path"].encode("utf-8")
    query = scope.get("query_string", b"")
    if len(path) + (len(query) + 1 if query else 0) > MAX_TARGET:
        raise UriTooLong(
            f"request target longer than {MAX_TARGET // 1024} KiB: POST the query as "
            f"{SPARQL_QUERY} or JSON instead"
        )


async def _read_limited(request: Request) -> bytes:
    """The body of a protocol POST, refused past ``MAX_QUERY_BODY`` without reading it all."""
    declared = request.headers.get("content-length")
    too_large = PayloadTooLarge(f"query body larger than {MAX_QUERY_BODY // (1024 * 1024)} MiB")
    if declared is not None and declared.isdigit() and int(declared) > MAX_QUERY_BODY:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_QUERY_BODY:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not valid UTF-8") from None


def _form_pairs(raw: bytes) -> list[tuple[str, str]]:
    try:
        return parse_qsl(_utf8(raw), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("a form field is not valid percent-encoded UTF-8") from None


def _media_type(request: Request) -> str:
    header = request.headers.get("content-type", "")
    return header.split(";", 1)[0].strip().lower()


# -- running and answering ------------------------------------------------------------------------


def _refuse_options(body: QueryBody) -> None:
    """The spec's exclusions first, then the options whose features this build lacks."""
    if body.fork is not None and (body.graph is not None or body.include_kinds is not None):
        raise InvalidField(
            "'fork' cannot be combined with 'graph' or 'include_kinds'",
            field="fork",
            reason="conflicting_fields",
        )
    if body.federated:
        clash = [n for n in ("valid_at", "tx", "graph") if getattr(body, n) is not None]
        clash += ["row_labels"] if body.row_labels else []
        if clash:
            raise InvalidField(
                f"'federated' cannot be combined with {', '.join(repr(n) for n in clash)}",
                field="federated",
                reason="conflicting_fields",
            )
    if body.fork is not None:
        raise InvalidField(f"unknown fork: {body.fork}", field="fork", reason="unsupported_option")
    for kind in body.include_kinds or ():
        check_kind(kind, "include_kinds")
    if body.row_labels:
        raise InvalidField(
            "row_labels: per-row graph labels are not supported yet; the response's 'labels' "
            "carries the composed label of the graphs the query reads",
            field="row_labels",
            reason="unsupported_option",
        )
    if body.federated:
        raise InvalidField(
            "no federation remotes are configured", field="federated", reason="unsupported_option"
        )


@lru_cache(maxsize=256)
def _standard_format(accept: str, form: str) -> str | None:
    """The standard media type ``accept`` prefers for a ``form`` result, or None for Quipu's
    JSON shape (``application/json``, ``*/*``, ``application/*``, or nothing that fits)."""
    offered = list(media_types(form))
    best: tuple[float, int, int, str | None] | None = None  # q, specificity, -position, choice
    for position, (kind, q) in enumerate(media_ranges(accept)):
        choice: str | None
        if kind in (JSON, "*/*", "application/*"):
            choice, specificity = None, (2 if kind == JSON else 0 if kind == "*/*" else 1)
        elif kind.endswith("/*"):
            found = next((mt for mt in offered if mt.startswith(kind[:-1])), None)
            if found is None:
                continue
            choice, specificity = found, 1
        else:
            base = ALIASES.get(kind, kind)
            if base not in offered:
                continue
            choice, specificity = base, 2
        candidate = (q, specificity, -position, choice)
        if best is None or candidate[:3] > best[:3]:
            best = candidate
    return None if best is None else best[3]


def _json_response(body: dict[str, Any]) -> Response:
    try:
        content = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate (only a query expression can make one)
        content = json.dumps(body, allow_nan=False, separators=(",", ":")).encode()
    return Response(content, media_type=JSON)


def _answer(kb: KnowledgeBase, call: _Call, accept: str | None) -> Response:
    body = call.body
    _refuse_options(body)
    result: QueryResult = kb.query_result(
        body.query,
        valid_at=body.valid_at,
        as_of_tx=body.tx,
        graph=body.graph,
        default_graphs=call.default_graphs,
        named_graphs=call.named_graphs,
        include_kinds=body.include_kinds,
    )
    inference = withheld.marker(
        kb.db,
        body.query,
        graph=body.graph,
        dataset=bool(call.default_graphs or call.named_graphs or body.include_kinds),
        valid_at=body.valid_at,
        as_of_tx=body.tx,
    )
    media = _standard_format(accept, result.form) if accept else None
    if media is None:
        out = result_json(result, None if body.verbose else registry.loaded_prefixes(kb.db))
        if call.ignored:
            out["ignored_fields"] = list(call.ignored)
        if inference is not None:
            out["inference"] = inference
        return _json_response(out)
    text, content_type = serialise(result, media)
    headers: dict[str, str] = {}
    if call.ignored:
        headers[IGNORED_HEADER] = json.dumps(list(call.ignored))
    if inference is not None:
        headers[INFERENCE_HEADER] = withheld.header(inference)
    # UTF-8 cannot carry a lone surrogate; only a query expression can make one.
    return Response(text.encode("utf-8", "replace"), headers=headers, media_type=content_type)


async def _run(lanes: Lanes, kb: KnowledgeBase, call: _Call, accept: str | None) -> Response:
    """Answer in a worker thread, holding a slot of the lane the query's shape picks. A text not
    seen before is parsed (and cached for the run) in a worker thread first: parsing takes a
    process-wide lock, and no slot is held meanwhile."""
    point = known_point_query(call.body.query)
    if point is None:
        point = await run_in_threadpool(point_query, call.body.query)
    lane: Lane = POINT if point else HEAVY
    async with lanes.slot(lane):
        if lane == HEAVY:
            return await lanes.run_heavy(_answer, kb, call, accept)
        return await run_in_threadpool(_answer, kb, call, accept)


# -- OpenAPI (documentation only: handlers return a Response, so nothing is re-validated) --------


class QueryWithheldType(BaseModel):
    type: str
    subclasses: list[str]


class QueryInference(BaseModel):
    applied: bool
    withheldTypes: list[QueryWithheldType]  # noqa: N815 (the wire name)
    note: str


class _QueryCommon(BaseModel):
    labels: dict[str, Any] | None
    ignored_fields: list[str] | None = None
    inference: QueryInference | None = None


class QuerySelect(_QueryCommon):
    variables: list[str]
    rows: list[dict[str, Any]]
    count: int
    truncated: bool


class QueryAsk(_QueryCommon):
    result: bool


class QueryTriple(BaseModel):
    subject: str
    predicate: str
    object: Any


class QueryGraph(_QueryCommon):
    triples: list[QueryTriple]
    count: int
    truncated: bool


_PROBLEM: Final[dict[str, Any]] = {
    "content": {
        PROBLEM_JSON: {
            "schema": {
                "type": "object",
                "required": ["error", "reason"],
                "properties": {
                    "error": {"type": "string"},
                    "reason": {"type": "string"},
                    "field": {"type": "string"},
                },
            }
        }
    }
}
_TEXT: Final[dict[str, Any]] = {"schema": {"type": "string"}}
_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "description": "Quipu's JSON shape, or the standard format Accept asked for",
        "content": {
            SPARQL_JSON: {"schema": {"type": "object"}},
            SPARQL_XML: _TEXT,
            CSV: _TEXT,
            TSV: _TEXT,
            TURTLE: _TEXT,
            NTRIPLES: _TEXT,
        },
    },
    400: {"description": "invalid request, SPARQL parse error or unsupported construct", **_PROBLEM},
    401: {"description": "with server.read_auth = 'token': no valid bearer credential", **_PROBLEM},
    408: {"description": "the query ran past search.query_timeout_ms", **_PROBLEM},
    413: {"description": "protocol body larger than 1 MiB", **_PROBLEM},
    414: {"description": "request target longer than 8 KiB", **_PROBLEM},
    415: {"description": "unsupported request media type", **_PROBLEM},
    422: {
        "description": "an intermediate result, or the work of the query's SQL, passed search.max_join_rows",
        **_PROBLEM,
    },
    503: {"description": "every slot of the query's read lane stayed taken (Retry-After)", **_PROBLEM},
}
_STRING: Final[dict[str, Any]] = {"type": "string"}
_STRINGS: Final[dict[str, Any]] = {"type": "array", "items": {"type": "string"}}
_PARAM_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "query": _STRING,
    "valid_at": _STRING,
    "tx": {"type": "integer", "minimum": 0, "maximum": MAX_TX},
    "graph": _STRING,
    "fork": _STRING,
    "include_kinds": _STRINGS,
    "row_labels": {"type": "boolean"},
    "federated": {"type": "boolean"},
    "verbose": {"type": "boolean"},
    DEFAULT_GRAPH: _STRINGS,
    NAMED_GRAPH: _STRINGS,
}
_GET_PARAMETERS: Final = [
    {"name": name, "in": "query", "required": name == "query", "schema": schema}
    for name, schema in _PARAM_SCHEMAS.items()
]
_POST_OPENAPI: Final[dict[str, Any]] = {
    "parameters": [p for p in _GET_PARAMETERS if p["name"] != "query"],
    "requestBody": {
        "required": True,
        "content": {
            JSON: {"schema": QueryBody.model_json_schema()},
            SPARQL_QUERY: {"schema": _STRING},
            FORM: {"schema": {"type": "object", "required": ["query"], "properties": _PARAM_SCHEMAS}},
        },
    },
}
_QUERY_RESULT = QuerySelect | QueryAsk | QueryGraph


# -- routes ---------------------------------------------------------------------------------------


@router.get(
    "/query",
    response_model=_QUERY_RESULT,
    responses=_RESPONSES,
    openapi_extra={"parameters": _GET_PARAMETERS},
)
async def sparql_query_get(request: Request, kb: KbDep, lanes: LanesDep) -> Response:
    """Run a SPARQL query given in the query string (SPARQL 1.1 Protocol)."""
    _check_target(request)
    call = _from_pairs(request.query_params.multi_items())
    return await _run(lanes, kb, call, request.headers.get("accept"))


@router.post("/query", response_model=_QUERY_RESULT, responses=_RESPONSES, openapi_extra=_POST_OPENAPI)
async def sparql_query_post(request: Request, kb: KbDep, lanes: LanesDep) -> Response:
    """Run a SPARQL query: a JSON body, a ``application/sparql-query`` body or a form."""
    _check_target(request)
    media = _media_type(request)
    url_pairs = request.query_params.multi_items() if request.scope.get("query_string") else []
    if media in ("", JSON):
        call = _from_json(await request.body(), (key for key, _ in url_pairs))
    elif media == SPARQL_QUERY:
        if any(key == "query" for key, _ in url_pairs):
            raise InvalidField(
                f"with {SPARQL_QUERY} the query is the request body, not a 'query' parameter",
                field="query",
            )
        text = _utf8(await _read_limited(request))
        call = _from_pairs([("query", text), *url_pairs])
    elif media == FORM:
        call = _from_pairs([*url_pairs, *_form_pairs(await _read_limited(request))])
    else:
        raise UnsupportedMediaType(
            f"unsupported Content-Type {media!r}: send JSON, {SPARQL_QUERY} or a {FORM} form"
        )
    return await _run(lanes, kb, call, request.headers.get("accept"))
