"""The MCP tool manifest (``quipu/mcp/manifest.toml``): complete, well formed, and the tool list's names."""

from __future__ import annotations

import os
import re
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

import pytest
from mcp.shared.tool_name_validation import validate_tool_name

from quipu.rest import route_table

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

TOOLSETS: Final = ("data", "search", "graphs", "governance", "sharing", "events", "service")
KEYS: Final = frozenset({"name", "toolset", "method", "path", "extra", "description"})
OWL_TOOLS: Final = frozenset({"quipu_load_ontology", "quipu_explain"})
DEFAULT_COUNT: Final = 77
OWL_COUNT: Final = 79
MAX_DESCRIPTION: Final = 600
# (method, path) routes the specs map onto more than one tool, with those tools. None do today.
SHARED_ROUTES: Final[dict[tuple[str, str], frozenset[str]]] = {}

SEED: Final = Path(__file__).resolve().parents[2].parent / "shared" / "seeds" / "quipu-mcp-tools.txt"
HEADING: Final = re.compile(r"^(quipu_[a-z0-9_]+)(?: \(requires (\w+) feature\))?$")
COUNTS: Final = re.compile(
    r"exposes (\d+) tools in a default build, or (\d+) when built with the (\w+) feature \(which adds ([^)]*)\)"
)


@cache
def manifest() -> tuple[dict[str, Any], ...]:
    text = (resources.files("quipu.mcp") / "manifest.toml").read_text(encoding="utf-8")
    tools = tomllib.loads(text)["tool"]
    assert isinstance(tools, list)
    return tuple(tools)


def names() -> list[str]:
    return [t["name"] for t in manifest()]


def seed_text() -> str:
    if not SEED.is_file():
        message = f"tool list not found at {SEED} (read from ../shared/seeds beside the checkout)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; under CI=true a missing tool list is a failure")
        pytest.skip(message)
    return SEED.read_text(encoding="utf-8")


def seed_headings(text: str) -> dict[str, str | None]:
    """Tool name -> the feature its heading requires (None for a default tool), from "Tool Reference" on."""
    _, _, reference = text.partition("\nTool Reference\n")
    assert reference, "the tool list has no 'Tool Reference' section"
    found: dict[str, str | None] = {}
    for line in reference.splitlines():
        match = HEADING.match(line.strip())
        if match:
            assert match[1] not in found, f"heading {match[1]} appears twice in the tool list"
            found[match[1]] = match[2]
    return found


def test_manifest_lists_79_unique_tools() -> None:
    assert len(manifest()) == OWL_COUNT
    assert len(set(names())) == OWL_COUNT


def test_default_build_has_77_tools_and_owl_adds_exactly_two() -> None:
    default = [t["name"] for t in manifest() if t["extra"] == ""]
    owl = {t["name"] for t in manifest() if t["extra"] == "owl"}
    assert len(default) == DEFAULT_COUNT
    assert owl == OWL_TOOLS
    assert {t["extra"] for t in manifest()} == {"", "owl"}


def test_every_table_has_exactly_the_manifest_keys() -> None:
    for tool in manifest():
        assert set(tool) - {"defaults"} == KEYS, tool.get("name")
        assert all(isinstance(tool[k], str) for k in KEYS), tool["name"]
        assert isinstance(tool.get("defaults", {}), dict), tool["name"]


def test_every_name_is_a_valid_mcp_tool_name() -> None:
    invalid = [n for n in names() if not validate_tool_name(n).is_valid]
    assert invalid == []


def test_every_toolset_is_known_and_used() -> None:
    used = {t["toolset"] for t in manifest()}
    assert used <= set(TOOLSETS), used - set(TOOLSETS)
    assert used == set(TOOLSETS)


def test_every_route_is_a_get_or_post_on_an_absolute_path() -> None:
    for tool in manifest():
        assert tool["method"] in ("GET", "POST"), tool["name"]
        assert tool["path"].startswith("/"), tool["name"]
        assert "?" not in tool["path"] and " " not in tool["path"], tool["name"]


def test_every_description_is_non_empty_and_bounded() -> None:
    for tool in manifest():
        description = tool["description"].strip()
        assert description, tool["name"]
        assert len(description) <= MAX_DESCRIPTION, (tool["name"], len(description))


def test_no_two_tools_share_a_route_unless_the_spec_says_so() -> None:
    by_route: dict[tuple[str, str], set[str]] = {}
    for tool in manifest():
        by_route.setdefault((tool["method"], tool["path"]), set()).add(tool["name"])
    shared = {route: frozenset(tools) for route, tools in by_route.items() if len(tools) > 1}
    assert shared == SHARED_ROUTES


def test_tools_are_ordered_by_toolset_then_name() -> None:
    rank = {toolset: i for i, toolset in enumerate(TOOLSETS)}
    keys = [(rank.get(t["toolset"], len(TOOLSETS)), t["name"]) for t in manifest()]
    assert keys == sorted(keys)


def test_routes_the_app_already_serves_use_the_served_method() -> None:
    # A path the route table knows must be listed with a method the table serves it with.
    served_paths = {path for _, path in route_table.ROUTES}
    wrong = [
        (t["name"], t["method"], t["path"])
        for t in manifest()
        if t["path"] in served_paths and (t["method"], t["path"]) not in route_table.ROUTES
    ]
    assert wrong == []


def test_version_records_its_route_although_answered_in_process() -> None:
    by_name = {t["name"]: t for t in manifest()}
    assert "quipu_version" in by_name
    version = by_name["quipu_version"]
    assert (version["method"], version["path"], version["toolset"]) == ("GET", "/version", "service")


def test_names_are_the_tool_list_headings_plus_its_owl_tools() -> None:
    text = seed_text()
    headings = seed_headings(text)
    counts = COUNTS.search(" ".join(text.split()))
    assert counts is not None, "the tool list no longer states its tool counts"
    owl_named = set(re.findall(r"quipu_[a-z0-9_]+", counts[4]))
    assert counts[3] == "owl" and owl_named == OWL_TOOLS
    # Every owl tool with a heading marks it "(requires owl feature)"; quipu_explain has none.
    assert {n for n, feature in headings.items() if feature is not None} <= OWL_TOOLS
    assert all(feature in (None, "owl") for feature in headings.values())
    assert set(names()) == set(headings) | owl_named
    assert len(set(headings) - OWL_TOOLS) == int(counts[1]) == DEFAULT_COUNT
    assert len(set(headings) | owl_named) == int(counts[2]) == OWL_COUNT
