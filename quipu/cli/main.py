"""The ``quipu`` command: write, read and inspect a store from the shell.

stdout carries only results (JSON, RDF or a table), so the command works in pipes; progress
and errors go to stderr, and a refused command exits with status 2 having written nothing.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from quipu.cli.tools import tool_app
from quipu.config import load_settings
from quipu.errors import ConfigError, InvalidField, QuipuError

if TYPE_CHECKING:
    from quipu.api import KnowledgeBase

app = typer.Typer(
    name="quipu",
    help="A bitemporal RDF knowledge graph: write, query and time-travel a store file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store file (or ':memory:'); default from QUIPU_STORE__DB or quipu.toml"),
]
# Help text is Rich markup: \[ keeps a bracket.
ConfigOption = Annotated[str | None, typer.Option("--config", help=r"TOML file with a \[quipu] table")]
LARGE_INPUT = 4 * 1024 * 1024  # bytes; larger ingests show a progress bar


@contextmanager
def _refusals() -> Iterator[None]:
    """Turn quipu's errors into one plain line on stderr and exit status 2 (1 for 5xx)."""
    try:
        yield
    except QuipuError as exc:
        # Plain text: a message may quote user input, which must never be read as Rich markup,
        # and scripts read it whole, so no wrapping either.
        sys.stderr.write(f"error: {exc.message}\n")
        usage = exc.status < 500 or isinstance(exc, ConfigError)  # the caller can fix these
        raise typer.Exit(2 if usage else 1) from None


@contextmanager
def _store(db: str | None, config: str | None) -> Iterator[KnowledgeBase]:
    """The configured store, open for the duration of one command."""
    from quipu.api import KnowledgeBase  # imported late: the CLI starts without the store stack

    with _refusals():
        kb = KnowledgeBase.from_settings(load_settings(config, store={"db": db}))
        try:
            yield kb
        finally:
            kb.close()


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _value(text: str) -> Any:
    """A JSON object when the text is one, else a bare string (DM §2.1)."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidField(f"value looks like JSON but does not parse: {exc}", field="value") from None
    return text


class _IngestProgress:
    """A progress bar on stderr for large ingests; silent for small ones."""

    def __init__(self, size: int) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:,}/{task.total:,}"),
            TimeElapsedColumn(),
            console=err,
            disable=size < LARGE_INPUT,
        )
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _IngestProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, phase: str, done: int, total: int) -> None:
        task = self.tasks.get(phase)
        if task is None:
            task = self.tasks[phase] = self.progress.add_task(phase, total=total)
        self.progress.update(task, completed=done, total=total)


@app.command("knot")
def knot(
    file: Annotated[str, typer.Argument(help="RDF file to assert, or - for stdin")],
    format: Annotated[
        str | None,
        typer.Option("--format", "-f", help="turtle|nt|nq|trig|jsonld|rdfxml (default: from the suffix)"),
    ] = None,
    timestamp: Annotated[
        str | None, typer.Option("--timestamp", help="valid time of the facts (RFC 3339); default now")
    ] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="who asserts (declared)")] = None,
    source: Annotated[
        str | None, typer.Option("--source", help="producer key (default knot:<actor>)")
    ] = None,
    graph: Annotated[
        str | None, typer.Option("--graph", help="registered named graph (default ROOT)")
    ] = None,
    shapes: Annotated[
        str | None, typer.Option("--shapes", help="extra SHACL Turtle file gating this write")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Assert the facts of an RDF document in one transaction.

    The stored shape sets and --shapes gate the write: on a SHACL violation the report is
    printed on stdout, nothing is written and the exit status is 2.
    """
    from quipu.errors import ShaclViolation
    from quipu.rdfio.formats import guess_input_format, input_format

    with _refusals():  # check the input before the store file is created or opened
        fmt = input_format(format) if format else ("turtle" if file == "-" else guess_input_format(file))
        if file == "-":
            data = sys.stdin.buffer.read()
        elif Path(file).is_file():
            data = Path(file).read_bytes()
        else:
            raise InvalidField(f"input file not found: {file}", field="FILE")
        extra = _read_text(shapes, "--shapes") if shapes is not None else None
    with _store(db, config) as kb, _IngestProgress(len(data)) as progress:
        try:
            result = kb.knot(
                data,
                fmt,
                valid_from=timestamp,
                actor=actor,
                source=source,
                graph=graph,
                progress=progress,
                shapes=extra,
            )
        except ShaclViolation as refused:
            _emit(refused.report)
            raise
    _emit(
        {
            "tx_id": result.tx_id,
            "count": result.count,
            "claims": result.claims,
            "valid_from": result.valid_from,
            "tx_ids": list(result.tx_ids),
        }
    )


