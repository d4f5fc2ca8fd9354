"""``quipu-server --mcp-stdio``: the MCP server over stdin/stdout, with no network listener.

The REST app is built exactly as for HTTP and its lifespan opens the store; tool calls reach it
through the in-process transport. The only credential is the token read from
``--mcp-token-file`` (a private regular file of at most 4096 bytes); with no credential
configured on the store's side, writes keep the local authority the CLI has. stdout carries
JSON-RPC only; every log line goes to stderr.
"""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from quipu.config import Settings
from quipu.mcp.local import LocalTools
from quipu.mcp.server import build_server, initialization_options
from quipu.rest.auth import read_token_file


def stdio_authorization(token_file: str | None) -> str | None:
    """The Authorization header every stdio tool call carries (refuses an unsafe file)."""
    if token_file is None:
        return None
    return f"Bearer {read_token_file(token_file, '--mcp-token-file')}"


async def serve_stdio(settings: Settings, authorization: str | None) -> None:
    tools = LocalTools(settings)
    server = build_server(tools.dispatcher.registry, tools.dispatcher, lambda _ctx: authorization)
    async with tools.open(), stdio_server() as (read, write):
        await server.run(read, write, initialization_options(server))
