"""SHACL from the shell: ``validate`` (a top-level verb, in ``app``) and the ``shapes`` group that
manages the stored shape sets (``group``)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text
from quipu.errors import NotFound

app = typer.Typer()
group = typer.Typer(help="Manage the stored SHACL shape sets that gate writes.", no_args_is_help=True)

NameArgument = Annotated[str, typer.Argument(help="shape-set name")]


@app.command("validate")
def validate(
    data: Annotated[str, typer.Option("--data", help="Turtle file to validate (- for stdin)")],
    shapes: Annotated[
        str | None, typer.Option("--shapes", help="SHACL Turtle file (default: the stored shape sets)")
    ] = None,
    valid_at: Annotated[
        str | None, typer.Option("--valid-at", help="stored shape versions open at this valid time")
    ] = None,
    as_of_tx: Annotated[
        int | None, typer.Option("--as-of-tx", help="stored shape versions open as of this transaction")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Dry-run SHACL validation of a Turtle document; prints the report, writes nothing.

    Exit status 0 whether or not the data conforms (read "conforms"); 2 for a bad request.
    """
    text = read_text(data, "--data")
    shapes_text = read_text(shapes, "--shapes") if shapes is not None else None
    with open_store(db, config) as kb:
        report = kb.validate(text, shapes_text, valid_at=valid_at, as_of_tx=as_of_tx)
    emit(report.as_json())


@group.command("load")
def shapes_load(
    name: NameArgument,
    file: Annotated[str, typer.Argument(help="SHACL Turtle file (- for stdin)")],
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="version start (default now)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Load (or reload) a named shape set; the previous version is closed, never deleted."""
    turtle = read_text(file)
    with open_store(db, config) as kb:
        loaded = kb.load_shapes(name, turtle, timestamp=timestamp)
    emit({"action": "loaded", "name": loaded.name})


@group.command("list")
def shapes_list(db: DbOption = None, config: ConfigOption = None) -> None:
    """The open shape sets."""
    with open_store(db, config) as kb:
        sets = kb.shape_sets()
    emit({"shapes": [{"name": s.name, "loaded_at": s.loaded_at} for s in sets], "count": len(sets)})


@group.command("get")
def shapes_get(name: NameArgument, db: DbOption = None, config: ConfigOption = None) -> None:
    """Print a shape set's Turtle on stdout."""
    with open_store(db, config) as kb:
        found = next((s for s in kb.shape_sets() if s.name == name), None)
        if found is None:
            raise NotFound(f"no shape set named '{name}'", field="name")
    sys.stdout.write(found.turtle if found.turtle.endswith("\n") else found.turtle + "\n")


@group.command("remove")
def shapes_remove(name: NameArgument, db: DbOption = None, config: ConfigOption = None) -> None:
    """Close a shape set's open version (history is kept)."""
    with open_store(db, config) as kb:
        found = kb.remove_shapes(name)
    emit({"action": "removed", "name": name, "found": found})


@group.command("vocabulary")
def shapes_vocabulary(db: DbOption = None, config: ConfigOption = None) -> None:
    """The sanctioned classes of the open shape sets."""
    from quipu.shacl import registry

    with open_store(db, config) as kb:
        sets = kb.shape_sets()
    classes = sorted(registry.bundle(s.turtle for s in sets).vocabulary) if sets else []
    emit({"classes": classes, "count": len(classes)})
