"""The vocabulary and SHACL gates of a write (DM §12 steps 3-4, tools-core §3.1 rules 4-6).

A write is validated as a *delta*: the payload's own statements, plus the ``rdf:type`` facts the
store holds (destination graph and ROOT, current state) for the IRIs the payload mentions, plus
the ``rdfs:subClassOf`` axioms of the shapes. Never the whole store: the cost follows the
payload, not the store size. Both gates run inside the write's own transaction, before anything
is interned or written, so a refusal rolls back to nothing and the context is what the write sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rdflib import RDF, BNode, Graph, URIRef
from rdflib.namespace import SH
from sqlalchemy import Connection, Select, bindparam, select

from quipu.errors import InvalidField, MissingField, ShaclViolation, WriteRefused
from quipu.rdfio.formats import input_format
from quipu.shacl import registry
from quipu.shacl.rdf import parse_graph
from quipu.shacl.validate import Issue, Report, issues_of, run_report, validate
from quipu.store import values
from quipu.store.context import QueuedEvent
from quipu.store.database import Database
from quipu.store.schema import ROOT, facts
from quipu.store.views import TemporalView

HINT = "propose a schema change via quipu_propose_schema_change"


def payload_graph(data: bytes, fmt: str = "turtle", base_iri: str | None = None) -> Graph:
    """The document's statements (every graph of a quad format, flattened) as an rdflib graph."""
    return parse_graph(data, fmt, base_iri)


def referenced_iris(graph: Graph) -> set[str]:
    """IRIs in subject or object position: the nodes whose stored types are context."""
    out = {str(s) for s in graph.subjects() if isinstance(s, URIRef)}
    out |= {str(o) for o in graph.objects() if isinstance(o, URIRef)}
    return out


_TYPE_WIDTHS = (4, 16, 64, 256)  # IN-list sizes: a few prepared statements serve every gate


# Never evicted: the dialect caches prepared forms by statement identity, so a statement must
# live as long as the process (one per graph scope and width: a handful per destination graph).
_TYPE_STATEMENTS: dict[tuple[frozenset[int], int], Select[Any]] = {}


def _types_statement(graphs: frozenset[int], width: int) -> Select[Any]:
    """The current rdf:type facts of ``width`` entities in ``graphs``, prepared once."""
    found = _TYPE_STATEMENTS.get((graphs, width))
    if found is None:
        c = facts.c
        entities = c.e.in_([bindparam(f"e{k}") for k in range(width)])
        view = TemporalView(graphs=graphs).where(facts)
        found = select(c.e, c.v).where(view, c.a == bindparam("rdf_type"), entities)
        found = _TYPE_STATEMENTS.setdefault((graphs, width), found)
    return found


def add_store_types(
    db: Database,
    graph: Graph,
    target: int,
    into: Graph | None = None,
    conn: Connection | None = None,
    *,
    graphs: frozenset[int] | None = None,
) -> int:
    """Add the current ``rdf:type`` facts of the referenced nodes in ``target`` and ROOT (or in
    ``graphs``) to ``into`` (default: ``graph``); returns how many were added. ``conn`` is the
    snapshot to read (the write's own transaction for a gate), else a fresh read."""
    into = graph if into is None else into
    if conn is None:
        with db.read() as fresh:
            return add_store_types(db, graph, target, into, fresh, graphs=graphs)
    wanted = sorted(referenced_iris(graph))
    added = 0
    ids = db.terms.lookup(conn, [values.RDF + "type", *wanted])
    type_id = ids.pop(values.RDF + "type", None)
    if type_id is None or not ids:
        return 0
    scope = frozenset({ROOT, target}) if graphs is None else graphs
    entity_ids = sorted(set(ids.values()))
    # A set: a type every episode re-asserts has one visible claim row per owner, and a node's
    # type must cost one graph insert however many owners it has.
    rows: set[tuple[int, bytes]] = set()
    for i in range(0, len(entity_ids), _TYPE_WIDTHS[-1]):
        chunk = entity_ids[i : i + _TYPE_WIDTHS[-1]]
        width = next(w for w in _TYPE_WIDTHS if w >= len(chunk))
        params = {f"e{k}": v for k, v in enumerate(chunk + [-1] * (width - len(chunk)))}
        params["rdf_type"] = type_id
        found = db.dialect.prepared(_types_statement(scope, width)).run(conn, params)
        rows.update((int(e), bytes(v)) for e, v in found)
    class_ids = {values.ref_id(v) for _e, v in rows} - {None}
    iris = db.terms.iris(conn, [*ids.values(), *(i for i in class_ids if i is not None)])
    for e, v in sorted(rows):
        cid = values.ref_id(v)
        if cid is None:
            continue
        subject, cls = iris[e], iris[cid]
        node = URIRef(subject)
        if not cls.startswith("_:") and not subject.startswith("_:"):
            into.add((node, RDF.type, URIRef(cls)))
            added += 1
    return added


