"""MCP tool calls into the real REST app, in process, for issue 15's reproductions.

``tools(tmp_path)`` enters the app's lifespan over a test store (SQLite or PostgreSQL, as the
suite runs) and yields ``call(name, arguments)``: the tool result's ``isError`` flag, the HTTP
status REST answered with (the problem body's ``status``; 200 for a result) and the parsed body.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.types import TextContent

from quipu.config import load_settings
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import Registry, build_registry
from quipu.rest.app import create_app
from tests.backends import store_location

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def registry() -> Registry:
    """The served tools of an app (no store is opened to build it)."""
    return build_registry(create_app(load_settings(store={"db": ":memory:"})).openapi())


@asynccontextmanager
async def tools(tmp_path: Path) -> AsyncIterator[Call]:
    app = create_app(load_settings(store={"db": store_location(tmp_path, "mcp.db")}))
    dispatcher = Dispatcher(app, build_registry(app.openapi()))

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await dispatcher.call(name, arguments, None)
        assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
        body: dict[str, Any] = json.loads(result.content[0].text)
        status = int(body.get("status", 200)) if result.is_error else 200
        return {"error": result.is_error, "status": status, "body": body}

    try:
        async with app.router.lifespan_context(app):
            yield call
    finally:
        await dispatcher.aclose()


async def call_tool(tmp_path: Path, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call into a fresh app over a fresh store."""
    async with tools(tmp_path) as call:
        return await call(name, arguments)
