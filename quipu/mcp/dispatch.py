"""A tool call becomes the REST request of its route, sent in process into the same app.

Arguments are checked against the tool's JSON types first (a wrong type is an invalid-params
protocol error and no request is made); everything else — required fields, unknown keys,
values — is the REST route's to judge. The request carries only the transport's credential.
A 2xx answer is the tool result; any other status is an ``isError`` result whose text is the
REST error body, unchanged.
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

from quipu.mcp.registry import FORM, JSON, Registry, ToolSpec
from quipu.version import version_info

log = logging.getLogger("quipu.mcp")
IN_PROCESS: Final = "http://quipu.in-process"
VERSION_TOOL: Final = "quipu_version"


def invalid_params(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def check_types(spec: ToolSpec, arguments: Mapping[str, Any]) -> None:
    """Refuse arguments whose JSON type the tool schema does not allow (nothing else)."""
    validator = jsonschema.Draft202012Validator(spec.input_schema)
    for error in validator.iter_errors(dict(arguments)):
        if _type_error(error):
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            raise invalid_params(f"{spec.name}: '{where}' {_type_message(error)}")
    if spec.method == "GET":
        for name, value in arguments.items():
            if isinstance(value, dict | list) and not _repeatable(spec, name):
                raise invalid_params(f"{spec.name}: '{name}' must be a string, number or boolean")


def _type_error(error: jsonschema.ValidationError) -> bool:
    """A wrong JSON type, also under ``anyOf``/``oneOf`` (``int | None``): every branch failed on type."""
    if error.validator in ("type", "enum"):
        return True
    return (
        error.validator in ("anyOf", "oneOf")
        and bool(error.context)
        and all(_type_error(e) for e in error.context)
    )


def _type_message(error: jsonschema.ValidationError) -> str:
    if error.validator in ("anyOf", "oneOf"):
        wanted = sorted({str(e.validator_value) for e in error.context or () if e.validator == "type"})
        if wanted:
            return f"must be of type {' or '.join(wanted)} (got {error.instance!r})"
    return error.message


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


class Dispatcher:
    """Sends tool calls into an ASGI app (the REST app) over an in-process transport."""

    def __init__(self, app: Any, registry: Registry) -> None:
        self.registry = registry
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=IN_PROCESS, timeout=None
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, authorization: str | None
    ) -> types.CallToolResult:
        spec = self.registry.get(name)
        if spec is None:
            raise invalid_params(f"unknown tool: {name}")
        args = {**spec.defaults, **(arguments or {})}
        check_types(spec, args)
        if name == VERSION_TOOL:  # answered in process, by the function /version uses
            if args:
                raise invalid_params(f"{name} takes no arguments (got: {', '.join(sorted(args))})")
            return text_result(json.dumps(version_info()), error=False)
        headers = {"Accept": JSON}
        if authorization:
            headers["Authorization"] = authorization
        try:
            response = await self._send(spec, args, headers)
        except Exception:  # never let a failure become a protocol error by accident
            log.exception("tool call %s failed in dispatch", name)
            body = json.dumps(
                {"error": "internal error: the tool call could not be completed", "reason": "internal_error"}
            )
            return text_result(body, error=True)
        return text_result(response.text, error=not 200 <= response.status_code < 300)

    async def _send(self, spec: ToolSpec, args: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        if spec.method == "GET":
            return await self.client.get(spec.path, params=_query_params(args), headers=headers)
        if spec.body == FORM:
            return await self.client.post(spec.path, data=_group(_query_params(args)), headers=headers)
        return await self.client.post(spec.path, json=args, headers=headers)


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