app.command("load", help="Alias of knot.")(knot)


@app.command("stage")
def stage(
    file: Annotated[str, typer.Argument(help="Turtle snapshot to upload, or - for stdin")],
    snapshot: Annotated[str, typer.Option("--snapshot", help="producer key the snapshot replaces")],
    server: Annotated[str, typer.Option("--server", help="base URL of a running quipu-server")],
    token_file: Annotated[
        str | None, typer.Option("--token-file", help="file holding the bearer token (mode 600)")
    ] = None,
    timestamp: Annotated[
        str | None, typer.Option("--timestamp", help="transaction time recorded at promotion")
    ] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="who asserts (declared)")] = None,
    graph: Annotated[
        str | None, typer.Option("--graph", help="registered named graph (default ROOT)")
    ] = None,
    part_bytes: Annotated[int, typer.Option("--part-bytes", help="largest part, in bytes")] = 512 * 1024,
) -> None:
    """Upload a large snapshot to a server in parts, then promote it atomically.

    The parts are staged one by one (a progress bar on stderr), the promotion is started and
    polled until it finishes; its answer is printed on stdout. Running the command again after an
    interruption resends identical parts, which the server treats as replays. A SHACL refusal
    prints the report and exits with status 2.
    """
    from quipu.rest.auth import read_token_file
    from quipu.uploads import client

    with _refusals():
        if file == "-":
            text = sys.stdin.read()
        elif Path(file).is_file():
            text = Path(file).read_text(encoding="utf-8")
        else:
            raise InvalidField(f"input file not found: {file}", field="FILE")
        token = read_token_file(token_file, "--token-file") if token_file else None
        staged = client.plan(
            text, snapshot, timestamp=timestamp, actor=actor, graph=graph, part_bytes=part_bytes
        )
        bar = Progress(
            TextColumn("staging"),
            BarColumn(),
            TextColumn("{task.completed:,}/{task.total:,} bytes"),
            TimeElapsedColumn(),
            console=err,
        )
        with bar:
            task = bar.add_task("staging", total=staged.total_bytes)
            answer = client.push(
                staged, server, token=token, progress=lambda done, _total: bar.update(task, completed=done)
            )
    _emit(answer)
    if answer.get("conforms") is False:
        raise typer.Exit(2)


EPISODE_KEYS = (
    "name",
    "episode_body",
    "source",
    "group_id",
    "nodes",
    "edges",
    "graph",
    "shapes",
    "replace_snapshot",
)


