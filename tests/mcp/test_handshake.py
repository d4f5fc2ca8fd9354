"""The handshake data ``quipu mcp`` answers from (issue 16) is the live SDK server's own answers.

``quipu/mcp/handshake.json`` is generated (``python -m quipu.mcp.handshake``); these tests fail
when it no longer matches what the SDK server over the registry answers, for every protocol
version, any client, and every narrowing of the tool list.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from quipu.config import McpSettings, Settings, StoreSettings
from quipu.mcp import handshake
from quipu.mcp.handshake_source import answers, default_settings, handshake_messages, live_data
from quipu.mcp.registry import ALL_TOOLSETS, TOOLSETS
from quipu.mcp.stdio_session import StdioSession

pytestmark = pytest.mark.backend_independent  # an in-memory store, never the backend under test

REGENERATE = "regenerate it: python -m quipu.mcp.handshake"


@pytest.fixture(scope="module")
def session() -> StdioSession:
    return StdioSession(default_settings(), None)


def test_the_committed_data_is_what_the_live_server_answers() -> None:
    committed = json.loads(handshake.package_file().read_text(encoding="utf-8"))
    assert committed == live_data(), f"quipu/mcp/handshake.json is stale: {REGENERATE}"


@pytest.mark.parametrize("requested", [*HANDSHAKE_PROTOCOL_VERSIONS, "2099-01-01", "1999-01-01"])
def test_initialize_is_answered_as_the_sdk_answers_it(session: StdioSession, requested: str) -> None:
    messages = handshake_messages(requested, client="another-client")
    messages[0]["params"]["clientInfo"]["title"] = "Another Client"
    messages[0]["params"]["capabilities"] = {"roots": {"listChanged": True}, "sampling": {}}
    live = answers(session, messages)[1]["result"]
    cached = handshake.load().initialize_result(messages[0]["params"])
    assert cached == live
    assert cached is not None and cached["protocolVersion"] == (
        requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    )


@pytest.mark.parametrize(
    ("toolsets", "read_only"),
    [
        (None, False),
        (None, True),
        (["data"], False),
        (["data", "service"], True),
        (["sharing"], False),
        (["logic"], False),
        (["logic"], True),
        (["default", "logic"], False),
        (["all"], True),
        (["default"], False),
    ],
)
def test_a_narrowed_list_is_the_live_servers_narrowed_list(
    toolsets: list[str] | None, read_only: bool
) -> None:
    settings = Settings.model_construct(
        store=StoreSettings(db=":memory:"), mcp=McpSettings(toolsets=toolsets, read_only_tools=read_only)
    )
    narrowed = StdioSession(settings, None)
    data = handshake.load()
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        live = answers(narrowed, handshake_messages(version))[2]["result"]["tools"]
        assert data.tool_list(version, toolsets, read_only) == live
    assert data.toolsets == set(ALL_TOOLSETS)


def test_the_default_list_leaves_the_opt_in_logic_tools_out() -> None:
    """No narrowing is the seven Quipu toolsets, exactly as ``default`` lists them; the cached data
    still holds the logic tools, so ``--toolsets logic`` is answered from it too."""
    data = handshake.load()
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        default = data.tool_list(version, None, False)
        assert default == data.tool_list(version, ["default"], False)
        assert {tool.toolset for tool in data.tools[version] if tool.listing in default} == set(TOOLSETS)
        logic = [tool["name"] for tool in data.tool_list(version, ["logic"], False)]
        assert len(logic) == 29 and not set(logic) & {tool["name"] for tool in default}
        assert data.tool_list(version, ["all"], False) == default + data.tool_list(version, ["logic"], False)


PLAIN: dict[str, Any] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "c", "version": "1"},
}


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        {k: v for k, v in PLAIN.items() if k != "clientInfo"},
        {k: v for k, v in PLAIN.items() if k != "capabilities"},
        {**PLAIN, "protocolVersion": 20250618},
        {**PLAIN, "capabilities": {"roots": True}},
        {**PLAIN, "clientInfo": {"name": "c"}},
        {**PLAIN, "clientInfo": {"name": "c", "version": "1", "icons": [{"src": "x"}]}},
        {**PLAIN, "somethingElse": 1},
    ],
)
def test_initialize_params_that_are_not_plain_are_left_to_the_sdk(params: Any) -> None:
    """The front answers only what it can answer exactly; anything else goes to the SDK, which
    validates and refuses with its own errors (tests/acceptance/mcp/test_stdio.py drives one)."""
    assert handshake.load().initialize_result(params) is None
    assert handshake.load().initialize_result(PLAIN) is not None
