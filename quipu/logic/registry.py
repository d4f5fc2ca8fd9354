"""The logic tool registry: the 29 zpm 0.4.0 tools (spec logic-memory.md §2.2, §4, §9.2).

``tools.json`` (package data) holds, in ``tools/list`` order, each tool's wire form as the zpm tool
document gives it (``name``, ``description``, ``inputSchema``, ``annotations``) and what our adapters
need besides: ``read_only`` (the REST route class and read-only mode), ``memory_param``, the CLI
spelling (§9.2, §9.3) and the REST route. Every tool is ``POST /logic/<name>`` with its arguments as
the JSON body, so the MCP adapter can dispatch a ``tools/call`` into the route without translation.

The file is read and checked on the first call, never at import: the CLI's start-up budget (§9.2)
leaves no room for work nobody asked for. The checks are structural (plain Python); the schemas are
checked against the JSON Schema meta-schema by the tests, which keeps ``jsonschema`` out of start-up.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Final

from quipu.errors import ConfigError

SERVER_INFO: Final[dict[str, str]] = {"name": "zpm", "version": "0.4.0"}
PROTOCOL_VERSION: Final = "2025-11-25"
# R-T6: a client's requested version is echoed when it is one of these, else PROTOCOL_VERSION.
SUPPORTED_PROTOCOL_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
CAPABILITIES: Final[dict[str, Any]] = {"tools": {"listChanged": True}}

TOOL_COUNT: Final = 29
REST_PREFIX: Final = "/logic/"
CLI_FORMATS: Final = ("text", "json")  # every tool command takes --format (§9.2)
ARGUMENT_TYPES: Final = frozenset({"string", "integer", "boolean"})

_KEYS: Final = frozenset(
    {"name", "description", "inputSchema", "annotations", "read_only", "memory_param", "cli", "rest"}
)
_HINTS: Final = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_NAME: Final = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True, slots=True)
class CliOption:
    """One tool argument as a flag: ``--start-node`` and ``--start_node`` both name ``start_node``."""

    argument: str
    flags: tuple[str, ...]
    type: str  # "string" | "integer" | "boolean" (booleans take a value: true or false)
    required: bool


@dataclass(frozen=True, slots=True)
class CliCommand:
    """A spelling of the tool on the command line: ``("define-rule",)`` or ``("memory", "create")``.

    ``positional`` names the argument a bare word fills (``define-rule <head> --body <body>``);
    its flag is accepted as well."""

    words: tuple[str, ...]
    positional: str | None

    @property
    def spelling(self) -> str:
        return " ".join(self.words)


ENGINE_NOT_INITIALIZED: Final = "Prolog engine is not initialized"
_NOT_INITIALIZED_TOOLS: Final = frozenset({"find_predicate_references", "get_kb_overview"})


@dataclass(frozen=True, slots=True)
class LogicTool:
    """One tool. ``input_schema`` and ``annotations`` are shared: read them, copy with ``listing()``."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(hash=False)
    annotations: Mapping[str, bool] = field(hash=False)
    read_only: bool
    memory_param: bool
    commands: tuple[CliCommand, ...]  # the kebab-case command first, then any alias (§9.3)
    options: tuple[CliOption, ...]  # in inputSchema property order
    rest_method: str
    rest_path: str

    @property
    def engine_unavailable_text(self) -> str:
        """The tool's answer when no engine can be started: its own text where the contract
        gives one (§4.8, §4.10), else the generic ``ExecutionFailed`` (R-T9)."""
        return ENGINE_NOT_INITIALIZED if self.name in _NOT_INITIALIZED_TOOLS else "ExecutionFailed"

    @property
    def cli_command(self) -> str:
        return self.commands[0].spelling

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("required", ()))

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it (a fresh copy the caller may change)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": copy.deepcopy(dict(self.input_schema)),
            "annotations": dict(self.annotations),
        }

    def option_for_flag(self, flag: str) -> CliOption | None:
        """The option a flag spells (``--max-depth`` or ``--max_depth``), None for an unknown flag."""
        for option in self.options:
            if flag in option.flags:
                return option
        return None


