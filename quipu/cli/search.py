"""Search commands: ``embed-backfill`` embeds the store's ROOT entities (tools-search §5.11), or
with ``--graph`` the named-only entities of one named graph (§5.12).

The result is the ``POST /embed_backfill`` (or ``/embed_backfill/graph``) body on stdout;
progress goes to stderr. With no provider configured the command exits 2 (a configuration to
fix), after a provider failure 1; either way the batches already embedded stay, and running it
again continues from there.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, progress_bar

app = typer.Typer()


@app.command("embed-backfill")
def embed_backfill(
    db: DbOption = None,
    config: ConfigOption = None,
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph", metavar="IRI", help="embed the named-only entities of this named graph instead"
        ),
    ] = None,
    max_entities: Annotated[
        int | None,
        typer.Option(
            "--max-entities", metavar="N", help="with --graph: most entities embedded (default 256, 1..2000)"
        ),
    ] = None,
) -> None:
    """Embed the ROOT entities with no current vector, or one built from an older text; with
    --graph, up to --max-entities named-only entities of that graph."""
    from quipu.errors import InvalidField
    from quipu.search.state import NO_PROVIDER

    if max_entities is not None and graph is None:
        raise InvalidField("--max-entities goes with --graph", field="--max-entities")
    with open_store(db, config) as kb, progress_bar("embedding", " entities") as bar:
        task = bar.add_task("embed", total=0)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        if graph is None:
            result = kb.search.embed_backfill(advance)
        else:
            result = kb.search.embed_backfill_graph(graph, max_entities, advance)
    emit(result)
    if result["status"] != "ok":
        sys.stderr.write(f"error: {result['error']}\n")
        raise typer.Exit(2 if result["error"] == NO_PROVIDER else 1)
