"""The ``quipu`` command: write, read and inspect a store from the shell.

stdout carries only results (JSON, RDF or a table), so the command works in pipes; progress
and errors go to stderr, and a refused command exits with status 2 having written nothing.

Each family of commands is a typer app in its own module. An app added without a name gives
its commands to this one as top-level verbs; ``quipu --help`` lists them in the order they are
added here, so that order is part of the command line.
"""

from __future__ import annotations

from typing import Annotated

import typer

from quipu.cli import (
    align,
    analytics,
    changes,
    data,
    demo,
    events,
    golden_paths,
    governance,
    graphs,
    ingest,
    keyword_search,
    merge,
    models,
    owl,
    reasoning,
    search,
    service,
    shapes,
    sharing,
    tools,
)
from quipu.cli.common import RefusingGroup
from quipu.cli.questions import queries_group, question_verbs

app = typer.Typer(
    name="quipu",
    help="A bitemporal RDF knowledge graph: write, query and time-travel a store file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=RefusingGroup,
    rich_markup_mode=None,
)
app.add_typer(ingest.app)  # knot, load, stage, episode
app.add_typer(shapes.app)  # validate
app.add_typer(data.app)  # read, query, retract, set, export, unravel, stats, cord
app.add_typer(service.app)  # token, mcp, logic
app.add_typer(search.app)  # embed-backfill
app.add_typer(keyword_search.app)  # search-index, search
app.add_typer(shapes.group, name="shapes")
app.add_typer(governance.group, name="propose")
app.add_typer(graphs.group, name="graph")  # list, create, label, freeze, thaw, view
app.add_typer(sharing.share_group, name="share")  # write a share; trust, revoke, keygen
app.command("import")(sharing.import_command)  # stage a share directory; import promote ID
merge.register(app)  # merge: emit a three-way merge's decisions, or apply a decided file
app.add_typer(align.group, name="align")  # propose, decide, apply: cross-graph alignment (SSSOM)
app.add_typer(analytics.app)  # project, report, impact
app.add_typer(golden_paths.group, name="path")  # cone, backtest: golden paths over trajectories
app.add_typer(reasoning.app)  # reason: Datalog rules to fixpoint
app.add_typer(owl.group, name="ontology")  # load, list, remove, materialize (the owl extra)
app.add_typer(owl.app)  # explain: why a fact holds (the owl extra)
app.add_typer(question_verbs)  # ask, cooccurrence
app.add_typer(queries_group, name="queries")  # load, list, get, remove
app.add_typer(changes.app)  # changes: one page of the change feed
app.add_typer(events.group, name="events")  # read, commit, refusals
app.add_typer(tools.app, name="tool")  # list, call: every MCP tool as a command
app.add_typer(models.group, name="models")  # install: the local embedding model
app.add_typer(demo.app)  # demo: a fresh store with a month of an ops world, served with the explorer


def _print_version(value: bool) -> None:
    if value:
        import quipu

        typer.echo(quipu.__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """A bitemporal RDF knowledge graph: write, query and time-travel a store file."""
