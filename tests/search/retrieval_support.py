"""Helpers of the search tests: calling a tool through the MCP dispatcher."""

from __future__ import annotations

import json
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp.types import TextContent

from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.http import served_registry


def dispatch(client: TestClient, name: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """``(is_error, JSON body)`` of one call of the tool ``name`` through the MCP dispatcher."""
    app: FastAPI = client.app  # type: ignore[assignment]
    dispatcher = Dispatcher(app, served_registry(app, app.state.settings))

    async def go() -> tuple[bool, Any]:
        try:
            result = await dispatcher.call(name, arguments, None)
        finally:
            await dispatcher.aclose()
        (content,) = result.content
        assert isinstance(content, TextContent)
        return bool(result.is_error), json.loads(content.text)

    return anyio.run(go)


def call_tool(client: TestClient, name: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """``(is_error, JSON body)`` of one call of the read tool ``name``, after checking that it is
    served with the read annotations (tools-search §0.1)."""
    app: FastAPI = client.app  # type: ignore[assignment]
    spec = served_registry(app, app.state.settings).get(name)
    assert spec is not None and spec.read_only and spec.toolset == "search"
    assert spec.annotations() == {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True}
    return dispatch(client, name, arguments)
