"""``docs/tools.md``, generated from the tool registry (issue 5 §7).

Regenerate with ``just tools-doc`` (``python -m quipu.mcp.docs --write docs/tools.md``; without
``--write`` the page goes to stdout). A test checks the file against ``render`` of the registry,
so the page cannot drift from what ``tools/list`` serves.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from quipu.config import load_settings
from quipu.mcp.registry import (
    FORM,
    OPT_IN_TOOLSETS,
    TOOLSETS,
    ManifestEntry,
    Registry,
    ToolSpec,
    build_registry,
    load_manifest,
)
from quipu.rest.app import create_app

REGENERATE: Final = "just tools-doc"
COMMAND: Final = "python -m quipu.mcp.docs --write docs/tools.md"
VERSION_TOOL: Final = "quipu_version"


def current_registry() -> Registry:
    """Every tool the REST app's routes serve (no ``--toolsets`` / ``--read-only-tools`` narrowing),
    the opt-in toolsets' too."""
    app = create_app(load_settings(store={"db": ":memory:"}))
    return build_registry(app.openapi(), opt_in=OPT_IN_TOOLSETS)


def served_counts(registry: Registry) -> tuple[int, int, int, int]:
    """(default tools served, default tools in the manifest, owl tools served, owl tools)."""
    extras = {entry.name: entry.extra for entry in load_manifest()}
    default = [name for name, extra in extras.items() if not extra]
    owl = [name for name, extra in extras.items() if extra == "owl"]
    served = set(registry.tools)
    return len(served & set(default)), len(default), len(served & set(owl)), len(owl)


def render(registry: Registry, missing: Sequence[ManifestEntry] | None = None) -> str:
    """The whole page: served tools by toolset, then the manifest tools not served yet."""
    missing = registry.missing if missing is None else missing
    served, default, owl_served, owl = served_counts(registry)
    lines = [
        "# MCP tools",
        "",
        f"<!-- Generated from the tool registry by `{REGENERATE}` ({COMMAND}). Do not edit by hand:",
        "     tests/mcp/test_tools_doc.py fails when this file and the registry disagree. -->",
        "",
        "Every MCP tool is one REST route of the same process, called in process: authentication,",
        "validation, errors and transaction attribution are the route's. A tool's parameters are its",
        "route's request model (a POST's JSON body or form) or query parameters (a GET), and its",
        "annotations follow the route's class: a **read** is `readOnlyHint: true, destructiveHint: false`,",
        "a **write** is `readOnlyHint: false, destructiveHint: true`; every tool has `openWorldHint: true`.",
        "A failed call is an `isError` result whose text is the REST error body, unchanged. An argument",
        "of the wrong JSON type is refused before any request, as an `isError` result too (the 400",
        "`wrong_type` body naming the field); only an unknown tool name is a protocol error.",
        "",
        f"**{served} of the {default} tools are served today** (and {owl_served} of the {owl} tools of the",
        "owl extra). A manifest tool is served once its REST route exists; the rest are listed at the",
        "end. `--toolsets a,b` serves only those toolsets and `--read-only-tools` only the reads.",
        "",
        "With no `--toolsets` flag and no `[quipu.mcp] toolsets` setting the seven toolsets below are",
        "served. The `logic` toolset is opt-in: `--toolsets logic` serves only its tools, and",
        '`--toolsets default,logic` (or `[quipu.mcp] toolsets = ["default", "logic"]`) both; `default`',
        "names the seven and `all` every toolset.",
        "",
        "| toolset | served | not served yet |",
        "|---|---|---|",
    ]
    for toolset in TOOLSETS:
        here = [spec.name for spec in registry if spec.toolset == toolset]
        later = [entry.name for entry in missing if entry.toolset == toolset]
        lines.append(f"| [{toolset}](#{toolset}) | {len(here)} | {len(later)} |")
    for toolset in OPT_IN_TOOLSETS:
        here = [spec.name for spec in registry if spec.toolset == toolset]
        lines.append(f"| [{toolset}](#{toolset}) (opt-in) | {len(here)} | 0 |")
    for toolset in TOOLSETS:
        lines += ["", f"## {toolset}", ""]
        specs = [spec for spec in registry if spec.toolset == toolset]
        if not specs:
            lines.append("No tool of this toolset is served yet.")
        for spec in specs:
            lines += _tool(spec)
    for toolset in OPT_IN_TOOLSETS:
        lines += ["", f"## {toolset}", "", *_OPT_IN[toolset], ""]
        for spec in (spec for spec in registry if spec.toolset == toolset):
            lines += _tool(spec)
    lines += ["", "## Not served yet", ""]
    if not missing:
        lines.append("Every manifest tool is served.")
    for toolset in TOOLSETS:
        entries = [entry for entry in missing if entry.toolset == toolset]
        if entries:
            lines += [f"### {toolset} (not served yet)", ""]
            lines += [
                f"- `{e.name}` — `{e.method} {e.path}`" + (f" (needs the {e.extra} extra)" if e.extra else "")
                for e in entries
            ]
            lines.append("")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip("\n") + "\n"


