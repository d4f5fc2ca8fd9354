"""``quipu project``, ``quipu report`` and ``quipu impact``: graph analytics from the shell
(tools-search §5.14-§5.15, tools-core §1.12; the same service as ``/project``, ``/report`` and
``/impact``). JSON goes to stdout; a projection's stages show on stderr.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, stage_bar

app = typer.Typer()

IriOption = Annotated[str | None, typer.Option(metavar="IRI")]


@app.command("project")
def project(
    algorithm: Annotated[
        str,
        typer.Option(
            "--algorithm", help="stats, in_degree, pagerank, ppr, components, louvain or shortest_path"
        ),
    ] = "stats",
    type_: Annotated[
        str | None, typer.Option("--type", metavar="IRI", help="edges whose source has this type")
    ] = None,
    predicate: Annotated[
        str | None, typer.Option("--predicate", metavar="IRI", help="edges with this predicate")
    ] = None,
    graph: Annotated[
        str | None, typer.Option("--graph", metavar="IRI", help="a named graph (default ROOT)")
    ] = None,
    seed: Annotated[
        list[str] | None, typer.Option("--seed", metavar="IRI", help="a PPR seed (repeatable)")
    ] = None,
    damping: Annotated[float, typer.Option("--damping", help="PageRank damping")] = 0.85,
    max_iters: Annotated[int, typer.Option("--max-iters", help="PageRank iteration cap")] = 100,
    tolerance: Annotated[float, typer.Option("--tolerance", help="L1 convergence threshold")] = 1e-6,
    limit: Annotated[int, typer.Option("--limit", help="results for in_degree and pagerank")] = 20,
    from_: Annotated[str | None, typer.Option("--from", metavar="IRI", help="shortest_path start")] = None,
    to: Annotated[str | None, typer.Option("--to", metavar="IRI", help="shortest_path end")] = None,
    persist: Annotated[
        bool,
        typer.Option("--persist", help="louvain/pagerank: write the result to ROOT (unchanged: nothing)"),
    ] = False,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="instant of persisted facts")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Run one algorithm over a graph's projection, as JSON."""
    for name, value, least in (("--limit", limit, 1), ("--max-iters", max_iters, 0)):
        if value < least:
            raise typer.BadParameter(f"must be >= {least}, got {value}", param_hint=name)
    with open_store(db, config) as kb, stage_bar() as bar:
        task = bar.add_task("opening", total=None)

        def advance(stage: str, done: int, total: int) -> None:
            del total
            bar.update(task, description=f"{stage} {done}" if done else stage)

        result = kb.analytics.project(
            algorithm=algorithm,
            type=type_,
            predicate=predicate,
            graph=graph,
            limit=limit,
            seeds=seed or [],
            damping=damping,
            max_iters=max_iters,
            tolerance=tolerance,
            from_=from_,
            to=to,
            persist=persist,
            timestamp=timestamp,
            progress=advance,
        )
    emit(result)


@app.command("report")
def report(
    hubs: Annotated[int, typer.Option("--hubs", min=0, help="hub count")] = 10,
    surprises: Annotated[int, typer.Option("--surprises", min=0, help="surprising-connection count")] = 10,
    questions: Annotated[int, typer.Option("--questions", min=0, help="suggested-question count")] = 8,
    type_: Annotated[str | None, typer.Option("--type", metavar="IRI", help="projection type filter")] = None,
    predicate: Annotated[
        str | None, typer.Option("--predicate", metavar="IRI", help="projection predicate")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Hubs, surprising cross-community bridges, questions and a summary of current ROOT."""
    with open_store(db, config) as kb:
        emit(
            kb.analytics.report(
                type=type_, predicate=predicate, hubs=hubs, surprises=surprises, questions=questions
            )
        )


@app.command("impact")
def impact(
    entity: Annotated[str, typer.Argument(metavar="IRI", help="the start entity")],
    remove: Annotated[bool, typer.Option("--remove", help="walk after retracting it (rolled back)")] = False,
    hops: Annotated[int, typer.Option("--hops", min=0, help="maximum walk depth")] = 5,
    predicate: Annotated[
        list[str] | None,
        typer.Option("--predicate", metavar="IRI", help="follow only this predicate (repeatable)"),
    ] = None,
    rank_by_ppr: Annotated[
        bool, typer.Option("--rank-by-ppr", help="order by personalised PageRank")
    ] = False,
    timestamp: Annotated[
        str | None, typer.Option("--timestamp", help="stamp of the speculative retraction")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """What is downstream of an entity, as JSON; nothing is ever written."""
    with open_store(db, config) as kb:
        out: dict[str, Any] = kb.analytics.impact(
            entity,
            remove=remove,
            hops=hops,
            predicates=predicate,
            rank_by_ppr=rank_by_ppr,
            timestamp=timestamp,
        )
    emit(out)
