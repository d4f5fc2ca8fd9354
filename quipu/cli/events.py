"""``quipu events``: the event log from the shell (tools-core §1.11, §3.12; the same service as
``GET /events`` and ``POST /events/commit``).

``read`` prints one page as JSON and commits nothing; ``commit`` sets a consumer's cursor;
``refusals`` counts ``write.refused`` events by gate, as the original's CLI does; ``prune``
applies retention now (the server does it hourly when ``events.retention_days`` is set).
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, stage_bar

group = typer.Typer(
    help="The event log: read a page, commit a consumer cursor, count refusals, prune old events.",
    no_args_is_help=True,
)

PAGE = 10_000


@group.command("read")
def read(
    since: Annotated[
        int | None, typer.Option("--since", min=0, help="events after this offset (overrides --consumer)")
    ] = None,
    consumer: Annotated[
        str | None, typer.Option("--consumer", help="start after this consumer's committed offset")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="at most N events (capped at 10000)")] = 100,
    types: Annotated[
        str | None, typer.Option("--types", help="comma-separated event types, e.g. edge.added,type.new")
    ] = None,
    group_id: Annotated[str | None, typer.Option("--group", help="an exact episode group_id")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Print one page of events in offset order; no cursor is committed."""
    with open_store(db, config) as kb:
        emit(kb.feeds.events(since=since, consumer=consumer, limit=limit, types=types, group=group_id))


@group.command("commit")
def commit(
    consumer_id: Annotated[str, typer.Argument(metavar="CONSUMER", help="the consumer's id")],
    offset: Annotated[int, typer.Argument(metavar="OFFSET", help="the highest offset it processed")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Set a consumer's cursor; a lower offset rewinds (replays)."""
    with open_store(db, config) as kb:
        emit(kb.feeds.commit(consumer_id=consumer_id, offset=offset))


@group.command("refusals")
def refusals(db: DbOption = None, config: ConfigOption = None) -> None:
    """Count the write.refused events of the whole log by gate."""
    counts: Counter[str] = Counter()
    with open_store(db, config) as kb:
        since = 0
        while True:
            page = kb.feeds.events(since=since, limit=PAGE, types="write.refused")
            counts.update(str(e["payload"].get("gate")) for e in page["events"])
            if len(page["events"]) < PAGE:
                break
            since = page["next_offset"]
    emit({"total": sum(counts.values()), "by_gate": dict(sorted(counts.items()))})


@group.command("prune")
def prune(
    days: Annotated[
        int | None,
        typer.Option("--days", min=1, help="prune events older than N days (default: events.retention_days)"),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Delete the events older than N days that every consumer and subscription cursor has
    passed, as the server's hourly retention does; prints how many."""
    with open_store(db, config) as kb:
        keep = kb.feeds.settings.retention_days if days is None else days
        if keep is None:
            raise typer.BadParameter(
                "retention is off: pass --days N or set [quipu.events] retention_days", param_hint="--days"
            )
        with stage_bar() as bar:
            task = bar.add_task("pruning", total=None)
            pruned = kb.feeds.prune(
                days=keep, on_batch=lambda n: bar.update(task, description=f"pruned {n:,}")
            )
    emit({"pruned": pruned, "older_than_days": keep})