_OPT_IN: Final[dict[str, list[str]]] = {
    "logic": [
        "The logic memory's 29 tools (docs/logic.md), opt-in: listed only when `--toolsets` or",
        "`[quipu.mcp] toolsets` names `logic` (or `all`). They are zpm's tools as `zpm serve` lists",
        "them — the same names, descriptions, input schemas and annotations — so a prompt written for",
        "zpm works unchanged; no name is a Quipu tool's. Each is dispatched into its REST route",
        "`POST /logic/<tool>` with the arguments as the JSON body, and the route's `tools/call` result",
        "(`content`, `isError`) is the tool result as it is: a tool's own failure, such as",
        "`InvalidArguments` for a missing or mistyped argument, is an `isError` result with zpm's text.",
        "A refusal before the tool (no project: 400 `project_not_found`; no engine: 503) is an",
        "`isError` result carrying the REST error body, as for every tool. `zpm serve`, zpm's own stdio",
        "server, is unchanged.",
    ]
}


def _tool(spec: ToolSpec) -> list[str]:
    """One tool's section: its annotations, its route, its description and its parameters."""
    hints = ", ".join(f"`{k}: {json.dumps(v)}`" for k, v in spec.annotations().items())
    lines = [
        f"### {spec.name}",
        "",
        f"- **annotations:** {_kind(spec)} — {hints}",
        f"- **route:** {_route(spec)}",
        "",
        spec.description,
        "",
    ]
    return [*lines, *_parameters(spec)]


def _kind(spec: ToolSpec) -> str:
    if spec.passthrough:  # a logic tool: its own annotations say whether a write destroys
        return "read" if spec.read_only else "write"
    return "read" if spec.read_only else "write, destructive"


def _route(spec: ToolSpec) -> str:
    if spec.passthrough:  # the route answers a tools/call result (a logic tool)
        return f"`{spec.method} {spec.path}`, arguments as the JSON body; the route's result is the tool's"
    how = {None: "query string", FORM: "form body"}.get(spec.body, "JSON body")
    unknown = (
        "an unknown argument is refused (`unknown_field`)"
        if spec.input_schema.get("additionalProperties") is False
        else "an unknown argument is reported in `ignored_fields`"
    )
    if spec.name == VERSION_TOOL:
        return f"`{spec.method} {spec.path}`, answered in process by the function the route uses; {unknown}"
    return f"`{spec.method} {spec.path}`, arguments as the {how}; {unknown}"


def _parameters(spec: ToolSpec) -> list[str]:
    schema = spec.input_schema
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    if not properties:
        return ["No parameters.", ""]
    lines = ["| parameter | type | required | description |", "|---|---|---|---|"]
    for name, prop in properties.items():
        cells = [f"`{name}`", _type(prop), "yes" if name in required else "no", _describe(prop)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return [*lines, ""]


def _type(schema: Any) -> str:
    """A short reading of a property's JSON schema: ``integer | null``, ``array of string``."""
    if not isinstance(schema, dict) or not schema:
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return f"object ({ref.rsplit('/', 1)[-1]})"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(dict.fromkeys(_type(branch) for branch in schema[key]))
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema['items'])}" if "items" in schema else "array"
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    return str(kind) if kind else "any"


def _describe(prop: Any) -> str:
    text = str(prop.get("description", "")) if isinstance(prop, dict) else ""
    if isinstance(prop, dict) and "default" in prop:
        default = f"default `{json.dumps(prop['default'], ensure_ascii=False)}`"
        text = f"{text} ({default})" if text else default
    return text


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quipu.mcp.docs", description=__doc__.splitlines()[0])
    parser.add_argument("--write", metavar="PATH", help="write the page to PATH instead of stdout")
    args = parser.parse_args(argv)
    page = render(current_registry())
    if args.write:
        Path(args.write).write_text(page, encoding="utf-8")
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
