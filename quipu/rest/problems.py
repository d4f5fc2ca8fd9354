"""The one place where exceptions become HTTP responses.

Every error on the wire is an RFC 9457 problem document (``application/problem+json``) with
quipu's own members beside the standard ones: ``error`` (prose) and ``reason`` (a stable token),
plus ``field`` when one request field is at fault. FastAPI's request validation errors, routing
errors and unexpected exceptions all go through ``problem_response``. Database failures arrive
already translated (``StorageError``, by the store).
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from quipu.errors import (
    BadRequest,
    InvalidField,
    MethodNotAllowed,
    MissingField,
    QuipuError,
    RouteNotFound,
    UnknownField,
    WrongType,
    internal_error,
)

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("quipu.rest")


class Problem(BaseModel):
    """An error response (RFC 9457 members plus quipu's ``error`` and ``reason``)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    error: str
    reason: str
    field: str | None = None


_PROBLEM_REF: dict[str, Any] = {"schema": {"$ref": "#/components/schemas/Problem"}}


def documented(description: str) -> dict[str, Any]:
    """An error response in OpenAPI: a problem document (``install`` publishes the component).

    Written as content, not as ``model``: FastAPI builds a validator per route for every
    documented model, on each app's first request (seven per route here, a third of a second
    for the whole app), and never uses it for an error a handler raises."""
    return {
        "description": description,
        "content": {"application/json": _PROBLEM_REF, PROBLEM_JSON: _PROBLEM_REF},
    }


# Documented on every route. 422 replaces FastAPI's validation schema: quipu answers invalid input
# with 400, and 422 only when a SPARQL evaluation passes the join limit.
RESPONSES: dict[int | str, dict[str, Any]] = {
    400: documented("invalid input or a refused write"),
    401: documented("a write (or, with server.read_auth = 'token', a read) without a valid bearer"),
    403: documented("a write on a read-only server, or a denial"),
    413: documented("request body too large"),
    422: documented("a SPARQL evaluation passed the join limit or its work budget"),
    500: documented("internal storage failure"),
    503: documented("every read slot stayed taken: retry after Retry-After seconds"),
}


def problem_body(exc: QuipuError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": f"urn:quipu:problem:{exc.reason}",
        "title": HTTPStatus(exc.status).phrase,
        "status": exc.status,
    }
    body.update(exc.body())
    return body


def problem_response(exc: QuipuError, headers: dict[str, str] | None = None) -> JSONResponse:
    """The problem document of ``exc``, with the headers the error asks for (``Retry-After``)."""
    return JSONResponse(
        problem_body(exc),
        status_code=exc.status,
        media_type=PROBLEM_JSON,
        headers={**exc.headers(), **(headers or {})},
    )


def _field_name(loc: tuple[Any, ...]) -> str | None:
    # Only the first item says where the value came from: a field may be named "query" too.
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or None


def from_validation(exc: RequestValidationError) -> QuipuError:
    """The first problem pydantic found, as quipu's error naming the field and the reason."""
    errors = exc.errors()
    if not errors:
        return BadRequest("invalid request")
    # An unknown key is reported before a missing one: {"entity": …} on a route that wants
    # "iri" is a misspelt field, and must say so (tools-core §1.7).
    err = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])
    kind, loc, msg = str(err.get("type", "")), tuple(err.get("loc", ())), str(err.get("msg", "invalid"))
    name = _field_name(loc)
    if kind == "json_invalid":
        return BadRequest(f"request body is not valid JSON: {err.get('ctx', {}).get('error', msg)}")
    if name is None:
        return WrongType("the request body must be a JSON object")
    if kind == "missing":
        return MissingField(f"missing '{name}' parameter", field=name)
    if kind == "extra_forbidden":
        return UnknownField(
            f"unknown field '{name}' (this route accepts only its documented fields)", field=name
        )
    if kind.endswith(("_type", "_parsing")) or kind in ("is_instance_of", "literal_error"):
        return WrongType(f"'{name}': {msg}", field=name)
    return InvalidField(f"'{name}': {msg}", field=name)


def _publish_problem_schema(app: FastAPI) -> None:
    """Add the ``Problem`` component that every documented error response refers to."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components["Problem"] = Problem.model_json_schema(mode="serialization")
        return app.openapi_schema or {}

    app.openapi = openapi  # type: ignore[method-assign]


def install(app: FastAPI) -> None:
    _publish_problem_schema(app)

    @app.exception_handler(QuipuError)
    async def _quipu_error(_request: Request, exc: QuipuError) -> JSONResponse:
        if exc.status >= 500:  # with the traceback: a storage failure's cause is the driver's error
            log.error("request failed: %s", exc.message, exc_info=exc)
        return problem_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return problem_response(from_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            err: QuipuError = RouteNotFound(f"no route {request.url.path}")
        elif exc.status_code == 405:
            err = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")
        else:
            err = QuipuError(str(exc.detail), reason=HTTPStatus(exc.status_code).name.lower())
            err.status = exc.status_code
        return problem_response(err, headers=dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error", exc_info=exc)
        return problem_response(internal_error())
