"""Search commands: ``embed-backfill`` embeds the store's ROOT entities (tools-search §5.11).

The result is the ``POST /embed_backfill`` body on stdout; progress goes to stderr. With no
provider configured the command exits 2 (a configuration to fix), after a provider failure 1;
either way the batches already embedded stay, and running it again continues from there.
"""

from __future__ import annotations

import sys

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, progress_bar

app = typer.Typer()


@app.command("embed-backfill")
def embed_backfill(db: DbOption = None, config: ConfigOption = None) -> None:
    """Embed the ROOT entities with no current vector, or one built from an older text."""
    from quipu.search.service import NO_PROVIDER

    with open_store(db, config) as kb, progress_bar("embedding", " entities") as bar:
        task = bar.add_task("embed", total=0)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = kb.search.embed_backfill(advance)
    emit(result)
    if result["status"] != "ok":
        sys.stderr.write(f"error: {result['error']}\n")
        raise typer.Exit(2 if result["error"] == NO_PROVIDER else 1)