@cache
def load_tools() -> tuple[LogicTool, ...]:
    """All 29 tools in ``tools/list`` order; ConfigError when ``tools.json`` is malformed."""
    text = (resources.files("quipu.logic") / "tools.json").read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"logic tools.json is not JSON: {exc}") from exc
    return parse_tools(document)


def parse_tools(document: Any) -> tuple[LogicTool, ...]:
    """The tools of a parsed ``tools.json`` document, checked (ConfigError names the first fault)."""
    entries = document.get("tools") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ConfigError("logic tools.json: no 'tools' list")
    tools = tuple(_tool(entry) for entry in entries)
    _check_collection(tools)
    return tools


def find_tool(name: str) -> LogicTool | None:
    """The tool called ``name`` (the MCP / REST name, e.g. ``remember_fact``), or None."""
    return _by_name().get(name)


def find_command(spelling: str | Sequence[str]) -> tuple[LogicTool, CliCommand] | None:
    """The tool a CLI spelling names (``"remember-fact"``, ``"memory create"`` or its words), or None."""
    words = tuple(spelling.split()) if isinstance(spelling, str) else tuple(spelling)
    return _by_command().get(words)


def tool_names() -> tuple[str, ...]:
    return tuple(tool.name for tool in load_tools())


def kebab(argument: str) -> str:
    return argument.replace("_", "-")


def flag_spellings(argument: str) -> tuple[str, ...]:
    """§9.2: a flag is accepted in kebab case and in snake case (one spelling when they agree)."""
    return tuple(dict.fromkeys((f"--{kebab(argument)}", f"--{argument}")))


@cache
def _by_name() -> dict[str, LogicTool]:
    return {tool.name: tool for tool in load_tools()}


@cache
def _by_command() -> dict[tuple[str, ...], tuple[LogicTool, CliCommand]]:
    return {command.words: (tool, command) for tool in load_tools() for command in tool.commands}


def _fail(where: str, problem: str) -> ConfigError:
    return ConfigError(f"logic tools.json: {where}: {problem}")


def _tool(entry: Any) -> LogicTool:
    if not isinstance(entry, dict):
        raise _fail("tools", "every entry must be an object")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _fail("tools", f"bad tool name {name!r}")
    if set(entry) != _KEYS:
        raise _fail(name, f"keys must be exactly {sorted(_KEYS)}, got {sorted(entry)}")
    description = entry["description"]
    if not isinstance(description, str) or not description.strip():
        raise _fail(name, "description must be a non-empty string")
    schema = entry["inputSchema"]
    properties = _properties(name, schema)
    read_only = _boolean(name, "read_only", entry["read_only"])
    annotations = _annotations(name, entry["annotations"], read_only)
    memory_param = _boolean(name, "memory_param", entry["memory_param"])
    if memory_param != ("memory" in properties):
        raise _fail(name, "memory_param must say whether the schema has a 'memory' property")
    required = set(schema.get("required", ()))
    options = tuple(
        CliOption(arg, _flags(name, arg, entry["cli"]), prop["type"], arg in required)
        for arg, prop in properties.items()
    )
    method, path = _rest(name, entry["rest"])
    return LogicTool(
        name=name,
        description=description,
        input_schema=schema,
        annotations=annotations,
        read_only=read_only,
        memory_param=memory_param,
        commands=_commands(name, entry["cli"], properties),
        options=options,
        rest_method=method,
        rest_path=path,
    )