def _episode_document(text: str) -> dict[str, Any]:
    """The JSON object of ``quipu episode``: the fields of ``POST /episode``; others are refused."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidField(f"invalid episode JSON: {exc}", field="FILE") from None
    if not isinstance(doc, dict):
        raise InvalidField("invalid episode JSON: the document must be an object", field="FILE")
    unknown = sorted(set(doc) - set(EPISODE_KEYS))
    if unknown:  # a silently dropped key (a misspelt 'nodes') would write a different episode
        raise InvalidField(
            f"invalid episode JSON: unknown field(s) {', '.join(unknown)}; known: {', '.join(EPISODE_KEYS)}",
            field=unknown[0],
        )
    for key in ("graph", "shapes"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise InvalidField(f"invalid episode JSON: '{key}' must be a string", field=key)
    return doc


@app.command("episode")
def episode(
    file: Annotated[str, typer.Argument(help="episode JSON (the body of POST /episode), or - for stdin")],
    timestamp: Annotated[
        str | None, typer.Option("--timestamp", help="valid time of the facts (RFC 3339); default now")
    ] = None,
    shapes: Annotated[
        str | None, typer.Option("--shapes", help="extra SHACL Turtle file gating this episode")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write an episode: named nodes and relation edges with provenance, idempotent by content.

    Request shapes (--shapes or the document's "shapes") and, with shacl.validate_on_write, the
    stored shape sets gate the episode: on a SHACL violation the report is printed on stdout,
    nothing is written and the exit status is 2.
    """
    from quipu.errors import ShaclViolation

    with _refusals():  # check the input before the store file is created or opened
        if file == "-":
            text = sys.stdin.read()
        elif Path(file).is_file():
            text = Path(file).read_text(encoding="utf-8")
        else:
            raise InvalidField(f"input file not found: {file}", field="FILE")
        doc = _episode_document(text)
        extra = _read_text(shapes, "--shapes") if shapes is not None else None
        inline = doc.get("shapes")
        if extra is not None and inline is not None and inline.strip():
            extra = inline + "\n" + extra  # both gate: Turtle documents concatenate
        elif extra is None:
            extra = inline
    name: Any = doc.get("name")  # parse_episode refuses a missing or non-string name
    with _store(db, config) as kb:
        try:
            result = kb.episode(
                name,
                episode_body=doc.get("episode_body"),
                source=doc.get("source"),
                group_id=doc.get("group_id"),
                nodes=doc.get("nodes"),
                edges=doc.get("edges"),
                graph=doc.get("graph"),
                replace_snapshot=doc.get("replace_snapshot", False),
                valid_from=timestamp,
                shapes=extra,
            )
        except ShaclViolation as refused:
            _emit(refused.report)
            raise
    _emit(result.as_json())


def _read_text(path: str, flag: str) -> str:
    """A UTF-8 file named on the command line (``-`` is stdin)."""
    if path == "-":
        return sys.stdin.read()
    if not Path(path).is_file():
        raise InvalidField(f"{flag} file not found: {path}", field=flag)
    return Path(path).read_text(encoding="utf-8")


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
    with _refusals():
        text = _read_text(data, "--data")
        shapes_text = _read_text(shapes, "--shapes") if shapes is not None else None
    with _store(db, config) as kb, _refusals():
        report = kb.validate(text, shapes_text, valid_at=valid_at, as_of_tx=as_of_tx)
    _emit(report.as_json())


shapes_app = typer.Typer(help="Manage the stored SHACL shape sets that gate writes.", no_args_is_help=True)
app.add_typer(shapes_app, name="shapes")


