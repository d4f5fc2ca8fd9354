"""The commands over the store's statements: ``read`` (alias ``query``), ``retract``, ``set``,
``export``, ``unravel``, ``stats`` and ``cord``."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, err, open_store
from quipu.errors import InvalidField

app = typer.Typer()

TABLE_FORMATS = ("table", "json", "csv", "tsv", "xml")
GRAPH_FORMATS = ("ntriples", "turtle")

ValidAtOption = Annotated[str | None, typer.Option("--valid-at", help="valid-time read point")]
TxOption = Annotated[int | None, typer.Option("--tx", help="transaction-time read point", min=0)]
IriArgument = Annotated[str, typer.Argument(help="entity IRI")]
BareActorOption = Annotated[str | None, typer.Option("--actor")]


def _value(text: str) -> Any:
    """A JSON object when the text is one, else a bare string (DM §2.1)."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidField(f"value looks like JSON but does not parse: {exc}", field="value") from None
    return text


def _print_table(columns: list[str], rows: list[list[str]]) -> None:
    """A Rich table on stdout, its row count on stderr; names and values are data, never markup."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False)
    for name in columns:
        table.add_column(Text(name))
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    Console(soft_wrap=True).print(table)
    err().print(f"{len(rows)} row(s)")


@app.command("read")
def read(
    sparql: Annotated[str, typer.Argument(help="SPARQL query text")],
    valid_at: ValidAtOption = None,
    tx: TxOption = None,
    graph: Annotated[str | None, typer.Option("--graph", help="named graph as the default graph")] = None,
    format: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="SELECT/ASK: table|json|csv|tsv|xml; CONSTRUCT/DESCRIBE: ntriples (default)|turtle",
        ),
    ] = "table",
    inference: Annotated[
        str | None, typer.Option("--inference", help="rdfs: rdf:type patterns also match subclass instances")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Run a SPARQL query, optionally at a past valid time and/or transaction."""
    from quipu.sparql import results

    if format not in TABLE_FORMATS + GRAPH_FORMATS:
        raise InvalidField(
            f"unknown output format: {format!r} (try: {', '.join(TABLE_FORMATS + GRAPH_FORMATS)})",
            field="format",
        )
    with open_store(db, config) as kb:
        result = kb.query_result(sparql, valid_at=valid_at, as_of_tx=tx, graph=graph, inference=inference)
    if result.truncated:
        err().print(f"results cut at search.max_sparql_rows ({kb.max_sparql_rows} rows)")
    if result.form in results.GRAPH_FORMS:
        if format not in ("table", *GRAPH_FORMATS):
            raise InvalidField(
                f"output format {format!r} does not fit a {result.form} result (try: ntriples, turtle)",
                field="format",
            )
        text = results.write_turtle(result) if format == "turtle" else results.write_ntriples(result)
    elif format in GRAPH_FORMATS:
        raise InvalidField(
            f"output format {format!r} does not fit a {result.form} result (try: {', '.join(TABLE_FORMATS)})",
            field="format",
        )
    elif format == "json":  # indented and UTF-8 as before, like every other JSON the CLI prints
        text = json.dumps(results.sparql_json(result), ensure_ascii=False, indent=2) + "\n"
    elif format == "xml":
        text = results.write_xml(result)
    elif format == "csv":
        text = results.write_csv(result)
    elif format == "tsv":
        text = results.write_tsv(result)
    elif result.form == "ASK":
        text = ("true" if result.boolean else "false") + "\n"
    else:
        _print_table(result.variables, [[results.term_text(cell) for cell in row] for row in result.table])
        return
    sys.stdout.write(text)


app.command("query", help="Alias of read.")(read)


@app.command("retract")
def retract(
    iri: IriArgument,
    predicate: Annotated[str | None, typer.Option("--predicate", help="only this predicate")] = None,
    value: Annotated[
        str | None, typer.Option("--value", help='only this object (a string, or JSON like {"iri": "…"})')
    ] = None,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="closure stamp (default now)")] = None,
    actor: BareActorOption = None,
    allow_orphan: Annotated[
        bool, typer.Option("--allow-orphan", help="allow removing the last rdf:type")
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Retract ROOT statements about an entity (closes valid time; nothing is deleted)."""
    with open_store(db, config) as kb:
        wanted = _value(value) if value is not None else None
        done = kb.retract(iri, predicate, wanted, timestamp=timestamp, actor=actor, allow_orphan=allow_orphan)
    emit(asdict(done))  # tx_id, retracted, entity


@app.command("set")
def set_(
    iri: IriArgument,
    predicate: Annotated[str, typer.Argument(help="predicate IRI")],
    value: Annotated[str, typer.Argument(help='new value: a string, or JSON like {"iri": "…"} / {"int": 5}')],
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="transaction and valid time")] = None,
    actor: BareActorOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Make VALUE the only current value of (IRI, PREDICATE)."""
    with open_store(db, config) as kb:
        done = kb.set(iri, predicate, _value(value), timestamp=timestamp, actor=actor)
    emit(asdict(done))  # tx_id, retracted, asserted, entity, predicate


@app.command("export")
def export(
    format: Annotated[str, typer.Option("--format", "-f", help="ntriples|turtle")] = "ntriples",
    graph: Annotated[str | None, typer.Option("--graph", help="named graph to export (default ROOT)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Print the current statements as deterministic N-Triples or Turtle."""
    with open_store(db, config) as kb:
        text = kb.export(format, graph=graph)
    sys.stdout.write(text)


@app.command("unravel")
def unravel(
    tx: TxOption = None,
    valid_at: ValidAtOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List the ROOT claims visible at a transaction and/or valid instant."""
    with open_store(db, config) as kb:
        emit(kb.unravel(tx=tx, valid_at=valid_at))


@app.command("stats")
def stats(db: DbOption = None, config: ConfigOption = None) -> None:
    """Counts of ROOT's current facts, entities and predicates."""
    with open_store(db, config) as kb:
        emit(kb.stats())


@app.command("cord")
def cord(
    type: Annotated[
        str | None, typer.Option("--type", help="only entities of this asserted rdf:type")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="maximum entities")] = 100,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List ROOT entities with their current statements."""
    with open_store(db, config) as kb:
        emit(kb.cord(type=type, limit=limit))
