"""``quipu reason``: run Datalog rules to fixpoint over a graph and persist what they derive
(tools-core §3.11; the same work as ``POST /reason``). The report is JSON on stdout.

With no ``--rules``, the rules stored with the shapes are used, as the route does [designed
here: the original's CLI read its repository's ``shapes/aegis-rules.ttl`` by default].

``--reactive`` maintains instead of rebuilding: when the companion already holds these rules'
output as of an earlier premise transaction, only the changes since are propagated, and the
report says ``"mode": "incremental"`` (docs/reasoning.md, "Maintenance").
"""

from __future__ import annotations

from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text

app = typer.Typer()


@app.command("reason")
def reason(
    rules: Annotated[
        str | None,
        typer.Option("--rules", metavar="FILE", help="rule Turtle (- for stdin); default: the stored rules"),
    ] = None,
    prefix: Annotated[
        str | None, typer.Option("--prefix", metavar="IRI", help="fallback prefix for bare names")
    ] = None,
    graph: Annotated[
        str | None, typer.Option("--graph", metavar="IRI", help="premise graph (default: ROOT)")
    ] = None,
    timestamp: Annotated[
        str | None, typer.Option("--timestamp", metavar="TIME", help="time of the derivations (default: now)")
    ] = None,
    reactive: Annotated[
        bool, typer.Option("--reactive", help="propagate only the premise changes since the last run")
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Evaluate rules over a graph; derivations go to its companion inferred graph."""
    text = read_text(rules, "--rules", what="rules") if rules is not None else None
    with open_store(db, config) as kb:
        run = kb.reasoning.maintain if reactive else kb.reasoning.reason
        report = run(rules=text, prefix=prefix, graph=graph, timestamp=timestamp)
        body = report.as_json()
        if reactive:
            body["mode"] = report.mode
        emit(body)
