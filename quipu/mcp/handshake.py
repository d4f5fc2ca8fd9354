"""The answers to an MCP client's handshake, kept as data so that ``quipu mcp`` gives them at once.

An MCP client spawns a stdio server for each session and gives up on one that is slow to
answer ``initialize``; building the REST app and importing the ``mcp`` SDK takes seconds
(issue 16). ``handshake.json`` (package data) holds, for every protocol version the ``initialize``
handshake can settle on, the SDK server's own ``initialize`` result and its ``tools/list``
tools, with each tool's toolset and access so that ``--toolsets`` and ``--read-only-tools`` can
narrow the list without the registry. The tools are every toolset's, the opt-in ``logic`` one
included, so ``quipu mcp --toolsets logic`` starts as fast; a list narrowed to no selection
is the default surface, as ``Registry.select`` narrows it. ``quipu/mcp/stdio.py`` answers from it; the live server
takes over at the first other request.

The file is generated from the live server (``python -m quipu.mcp.handshake``, the ``just
handshake`` recipe), never edited by hand, and ``tests/mcp/test_handshake.py`` fails when it
differs from what the live server answers, so it cannot drift from the registry or the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

from quipu.mcp import toolsets as names

FILE: Final = "handshake.json"
# The clientInfo fields besides name and version whose value is a plain string (MCP schema
# Implementation); an initialize carrying anything else is left to the SDK to judge.
_CLIENT_INFO_TEXT: Final = frozenset({"title", "websiteUrl", "description"})
_INITIALIZE_KEYS: Final = frozenset({"protocolVersion", "capabilities", "clientInfo", "_meta"})


@dataclass(frozen=True)
class CachedTool:
    toolset: str
    read_only: bool
    listing: Mapping[str, Any]  # as tools/list shows it at one protocol version


@dataclass(frozen=True)
class Handshake:
    versions: tuple[str, ...]  # the versions initialize can settle on, oldest first
    initialize: Mapping[str, Mapping[str, Any]]  # version -> the initialize result
    tools: Mapping[str, tuple[CachedTool, ...]]  # version -> the tools, in registry order
    toolsets: frozenset[str]  # every toolset name (a narrowing naming another is refused)

    def accepts(self, toolsets: Iterable[str]) -> bool:
        """Whether every name is a toolset of the data or ``default`` / ``all``."""
        return set(toolsets) <= self.toolsets | {names.DEFAULT, names.ALL}

    def negotiate(self, requested: object) -> str:
        """The version the SDK settles on: the client's if supported, else the newest."""
        return requested if isinstance(requested, str) and requested in self.versions else self.versions[-1]

    def initialize_result(self, params: Any) -> dict[str, Any] | None:
        """The ``initialize`` result for these params, or None when the params are not plainly
        well-formed (the SDK then answers, with its own validation and errors)."""
        if not _plain_initialize(params):
            return None
        result: dict[str, Any] = json.loads(
            json.dumps(self.initialize[self.negotiate(params["protocolVersion"])])
        )
        return result

    def tool_list(
        self, version: str, toolsets: Iterable[str] | None, read_only: bool
    ) -> list[dict[str, Any]]:
        """The listed tools at ``version``, narrowed as ``Registry.select`` narrows them."""
        wanted = names.expand(toolsets)
        return [
            json.loads(json.dumps(tool.listing))
            for tool in self.tools[version]
            if tool.toolset in wanted and (tool.read_only or not read_only)
        ]


def _plain_initialize(params: Any) -> bool:
    if not isinstance(params, dict) or not set(params) <= _INITIALIZE_KEYS:
        return False
    info = params.get("clientInfo")
    capabilities = params.get("capabilities")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(capabilities, dict)
        and all(isinstance(value, dict) for value in capabilities.values())
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
        and all(key in ("name", "version") or (key in _CLIENT_INFO_TEXT and isinstance(value, str))
                for key, value in info.items())
        and isinstance(params.get("_meta", {}), dict)
    )  # fmt: skip


def from_data(data: Mapping[str, Any]) -> Handshake:
    versions = tuple(data["versions"])
    tags = [(tool["toolset"], tool["read_only"]) for tool in data["tools"]]
    listings = data["listings"]  # a version's list, or the earlier version listing the same
    return Handshake(
        versions,
        {version: data["initialize"][version] for version in versions},
        {
            version: tuple(
                CachedTool(toolset, read_only, listing)
                for (toolset, read_only), listing in zip(tags, _listed(listings, version), strict=True)
            )
            for version in versions
        },
        frozenset(data["toolsets"]),
    )


def _listed(listings: Mapping[str, Any], version: str) -> list[Mapping[str, Any]]:
    listed = listings[version]
    return _listed(listings, listed) if isinstance(listed, str) else list(listed)


@cache
def load() -> Handshake:
    return from_data(json.loads((resources.files("quipu.mcp") / FILE).read_text(encoding="utf-8")))


def package_file() -> Path:
    return Path(__file__).with_name(FILE)


def main() -> None:
    """Write ``handshake.json`` from the live server (the heavy imports are the generator's)."""
    from quipu.mcp.handshake_source import live_data

    text = json.dumps(live_data(), indent=1, ensure_ascii=False) + "\n"
    package_file().write_text(text, encoding="utf-8")
    print(f"wrote {package_file()}")


if __name__ == "__main__":
    main()
