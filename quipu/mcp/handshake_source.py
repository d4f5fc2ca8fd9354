"""The handshake data as the live server answers it: what ``handshake.json`` must hold.

For each protocol version the ``initialize`` handshake can settle on, one SDK session over the
REST app's registry (default settings, an in-memory store, every toolset: the opt-in ``logic``
one too, so that the front can serve it) is asked ``initialize`` and ``tools/list``, and the
answers are kept as the wire carries them.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from quipu.config import McpSettings, Settings, StoreSettings
from quipu.mcp.registry import ALL_TOOLSETS
from quipu.mcp.stdio_session import StdioSession, exchange
from quipu.mcp.toolsets import ALL


def default_settings() -> Settings:
    """The defaults alone: no config file, no ``QUIPU_*`` variable may shape the data."""
    return Settings.model_construct(store=StoreSettings(db=":memory:"))


def every_toolset_settings() -> Settings:
    """The defaults, serving every toolset (``--toolsets all``): the data the front narrows."""
    return Settings.model_construct(store=StoreSettings(db=":memory:"), mcp=McpSettings(toolsets=[ALL]))


def handshake_messages(version: str, client: str = "quipu-handshake") -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": client, "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]


def answers(session: StdioSession, messages: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {reply["id"]: reply for reply in anyio.run(exchange, session, messages)}


def live_data() -> dict[str, Any]:
    session = StdioSession(every_toolset_settings(), None)
    registry = session.tools.dispatcher.registry
    data: dict[str, Any] = {
        "versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "toolsets": list(ALL_TOOLSETS),
        "tools": [
            {"name": spec.name, "toolset": spec.toolset, "read_only": spec.read_only} for spec in registry
        ],
        "initialize": {},
        "listings": {},
    }
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        replies = answers(session, handshake_messages(version))
        data["initialize"][version] = replies[1]["result"]
        listed = replies[2]["result"]
        if set(listed) != {"tools"}:
            raise RuntimeError(f"tools/list at {version} answers more than tools: {sorted(listed)}")
        if [tool["name"] for tool in listed["tools"]] != [tool["name"] for tool in data["tools"]]:
            raise RuntimeError(f"tools/list at {version} is not the registry, in its order")
        # A version that lists the tools exactly as an earlier one did names that version.
        same = next((v for v, tools in data["listings"].items() if tools == listed["tools"]), None)
        data["listings"][version] = same or listed["tools"]
    return data
