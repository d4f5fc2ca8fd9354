"""The commands around a running service: ``token`` makes its credentials, ``mcp`` serves the MCP
tools over stdio, ``logic`` is the zpm command line, ``version`` names the release."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption
from quipu.errors import InvalidField

app = typer.Typer()


@app.command("token")
def token(
    principal: Annotated[
        str | None,
        typer.Option("--principal", help="who will use the token, recorded on each write (default agent)"),
    ] = None,
    credential_id: Annotated[
        str | None, typer.Option("--id", help="credential id, to tell tokens apart (default PRINCIPAL-DATE)")
    ] = None,
    hash_only: Annotated[
        bool, typer.Option("--hash", help="read a token from stdin and print only its hash")
    ] = False,
) -> None:
    """Make a bearer token: the token on stdout, its [[quipu.server.credentials]] entry on stderr."""
    import getpass
    from datetime import UTC, datetime

    from pydantic import ValidationError

    from quipu.config import NamedCredential
    from quipu.rest.auth import MIN_TOKEN, hash_token, new_token

    if hash_only:
        secret = getpass.getpass("token: ") if sys.stdin.isatty() else sys.stdin.read()
        secret = secret.strip()
        if len(secret) < MIN_TOKEN:
            raise InvalidField(f"the token is shorter than {MIN_TOKEN} characters", field="token")
    else:
        secret = new_token()
    digest = hash_token(secret)
    name = principal if principal is not None else "agent"
    cred_id = credential_id or f"{name}-{datetime.now(UTC):%Y-%m-%d}"
    try:
        NamedCredential(principal=name, id=cred_id, token_hash=digest)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise InvalidField(f"--{problem['loc'][0]}: {problem['msg']}", field=str(problem["loc"][0])) from None
    sys.stdout.write((digest if hash_only else secret) + "\n")
    if hash_only and principal is None:
        return
    # json.dumps gives a valid TOML basic string for any name.
    sys.stderr.write(
        "# Add to quipu.toml or your user config; the server keeps only this hash.\n"
        "[[quipu.server.credentials]]\n"
        f"principal = {json.dumps(name, ensure_ascii=False)}\n"
        f"id = {json.dumps(cred_id, ensure_ascii=False)}\n"
        f"token_hash = {json.dumps(digest)}\n"
    )


@app.command("mcp")
def mcp(
    db: DbOption = None,
    config: ConfigOption = None,
    mcp_token_file: Annotated[
        str | None,
        typer.Option("--mcp-token-file", help="a private file (mode 600 or 400) holding the bearer token"),
    ] = None,
    toolsets: Annotated[
        str | None,
        typer.Option(
            "--toolsets",
            help="serve only these toolsets (comma-separated); 'logic' (opt-in) adds the logic memory's "
            "tools, 'default' is the seven Quipu toolsets, 'all' every toolset",
        ),
    ] = None,
    read_only_tools: Annotated[
        bool, typer.Option("--read-only-tools", help="serve only the read tools")
    ] = False,
) -> None:
    """Serve the MCP tools over stdio (for an agent client); no network listener is opened."""
    from quipu.cli.stdio_launch import StdioFlags, run

    flags = StdioFlags(db, config, mcp_token_file, toolsets, read_only_tools)
    raise typer.Exit(run(flags))


@app.command("version")
def version() -> None:
    """Print the version of quipu."""
    import quipu

    typer.echo(quipu.__version__)


@app.command(
    "logic",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def logic(ctx: typer.Context) -> None:
    """The logic memory (zpm): `quipu logic <command> ...` is `zpm <command> ...`; see `quipu logic --help`."""
    from quipu.cli.zpm import main as zpm_main

    raise typer.Exit(zpm_main(ctx.args))
