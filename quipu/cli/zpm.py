"""The ``zpm`` command (spec logic-memory.md §9): ``init``, ``serve``, ``version``, ``--help``,
every tool as a kebab-case command (§9.2) and the ``memory`` commands (§9.3).

Tool commands are built from the registry's CLI metadata (quipu/logic/registry.py): each
argument is a flag in kebab and in snake case, a few commands take one positional word, and
``--format text|json`` chooses the output. A command discovers the project (R-B1), calls the
tool, prints and exits: 0 for a success, 1 for a tool error, a usage error or no project.

The call goes to ``LogicHost(project).service()``, the very object behind ``POST /logic/<tool>``
(quipu/rest/routers/logic.py does nothing but hand it the body), and prints the same
``tools/call`` result the MCP server passes on. It does not go through the REST app itself
**[designed here]**: importing and building that app costs about 0.9 s on this machine, and §9.2
wants ``zpm query-logic --goal true`` done in under 500 ms; this path takes about 0.3 s.
An error that stops the call before it reaches a tool (no engine, project gone) is
``ExecutionFailed``, as over MCP (R-T9), with the reason on stderr.

The parser is hand-written rather than argparse or typer **[designed here]**: the spec's exit
codes (1 for every usage error, 1 for a bare ``zpm`` that still prints the help), its
``COMMANDS`` help section, flags that come from a data file and the start-up budget of §9.2
are each simpler to meet directly, and nothing heavy is imported before a tool is called.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from quipu.logic.registry import (
    CLI_FORMATS,
    SERVER_INFO,
    CliCommand,
    CliOption,
    LogicTool,
    find_command,
    load_tools,
)

if TYPE_CHECKING:
    from quipu.logic.project import Project

PROG: Final = "zpm"
VERSION_TEXT: Final = f"{SERVER_INFO['name']} {SERVER_INFO['version']}"
UPGRADE_HINT: Final = "zpm upgrade is not available here: update the quipu package with its package manager"
_BUILTINS: Final = (
    ("init", "Initialize a .zpm/ project directory in the working directory"),
    ("serve", "Run the MCP server on stdio (the project is found from any subdirectory)"),
    ("version", "Print the version"),
    ("memory", "Memory segments: create, mount, unmount, list"),
)
_HELP_FLAGS: Final = frozenset({"-h", "--help"})


class UsageError(Exception):
    """A command line the parser refuses: printed on stderr, exit status 1 (§9.2)."""


class HelpRequested(Exception):
    """``-h`` or ``--help`` where a flag may stand: the command's help, exit status 0."""


# ---------------------------------------------------------------------------- help texts


def _summary(description: str) -> str:
    """The first sentence of a tool description, for the command list."""
    first = description.split(". ")[0].rstrip(".")
    return first if len(first) <= 90 else first[:87] + "..."


def main_help() -> str:
    tools = load_tools()
    rows = [*_BUILTINS, *((tool.cli_command, _summary(tool.description)) for tool in tools)]
    width = max(len(name) for name, _ in rows) + 2
    lines = [
        f"{VERSION_TEXT}: a Prolog knowledge base for agents, served over MCP (stdio)",
        "",
        "USAGE:",
        f"    {PROG} <command> [flags]",
        "",
        "COMMANDS:",
        *(f"    {name.ljust(width)}{text}" for name, text in rows),
        "",
        "FLAGS:",
        "    -h, --help          Show help (also after a command: zpm remember-fact --help)",
        "    --format text|json  Output of a tool command (default: text)",
        "",
        "A tool command runs one tool in the project found from the working directory, e.g.",
        f"    {PROG} remember-fact --fact 'parent(tom, bob)'",
        f"    {PROG} query-logic --goal 'parent(X, bob)' --format json",
    ]
    return "\n".join(lines) + "\n"


def memory_help() -> str:
    lines = ["USAGE:", f"    {PROG} memory <command> [flags]", "", "COMMANDS:"]
    for tool in load_tools():
        for command in tool.commands[1:]:
            if command.words[0] == "memory":
                lines.append(f"    {command.words[1].ljust(10)}{_summary(tool.description)}")
    return "\n".join(lines) + "\n"


