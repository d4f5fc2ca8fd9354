"""``quipu tool``: every MCP tool as a command, through the dispatcher ``quipu mcp`` serves with.

``tool call NAME --args JSON`` runs one tool the way an MCP client's call runs: the same registry
(narrowed by ``[quipu.mcp]``), the same type check before any request, the same REST request,
credential and error bodies. With ``--db``/``--config`` the REST app is built in this process and
its lifespan opens the store, as ``quipu mcp`` does; with ``--server URL`` the request goes over
HTTP to a running ``quipu-server``, which validates and authenticates it. ``--token-file`` supplies
the bearer either way. stdout carries the result's JSON only; an ``isError`` result exits 2 with
its body on stdout and one ``error: …`` line on stderr.

``tool list`` prints the served tools. It reads the REST app's OpenAPI and never opens a store.
The REST and MCP stack is imported inside the commands, so ``quipu --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from contextlib import AbstractAsyncContextManager, aclosing
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from quipu.cli.common import ConfigOption

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from quipu.config import Settings
    from quipu.mcp.dispatch import Dispatcher
    from quipu.mcp.registry import Registry

app = typer.Typer(
    help="Run the MCP tools as commands: the registry, checks and dispatch of `quipu mcp`.",
    no_args_is_help=True,
)
NO_STORE = {"db": ":memory:"}  # the app is built for its OpenAPI only: nothing to open


class ListFormat(StrEnum):
    table = "table"
    json = "json"


def _fail(message: str, code: int = 2) -> NoReturn:
    # Plain text on one line: a message may quote user input, never to be read as Rich markup.
    sys.stderr.write(f"error: {' '.join(message.split())}\n")
    raise typer.Exit(code)


def _served(settings: Settings) -> Registry:
    """The tools this configuration serves, from the REST app's OpenAPI (no lifespan, no store)."""
    from quipu.mcp.http import served_registry
    from quipu.rest.app import create_app

    return served_registry(create_app(settings), settings)


@app.command("list")
def list_tools(
    toolsets: Annotated[
        str | None,
        typer.Option(
            "--toolsets", help="only these toolsets (comma-separated, e.g. data,service or default,logic)"
        ),
    ] = None,
    read_only_tools: Annotated[bool, typer.Option("--read-only-tools", help="only the read tools")] = False,
    format: Annotated[ListFormat, typer.Option("--format", "-f", help="table or json")] = ListFormat.table,
    config: ConfigOption = None,
) -> None:
    """The tools `quipu mcp` serves: name, toolset, read or write, and what each does."""
    from quipu.cli.stdio_launch import parse_toolsets
    from quipu.config import load_settings

    narrowing = {"toolsets": parse_toolsets(toolsets), "read_only_tools": True if read_only_tools else None}
    registry = _served(load_settings(config, store=NO_STORE, mcp=narrowing))
    rows = [
        {
            "name": spec.name,
            "toolset": spec.toolset,
            "access": "read" if spec.read_only else "write",
            "route": f"{spec.method} {spec.path}",
            "description": spec.description,
        }
        for spec in registry
    ]
    if format == ListFormat.json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return
    # Plain aligned columns, one tool a line: readable, and whole in a pipe (no terminal width).
    lines = [("TOOL", "TOOLSET", "ACCESS", "DESCRIPTION")]
    lines += [(r["name"], r["toolset"], r["access"], _first_line(r["description"])) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    for line in lines:
        sys.stdout.write(
            "  ".join([*(cell.ljust(w) for cell, w in zip(line, widths, strict=False)), line[3]]) + "\n"
        )


def _first_line(description: str) -> str:
    """The description's first sentence."""
    text = " ".join(description.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


@app.command("call")
def call(
    name: Annotated[str, typer.Argument(help="the tool, e.g. quipu_query (see `quipu tool list`)")],
    args: Annotated[
        str, typer.Option("--args", help="the arguments: a JSON object, or @FILE holding one")
    ] = "{}",
    db: Annotated[
        str | None,
        typer.Option("--db", help="store to open in process (default from QUIPU_STORE__DB or quipu.toml)"),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option("--server", help="base URL of a running quipu-server, e.g. http://127.0.0.1:3030"),
    ] = None,
    token_file: Annotated[
        str | None,
        typer.Option("--token-file", help="a private file (mode 600 or 400) holding the bearer token"),
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Run one MCP tool and print its result (JSON); a tool error exits 2."""
    arguments = _arguments(args)
    if server is not None and db is not None:
        _fail("--db and --server exclude each other: open a store here, or call a running server")
    if server is not None and not server.startswith(("http://", "https://")):
        _fail(f"--server {server!r}: expected an http:// or https:// URL")
    import anyio
    import httpx

    from quipu.config import load_settings
    from quipu.mcp.dispatch import Dispatcher
    from quipu.mcp.local import LocalTools
    from quipu.rest.auth import read_token_file

    # A QuipuError (a bad token file, a bad config) is reported by the root group (cli/common.py).
    authorization = None if token_file is None else f"Bearer {read_token_file(token_file, '--token-file')}"
    opened: AbstractAsyncContextManager[Dispatcher]
    if server is None:  # the store opens only for the call, once the name is known
        local = LocalTools(load_settings(config, store={"db": db}))
        dispatcher, opened = local.dispatcher, local.open()
    else:
        dispatcher = Dispatcher(server.rstrip("/"), _served(load_settings(config, store=NO_STORE)))
        opened = aclosing(dispatcher)
    if dispatcher.registry.get(name) is None:
        _fail(f"unknown tool: {name} (see `quipu tool list`)")
    try:
        result = anyio.run(_call, opened, name, arguments, authorization)
    except httpx.TransportError as exc:
        _fail(f"cannot reach quipu-server at {server}: {exc}", 1)
    _print(result)


async def _call(
    opened: AbstractAsyncContextManager[Dispatcher],
    name: str,
    arguments: dict[str, Any],
    authorization: str | None,
) -> CallToolResult:
    async with opened as dispatcher:
        return await dispatcher.call(name, arguments, authorization)


def _arguments(text: str) -> dict[str, Any]:
    """``--args``: a JSON object, inline or read from ``@FILE`` (a usage error otherwise)."""
    where = "--args"
    if text.startswith("@"):
        path = Path(text[1:])
        where = f"--args {text}"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            _fail(f"{where}: cannot read {path}: {getattr(exc, 'strerror', None) or exc}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(f"{where} is not JSON: {exc}")
    if not isinstance(value, dict):
        _fail(f"{where} must be a JSON object of the tool's arguments, not {_json_kind(value)}")
    return value


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    kinds = ((bool, "a boolean"), (str, "a string"), (int | float, "a number"), (list, "an array"))
    return next(kind for cls, kind in kinds if isinstance(value, cls))


def _print(result: CallToolResult) -> None:
    """The result's JSON on stdout; an error result also says why on stderr and exits 2."""
    from mcp.types import TextContent

    text = "".join(block.text for block in result.content if isinstance(block, TextContent))
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    sys.stdout.write((text if body is None else json.dumps(body, ensure_ascii=False, indent=2)) + "\n")
    if result.is_error:
        sys.stdout.flush()
        reason = body.get("error") if isinstance(body, dict) else None
        _fail(str(reason) if reason else text)
