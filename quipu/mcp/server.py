"""The low-level ``mcp`` Server built from the registry, for either transport.

``tools/list`` is the registry, in one page: quipu issues no cursor, so a request carrying one is
refused (invalid params). ``tools/call`` goes through the dispatcher into the REST app.
The credential comes from the transport only: the HTTP request's ``Authorization`` header, or
the bearer read from the stdio token file, never from a tool argument.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import mcp.types as types
from mcp import MCPError
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions

import quipu
from quipu.mcp.dispatch import Dispatcher, internal_error, invalid_params
from quipu.mcp.registry import Registry

log = logging.getLogger("quipu.mcp")
INSTRUCTIONS = (
    "quipu is a bitemporal RDF knowledge graph. Nothing is deleted: retractions close validity "
    "windows, and every read can name a past point (valid_at, tx). Tool failures come back as "
    "error results carrying the REST error body (error, reason, field)."
)

# The Authorization header value to forward for one request (None: no credential).
CredentialOf = Callable[[ServerRequestContext[object]], str | None]


def tool_list(registry: Registry) -> list[types.Tool]:
    return [
        types.Tool(
            name=spec.name,
            description=spec.description,
            inputSchema=spec.input_schema,
            annotations=types.ToolAnnotations(**spec.annotations()),
        )
        for spec in registry
    ]


def http_credential(ctx: ServerRequestContext[object]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    return None if headers is None else headers.get("authorization")


def build_server(registry: Registry, dispatcher: Dispatcher, credential: CredentialOf) -> Server[object]:
    tools = tool_list(registry)

    async def list_tools(
        ctx: ServerRequestContext[object], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if params is not None and params.cursor is not None:
            raise invalid_params(
                f"invalid cursor {params.cursor!r}: quipu lists every tool in one page and issues "
                "no cursor; list again without one"
            )
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[object], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            return await dispatcher.call(params.name, params.arguments, credential(ctx))
        except MCPError:
            raise  # the one deliberate protocol error: an unknown tool
        except Exception:
            log.exception("tool call %s failed", params.name)
            return internal_error()

    return Server(
        "quipu",
        version=quipu.__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def initialization_options(server: Server[object]) -> InitializationOptions:
    # The registry is fixed for the life of the process: no list-changed notifications.
    return server.create_initialization_options(NotificationOptions(tools_changed=False))
