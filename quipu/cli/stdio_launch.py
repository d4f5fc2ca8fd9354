"""``quipu mcp`` and ``quipu-server --mcp-stdio``: their flags, read without typer, and the steps
that get the stdio server ready (quipu/mcp/stdio.py runs them off the handshake path).

Both console scripts look at their arguments before importing typer (quipu/cli/entry.py): a
command line made only of the flags below goes straight to the server, so the client's
``initialize`` is answered in a few tens of milliseconds. Anything else — ``--help``, an unknown
flag, a missing value — goes through typer as before, which reports it or, for a valid form
this reader does not take, calls ``run`` with the same flags.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from quipu.errors import ConfigError

if TYPE_CHECKING:
    from quipu.config import Settings

log = logging.getLogger("quipu.server")

# flag -> the StdioFlags field it sets
VALUE_FLAGS: Final = {
    "--db": "db",
    "--config": "config",
    "--mcp-token-file": "token_file",
    "--toolsets": "toolsets",
}
SWITCHES: Final = {"--read-only-tools": "read_only_tools"}
SERVER_SWITCHES: Final = {**SWITCHES, "--read-only": "read_only", "--mcp-stdio": "mcp_stdio"}


@dataclass(frozen=True)
class StdioFlags:
    db: str | None = None
    config: str | None = None
    token_file: str | None = None
    toolsets: str | None = None
    read_only_tools: bool = False
    read_only: bool = False
    mcp_stdio: bool = field(default=False, compare=False)


def parse(args: list[str], *, server: bool) -> StdioFlags | None:
    """The flags of ``args``, or None when anything in them is not one of ours (typer decides)."""
    switches = SERVER_SWITCHES if server else SWITCHES
    values: dict[str, Any] = {}
    rest = iter(args)
    for arg in rest:
        name, eq, value = arg.partition("=")
        if name in VALUE_FLAGS:
            if not eq:
                value = next(rest, "")
                if not value or value.startswith("-"):
                    return None  # typer reports a missing value (or takes this one) its own way
            values[VALUE_FLAGS[name]] = value  # repeated: the last one counts, as with typer
        elif arg in switches:
            values[switches[arg]] = True
        else:
            return None
    return StdioFlags(**values)


def parse_toolsets(text: str | None) -> list[str] | None:
    """``--toolsets a,b``: the names, or None when the flag is absent."""
    if text is None:
        return None
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ConfigError("--toolsets is empty: name one or more toolsets, comma-separated")
    return names


def run(flags: StdioFlags) -> int:
    """Serve MCP on stdio with these flags; the exit status."""
    from quipu.mcp.stdio import Launch, serve

    return serve(
        Launch(
            lambda: _settings(flags),
            lambda settings: _preflight(flags, settings),
            lambda: narrowing(flags),
        )
    )


def narrowing(flags: StdioFlags) -> tuple[list[str] | None, bool] | None:
    """``(mcp.toolsets, mcp.read_only_tools)`` as the settings will have them, read from the flags
    and the config files' plain TOML; None when that cannot be told without the settings library
    (a ``QUIPU_MCP...`` variable, or a value of the wrong form, which the settings then refuse).
    The settings are still built and checked; this only lets ``tools/list`` answer sooner."""
    from quipu.config_files import config_tables

    if any(name.upper().startswith("QUIPU_MCP") for name in os.environ):
        return None
    try:
        toolsets = parse_toolsets(flags.toolsets)
        table = config_tables(flags.config).get("mcp", {})
    except ConfigError:
        return None
    if not isinstance(table, dict):
        return None
    if toolsets is None:
        toolsets = table.get("toolsets")
        if toolsets is not None and not (
            isinstance(toolsets, list) and all(isinstance(name, str) for name in toolsets)
        ):
            return None
    read_only = table.get("read_only_tools", False)
    if not isinstance(read_only, bool):
        return None
    return toolsets, flags.read_only_tools or read_only


def _settings(flags: StdioFlags) -> Settings:
    from quipu.config import load_settings
    from quipu.mcp.registry import check_toolsets

    settings = load_settings(
        flags.config,
        store={"db": flags.db},
        server={"read_only": True if flags.read_only else None},
        mcp={
            "toolsets": parse_toolsets(flags.toolsets),
            "read_only_tools": True if flags.read_only_tools else None,
        },
    )
    if settings.mcp.toolsets is not None:  # refused before the "serving" line, as over HTTP
        check_toolsets(settings.mcp.toolsets)
    return settings


def _preflight(flags: StdioFlags, settings: Settings) -> str | None:
    """The remaining refusals (an unsafe token file, a store path that cannot be created), then
    the log line that says the server is up; the Authorization value each tool call carries."""
    from quipu.rest.auth import read_token_file
    from quipu.rest.logs import configure
    from quipu.store.database import check_location, display_location

    authorization = None
    if flags.token_file is not None:
        authorization = f"Bearer {read_token_file(flags.token_file, '--mcp-token-file')}"
    check_location(settings.store.db)
    configure()
    log.info("serving MCP over stdio", extra={"fields": {"store": display_location(settings.store.db)}})
    return authorization