def _properties(name: str, schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise _fail(name, "inputSchema must be an object schema")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise _fail(name, "inputSchema.properties must be an object")
    for arg, prop in properties.items():
        if not _NAME.fullmatch(arg):
            raise _fail(name, f"bad argument name {arg!r}")
        if not isinstance(prop, dict) or prop.get("type") not in ARGUMENT_TYPES:
            raise _fail(name, f"argument {arg!r} must have a type among {sorted(ARGUMENT_TYPES)}")
        if not isinstance(prop.get("description"), str):
            raise _fail(name, f"argument {arg!r} needs a description")
    required = schema.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(properties):
        raise _fail(name, "inputSchema.required must list declared properties")
    if len(set(required)) != len(required):
        raise _fail(name, "inputSchema.required lists an argument twice")
    return properties


def _annotations(name: str, annotations: Any, read_only: bool) -> dict[str, bool]:
    if not isinstance(annotations, dict) or tuple(annotations) != _HINTS:
        raise _fail(name, f"annotations must be exactly {list(_HINTS)}, in that order")
    hints = {hint: _boolean(name, hint, annotations[hint]) for hint in _HINTS}
    if hints["readOnlyHint"] != read_only:
        raise _fail(name, "annotations.readOnlyHint must equal read_only")
    if hints["openWorldHint"]:
        raise _fail(name, "openWorldHint is always false (§2.2)")
    return hints


def _boolean(name: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(name, f"{key} must be a boolean")
    return value


def _flags(name: str, argument: str, cli: Any) -> tuple[str, ...]:
    flags = cli.get("flags") if isinstance(cli, dict) else None
    if not isinstance(flags, dict):
        raise _fail(name, "cli.flags must be an object")
    spelled = flags.get(argument)
    if not isinstance(spelled, list) or tuple(spelled) != flag_spellings(argument):
        raise _fail(name, f"cli.flags.{argument} must be {list(flag_spellings(argument))}")
    return tuple(spelled)


def _commands(name: str, cli: Any, properties: Mapping[str, Any]) -> tuple[CliCommand, ...]:
    if not isinstance(cli, dict) or set(cli) != {"command", "positional", "flags", "alias"}:
        raise _fail(name, "cli must have exactly command, positional, flags and alias")
    if list(cli["flags"]) != list(properties):
        raise _fail(name, "cli.flags must name every argument, in schema order")
    if cli["command"] != kebab(name):
        raise _fail(name, f"cli.command must be {kebab(name)!r} (§9.2)")
    commands = [CliCommand((cli["command"],), _positional(name, cli["positional"], properties))]
    alias = cli["alias"]
    if alias is not None:
        if not isinstance(alias, dict) or set(alias) != {"command", "positional"}:
            raise _fail(name, "cli.alias must be null or have exactly command and positional")
        words = alias["command"].split() if isinstance(alias["command"], str) else []
        if len(words) < 2 or not all(_NAME.fullmatch(word) for word in words):
            raise _fail(name, "cli.alias.command must be several words, e.g. 'memory create'")
        commands.append(CliCommand(tuple(words), _positional(name, alias["positional"], properties)))
    return tuple(commands)


def _positional(name: str, positional: Any, properties: Mapping[str, Any]) -> str | None:
    if positional is None:
        return None
    if not isinstance(positional, str) or properties.get(positional, {}).get("type") != "string":
        raise _fail(name, f"cli positional {positional!r} must name a string argument")
    return positional


def _rest(name: str, rest: Any) -> tuple[str, str]:
    if not isinstance(rest, dict) or set(rest) != {"method", "path"}:
        raise _fail(name, "rest must have exactly method and path")
    if rest["method"] != "POST" or rest["path"] != REST_PREFIX + name:
        raise _fail(name, f"rest must be POST {REST_PREFIX}{name}")
    return rest["method"], rest["path"]


def _check_collection(tools: tuple[LogicTool, ...]) -> None:
    if len(tools) != TOOL_COUNT:
        raise ConfigError(f"logic tools.json: {len(tools)} tools, expected {TOOL_COUNT}")
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise ConfigError("logic tools.json: a tool name appears twice")
    spellings = [command.words for tool in tools for command in tool.commands]
    if len(set(spellings)) != len(spellings):
        raise ConfigError("logic tools.json: a CLI command spelling appears twice")
