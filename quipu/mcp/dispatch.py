"""A tool call becomes the REST request of its route, sent into the REST app.

Arguments are checked against the tool's JSON types first: a wrong type is an ``isError`` result
carrying the 400 ``wrong_type`` problem body REST would send (so the model can read it and correct
the call), and no request is made. Everything else — required fields, unknown keys, values — is
the REST route's to judge. The request carries only the transport's credential. A 2xx answer is
the tool result; any other status is an ``isError`` result whose text is the REST error body,
unchanged. Only an unknown tool name is a protocol error (invalid params).

A logic tool (the opt-in ``logic`` toolset) is zpm's: its route already answers a ``tools/call``
result, whose ``content`` and ``isError`` are the tool result as they are (not wrapped again as
JSON text), and its arguments are not type-checked here, since zpm's tools answer a wrong
argument themselves (``InvalidArguments``) and a prompt written for zpm expects that answer.

The REST app is reached in process (an ASGI app, no socket) or over HTTP (the base URL of a
running ``quipu-server``, which then validates and authenticates): the constructor's choice, with
one code path after it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

import httpx
import jsonschema
import mcp.types as types
from mcp import MCPError
from mcp.types import INVALID_PARAMS
from starlette.types import ASGIApp

from quipu.errors import QuipuError, WrongType
from quipu.errors import internal_error as internal_failure
from quipu.mcp.registry import FORM, JSON, Registry, ToolSpec
from quipu.rest.fields import refuse_unknown
from quipu.rest.problems import problem_response
from quipu.version import version_info

log = logging.getLogger("quipu.mcp")
IN_PROCESS: Final = "http://quipu.in-process"
VERSION_TOOL: Final = "quipu_version"
CONNECT_TIMEOUT: Final = 10.0  # seconds, to a running server; a call itself may take as long as it takes


def invalid_params(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def check_types(spec: ToolSpec, arguments: Mapping[str, Any]) -> WrongType | None:
    """The first argument whose JSON type the tool schema does not allow (nothing else is judged)."""
    validator = jsonschema.Draft202012Validator(spec.input_schema)
    for error in validator.iter_errors(dict(arguments)):
        if _type_error(error):
            where = ".".join(str(p) for p in error.absolute_path)
            return WrongType(f"'{where or 'arguments'}' {_type_message(error)}", field=where or None)
    if spec.method == "GET":
        for name, value in arguments.items():
            if isinstance(value, dict | list) and not _repeatable(spec, name):
                return WrongType(
                    f"'{name}' must be a string, number or boolean (got {_json(value)})", field=name
                )
    return None


def _type_error(error: jsonschema.ValidationError) -> bool:
    """A wrong JSON type, also under ``anyOf``/``oneOf`` (``int | None``): every branch failed on type."""
    if error.validator in ("type", "enum"):
        return True
    if error.validator not in ("anyOf", "oneOf") or not error.context:
        return False
    branches = _branches(error)
    failed: dict[int, list[jsonschema.ValidationError]] = {}
    for e in error.context:  # each failed branch's errors, by the branch's index
        failed.setdefault(int(e.relative_schema_path[0]), []).append(e)
    return all(_failed_on_type(branches[i], errors) for i, errors in failed.items())


def _branches(error: jsonschema.ValidationError) -> list[Any]:
    value = error.validator_value
    return list(value) if isinstance(value, list) else []


def _form(branch: Any) -> bool:
    """A union branch written out as a closed object (the value forms of DM §2.1): the forms are told
    apart by their keys, so keys that do not fit are a wrong type. A model's ``$ref`` is no form:
    its missing or unknown keys stay REST's to judge."""
    return (
        isinstance(branch, dict)
        and "$ref" not in branch
        and branch.get("type") == "object"
        and branch.get("additionalProperties") is False
    )


def _failed_on_type(branch: Any, errors: list[jsonschema.ValidationError]) -> bool:
    form = _form(branch)
    return all(
        _type_error(e)
        or (form and not e.relative_path and e.validator in ("required", "additionalProperties"))
        for e in errors
    )


def _type_message(error: jsonschema.ValidationError) -> str:
    if error.validator in ("anyOf", "oneOf"):
        *head, last = dict.fromkeys(_kind(branch) for branch in _branches(error))
        wanted = f"{', '.join(head)} or {last}" if head else last
        return f"must be {wanted} (got {_json(error.instance)})"
    if error.validator == "enum":
        return f"must be one of {_json(error.validator_value)} (got {_json(error.instance)})"
    return f"must be {_kind(error.schema)} (got {_json(error.instance)})"


