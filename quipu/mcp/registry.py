"""The tool registry: every MCP tool is one REST route, described once (tools-core §0.1, §0.5).

The manifest (``manifest.toml``, package data) names all 79 tools with their toolset, route and
description. A tool is served exactly when its route exists in the REST app's route table (and,
for the owl extra's two, when the extra is installed); its
input schema is taken from the app's own OpenAPI document (the route's request model or query
parameters), never written a second time, and its annotations follow the route's class.

The opt-in ``logic`` toolset (issue 26) is not in the manifest: the logic memory's routes
publish each tool in their OpenAPI operation (``x-quipu-mcp-tool``: zpm's name, toolset and
annotations), so the tools keep zpm's wire form — name, description, ``inputSchema`` and
annotations exactly as zpm lists them — and this package never imports the logic memory.
Their routes answer a ``tools/call`` result already, which the dispatcher passes on.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

from quipu.config import owl_installed
from quipu.errors import ConfigError
from quipu.mcp import toolsets as names
from quipu.rest import route_table

TOOLSETS: Final = names.DEFAULT_TOOLSETS  # the manifest's toolsets: the default surface
OPT_IN_TOOLSETS: Final = names.OPT_IN_TOOLSETS
ALL_TOOLSETS: Final = names.ALL_TOOLSETS
# The OpenAPI extension on a route that is an opt-in tool of its own (the logic routes).
TOOL_EXTENSION: Final = "x-quipu-mcp-tool"
JSON: Final = "application/json"
FORM: Final = "application/x-www-form-urlencoded"
_COMPONENTS: Final = "#/components/schemas/"


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    name: str
    toolset: str
    method: str
    path: str
    extra: str
    description: str
    defaults: Mapping[str, Any] = field(default_factory=dict)  # arguments the adapter fills when absent


@dataclass(frozen=True)
class ToolSpec:
    """One served tool: what ``tools/list`` shows and where ``tools/call`` goes."""

    name: str
    description: str
    toolset: str
    method: str
    path: str
    read_only: bool
    input_schema: dict[str, Any]
    body: str | None  # the request body's media type for a POST (JSON or a form), None for GET
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # The tool's own annotations (a logic tool: zpm's); None: mechanical, from the route class.
    hints: Mapping[str, bool] | None = None
    # The route answers a tools/call result (content + isError), passed on as it is.
    passthrough: bool = False

    def annotations(self) -> dict[str, bool]:
        """Mechanical, from the route class (tools-core §0.5): no idempotentHint is claimed. A
        logic tool keeps zpm's own, so a prompt written for zpm reads the same hints."""
        if self.hints is not None:
            return dict(self.hints)
        return {"readOnlyHint": self.read_only, "destructiveHint": not self.read_only, "openWorldHint": True}


def load_manifest() -> list[ManifestEntry]:
    text = (resources.files("quipu.mcp") / "manifest.toml").read_text(encoding="utf-8")
    return [
        ManifestEntry(
            t["name"],
            t["toolset"],
            t["method"].upper(),
            t["path"],
            t.get("extra", ""),
            t["description"].strip(),
            t.get("defaults", {}),
        )
        for t in tomllib.loads(text)["tool"]
    ]


def check_toolsets(toolsets: Iterable[str]) -> list[str]:
    """``toolsets`` as a list, refusing a name that is neither a toolset nor ``default`` / ``all``
    (ConfigError)."""
    listed = list(toolsets)
    unknown = names.unknown(listed)
    if unknown:
        raise ConfigError(f"unknown toolset(s): {', '.join(unknown)} (known: {', '.join(names.NAMES)})")
    return listed


