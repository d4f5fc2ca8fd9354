"""The ``graph`` group: list, create, label, freeze and thaw named graphs
(tools-graphs-governance §1; the same service as ``/graphs`` and ``/graph/*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store

group = typer.Typer(
    help="Named graphs: list the registry, create, label, freeze into an archive pack, thaw; view ROOT.",
    no_args_is_help=True,
)

GraphArgument = Annotated[str, typer.Argument(metavar="IRI", help="the graph IRI")]
ActorOption = Annotated[
    str | None, typer.Option("--actor", envvar="QUIPU_ACTOR", help="declared actor (default: $QUIPU_ACTOR)")
]
TimestampOption = Annotated[str | None, typer.Option("--timestamp", help="RFC 3339 instant (default now)")]


def _now(timestamp: str | None) -> str:
    from quipu import times

    return times.normalise_timestamp(timestamp)


@group.command("list")
def graph_list(
    kind: Annotated[str | None, typer.Option("--kind", help="only graphs of this declared data kind")] = None,
    frozen: Annotated[bool, typer.Option("--frozen", help="only frozen graphs")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """The graph registry: ROOT and every registered graph with its labels, as JSON."""
    with open_store(db, config) as kb:
        emit(kb.graphs.list(kind=kind, lifecycle="frozen" if frozen else None))


@group.command("create")
def graph_create(
    graph: GraphArgument,
    actor: ActorOption = None,
    timestamp: TimestampOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Register a committed named graph (a repeat changes nothing)."""
    with open_store(db, config) as kb:
        emit(kb.graphs.create(graph, actor=actor, timestamp=timestamp))


@group.command("label")
def graph_label(
    graph: GraphArgument,
    freshness: Annotated[str | None, typer.Option("--freshness", help="fresh, recomputing or stale")] = None,
    durability: Annotated[
        str | None, typer.Option("--durability", help="soleRecord, reproducible or backed")
    ] = None,
    trust_iri: Annotated[str | None, typer.Option("--trust", help="the trust value IRI")] = None,
    trust_chain: Annotated[
        str | None, typer.Option("--trust-chain", help="the chain IRI that ranks it")
    ] = None,
    trust_rank: Annotated[int | None, typer.Option("--trust-rank", help="its rank in that chain")] = None,
    policy: Annotated[
        list[str] | None, typer.Option("--policy", help="an obligation token (repeatable)")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="data-kind token, e.g. knowledge")] = None,
    valid_to: Annotated[str | None, typer.Option("--valid-to", help="expiry, YYYY-MM-DDTHH:MM:SSZ")] = None,
    actor: ActorOption = None,
    timestamp: TimestampOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Declare a label; it replaces the graph's whole label (resend every axis to keep one)."""
    trust: dict[str, Any] | None = None
    if trust_iri is not None or trust_chain is not None or trust_rank is not None:
        trust = {
            k: v
            for k, v in (("iri", trust_iri), ("chain", trust_chain), ("rank", trust_rank))
            if v is not None
        }
    with open_store(db, config) as kb:
        emit(
            kb.graphs.label(
                graph,
                timestamp=_now(timestamp),
                freshness=freshness,
                durability=durability,
                trust=trust,
                policy=policy or None,
                kind=kind,
                valid_to=valid_to,
                actor=actor,
            )
        )


@group.command("freeze")
def graph_freeze(
    graph: GraphArgument,
    out: Annotated[
        str | None, typer.Option("--out", help="directory for the pack (default: [quipu.graphs] archive_dir)")
    ] = None,
    actor: ActorOption = None,
    timestamp: TimestampOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Move a graph's whole history into a verified archive pack; it stays readable by name."""
    from quipu.graphs import freeze

    with open_store(db, config) as kb:
        # A local user may name any directory they can write: --out is the archive root here.
        root = Path(out) if out is not None else kb.graphs.archive_dir
        emit(freeze.freeze(kb.db, root, graph=graph, timestamp=_now(timestamp), actor=actor))


@group.command("thaw")
def graph_thaw(
    graph: GraphArgument,
    actor: ActorOption = None,
    timestamp: TimestampOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Restore a frozen graph's full history from its pack and make it writable again."""
    with open_store(db, config) as kb:
        emit(kb.graphs.thaw(graph=graph, timestamp=_now(timestamp), actor=actor))


@group.command("view")
def graph_view(
    limit: Annotated[int, typer.Option("--limit", min=0, help="node budget (at most 2000)")] = 250,
    edge_budget: Annotated[
        int, typer.Option("--edge-budget", min=0, help="edge budget (at most 50000)")
    ] = 4000,
    type_: Annotated[
        str | None, typer.Option("--type", metavar="IRI", help="only nodes of this type")
    ] = None,
    include_episodes: Annotated[bool, typer.Option("--include-episodes", help="draw episode nodes")] = False,
    valid_at: Annotated[
        str | None, typer.Option("--valid-at", metavar="INSTANT", help="ROOT as true at this instant")
    ] = None,
    as_of_tx: Annotated[
        int | None, typer.Option("--tx", min=0, help="ROOT as the store knew it after this transaction")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """ROOT as ranked, capped nodes and index-addressed edges (quipu_graph), as JSON: now, or at
    --valid-at and/or --tx."""
    with open_store(db, config) as kb:
        emit(
            kb.analytics.graph(
                limit=limit,
                edge_budget=edge_budget,
                type=type_,
                include_episodes=include_episodes,
                valid_at=valid_at,
                as_of_tx=as_of_tx,
            )
        )