def _kind(schema: Any, *, article: bool = True) -> str:
    """A schema's JSON type in a few words: ``a string``, ``an integer or null``, ``{"int": integer}``."""
    if not isinstance(schema, dict):
        return "any value"
    if _form(schema):
        fields = (f'"{k}": {_kind(v, article=False)}' for k, v in schema.get("properties", {}).items())
        return "{" + ", ".join(fields) + "}"
    if "$ref" in schema:
        return f"an object ({str(schema['$ref']).rsplit('/', 1)[-1]})"
    kind = schema.get("type")
    names = [str(n) for n in (kind if isinstance(kind, list) else [kind] if kind else [])]
    if not names:
        return "any value"
    if not article:
        return " or ".join(names)
    return " or ".join(n if n == "null" else f"{'an' if n[0] in 'aeiou' else 'a'} {n}" for n in names)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _repeatable(spec: ToolSpec, name: str) -> bool:
    prop = spec.input_schema.get("properties", {}).get(name, {})
    return bool(prop.get("type") == "array")


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _query_params(arguments: Mapping[str, Any]) -> list[tuple[str, str | int | float | bool | None]]:
    """Query-string or form pairs: lists become repeated keys, ``None`` is left out."""
    pairs: list[tuple[str, str | int | float | bool | None]] = []
    for name, value in arguments.items():
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        pairs.extend((name, _query_value(v)) for v in items)
    return pairs


def text_result(body: str, *, error: bool) -> types.CallToolResult:
    structured: dict[str, Any] | None = None
    if not error:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        structured = parsed if isinstance(parsed, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=body)], structured_content=structured, is_error=error
    )


def error_result(exc: QuipuError) -> types.CallToolResult:
    """The ``isError`` result of a refusal made here: the problem body REST would send for it."""
    return text_result(bytes(problem_response(exc).body).decode("utf-8"), error=True)


def internal_error() -> types.CallToolResult:
    """The ``isError`` result of a call that failed unexpectedly (the cause is logged)."""
    return error_result(internal_failure("the tool call"))


class Dispatcher:
    """Sends tool calls to the REST app: ``target`` is the app itself (in process, over an ASGI
    transport) or the base URL of a running ``quipu-server`` (over HTTP)."""

    def __init__(self, target: ASGIApp | str, registry: Registry) -> None:
        self.registry = registry
        if isinstance(target, str):
            timeout = httpx.Timeout(None, connect=CONNECT_TIMEOUT)
            self.client = httpx.AsyncClient(base_url=target, timeout=timeout)
        else:
            transport = httpx.ASGITransport(app=target)
            self.client = httpx.AsyncClient(transport=transport, base_url=IN_PROCESS, timeout=None)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, authorization: str | None
    ) -> types.CallToolResult:
        """The tool's result. Raises MCPError for an unknown tool, and httpx.TransportError when a
        running server cannot be reached (the in-process transport never raises it)."""
        spec = self.registry.get(name)
        if spec is None:
            raise invalid_params(f"unknown tool: {name}")
        args = {**spec.defaults, **(arguments or {})}
        refused = None if spec.passthrough else check_types(spec, args)
        if refused is not None:
            return error_result(refused)
        if name == VERSION_TOOL:  # answered in process, by the function /version uses
            if args:  # what GET /version answers to a query parameter
                try:
                    refuse_unknown(args, frozenset())
                except QuipuError as exc:
                    return error_result(exc)
            return text_result(json.dumps(version_info()), error=False)
        headers = {"Accept": JSON}
        if authorization:
            headers["Authorization"] = authorization
        try:
            response = await self._send(spec, args, headers)
        except httpx.TransportError:
            raise  # an unreachable server is the caller's to report (the MCP server: as internal)
        except Exception:  # never let a failure become a protocol error by accident
            log.exception("tool call %s failed in dispatch", name)
            return internal_error()
        if spec.passthrough and 200 <= response.status_code < 300:
            return _passed_on(name, response)
        return text_result(response.text, error=not 200 <= response.status_code < 300)

    async def _send(self, spec: ToolSpec, args: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        if spec.method == "GET":
            return await self.client.get(spec.path, params=_query_params(args), headers=headers)
        if spec.body == FORM:
            return await self.client.post(spec.path, data=_group(_query_params(args)), headers=headers)
        return await self.client.post(spec.path, json=args, headers=headers)


def _passed_on(name: str, response: httpx.Response) -> types.CallToolResult:
    """The route's own ``tools/call`` result; an answer of another shape is an internal error."""
    try:
        body = response.json()
        if not isinstance(body, dict) or set(body) != {"content", "isError"}:
            raise ValueError(f"not a tools/call result: {sorted(body) if isinstance(body, dict) else body!r}")
        return types.CallToolResult.model_validate(body)
    except ValueError:  # JSON and pydantic's validation errors alike
        log.exception("tool call %s: the route's answer is not a tools/call result", name)
        return internal_error()


def _group(pairs: list[tuple[str, str | int | float | bool | None]]) -> dict[str, Any]:
    """Form pairs as httpx's ``data`` mapping (a repeated key becomes a list)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            existing = out[key]
            out[key] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            out[key] = value
    return out
