"""The commands that take a document in: ``knot`` (alias ``load``) and ``episode`` write it to the
store, ``stage`` uploads a snapshot to a running server.

They sit together because ``quipu --help`` lists them together, in this order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, progress_bar, read_bytes, read_text
from quipu.errors import InvalidField, ShaclViolation

app = typer.Typer()

LARGE_INPUT = 4 * 1024 * 1024  # bytes; larger ingests show a progress bar

ValidFromOption = Annotated[
    str | None, typer.Option("--timestamp", help="valid time of the facts (RFC 3339); default now")
]
ActorOption = Annotated[str | None, typer.Option("--actor", help="who asserts (declared)")]
GraphOption = Annotated[str | None, typer.Option("--graph", help="registered named graph (default ROOT)")]


class _IngestProgress:
    """A progress bar on stderr for large ingests; silent for small ones."""

    def __init__(self, size: int) -> None:
        self.progress = progress_bar("{task.description}", disable=size < LARGE_INPUT)
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


@contextmanager
def _shacl_report() -> Iterator[None]:
    """A write refused by SHACL prints the report on stdout, then fails as usual."""
    try:
        yield
    except ShaclViolation as refused:
        emit(refused.report)
        raise


@app.command("knot")
def knot(
    file: Annotated[str, typer.Argument(help="RDF file to assert, or - for stdin")],
    format: Annotated[
        str | None,
        typer.Option("--format", "-f", help="turtle|nt|nq|trig|jsonld|rdfxml (default: from the suffix)"),
    ] = None,
    timestamp: ValidFromOption = None,
    actor: ActorOption = None,
    source: Annotated[
        str | None, typer.Option("--source", help="producer key (default knot:<actor>)")
    ] = None,
    graph: GraphOption = None,
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
    from quipu.rdfio.formats import guess_input_format, input_format

    # The input is checked before the store file is created or opened.
    fmt = input_format(format) if format else ("turtle" if file == "-" else guess_input_format(file))
    data = read_bytes(file, what="input")
    extra = read_text(shapes, "--shapes") if shapes is not None else None
    with open_store(db, config) as kb, _IngestProgress(len(data)) as progress, _shacl_report():
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
    emit(
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
    actor: ActorOption = None,
    graph: GraphOption = None,
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

    text = read_text(file, what="input")
    token = read_token_file(token_file, "--token-file") if token_file else None
    staged = client.plan(text, snapshot, timestamp=timestamp, actor=actor, graph=graph, part_bytes=part_bytes)
    with progress_bar("staging", " bytes") as bar:
        task = bar.add_task("staging", total=staged.total_bytes)
        answer = client.push(
            staged, server, token=token, progress=lambda done, _total: bar.update(task, completed=done)
        )
    emit(answer)
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
    timestamp: ValidFromOption = None,
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
    # The input is checked before the store file is created or opened.
    doc = _episode_document(read_text(file, what="input"))
    extra = read_text(shapes, "--shapes") if shapes is not None else None
    inline = doc.get("shapes")
    if extra is not None and inline is not None and inline.strip():
        extra = inline + "\n" + extra  # both gate: Turtle documents concatenate
    elif extra is None:
        extra = inline
    name: Any = doc.get("name")  # parse_episode refuses a missing or non-string name
    with open_store(db, config) as kb, _shacl_report():
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
    emit(result.as_json())
