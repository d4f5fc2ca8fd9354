"""``quipu search-index`` (the keyword index's upkeep) and ``quipu search`` (tools-search §4.3).

``search-index backfill`` indexes one bounded batch of fact rows per call, in its own write
transaction, so a large store is indexed in short steps that never hold the writer for long;
``--all`` repeats batches (each still its own transaction) until the index is complete, with a
progress bar on stderr. Batches are refused during minutes 10 to 20 of each hour (UTC), the
ingest lane the original reserves for bulk loads; ``status`` and ``drop`` may run at any time.
None of these loads the embedding model.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, progress_bar

app = typer.Typer()

DEFAULT_BATCH = 500
INGEST_LANE = range(10, 21)  # minutes of each hour (UTC) kept for ingest


def utc_minute() -> int | None:
    """The current UTC minute of the hour, None when the clock cannot be read."""
    try:
        return datetime.now(UTC).minute
    except (OSError, OverflowError, ValueError):
        return None


def _fail(message: str) -> typer.Exit:
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(1)


@app.command("search-index")
def search_index(
    action: Annotated[str, typer.Argument(help="status (default), backfill or drop")] = "status",
    batch_size: Annotated[str, typer.Option("--batch-size", help="fact rows per batch, 1..10000")] = str(
        DEFAULT_BATCH
    ),
    all_batches: Annotated[
        bool, typer.Option("--all", help="backfill: repeat batches until complete")
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Show, backfill or drop the keyword index that keyword and hybrid search read."""
    if action not in ("status", "backfill", "drop"):
        raise _fail(f"unknown action {action!r}: use status, backfill or drop")
    try:
        size = int(batch_size)
    except ValueError:
        raise _fail(f"--batch-size must be an integer, got {batch_size!r}") from None
    if action == "backfill":
        minute = utc_minute()
        if minute is None:
            raise _fail(
                "backfill refused: the current time cannot be determined (the ingest lane check needs it)"
            )
        if minute in INGEST_LANE:
            raise _fail(
                "backfill refused: minutes 10-20 of each hour (UTC) are the ingest lane; "
                "run it again after minute 20"
            )
    with open_store(db, config) as kb:
        if action == "status":
            emit({"index": kb.search.keyword_index()})
        elif action == "drop":
            kb.search.keyword_drop()
            emit({"dropped": True})
        elif not all_batches:
            state = kb.search.keyword_backfill(size)
            sys.stderr.write(f"indexed fact rows up to {state['cursor']} of {state['highwater']}\n")
            emit({"index": state})
        else:
            emit({"index": _backfill_all(kb, size)})


def _backfill_all(kb: Any, size: int) -> dict[str, Any]:
    with progress_bar("keyword index", " rows") as bar:
        state = kb.search.keyword_backfill(size)
        task = bar.add_task("index", total=state["highwater"], completed=state["cursor"])
        while not state["complete"]:
            state = kb.search.keyword_backfill(size)
            bar.update(task, completed=state["cursor"])
    return dict(state)


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="the search text")],
    mode: Annotated[str, typer.Option("--mode", help="keyword (default), semantic or hybrid")] = "keyword",
    graph: Annotated[str | None, typer.Option("--graph", help="one graph IRI (or all)")] = None,
    graphs: Annotated[str | None, typer.Option("--graphs", help="graph IRIs, comma-separated")] = None,
    all_graphs: Annotated[bool, typer.Option("--all-graphs", help="ROOT and every named graph")] = False,
    limit: Annotated[str | None, typer.Option("--limit", help="result count")] = None,
    valid_at: Annotated[str | None, typer.Option("--valid-at", help="search as of this instant")] = None,
    entity_type: Annotated[str | None, typer.Option("--type", help="only entities of this rdf:type")] = None,
    group: Annotated[list[str] | None, typer.Option("--group", help="provenance group (repeatable)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Run quipu_search on the local store and print its JSON answer."""
    body: dict[str, Any] = {"query": query, "mode": mode, "verbose": True}
    if limit is not None:
        try:
            body["limit"] = int(limit)
        except ValueError:
            raise _fail(f"--limit must be an integer, got {limit!r}") from None
    for key, value in (("graph", graph), ("valid_at", valid_at), ("entity_type", entity_type)):
        if value is not None:
            body[key] = value
    if graphs is not None:
        body["graphs"] = [g.strip() for g in graphs.split(",") if g.strip()]
    if all_graphs:
        body["all_graphs"] = True
    if group:
        body["group_ids"] = list(group)
    with open_store(db, config) as kb:
        emit(kb.search.find(body))