@dataclass
class Registry:
    """The served tools, in manifest order, and the manifest tools not served yet."""

    tools: dict[str, ToolSpec]
    missing: list[ManifestEntry] = field(default_factory=list)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)

    def get(self, name: str) -> ToolSpec | None:
        return self.tools.get(name)

    def select(self, *, toolsets: Iterable[str] | None = None, read_only: bool = False) -> Registry:
        """Only the tools of ``toolsets`` (the default surface when None; ``default`` and ``all``
        stand for their groups), and only reads when ``read_only``."""
        wanted = names.expand(None if toolsets is None else check_toolsets(toolsets))
        kept = {
            name: spec
            for name, spec in self.tools.items()
            if spec.toolset in wanted and (spec.read_only or not read_only)
        }
        return Registry(kept, self.missing)


def _installed(extra: str) -> bool:
    """An extra's tools are served only where it is installed: the owl routes exist in every
    install (they answer a feature error without it), their tools do not (§8)."""
    return extra == "owl" and owl_installed()


def build_registry(
    openapi: Mapping[str, Any],
    manifest: list[ManifestEntry] | None = None,
    *,
    opt_in: Iterable[str] = (),
) -> Registry:
    """Tools for every manifest entry whose route the app serves, schemas from its OpenAPI, then
    the tools of the opt-in toolsets named in ``opt_in`` (``logic``), which are built only when
    asked for: the default registry is the manifest's alone."""
    entries = manifest if manifest is not None else load_manifest()
    components = openapi.get("components", {}).get("schemas", {})
    tools: dict[str, ToolSpec] = {}
    missing: list[ManifestEntry] = []
    for entry in entries:
        cls = route_table.ROUTES.get((entry.method, entry.path))
        operation = openapi.get("paths", {}).get(entry.path, {}).get(entry.method.lower())
        if cls is None or operation is None or (entry.extra and not _installed(entry.extra)):
            missing.append(entry)
            continue
        schema, body = _input_schema(operation, components)
        for name, value in entry.defaults.items():  # what the agent sees is what the adapter sends
            prop = schema.get("properties", {}).get(name)
            if prop is None:
                raise ConfigError(f"manifest: {entry.name} has a default for {name!r}, which its route lacks")
            prop["default"] = value
        tools[entry.name] = ToolSpec(
            entry.name,
            entry.description,
            entry.toolset,
            entry.method,
            entry.path,
            cls == route_table.READ,
            schema,
            body,
            entry.defaults,
        )
    for spec in _opt_in_tools(openapi, set(opt_in)):
        if spec.name in tools:  # a prompt would reach the wrong tool: refuse to serve both
            raise ConfigError(f"the {spec.toolset} tool {spec.name} has the name of a Quipu tool")
        tools[spec.name] = spec
    return Registry(tools, missing)


def registry_for(openapi: Mapping[str, Any], *, toolsets: Iterable[str] | None, read_only: bool) -> Registry:
    """What an MCP server serves for a ``--toolsets`` / ``--read-only-tools`` selection: the
    opt-in toolsets it names are built, then everything is narrowed to it."""
    selected = None if toolsets is None else check_toolsets(toolsets)
    opt_in = names.expand(selected) & set(OPT_IN_TOOLSETS)
    return build_registry(openapi, opt_in=opt_in).select(toolsets=selected, read_only=read_only)


def _opt_in_tools(openapi: Mapping[str, Any], wanted: set[str]) -> Iterator[ToolSpec]:
    """The routes that publish themselves as a tool of a wanted opt-in toolset, in the OpenAPI
    document's order (the logic routes: tools.json's ``tools/list`` order)."""
    if not wanted:
        return
    for path, operations in openapi.get("paths", {}).items():
        for method, operation in operations.items():
            tool = operation.get(TOOL_EXTENSION) if isinstance(operation, dict) else None
            if not isinstance(tool, dict) or tool.get("toolset") not in wanted:
                continue
            cls = route_table.ROUTES.get((method.upper(), path))
            if cls is None:
                continue  # a route the route table does not classify is never served
            content = operation.get("requestBody", {}).get("content", {})
            # zpm's inputSchema exactly: not reworked as a request model's schema is.
            schema = copy.deepcopy(content.get(JSON, {}).get("schema", {"type": "object", "properties": {}}))
            yield ToolSpec(
                str(tool["name"]),
                str(operation.get("description", "")),
                str(tool["toolset"]),
                method.upper(),
                path,
                cls == route_table.READ,
                schema,
                JSON,
                hints={str(k): bool(v) for k, v in tool.get("annotations", {}).items()},
                passthrough=tool.get("result") == "tools/call",
            )