def command_help(tool: LogicTool, command: CliCommand) -> str:
    positional = f" [<{command.positional}>]" if command.positional else ""
    lines = [
        f"USAGE: {PROG} {command.spelling}{positional} [flags]",
        "",
        tool.description,
        "",
        "FLAGS:",
    ]
    properties = tool.input_schema.get("properties", {})
    for option in tool.options:
        value = "true|false" if option.type == "boolean" else f"<{option.type}>"
        need = " (required)" if option.required else ""
        lines.append(f"    {', '.join(option.flags)} {value}{need}")
        lines.append(f"        {properties[option.argument]['description']}")
    lines.append("    --format text|json")
    lines.append("        Output format (default: text)")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- tool arguments


def _value(option: CliOption, flag: str, text: str) -> Any:
    if option.type == "integer":
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"{flag} takes an integer, not {text!r}") from None
    if option.type == "boolean":
        if text.lower() not in ("true", "false"):
            raise UsageError(f"{flag} takes true or false, not {text!r}")
        return text.lower() == "true"
    return text


def parse_tool_args(tool: LogicTool, command: CliCommand, args: Sequence[str]) -> tuple[dict[str, Any], str]:
    """The tool's arguments object and the output format, from the words after the command.

    Raises ``UsageError`` for an unknown flag, a missing or bad value, a stray word or a missing
    required argument; ``HelpRequested`` for ``-h`` / ``--help``."""
    arguments: dict[str, Any] = {}
    output = "text"
    words = list(args)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word in _HELP_FLAGS:
            raise HelpRequested
        if word.startswith("--") and len(word) > 2:
            flag, eq, inline = word.partition("=")
            if not eq:
                if i >= len(words):
                    raise UsageError(f"{flag} needs a value")
                inline = words[i]
                i += 1
            if flag == "--format":
                if inline not in CLI_FORMATS:
                    raise UsageError(f"--format takes {' or '.join(CLI_FORMATS)}, not {inline!r}")
                output = inline
                continue
            option = tool.option_for_flag(flag)
            if option is None:
                raise UsageError(f"unknown flag {flag}")
            arguments[option.argument] = _value(option, flag, inline)
        elif word.startswith("-") and word != "-":
            raise UsageError(f"unknown flag {word}")
        elif command.positional is not None and command.positional not in arguments:
            arguments[command.positional] = word
        else:
            raise UsageError(f"unexpected argument {word!r}")
    missing = [option for option in tool.options if option.required and option.argument not in arguments]
    if missing:
        raise UsageError(f"missing required flag {missing[0].flags[0]}")
    return arguments, output


def render(text: str, is_error: bool, output: str) -> str:
    """What a tool command prints on stdout (§9.2)."""
    if output == "json":
        return json.dumps([text], ensure_ascii=False) + "\n"
    return ("ERROR: " if is_error else "") + text + "\n"


# ---------------------------------------------------------------------------- commands


def _usage(message: str, spelling: str | None, err: TextIO) -> int:
    where = f"{PROG} {spelling}" if spelling else PROG
    err.write(f"{where}: {message}\n")
    err.write(f"Run '{where} --help' for usage.\n")
    return 1


def cmd_init(args: Sequence[str], out: TextIO, err: TextIO) -> int:
    from quipu.logic.project import ALREADY_INITIALIZED, INITIALIZED, init

    if args:
        return _usage(f"unexpected argument {args[0]!r}", "init", err)
    try:
        created = init(Path.cwd())
    except OSError as exc:
        err.write(f"{PROG} init: {exc}\n")
        return 1
    out.write((INITIALIZED if created else ALREADY_INITIALIZED) + "\n")
    return 0


