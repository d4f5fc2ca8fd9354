"""``quipu changes``: one page of the change feed as JSON (tools-core §1.10; the same read as
``GET /changes``). Pass the printed ``next_tx`` back as ``--from`` for the next page."""

from __future__ import annotations

from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store

app = typer.Typer()


@app.command("changes")
def changes(
    since: Annotated[
        int, typer.Option("--from", metavar="TX", min=0, help="transactions after this id (default 0: all)")
    ] = 0,
    capture: Annotated[
        str, typer.Option("--capture", metavar="MODE", help="new_values, old_and_new_values or new_row")
    ] = "new_values",
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", min=1, help="at most N transactions (capped at 10000)")
    ] = 100,
    graph: Annotated[
        str | None,
        typer.Option("--graph", metavar="IRI", help="one exact graph (urn:quipu:graph:root is ROOT)"),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Print one page of whole-transaction change records after a transaction."""
    from quipu.events.changes import changes_page  # the store stack loads only to run the command

    with open_store(db, config) as kb:
        emit(changes_page(kb.db, since=since, limit=limit, capture=capture, graph=graph))