def _input_schema(
    operation: Mapping[str, Any], components: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    content = operation.get("requestBody", {}).get("content", {})
    for media in (JSON, FORM):
        if media in content:
            body = _self_contained(_non_null(content[media].get("schema", {})), components)
            body.setdefault("type", "object")
            return body, media
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in operation.get("parameters", []):
        if param.get("in") != "query":
            continue
        prop = _boolean_flag(dict(param.get("schema", {})))
        if param.get("description") and "description" not in prop:
            prop["description"] = param["description"]
        properties[param["name"]] = _self_contained(prop, components)
        if param.get("required"):
            required.append(param["name"])
    # A GET route refuses unknown parameters unless it says it reports them (``ignored_fields``).
    annotating = bool(operation.get("x-quipu-annotating"))
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": annotating}
    if required:
        schema["required"] = required
    return schema, None


def _non_null(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """An optional body (``X | None``) is the object ``X``: a tool's arguments are always an object,
    and omitting them all is the empty body. Clients read ``properties`` at the schema's root."""
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        (kept,) = [b for b in branches if b != {"type": "null"}]
        return {**{k: v for k, v in schema.items() if k not in ("anyOf", "title")}, **kept}
    return schema


_FLAG_SPELLINGS: Final = frozenset({"true", "false", "1", "0"})


def _boolean_flag(schema: dict[str, Any]) -> dict[str, Any]:
    """A query flag spelled ``true``/``false`` (``1``/``0``) is a JSON boolean to a tool (tools-core
    §0.1): the dispatcher encodes booleans as ``true``/``false``."""
    enum = schema.get("enum")
    if not isinstance(enum, list) or not {"true", "false"} <= set(enum) <= _FLAG_SPELLINGS:
        return schema
    flag = {k: v for k, v in schema.items() if k not in ("enum", "type", "default")}
    flag["type"] = "boolean"
    if "default" in schema:
        flag["default"] = schema["default"] in ("true", "1")
    return flag


def _self_contained(schema: Mapping[str, Any], components: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with its component references resolved into ``$defs`` (a tool schema stands alone)."""
    defs: dict[str, Any] = {}

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_COMPONENTS):
                name = ref[len(_COMPONENTS) :]
                if name not in defs:
                    defs[name] = {}  # placeholder first: a recursive model refers to itself
                    defs[name] = rewrite(copy.deepcopy(components[name]))
                return {**{k: rewrite(v) for k, v in node.items() if k != "$ref"}, "$ref": f"#/$defs/{name}"}
            return {k: rewrite(v) for k, v in node.items()}
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    out = rewrite(dict(schema))
    # A top-level reference is inlined: clients read "type"/"properties" at the root.
    while isinstance(out, dict) and set(out) == {"$ref"} and out["$ref"].startswith("#/$defs/"):
        out = dict(defs[out["$ref"][len("#/$defs/") :]])
    used = _referenced(out, defs)
    if used:
        out["$defs"] = {name: defs[name] for name in sorted(used)}
    result: dict[str, Any] = _untitled(out)
    return result


def _referenced(node: Any, defs: Mapping[str, Any]) -> set[str]:
    """Names of the ``$defs`` that ``node`` needs, transitively."""
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref[len("#/$defs/") :]
                if name not in found:
                    found.add(name)
                    pending.append(defs[name])
            pending.extend(v for k, v in item.items() if k != "$defs")
        elif isinstance(item, list):
            pending.extend(item)
    return found


def _untitled(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keys: every tool schema is sent to the agent each turn."""
    if isinstance(node, dict):
        return {
            k: (_untitled(v) if k != "properties" else {p: _untitled(s) for p, s in v.items()})
            for k, v in node.items()
            if k != "title"
        }
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    return node
