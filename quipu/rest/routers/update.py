"""``POST /update``: SPARQL 1.1 Update over the SPARQL Protocol (tools-core §3.10).

The body is the update itself (``application/sparql-update``) or a form
(``application/x-www-form-urlencoded``) with exactly one ``update`` field. ``actor`` and
``source`` come from the form or the query string, once; ``using-graph-uri`` and
``using-named-graph-uri`` scope a ``DELETE/INSERT … WHERE``. The route is strict: any other
parameter or form field is refused before the update is parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from quipu.errors import BadRequest, InvalidField, MissingField, UnsupportedMediaType
from quipu.governance.workflow import HEADER as WORKFLOW_HEADER
from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import refuse_unknown
from quipu.sparql.update import USING_GRAPH, USING_NAMED_GRAPH

router = APIRouter(tags=["writes"])

SPARQL_UPDATE = "application/sparql-update"
FORM = "application/x-www-form-urlencoded"
_DECLARATIONS = ("actor", "source")
_QUERY_PARAMS = frozenset({*_DECLARATIONS, USING_GRAPH, USING_NAMED_GRAPH})
_FORM_FIELDS = _QUERY_PARAMS | {"update"}
_QUERY_ONLY = ("default-graph-uri", "named-graph-uri")


class GraphChange(BaseModel):
    graph: str | None  # None = ROOT
    tx: int
    asserted: int
    retracted: int


class UpdateResponse(BaseModel):
    tx: int | None
    asserted: int
    retracted: int
    graphs: list[GraphChange]


_PARAMETERS: list[dict[str, Any]] = [
    {"name": name, "in": "query", "required": False, "schema": schema, "description": text}
    for name, schema, text in (
        ("actor", {"type": "string"}, "who declares the write (recorded on the transaction)"),
        ("source", {"type": "string"}, "producer key of the write (default sparql-update)"),
        (USING_GRAPH, {"type": "array", "items": {"type": "string"}}, "default graph of the WHERE"),
        (USING_NAMED_GRAPH, {"type": "array", "items": {"type": "string"}}, "named graphs of the WHERE"),
    )
]
_FORM_SCHEMA = {
    "type": "object",
    "additionalProperties": False,  # the route is strict: another field is 400 unknown_field
    "required": ["update"],
    "properties": {
        "update": {"type": "string"},
        "actor": {"type": "string"},
        "source": {"type": "string"},
        USING_GRAPH: {"type": "array", "items": {"type": "string"}},
        USING_NAMED_GRAPH: {"type": "array", "items": {"type": "string"}},
    },
}
_OPENAPI = {
    "parameters": _PARAMETERS,
    "requestBody": {
        "required": True,
        "content": {SPARQL_UPDATE: {"schema": {"type": "string"}}, FORM: {"schema": _FORM_SCHEMA}},
    },
}


def _media_type(request: Request) -> str:
    """The body's media type; 415 for anything but the two the protocol defines (UTF-8 only)."""
    header = request.headers.get("content-type", "")
    media, *params = (part.strip() for part in header.split(";"))
    media = media.lower()
    charset = next(
        (p.split("=", 1)[1].strip(' "').lower() for p in params if p.lower().startswith("charset=")), ""
    )
    if media not in (SPARQL_UPDATE, FORM) or charset not in ("", "utf-8", "utf8"):
        shown = header or "none"
        raise UnsupportedMediaType(
            f"unsupported Content-Type {shown!r}: send the update as {SPARQL_UPDATE} or as a "
            f"{FORM} form with one 'update' field (UTF-8)"
        )
    return media


def _text(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not valid UTF-8") from None


def _form(body: bytes) -> list[tuple[str, str]]:
    try:
        return parse_qsl(_text(body), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("a form field is not valid percent-encoded UTF-8") from None


def _once(pairs: Sequence[tuple[str, str]], name: str) -> str | None:
    given = [value for key, value in pairs if key == name]
    if len(given) > 1:
        raise InvalidField(
            f"'{name}' was given {len(given)} times (form and query string count together)", field=name
        )
    return given[0] if given else None


@router.post("/update", response_model=UpdateResponse, openapi_extra=_OPENAPI)
async def sparql_update(request: Request, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Run a SPARQL 1.1 Update; one transaction per changed graph, all or nothing."""
    media = _media_type(request)
    query = list(request.query_params.multi_items())
    for name in _QUERY_ONLY:
        if any(key == name for key, _ in query):
            raise InvalidField(
                f"'{name}' belongs to SPARQL queries, not updates; scope the WHERE with "
                f"'{USING_GRAPH}' / '{USING_NAMED_GRAPH}' or GRAPH in the update",
                field=name,
            )
    refuse_unknown((key for key, _ in query), _QUERY_PARAMS)
    body = await request.body()
    if media == SPARQL_UPDATE:
        text, form = _text(body), []
    else:
        form = _form(body)
        refuse_unknown((key for key, _ in form), _FORM_FIELDS)
        updates = [value for key, value in form if key == "update"]
        if not updates:
            raise MissingField("missing 'update' parameter", field="update")
        if len(updates) > 1:
            raise InvalidField(f"exactly one 'update' field is allowed, got {len(updates)}", field="update")
        text = updates[0]
    pairs = query + [(key, value) for key, value in form if key != "update"]
    actor, source = (_once(pairs, name) for name in _DECLARATIONS)
    result: dict[str, Any] = await run_in_threadpool(
        kb.update,
        text,
        actor=actor,
        source=source,
        auth=auth,
        using_graphs=[value for key, value in pairs if key == USING_GRAPH],
        using_named_graphs=[value for key, value in pairs if key == USING_NAMED_GRAPH],
        # rule 9: the direct-workflow guard, with the request's workflow signature if any
        guard=kb.governance.workflow.guard(text, request.headers.get(WORKFLOW_HEADER)),
    )
    return result
