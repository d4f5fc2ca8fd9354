"""``quipu-server``: serve the REST app over HTTP on an embedded SQLite store."""

from __future__ import annotations

from typing import Annotated

import typer

import quipu
from quipu.config import load_settings
from quipu.errors import QuipuError

cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(quipu.__version__)
        raise typer.Exit()


@cli.command()
def serve(
    db: Annotated[
        str | None, typer.Option("--db", help="store file (default quipu.db in the working directory)")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="bind address (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option("--port", help="TCP port (default 8765)")] = None,
    config: Annotated[str | None, typer.Option("--config", help="TOML file with a [quipu] table")] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Start the quipu HTTP service."""
    import uvicorn

    from quipu.rest.app import create_app

    try:
        settings = load_settings(config, store={"db": db}, server={"host": host, "port": port})
        app = create_app(settings)
    except QuipuError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from None
    typer.echo(
        f"quipu {quipu.__version__}: store {settings.store.db}, http://{settings.server.host}:{settings.server.port}",
        err=True,
    )
    uvicorn.run(app, host=settings.server.host, port=settings.server.port, log_level="info")


def main() -> None:
    cli()
