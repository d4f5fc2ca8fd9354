"""The opt-in ``logic`` toolset (issue 26): selection, zpm's wire form, and dispatch into
``POST /logic/<tool>`` with the route's ``tools/call`` result passed on unchanged."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Final

import anyio
import httpx
import mcp.types as types
import pytest

from quipu.config import load_settings
from quipu.errors import ConfigError
from quipu.logic import project
from quipu.logic.registry import load_tools, tool_names
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import (
    ALL_TOOLSETS,
    TOOL_EXTENSION,
    TOOLSETS,
    Registry,
    build_registry,
    check_toolsets,
    load_manifest,
    registry_for,
)
from quipu.mcp.server import tool_list
from quipu.rest import route_table
from quipu.rest.app import create_app
from tests.backends import store_location

DEFAULT_COUNT: Final = 77


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    document: dict[str, Any] = create_app(load_settings(store={"db": ":memory:"})).openapi()
    return document


def select(openapi: dict[str, Any], toolsets: list[str] | None, read_only: bool = False) -> Registry:
    return registry_for(openapi, toolsets=toolsets, read_only=read_only)


# -- selection --------------------------------------------------------------------------------------


@pytest.mark.backend_independent
def test_no_selection_is_exactly_the_surface_served_before(openapi: dict[str, Any]) -> None:
    """No flag and no setting: the 77 manifest tools the routes serve, in manifest order."""
    served = select(openapi, None)
    routed = [e.name for e in load_manifest() if (e.method, e.path) in route_table.ROUTES and not e.extra]
    assert list(served.tools) == routed
    assert len(served) == DEFAULT_COUNT
    assert list(select(openapi, ["default"]).tools) == routed
    assert list(select(openapi, list(TOOLSETS)).tools) == routed
    assert list(build_registry(openapi).tools) == routed  # the registry itself is unchanged
    assert not set(served.tools) & set(tool_names())


@pytest.mark.backend_independent
def test_logic_is_zpms_29_tools_in_zpms_order(openapi: dict[str, Any]) -> None:
    logic = select(openapi, ["logic"])
    assert list(logic.tools) == list(tool_names())
    assert len(logic) == 29
    assert {spec.toolset for spec in logic} == {"logic"}
    for spec in logic:
        assert (spec.method, spec.path) == ("POST", f"/logic/{spec.name}")
        assert spec.passthrough


@pytest.mark.backend_independent
def test_default_and_all_are_groups(openapi: dict[str, Any]) -> None:
    default = list(select(openapi, None).tools)
    logic = list(tool_names())
    assert list(select(openapi, ["default", "logic"]).tools) == default + logic
    assert list(select(openapi, ["all"]).tools) == default + logic
    assert list(select(openapi, ["logic", "all", "data"]).tools) == default + logic
    data = [s.name for s in select(openapi, None) if s.toolset == "data"]
    assert list(select(openapi, ["data", "logic"]).tools) == data + logic


@pytest.mark.backend_independent
def test_no_logic_tool_has_a_quipu_tools_name(openapi: dict[str, Any]) -> None:
    everything = select(openapi, ["all"])
    names = [spec.name for spec in everything]
    assert len(names) == len(set(names)) == DEFAULT_COUNT + 29
    manifest = {entry.name for entry in load_manifest()}
    assert not manifest & set(tool_names())


@pytest.mark.backend_independent
def test_a_logic_tool_named_like_a_quipu_tool_is_refused(openapi: dict[str, Any]) -> None:
    document = json.loads(json.dumps(openapi))
    document["paths"]["/logic/echo"]["post"][TOOL_EXTENSION]["name"] = "quipu_query"
    with pytest.raises(ConfigError, match="quipu_query"):
        build_registry(document, opt_in=["logic"])


@pytest.mark.backend_independent
def test_an_unknown_toolset_is_refused_with_every_known_name(openapi: dict[str, Any]) -> None:
    known = "data, search, graphs, governance, sharing, events, service, logic, default, all"
    with pytest.raises(ConfigError) as refused:
        select(openapi, ["logic", "zpm"])
    assert str(refused.value.message) == f"unknown toolset(s): zpm (known: {known})"
    with pytest.raises(ConfigError, match="Logic"):
        check_toolsets(["Logic"])  # names are exact
    assert check_toolsets(["default", "all", *ALL_TOOLSETS]) == ["default", "all", *ALL_TOOLSETS]


@pytest.mark.backend_independent
def test_read_only_tools_keeps_the_logic_reads_of_the_route_table(openapi: dict[str, Any]) -> None:
    reads = select(openapi, ["logic"], read_only=True)
    expected = [t.name for t in load_tools() if route_table.ROUTES[("POST", t.rest_path)] == route_table.READ]
    assert list(reads.tools) == expected == [t.name for t in load_tools() if t.read_only]
    assert len(reads) == 14
    both = select(openapi, ["all"], read_only=True)
    assert list(both.tools) == list(select(openapi, None, read_only=True).tools) + expected


@pytest.mark.backend_independent
def test_the_listing_is_zpms_wire_form_exactly(openapi: dict[str, Any]) -> None:
    """Name, description, inputSchema and annotations as tools.json (zpm's tools/list) has them:
    zpm's own hints (idempotentHint, openWorldHint false), not the route class's."""
    listed = tool_list(select(openapi, ["logic"]))
    wire = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed]
    assert wire == [tool.listing() for tool in load_tools()]
    mount = next(tool for tool in listed if tool.name == "mount_memory")
    assert mount.annotations is not None
    assert (mount.annotations.read_only_hint, mount.annotations.destructive_hint) == (False, False)


# -- dispatch ---------------------------------------------------------------------------------------


def _require_swipl() -> None:
    if shutil.which("swipl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("swipl is not installed; under CI=true the logic toolset must be tested")
        pytest.skip("swipl is not installed (run scripts/ensure-swipl.sh)")


def _dispatch(
    tmp_path: Path, folder: Path | None, calls: list[tuple[str, dict[str, Any]]]
) -> list[tuple[types.CallToolResult, httpx.Response]]:
    """Each call through the dispatcher and, on a fresh store's twin state, straight to its route."""
    logic = {"project": str(folder)} if folder is not None else {}
    app = create_app(load_settings(store={"db": store_location(tmp_path, "m.db")}, logic=logic))
    dispatcher = Dispatcher(app, registry_for(app.openapi(), toolsets=["logic"], read_only=False))

    async def main() -> list[tuple[types.CallToolResult, httpx.Response]]:
        rest = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://rest.test")
        out = []
        try:
            async with app.router.lifespan_context(app):
                for name, arguments in calls:
                    result = await dispatcher.call(name, arguments, None)
                    direct = await rest.post(f"/logic/{name}", json=arguments)
                    out.append((result, direct))
        finally:
            await rest.aclose()
            await dispatcher.aclose()
        return out

    return anyio.run(main)


def test_the_routes_result_is_passed_on_unchanged(tmp_path: Path) -> None:
    _require_swipl()
    folder = tmp_path / "proj"
    folder.mkdir()
    assert project.init(folder)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_memories", {}),  # JSON text: passed on as text, not parsed into structuredContent
        ("query_logic", {"goal": "nope(X)"}),
        ("remember_fact", {"fact": 7}),  # a wrong type is zpm's InvalidArguments, not wrong_type
        ("remember_fact", {}),
    ]
    answers = _dispatch(tmp_path, folder, calls)
    for result, direct in answers:
        assert direct.status_code == 200
        wire = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        wire.pop("resultType", None)  # the SDK's own field, added on every result
        assert wire == direct.json()  # content and isError, exactly the route's
        assert result.structured_content is None
    (listed, _), _, (typed, _), (missing, _) = answers
    assert listed.is_error is False
    assert typed.is_error is True and typed.content == [
        types.TextContent(type="text", text="InvalidArguments")
    ]
    assert missing.is_error is True


def test_a_refusal_before_the_tool_is_an_error_result_with_the_problem_body(tmp_path: Path) -> None:
    """No project: REST's 400 ``project_not_found`` problem, as the error result's text."""
    empty = tmp_path / "no-project"
    empty.mkdir()
    ((result, direct),) = _dispatch(tmp_path, empty, [("query_logic", {"goal": "true"})])
    assert direct.status_code == 400
    assert result.is_error is True
    assert isinstance(result.content[0], types.TextContent)
    assert json.loads(result.content[0].text) == direct.json()
    assert direct.json()["reason"] == "project_not_found"