def add_class_axioms(bundle: registry.Bundle, data: Graph) -> None:
    """The shape sets' ``rdfs:subClassOf`` axioms, so ``sh:class`` and ``sh:targetClass``
    follow the hierarchy the sets declare **[designed here]**."""
    for triple in bundle.class_axioms:
        data.add(triple)


def check_vocabulary(payload: Graph, sanctioned: frozenset[str], field: str = "turtle") -> None:
    """Refuse (400 ``unknown_type``) any asserted ``rdf:type`` class the shapes do not sanction."""
    unknown = sorted({str(o) for o in payload.objects(None, RDF.type) if str(o) not in sanctioned})
    if unknown:
        shown = ", ".join(f"<{c}>" for c in unknown[:5])
        raise WriteRefused(
            f"unknown rdf:type {shown}: not sanctioned by the loaded shape sets (a class must be an "
            "sh:targetClass or rdfs:subClassOf object in one of them); nothing was written — "
            f"{HINT}",
            field=field,
            reason="unknown_type",
            extra={"unknown_types": unknown},
        )


def gate_report(
    db: Database,
    payload: Graph,
    bundle: registry.Bundle,
    target: int,
    conn: Connection | None = None,
    *,
    advisories: list[QueuedEvent] | None = None,
    types: Graph | None = None,
    in_place: bool = False,
) -> Report:
    """Validate the delta of a write against a bundle; "emit" shapes never appear as issues.

    ``types`` is the store context when the caller has it already (an update's overlay), else the
    stored types of the referenced nodes are read. With ``advisories`` (the write context's list),
    every result of an "emit" shape is queued there as a ``shacl.violation`` advisory (DM §11.1
    item 5): the same single pySHACL run, its results split by source shape, so a bundle without
    emit shapes costs nothing extra. Only a ROOT write queues them: only ROOT commits emit
    events (DM §11.1, tools-core §3.1 rule 13). ``in_place``: the payload is the caller's scratch
    graph, so the context joins it instead of a copy.
    """
    if in_place:
        data = payload
    else:
        data = Graph(bind_namespaces="none")
        for triple in payload:
            data.add(triple)
    if types is None:
        add_store_types(db, payload, target, into=data, conn=conn)
    else:
        for triple in types:
            data.add(triple)
    add_class_axioms(bundle, data)
    report = run_report(data, bundle.graph, bundle.prepared)
    if advisories is not None and bundle.emit and target == ROOT:
        for issue in issues_of(report, bundle.graph, only_shapes=bundle.emit):
            advisories.append(emit_advisory(bundle, issue))
    return Report(issues_of(report, bundle.graph, skip_shapes=bundle.emit))


def emit_advisory(bundle: registry.Bundle, issue: Issue) -> QueuedEvent:
    """An "emit" shape's result as the ``shacl.violation`` advisory of DM §11.1."""
    focus = issue.focus_node if isinstance(issue.focus_node, str) else None
    return QueuedEvent(
        type="shacl.violation",
        subject=focus,
        payload={
            "shape": shape_name(bundle.graph, issue.source_shape),
            "message": issue.message,
            "component": issue.component,
            "path": issue.path,
            "severity": issue.severity,
            "mode": "emit",
        },
    )


