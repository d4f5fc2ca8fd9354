"""Named questions from the shell: ``quipu ask``, ``quipu cooccurrence`` and the ``queries`` group
(tools-search §5.16-§5.18; the same service as ``POST /ask``, ``/cooccurrence`` and ``/queries``).

Results are the routes' JSON bodies on stdout. A ``--param`` of ``quipu ask`` is ``NAME=VALUE``
(split at the first ``=``; the value is a string, checked by the parameter's kind). A
``--param`` of ``quipu queries load`` declares one parameter spec, in order, either as a JSON
object (``{"name": "limit", "type": "int", "default": "10", "description": "..."}``) or as
``NAME[:KIND][=DEFAULT]``: KIND is ``iri``, ``text`` (the default) or ``int``, and a spec with
``=DEFAULT`` is optional with that default, one without is required.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text
from quipu.errors import InvalidField

question_verbs = typer.Typer()  # top-level verbs: ask, cooccurrence
queries_group = typer.Typer(
    help="Stored named queries: load a versioned definition, list, get, remove.",
    no_args_is_help=True,
)

TimestampOption = Annotated[
    str | None, typer.Option("--timestamp", help="version instant, RFC 3339 (default now)")
]
NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="the stored query's name")]


def ask_params(pairs: list[str] | None) -> dict[str, str]:
    """``NAME=VALUE`` pairs as the ``params`` object of ``quipu_ask``."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InvalidField(f"--param {pair!r}: expected NAME=VALUE", field="--param")
        out[name] = value
    return out


def param_spec(text: str) -> dict[str, Any]:
    """One ``--param`` of ``queries load`` as a spec object (JSON, or ``NAME[:KIND][=DEFAULT]``)."""
    if text.lstrip().startswith("{"):
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidField(f"--param {text!r}: not a JSON object: {exc.msg}", field="--param") from None
        if not isinstance(spec, dict):
            raise InvalidField(f"--param {text!r}: not a JSON object", field="--param")
        return spec
    head, sep, default = text.partition("=")
    name, _, kind = head.partition(":")
    out: dict[str, Any] = {"name": name, "type": kind or "text", "required": not sep}
    if sep:
        out["default"] = default
    return out


@question_verbs.command("ask")
def ask(
    name: Annotated[
        str | None, typer.Argument(metavar="[NAME]", help="the query to run; none: list the catalog")
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", metavar="NAME=VALUE", help="a parameter (repeatable)")
    ] = None,
    graph: Annotated[
        str | None, typer.Option("--graph", metavar="IRI", help="graph or dataset read as the default graph")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Run a curated named query by name, or list every query and its parameters."""
    params = ask_params(param)
    with open_store(db, config) as kb:
        emit(kb.questions.ask(name, params, graph))


@question_verbs.command("cooccurrence")
def cooccurrence(
    work_item: Annotated[str, typer.Argument(metavar="WORK_ITEM", help="the work item (bead) IRI")],
    valid_at: Annotated[
        str | None, typer.Option("--valid-at", help="valid-time instant for every fact of the chain")
    ] = None,
    tx: Annotated[int | None, typer.Option("--tx", min=0, help="only transactions with id <= N")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Other work items whose commits modified the same entities, most shared first."""
    with open_store(db, config) as kb:
        emit(kb.questions.cooccurrence(work_item, valid_at=valid_at, tx=tx))


@queries_group.command("load")
def queries_load(
    name: NameArgument,
    file: Annotated[
        str | None, typer.Option("--file", metavar="PATH", help="the SPARQL template ('-': stdin)")
    ] = None,
    template: Annotated[str | None, typer.Option("--template", help="the SPARQL template itself")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", metavar="SPEC", help="NAME[:KIND][=DEFAULT] or a JSON spec object (repeatable)"
        ),
    ] = None,
    description: Annotated[str | None, typer.Option("--description", help="what the query answers")] = None,
    dataset: Annotated[
        str | None, typer.Option("--dataset", metavar="IRI", help="dataset the query reads by default")
    ] = None,
    timestamp: TimestampOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Validate a definition and store it as the new version of NAME."""
    if (file is None) == (template is None):
        raise InvalidField("give the template with exactly one of --file and --template", field="--file")
    text = template if template is not None else read_text(file or "-", "--file", what="template")
    specs = [param_spec(p) for p in param or ()]
    with open_store(db, config) as kb:
        emit(
            kb.questions.queries(
                action="load",
                name=name,
                template=text,
                params=specs,
                description=description,
                dataset=dataset,
                timestamp=timestamp,
            )
        )


@queries_group.command("list")
def queries_list(db: DbOption = None, config: ConfigOption = None) -> None:
    """The current version of every stored query, by name."""
    with open_store(db, config) as kb:
        emit(kb.questions.queries(action="list"))


@queries_group.command("get")
def queries_get(name: NameArgument, db: DbOption = None, config: ConfigOption = None) -> None:
    """One stored query's catalog entry and template."""
    with open_store(db, config) as kb:
        emit(kb.questions.queries(action="get", name=name))


@queries_group.command("remove")
def queries_remove(
    name: NameArgument, timestamp: TimestampOption = None, db: DbOption = None, config: ConfigOption = None
) -> None:
    """Close the current version of NAME (its history stays)."""
    with open_store(db, config) as kb:
        emit(kb.questions.queries(action="remove", name=name, timestamp=timestamp))