@shapes_app.command("load")
def shapes_load(
    name: Annotated[str, typer.Argument(help="shape-set name")],
    file: Annotated[str, typer.Argument(help="SHACL Turtle file (- for stdin)")],
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="version start (default now)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Load (or reload) a named shape set; the previous version is closed, never deleted."""
    with _refusals():
        turtle = _read_text(file, "FILE")
    with _store(db, config) as kb, _refusals():
        loaded = kb.load_shapes(name, turtle, timestamp=timestamp)
    _emit({"action": "loaded", "name": loaded.name})


@shapes_app.command("list")
def shapes_list(db: DbOption = None, config: ConfigOption = None) -> None:
    """The open shape sets."""
    with _store(db, config) as kb:
        sets = kb.shape_sets()
    _emit({"shapes": [{"name": s.name, "loaded_at": s.loaded_at} for s in sets], "count": len(sets)})


@shapes_app.command("get")
def shapes_get(
    name: Annotated[str, typer.Argument(help="shape-set name")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Print a shape set's Turtle on stdout."""
    with _store(db, config) as kb, _refusals():
        found = next((s for s in kb.shape_sets() if s.name == name), None)
        if found is None:
            from quipu.errors import NotFound

            raise NotFound(f"no shape set named '{name}'", field="name")
    sys.stdout.write(found.turtle if found.turtle.endswith("\n") else found.turtle + "\n")


@shapes_app.command("remove")
def shapes_remove(
    name: Annotated[str, typer.Argument(help="shape-set name")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Close a shape set's open version (history is kept)."""
    with _store(db, config) as kb, _refusals():
        found = kb.remove_shapes(name)
    _emit({"action": "removed", "name": name, "found": found})


@shapes_app.command("vocabulary")
def shapes_vocabulary(db: DbOption = None, config: ConfigOption = None) -> None:
    """The sanctioned classes of the open shape sets."""
    from quipu.shacl import registry

    with _store(db, config) as kb:
        sets = kb.shape_sets()
    classes = sorted(registry.bundle(s.turtle for s in sets).vocabulary) if sets else []
    _emit({"classes": classes, "count": len(classes)})


propose_app = typer.Typer(
    help="Schema-evolution proposals: file, list, accept or reject a requested schema change.",
    no_args_is_help=True,
)
app.add_typer(propose_app, name="propose")
app.add_typer(tool_app, name="tool")
DecidedByOption = Annotated[
    str | None,
    typer.Option(
        "--decided-by", envvar="QUIPU_ACTOR", help="who decides (default: $QUIPU_ACTOR, else the OS user)"
    ),
]


def _decider(given: str | None) -> str:
    """The declared decider: the flag or $QUIPU_ACTOR, else the OS user name."""
    if given:
        return given
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name and no passwd entry (some containers)
        raise InvalidField(
            "missing --decided-by (and neither QUIPU_ACTOR nor an OS user name is available)",
            field="decided_by",
        ) from None


@propose_app.command("submit")
def propose_submit(
    kind: Annotated[str, typer.Argument(help="shape, ontology, class or property")],
    target: Annotated[str, typer.Argument(help="shape-set name, class IRI or property IRI")],
    file: Annotated[str, typer.Argument(help="the proposed change: Turtle or a JSON patch (- for stdin)")],
    proposer: Annotated[str, typer.Option("--proposer", help="who proposes")],
    rationale: Annotated[str | None, typer.Option("--rationale", help="why")] = None,
    trigger: Annotated[
        str | None, typer.Option("--trigger", help="validation-failure ref or work-item id")
    ] = None,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="created_at (default now)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """File a pending proposal; nothing changes until it is accepted."""
    with _refusals():
        diff = _read_text(file, "FILE")
    with _store(db, config) as kb, _refusals():
        filed = kb.propose(
            kind, target, diff, proposer, rationale=rationale, trigger_ref=trigger, timestamp=timestamp
        )
    _emit({"proposal_id": filed.id, "status": filed.status})


@propose_app.command("list")
def propose_list(
    status: Annotated[
        str | None, typer.Option("--status", help="pending, accepted or rejected (default: all)")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """The proposal queue, newest first."""
    with _store(db, config) as kb, _refusals():
        found = kb.proposals(status)
    _emit({"proposals": [p.as_json() for p in found], "count": len(found)})


@propose_app.command("accept")
def propose_accept(
    proposal_id: Annotated[int, typer.Argument(metavar="ID", help="the proposal id")],
    note: Annotated[str | None, typer.Option("--note", help="decision note")] = None,
    decided_by: DecidedByOption = None,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="decided_at (default now)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Accept a pending proposal; a shape proposal is validated and installed as a shape set."""
    with _refusals():
        by = _decider(decided_by)
    with _store(db, config) as kb, _refusals():
        decided = kb.accept_proposal(proposal_id, by, note=note, timestamp=timestamp)
    _emit(
        {"proposal_id": decided.id, "status": decided.status, "target": decided.target, "kind": decided.kind}
    )


@propose_app.command("reject")
def propose_reject(
    proposal_id: Annotated[int, typer.Argument(metavar="ID", help="the proposal id")],
    note: Annotated[str, typer.Option("--note", help="the reason for rejecting")],
    decided_by: DecidedByOption = None,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="decided_at (default now)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Reject a pending proposal, recording the reason."""
    with _refusals():
        by = _decider(decided_by)
    with _store(db, config) as kb, _refusals():
        decided = kb.reject_proposal(proposal_id, by, note, timestamp=timestamp)
    _emit({"proposal_id": decided.id, "status": decided.status, "target": decided.target})


TABLE_FORMATS = ("table", "json", "csv", "tsv", "xml")
GRAPH_FORMATS = ("ntriples", "turtle")


@app.command("read")
def read(
    sparql: Annotated[str, typer.Argument(help="SPARQL query text")],
    valid_at: Annotated[str | None, typer.Option("--valid-at", help="valid-time read point")] = None,
    tx: Annotated[int | None, typer.Option("--tx", help="transaction-time read point", min=0)] = None,
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

    with _refusals():
        if format not in TABLE_FORMATS + GRAPH_FORMATS:
            raise InvalidField(
                f"unknown output format: {format!r} (try: {', '.join(TABLE_FORMATS + GRAPH_FORMATS)})",
                field="format",
            )
    with _store(db, config) as kb, _refusals():
        result = kb.query_result(sparql, valid_at=valid_at, as_of_tx=tx, graph=graph, inference=inference)
    if result.truncated:
        err.print(f"results cut at search.max_sparql_rows ({kb.max_sparql_rows} rows)")
    with _refusals():
        if result.form in results.GRAPH_FORMS:
            if format not in ("table", *GRAPH_FORMATS):
                raise InvalidField(
                    f"output format {format!r} does not fit a {result.form} result (try: ntriples, turtle)",
                    field="format",
                )
            text = results.write_turtle(result) if format == "turtle" else results.write_ntriples(result)
        elif format in GRAPH_FORMATS:
            raise InvalidField(
                f"output format {format!r} does not fit a {result.form} result "
                f"(try: {', '.join(TABLE_FORMATS)})",
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
            table = Table(show_lines=False)
            for name in result.variables:
                table.add_column(Text(name))
            for row in result.table:  # Text(): values are data, never Rich markup
                table.add_row(*(Text(results.term_text(cell)) for cell in row))
            Console(soft_wrap=True).print(table)
            err.print(f"{len(result.table)} row(s)")
            return
    sys.stdout.write(text)


app.command("query", help="Alias of read.")(read)


@app.command("retract")
def retract(
    iri: Annotated[str, typer.Argument(help="entity IRI")],
    predicate: Annotated[str | None, typer.Option("--predicate", help="only this predicate")] = None,
    value: Annotated[
        str | None, typer.Option("--value", help='only this object (a string, or JSON like {"iri": "…"})')
    ] = None,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="closure stamp (default now)")] = None,
    actor: Annotated[str | None, typer.Option("--actor")] = None,
    allow_orphan: Annotated[
        bool, typer.Option("--allow-orphan", help="allow removing the last rdf:type")
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Retract ROOT statements about an entity (closes valid time; nothing is deleted)."""
    with _store(db, config) as kb:
        wanted = _value(value) if value is not None else None
        r = kb.retract(iri, predicate, wanted, timestamp=timestamp, actor=actor, allow_orphan=allow_orphan)
    _emit({"tx_id": r.tx_id, "retracted": r.retracted, "entity": r.entity})


@app.command("set")
def set_(
    iri: Annotated[str, typer.Argument(help="entity IRI")],
    predicate: Annotated[str, typer.Argument(help="predicate IRI")],
    value: Annotated[str, typer.Argument(help='new value: a string, or JSON like {"iri": "…"} / {"int": 5}')],
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="transaction and valid time")] = None,
    actor: Annotated[str | None, typer.Option("--actor")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Make VALUE the only current value of (IRI, PREDICATE)."""
    with _store(db, config) as kb:
        r = kb.set(iri, predicate, _value(value), timestamp=timestamp, actor=actor)
    _emit(
        {
            "tx_id": r.tx_id,
            "retracted": r.retracted,
            "asserted": r.asserted,
            "entity": r.entity,
            "predicate": r.predicate,
        }
    )


@app.command("export")
def export(
    format: Annotated[str, typer.Option("--format", "-f", help="ntriples|turtle")] = "ntriples",
    graph: Annotated[str | None, typer.Option("--graph", help="named graph to export (default ROOT)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Print the current statements as deterministic N-Triples or Turtle."""
    with _store(db, config) as kb:
        text = kb.export(format, graph=graph)
    sys.stdout.write(text)


@app.command("unravel")
def unravel(
    tx: Annotated[int | None, typer.Option("--tx", help="transaction-time read point", min=0)] = None,
    valid_at: Annotated[str | None, typer.Option("--valid-at", help="valid-time read point")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List the ROOT claims visible at a transaction and/or valid instant."""
    with _store(db, config) as kb:
        _emit(kb.unravel(tx=tx, valid_at=valid_at))


@app.command("stats")
def stats(db: DbOption = None, config: ConfigOption = None) -> None:
    """Counts of ROOT's current facts, entities and predicates."""
    with _store(db, config) as kb:
        _emit(kb.stats())


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
    with _store(db, config) as kb:
        _emit(kb.cord(type=type, limit=limit))


@app.command("token")
def token(
    principal: Annotated[
        str | None,
        typer.Option("--principal", help="who will use the token, recorded on each write (default agent)"),
    ] = None,
    credential_id: Annotated[
        str | None, typer.Option("--id", help="credential id, to tell tokens apart (default PRINCIPAL-DATE)")
    ] = None,
    hash_only: Annotated[
        bool, typer.Option("--hash", help="read a token from stdin and print only its hash")
    ] = False,
) -> None:
    r"""Make a bearer token: the token on stdout, its \[\[quipu.server.credentials]] entry on stderr."""
    import getpass
    from datetime import UTC, datetime

    from pydantic import ValidationError

    from quipu.config import NamedCredential
    from quipu.rest.auth import MIN_TOKEN, hash_token, new_token

    with _refusals():
        if hash_only:
            secret = getpass.getpass("token: ") if sys.stdin.isatty() else sys.stdin.read()
            secret = secret.strip()
            if len(secret) < MIN_TOKEN:
                raise InvalidField(f"the token is shorter than {MIN_TOKEN} characters", field="token")
        else:
            secret = new_token()
        digest = hash_token(secret)
        name = principal if principal is not None else "agent"
        cred_id = credential_id or f"{name}-{datetime.now(UTC):%Y-%m-%d}"
        try:
            NamedCredential(principal=name, id=cred_id, token_hash=digest)
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise InvalidField(
                f"--{problem['loc'][0]}: {problem['msg']}", field=str(problem["loc"][0])
            ) from None
    sys.stdout.write((digest if hash_only else secret) + "\n")
    if hash_only and principal is None:
        return
    # json.dumps gives a valid TOML basic string for any name.
    sys.stderr.write(
        "# Add to quipu.toml or your user config; the server keeps only this hash.\n"
        "[[quipu.server.credentials]]\n"
        f"principal = {json.dumps(name, ensure_ascii=False)}\n"
        f"id = {json.dumps(cred_id, ensure_ascii=False)}\n"
        f"token_hash = {json.dumps(digest)}\n"
    )


def sibling_server() -> str:
    """The ``quipu-server`` installed beside this ``quipu`` (else the one on PATH)."""
    import shutil

    beside = Path(sys.argv[0]).resolve().with_name("quipu-server")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("quipu-server")
    if found is None:
        raise ConfigError("quipu-server is not installed beside quipu: install both console scripts")
    return found


@app.command("mcp")
def mcp(
    db: DbOption = None,
    config: ConfigOption = None,
    mcp_token_file: Annotated[
        str | None,
        typer.Option("--mcp-token-file", help="a private file (mode 600 or 400) holding the bearer token"),
    ] = None,
    toolsets: Annotated[
        str | None, typer.Option("--toolsets", help="serve only these toolsets (comma-separated)")
    ] = None,
    read_only_tools: Annotated[
        bool, typer.Option("--read-only-tools", help="serve only the read tools")
    ] = False,
) -> None:
    """Serve the MCP tools over stdio (for an agent client); no network listener is opened."""
    with _refusals():
        server = sibling_server()
    argv = [server, "--mcp-stdio"]
    for flag, value in (("--db", db), ("--config", config), ("--mcp-token-file", mcp_token_file)):
        if value is not None:
            argv += [flag, value]
    if toolsets is not None:
        argv += ["--toolsets", toolsets]
    if read_only_tools:
        argv.append("--read-only-tools")
    sys.stdout.flush()
    os.execv(server, argv)  # the server takes over this process: signals and EOF reach it directly


@app.command(
    "logic",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def logic(ctx: typer.Context) -> None:
    """The logic memory (zpm): `quipu logic <command> ...` is `zpm <command> ...`; see `quipu logic --help`."""
    from quipu.cli.zpm import main as zpm_main

    raise typer.Exit(zpm_main(ctx.args))