def shape_name(shapes: Graph, shape: str | None) -> str | None:
    """A result's source shape by name: its IRI, or for an anonymous property shape the IRI of
    the node shape that owns it (a blank-node label means nothing outside this process)
    **[designed here]**."""
    if shape is None or not shape.startswith("_:"):
        return shape
    node = BNode(shape[2:])
    for _hop in range(8):  # property shapes nest through sh:node/sh:property only a few levels
        owner = next(iter(shapes.subjects(SH.property, node)), None)
        if owner is None:
            break
        if isinstance(owner, URIRef):
            return str(owner)
        node = owner  # type: ignore[assignment]
    return shape


def shacl_refusal(report: Report, message: str, **extra: object) -> ShaclViolation:
    """The refusal of a write whose delta has Violation results: the report, with the hint."""
    body = report.as_json()
    body["hint"] = HINT
    body.update(extra)
    return ShaclViolation(message, body)


def check_write(
    db: Database,
    data: bytes,
    *,
    fmt: str = "turtle",
    target: int = ROOT,
    request_shapes: str | None = None,
    base_iri: str | None = None,
    stored: Sequence[registry.ShapeSet] | None = None,
    conn: Connection | None = None,
    advisories: list[QueuedEvent] | None = None,
) -> None:
    """Both gates for one write; returns when it may proceed.

    Inactive (and nearly free: one indexed lookup) with no stored shape sets and no request
    shapes. The vocabulary gate needs a stored set (rule 6); request shapes join the stored ones
    for SHACL (rule 5). Only Violation-severity results refuse **[designed here]**: warnings and
    infos never block. ``conn`` is the write's own transaction, so the shapes and the store types
    the gate reads are the ones the write commits against. ``advisories`` (the write context's)
    receives the results of "emit" shapes.
    """
    extra = request_shapes if request_shapes is not None and request_shapes.strip() else None
    if extra is not None:
        registry.parse_shapes(extra, "shapes")  # bad request shapes: 400 before anything else
    if stored is not None:
        sets = list(stored)
    elif conn is not None:
        sets = registry.open_sets(conn)
    else:
        sets = registry.current(db)
    if not sets and extra is None:
        return
    payload = payload_graph(data, fmt, base_iri)
    if sets:
        check_vocabulary(payload, registry.bundle(s.turtle for s in sets).vocabulary)
    bundle = registry.bundle([*(s.turtle for s in sets), *([extra] if extra else [])])
    report = gate_report(db, payload, bundle, target, conn, advisories=advisories, in_place=True)
    if report.count("Violation"):
        raise shacl_refusal(report, f"SHACL validation failed; nothing was written: {report.summary()}")


def dry_run(
    db: Database,
    data: str | bytes,
    shapes: str | None = None,
    *,
    valid_at: str | None = None,
    as_of_tx: int | None = None,
    format: str = "turtle",
) -> Report:
    """``/validate``: the payload alone against ``shapes``, else the stored sets open at the
    point asked (tools-core §2.1). Never writes, never interns, never reads store facts."""
    if data is None or (isinstance(data, str) and not data.strip()):
        raise MissingField("missing 'data' parameter", field="data")
    if as_of_tx is not None and not 0 <= as_of_tx < 2**63:  # transaction ids are 64-bit
        raise InvalidField(
            f"'as_of_tx' must be an integer from 0 to 2^63-1, got {as_of_tx}", field="as_of_tx"
        )
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if shapes is not None and shapes.strip():
        bundle = registry.bundle([shapes])
    else:
        with db.read() as conn:
            sets = registry.open_sets(conn, valid_at=valid_at, as_of_tx=as_of_tx)
        if not sets:
            raise InvalidField(
                "no shapes to validate against: no shape sets are stored for the requested point; "
                "pass 'shapes', or load some and retry",
                field="shapes",
                reason="no_shapes",
            )
        bundle = registry.bundle(s.turtle for s in sets)
    payload = payload_graph(raw, input_format(format))
    data_graph = Graph(bind_namespaces="none")
    for triple in payload:
        data_graph.add(triple)
    add_class_axioms(bundle, data_graph)
    return validate(data_graph, bundle.graph, prepared=bundle.prepared)