def cmd_serve(args: Sequence[str], err: TextIO) -> int:
    import logging

    import anyio

    from quipu.logic.project import ProjectNotFound, discover
    from quipu.mcp.zpm_stdio import serve_stdio

    store: str | None = None
    rest = list(args)
    if rest and (rest[0] == "--db" or rest[0].startswith("--db=")):
        flag = rest.pop(0)
        if flag == "--db":
            if not rest:
                return _usage("--db needs a store path or URL", "serve", err)
            store = rest.pop(0)
        else:
            store = flag.removeprefix("--db=")
        if not store:
            return _usage("--db needs a store path or URL", "serve", err)
    if rest:
        return _usage(f"unexpected argument {rest[0]!r}", "serve", err)
    try:
        project = discover()
    except ProjectNotFound as exc:
        err.write(f"{exc.message}\n")  # R-B2
        return 1
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    try:
        anyio.run(partial(serve_stdio, project, store=store))
    except BrokenPipeError:
        return 0  # the client closed the stream: nobody left to answer
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_tool(tool: LogicTool, command: CliCommand, args: Sequence[str], out: TextIO, err: TextIO) -> int:
    try:
        arguments, output = parse_tool_args(tool, command, args)
    except HelpRequested:
        out.write(command_help(tool, command))
        return 0
    except UsageError as exc:
        return _usage(str(exc), command.spelling, err)
    from quipu.logic.project import ProjectNotFound, command_not_found, discover

    try:
        project = discover()
    except ProjectNotFound:
        err.write(command_not_found(command.spelling) + "\n")  # R-B2
        return 1
    text, is_error = run_tool(project, tool, arguments, err)
    out.write(render(text, is_error, output))
    return 1 if is_error else 0


def run_tool(project: Project, tool: LogicTool, arguments: dict[str, Any], err: TextIO) -> tuple[str, bool]:
    """One call on a fresh runtime of ``project``, closed again: the text and whether it is an error."""
    from quipu.errors import QuipuError
    from quipu.logic.graph_bridge import StoreAt
    from quipu.logic.service import LogicHost
    from quipu.mcp.zpm_stdio import EXECUTION_FAILED

    host = LogicHost(project.root, graph=StoreAt())  # rdf/3 ... read [quipu.logic] store
    try:
        result = host.service().call(tool.name, arguments)
    except QuipuError as exc:
        err.write(f"{PROG} {tool.cli_command}: {exc.message}\n")
        return EXECUTION_FAILED, True
    finally:
        host.close()
    return result.text, result.is_error


def run(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """The whole command line after the program name; the exit status."""
    if not argv:
        out.write(main_help())
        return 1
    first, rest = argv[0], list(argv[1:])
    if first in _HELP_FLAGS or first == "help":
        out.write(main_help())
        return 0
    if first in ("version", "--version"):
        if rest:
            return _usage(f"unexpected argument {rest[0]!r}", "version", err)
        out.write(VERSION_TEXT + "\n")
        return 0
    if first == "init":
        return cmd_init(rest, out, err)
    if first == "serve":
        if _HELP_FLAGS & set(rest):
            out.write(
                f"USAGE: {PROG} serve [--db PATH]\n\n{_BUILTINS[1][1]}.\n\n"
                "  --db PATH  the quipu store (file or database URL) that rdf/3, rdf/4, rdf_at/4 and\n"
                "             rdf_tx/4 read; default: [quipu.logic] store in quipu's config\n"
            )
            return 0
        return cmd_serve(rest, err)
    if first == "upgrade":
        err.write(UPGRADE_HINT + "\n")
        return 1
    if first == "memory":
        if not rest or rest[0] in _HELP_FLAGS:
            out.write(memory_help())
            return 0 if rest else 1
        found = find_command(("memory", rest[0]))
        if found is None:
            return _usage(f"unknown command {rest[0]!r}", "memory", err)
        return cmd_tool(found[0], found[1], rest[1:], out, err)
    if first.startswith("-"):
        return _usage(f"unknown flag {first}", None, err)
    found = find_command((first,))
    if found is None:
        return _usage(f"unknown command {first!r}", None, err)
    return cmd_tool(found[0], found[1], rest, out, err)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``zpm`` console script."""
    return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
