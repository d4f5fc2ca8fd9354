"""The logic memory's 29 tools as routes: ``POST /logic/<tool>`` (logic-memory.md §2.2, §9.2).

The JSON object body is the tool's arguments (an empty body: none) and the answer is always
HTTP 200 with the ``tools/call`` result, ``{"content": [{"type": "text", "text": ...}],
"isError": ...}``: a tool's own failure (``InvalidArguments``, ``ExecutionFailed``, ...) is a
result, not an HTTP error, so an MCP adapter passes it through unchanged. Only what stops the
call from reaching a tool is a problem document: a body that is not a JSON object (400), no
project (``project_not_found``) or no engine (503 ``engine_unavailable``).

The body is not validated against the tool's ``inputSchema`` here (the tools check their
arguments and answer ``InvalidArguments``, R-T8); the schema is published in OpenAPI only.
Each operation also publishes, as ``x-quipu-mcp-tool``, what the MCP adapter's opt-in ``logic``
toolset needs and OpenAPI has no field for: zpm's tool name, its annotations, and that the
answer is already a ``tools/call`` result (the adapter never imports the logic memory).
The routes are built from ``tools.json`` when the app is created, never at import.

A tool runs in a worker thread (an engine call blocks), or on the loop's thread in an app set up
with ``serve_inline`` (zpm serve). The answer is encoded here, once; ``ToolCallResult``
documents it in OpenAPI.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio.to_thread
from fastapi import APIRouter, FastAPI, Request, Response
from pydantic import BaseModel

from quipu.errors import BadRequest, WrongType
from quipu.logic.registry import LogicTool, load_tools
from quipu.logic.service import LogicHost
from quipu.rest.problems import documented


class TextContent(BaseModel):
    type: Literal["text"]
    text: str


class ToolCallResult(BaseModel):
    """A ``tools/call`` result: one text item; ``isError`` marks a tool-level failure."""

    content: list[TextContent]
    isError: bool  # noqa: N815 - the MCP wire name


async def _arguments(request: Request) -> dict[str, Any] | None:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise WrongType("the request body must be a JSON object: the tool's arguments")
    return value


_UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: documented("no Prolog engine can be started (engine_unavailable)")
}


def serve_inline(app: FastAPI) -> None:
    """Run the tools on the event loop's own thread rather than in a worker thread.

    Only for an app that serves one request at a time with nothing else on its loop, such as
    ``zpm serve`` (R-T3): a tool call then blocks nothing, and the two thread hand-offs per call
    (the call, then the answer's validation) are saved. A multi-client server must not use it:
    an engine call blocks for up to the query limit."""
    app.state.logic_inline = True


def _answer(result: dict[str, Any]) -> Response:
    """The ``tools/call`` result as the response, encoded once here: the route's
    ``response_model`` documents it, and FastAPI would validate and re-encode it per call."""
    try:
        body = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a text: escaped, still valid JSON
        body = json.dumps(result, separators=(",", ":")).encode("ascii")
    return Response(body, media_type="application/json")


def _endpoint(tool: LogicTool) -> Callable[[Request], Awaitable[Response]]:
    name = tool.name

    # async, and the request its only parameter: the least FastAPI work per call. The engine
    # call blocks, so it goes to a worker thread unless the app serves inline.
    async def endpoint(request: Request) -> Response:
        arguments = await _arguments(request)
        host: LogicHost = request.app.state.logic

        def run() -> dict[str, Any]:
            return host.service().call(name, arguments).as_mcp()

        if getattr(request.app.state, "logic_inline", False):
            return _answer(run())
        return _answer(await anyio.to_thread.run_sync(run))

    endpoint.__name__ = f"logic_{name}"
    endpoint.__qualname__ = endpoint.__name__
    return endpoint


def build_router() -> APIRouter:
    """One route per tool, in ``tools/list`` order."""
    router = APIRouter(tags=["logic"])
    for tool in load_tools():
        router.add_api_route(
            tool.rest_path,
            _endpoint(tool),
            methods=[tool.rest_method],
            name=f"logic_{tool.name}",
            response_model=ToolCallResult,
            summary=f"logic tool {tool.name}",
            description=tool.description,
            responses=_UNAVAILABLE,
            openapi_extra={
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": dict(tool.input_schema)}},
                },
                "x-quipu-mcp-tool": {
                    "name": tool.name,
                    "toolset": "logic",
                    "annotations": dict(tool.annotations),
                    "result": "tools/call",
                },
            },
        )
    return router
