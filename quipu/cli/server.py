"""``quipu-server``: serve the REST app over HTTP on an embedded SQLite store.

Settings come from the config files, ``QUIPU_*`` variables and these flags (``quipu.config``). A
configuration mistake exits 2 with one plain ``error: ...`` line before anything binds. Once
running, every log line (uvicorn's, the per-request access log, quipu's) is one JSON object on
stderr. SIGINT and SIGTERM stop it gracefully: in-flight requests finish, the store closes, and
the process exits 0.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

import quipu
from quipu.cli.stdio_launch import parse_toolsets
from quipu.defaults import DEFAULT_PORT, KEEP_ALIVE_SECONDS
from quipu.errors import ConfigError, QuipuError

if TYPE_CHECKING:
    from quipu.config import Settings

cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
log = logging.getLogger("quipu.server")
DEFAULT_BIND = f"127.0.0.1:{DEFAULT_PORT}"
BIND_FORMS = "HOST:PORT, [IPv6]:PORT, :PORT or HOST"
_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})")


def _version(value: bool) -> None:
    if value:
        typer.echo(quipu.__version__)
        raise typer.Exit()


def _port(text: str, bind: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise ConfigError(f"--bind {bind!r}: the port must be a number from 0 to 65535")
    return int(text)


def _ipv6(text: str, bind: str) -> str:
    try:
        return str(ipaddress.IPv6Address(text))
    except ValueError:
        raise ConfigError(f"--bind {bind!r}: {text!r} is not an IPv6 address") from None


def parse_bind(bind: str) -> tuple[str | None, int | None]:
    """``(host, port)`` of a ``--bind`` value; None where it leaves the configured value."""
    text = bind.strip()
    if text.startswith("["):
        inner, closed, rest = text[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            raise ConfigError(f"--bind {bind!r}: expected {BIND_FORMS}")
        return _ipv6(inner, bind), (_port(rest[1:], bind) if rest else None)
    if text.count(":") > 1:  # a bare IPv6 address: it cannot carry a port without brackets
        return _ipv6(text, bind), None
    host, colon, port = text.partition(":")
    if not host and not colon:
        raise ConfigError(f"--bind is empty: expected {BIND_FORMS}")
    if host and not _HOSTNAME.fullmatch(host):
        raise ConfigError(f"--bind {bind!r}: {host!r} is not a host name or address")
    if host and host.replace(".", "").isdigit():
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ConfigError(f"--bind {bind!r}: {host!r} is not an IPv4 address") from None
    return host or None, (_port(port, bind) if colon else None)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def base_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def warn_if_writes_open(settings: Settings, credentials_configured: bool) -> bool:
    """Log a warning when a non-loopback bind would accept writes from anyone; True if it did."""
    server = settings.server
    if is_loopback(server.host) or server.read_only or credentials_configured:
        return False
    log.warning(
        "writes are open to anyone who can reach this address: no credential is configured "
        "(set server.auth_token or server.credentials, made with `quipu token`, or serve --read-only)",
        extra={"fields": {"host": server.host, "port": server.port}},
    )
    return True


def require_provider(settings: Settings) -> None:
    """``--embed-backfill`` asks for a capability: without a configured model the server refuses
    to start rather than serve without it (tools-search §2, §5.11)."""
    if settings.embedding.model_path is None or settings.embedding.tokenizer_path is None:
        from quipu.search.state import NO_PROVIDER

        raise ConfigError(f"--embed-backfill: {NO_PROVIDER}")


def startup_backfill(settings: Settings) -> None:
    """``--embed-backfill``: the ROOT embedding backfill, once, before serving. A model that does
    not load exits 2 (a configuration to fix), a provider failure part way 1; the batches done stay."""
    from quipu.api import KnowledgeBase
    from quipu.search.state import NO_PROVIDER

    log.info("embedding backfill: starting")
    with KnowledgeBase.from_settings(settings) as kb:
        result = kb.search.embed_backfill()
    if result["status"] != "ok":
        sys.stderr.write(f"error: --embed-backfill: {result['error']}\n")
        raise typer.Exit(2 if result["error"] == NO_PROVIDER else 1)
    log.info(
        "embedding backfill: done",
        extra={"fields": {k: result[k] for k in ("entities_embedded", "stale_retries")}},
    )


def _stop(signum: int, frame: FrameType | None) -> None:
    # uvicorn re-raises the signal it shut down for once it is done; end here, quietly, with 0.
    raise SystemExit(0)


@cli.command()
def serve(
    db: Annotated[
        str | None, typer.Option("--db", help="store file (default quipu.db in the working directory)")
    ] = None,
    bind: Annotated[
        str | None,
        typer.Option(
            "--bind",
            metavar="ADDRESS",
            help=f"{BIND_FORMS} to listen on (default {DEFAULT_BIND}, or server.host/server.port)",
        ),
    ] = None,
    config: Annotated[str | None, typer.Option("--config", help="TOML file with a [quipu] table")] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="refuse every write route with 403 (reads stay open)")
    ] = False,
    toolsets: Annotated[
        str | None,
        typer.Option(
            "--toolsets",
            help="MCP: serve only these toolsets (comma-separated, e.g. data,service or default,logic)",
        ),
    ] = None,
    read_only_tools: Annotated[
        bool, typer.Option("--read-only-tools", help="MCP: serve only the read tools")
    ] = False,
    mcp_stdio: Annotated[
        bool, typer.Option("--mcp-stdio", help="serve MCP over stdin/stdout instead of HTTP (no listener)")
    ] = False,
    mcp_token_file: Annotated[
        str | None,
        typer.Option("--mcp-token-file", help="with --mcp-stdio: a private file holding the bearer token"),
    ] = None,
    embed_backfill: Annotated[
        bool,
        typer.Option(
            "--embed-backfill",
            help="embed the ROOT entities that lack a current vector once, before serving; "
            "without an embedding provider the server does not start",
        ),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Start the quipu HTTP service (REST, and MCP at /mcp), or MCP over stdio."""
    from quipu.config import load_settings

    try:
        host, port = parse_bind(bind) if bind is not None else (None, None)
        if mcp_token_file is not None and not mcp_stdio:
            raise ConfigError(
                "--mcp-token-file goes with --mcp-stdio (over HTTP the client sends its bearer)"
            )
        if embed_backfill and mcp_stdio:
            raise ConfigError(
                "--embed-backfill runs before the HTTP server starts; for --mcp-stdio run "
                "`quipu embed-backfill` first"
            )
        if mcp_stdio:  # the server `quipu mcp` runs, with these flags (--bind is checked, unused)
            from quipu.cli.stdio_launch import StdioFlags, run

            raise typer.Exit(
                run(StdioFlags(db, config, mcp_token_file, toolsets, read_only_tools, read_only))
            )
        settings = load_settings(
            config,
            store={"db": db},
            server={"host": host, "port": port, "read_only": True if read_only else None},
            mcp={"toolsets": parse_toolsets(toolsets), "read_only_tools": True if read_only_tools else None},
        )
        if embed_backfill:
            require_provider(settings)
        # After the cheap checks: FastAPI and the MCP SDK take a while to import.
        from quipu.mcp.http import create_server_app

        app = create_server_app(settings)  # reads token files: a bad one fails here, before binding
    except QuipuError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        raise typer.Exit(2) from None

    import uvicorn

    from quipu.rest.logs import configure
    from quipu.store.database import display_location
    from quipu.version import version_info

    configure()
    server = settings.server
    build = version_info()
    log.info(
        "starting",
        extra={
            "fields": {
                "version": build["version"],
                "git_sha": build["git_sha"],
                "git_dirty": build["git_dirty"],
                "store": display_location(settings.store.db),
                "url": base_url(server.host, server.port),
                "read_only": server.read_only,
            }
        },
    )
    warn_if_writes_open(settings, app.state.credentials.configured)
    if embed_backfill:
        startup_backfill(settings)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    # log_config=None keeps our JSON handler; the access log is quipu's own (one line per request,
    # with its request id). No graceful-shutdown timeout: an in-flight write is let finish.
    uvicorn.run(
        app,
        host=server.host,
        port=server.port,
        log_config=None,
        access_log=False,
        log_level="info",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )


def main() -> None:
    cli()
