"""The owl extra from the shell: the ``ontology`` group (load, list, remove, materialize) and the
``explain`` verb (tools-graphs-governance §8; the same work as ``POST /ontology`` and
``POST /explain``). Without the extra each refuses (exit 2) naming the missing feature."""

from __future__ import annotations

from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text

app = typer.Typer()
group = typer.Typer(help="Manage the stored OWL ontologies (the owl extra).", no_args_is_help=True)

NameArgument = Annotated[str, typer.Argument(help="ontology name")]
TimestampOption = Annotated[
    str | None, typer.Option("--timestamp", metavar="TIME", help="version start or end (default: now)")
]


@group.command("load")
def ontology_load(
    name: NameArgument,
    file: Annotated[str, typer.Argument(help="OWL ontology in Turtle (- for stdin)")],
    timestamp: TimestampOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Store a version of a named ontology and materialise what it entails into ROOT's companion."""
    turtle = read_text(file)
    with open_store(db, config) as kb:
        emit(kb.owl.ontology("load", name, turtle, timestamp))


@group.command("list")
def ontology_list(db: DbOption = None, config: ConfigOption = None) -> None:
    """The stored ontologies with their axiom summaries."""
    with open_store(db, config) as kb:
        emit(kb.owl.ontology("list"))


@group.command("remove")
def ontology_remove(
    name: NameArgument, timestamp: TimestampOption = None, db: DbOption = None, config: ConfigOption = None
) -> None:
    """Close the open version of a named ontology; what it materialised stays."""
    with open_store(db, config) as kb:
        emit(kb.owl.ontology("remove", name, timestamp=timestamp))


@group.command("materialize")
def ontology_materialize(
    timestamp: TimestampOption = None, db: DbOption = None, config: ConfigOption = None
) -> None:
    """Re-derive from every stored ontology (what no longer follows is retracted)."""
    with open_store(db, config) as kb:
        emit(kb.owl.ontology("materialize", timestamp=timestamp))


@app.command("explain")
def explain(
    s: Annotated[str, typer.Option("--s", "-s", metavar="IRI", help="subject IRI")],
    p: Annotated[str, typer.Option("--p", "-p", metavar="IRI", help="predicate IRI")],
    o: Annotated[
        str,
        typer.Option(
            "--o", "-o", metavar="VALUE", help="object: an IRI when it names a known term, else a string"
        ),
    ],
    depth: Annotated[int, typer.Option("--depth", help="recursion depth into premises (0 to 10)")] = 5,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Why a current ROOT fact holds: its source, and the rule or OWL families that derive it."""
    with open_store(db, config) as kb:
        emit(kb.owl.explain(s, p, o, depth))
