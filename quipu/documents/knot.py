"""``knot``: parse an RDF document and assert it (append mode) or replace a snapshot with it,
with every check before the first write."""

from __future__ import annotations

from typing import Any

from quipu import times
from quipu.errors import MissingField
from quipu.identity import Authenticated
from quipu.rdfio.formats import input_format
from quipu.rdfio.parse import parse_document
from quipu.shacl import gate, registry
from quipu.store.context import Refusal, WriteContext
from quipu.store.database import Database
from quipu.store.schema import ROOT_IRI
from quipu.store.snapshots import replace_snapshot as replace_snapshot_in
from quipu.store.snapshots import snapshot_source
from quipu.store.statements import gc_paused
from quipu.store.writes import KnotResult, Progress, assert_statements, check_target_graph, derived_source

_LARGE_DOCUMENT = 1 << 20  # bytes; larger documents are parsed with the cyclic GC paused


def knot(
    db: Database,
    data: bytes | str,
    format: str = "turtle",
    *,
    timestamp: str | None = None,
    valid_from: str | None = None,
    actor: str | None = None,
    source: str | None = None,
    graph: str | None = None,
    blank_node_scope: str | None = None,
    base_iri: str | None = None,
    progress: Progress | None = None,
    auth: Authenticated | None = None,
    replace_snapshot: bool = False,
    snapshot: str | None = None,
    shapes: str | None = None,
) -> KnotResult:
    """Assert an RDF document in one atomic write (per destination graph).

    Append mode by default (source: ``source``, else ``knot:<actor>``). With
    ``replace_snapshot`` the document replaces what ``snapshot:<snapshot>`` owns in the graph
    (DM §8) and ``source`` is ignored.

    Order of refusals (tools-core §3.1): unknown format, malformed ``valid_from``, a
    replacement without a key, an unknown or unwritable graph, malformed request shapes, syntax
    and literal errors, then (inside the write transaction, before anything is interned) the
    vocabulary and SHACL gates over the stored shape sets plus ``shapes`` (DM §12 steps 3-4).
    Graphs a multi-graph document names are checked inside the write, before any interning.
    """
    fmt = input_format(format)
    stored_from = times.normalise_valid_from(valid_from) if valid_from is not None else None
    key = snapshot.strip() if isinstance(snapshot, str) else ""
    if replace_snapshot and not key:
        raise MissingField(
            "replace_snapshot requires a non-empty stable 'snapshot' producer key", field="snapshot"
        )
    check_target_graph(db, graph)
    ts = times.normalise_timestamp(timestamp)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if shapes is not None and shapes.strip():
        registry.parse_shapes(shapes, "shapes")  # bad request shapes: 400 before any parsing

    statements = 0  # known once parsed, before the write (and so the gates) run

    def gates(ctx: WriteContext, target: int) -> None:
        writer = snapshot_source(key) if replace_snapshot else derived_source(source, actor, "knot")
        refusal = Refusal("shacl", graph or None, actor, writer, statements, ts)
        with ctx.gate(refusal):
            gate.check_write(
                db,
                raw,
                fmt=fmt,
                target=target,
                request_shapes=shapes,
                base_iri=base_iri,
                conn=ctx.conn,
                advisories=ctx.advisories,
            )

    target_iri = graph if graph else ROOT_IRI
    with gc_paused(len(raw) > _LARGE_DOCUMENT):
        batch = parse_document(
            raw, fmt, graph_iri=target_iri, blank_node_scope=blank_node_scope, base_iri=base_iri
        )
    statements = len(batch.statements)
    if progress is not None:
        progress("parsed statements", statements, statements)
    if replace_snapshot:
        return replace_snapshot_in(
            db,
            batch,
            key=key,
            timestamp=ts,
            valid_from=stored_from or ts,
            actor=actor,
            graph=graph,
            auth=auth,
            check=gates,
        )
    return assert_statements(
        db,
        batch,
        timestamp=ts,
        valid_from=stored_from or ts,
        actor=actor,
        source=source,
        graph=graph,
        progress=progress,
        auth=auth,
        check=gates,
    )


def response_body(result: KnotResult, *, replace_snapshot: bool, snapshot: str | None) -> dict[str, Any]:
    """The ``/knot`` success body (tools-core §3.1), shared with a completed staged promotion."""
    key = snapshot.strip() if replace_snapshot and snapshot else snapshot
    return {
        "conforms": True,
        "tx_id": result.tx_id,
        "count": result.count,
        "snapshot": key,
        "replaced": replace_snapshot,
        "valid_from": result.valid_from,
    }
