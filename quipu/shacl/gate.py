"""The vocabulary and SHACL gates of a write (DM §12 steps 3-4, tools-core §3.1 rules 4-6).

A write is validated as a *delta*: the payload's own statements, plus the ``rdf:type`` facts the
store holds (destination graph and ROOT, current state) for the IRIs the payload mentions, plus
the ``rdfs:subClassOf`` axioms of the shapes. Never the whole store: the cost follows the
payload, not the store size. Both gates run inside the write's own transaction, before anything
is interned or written, so a refusal rolls back to nothing and the context is what the write sees.
"""

from __future__ import annotations

from collections.abc import Sequence

from rdflib import RDF, Graph, URIRef
from sqlalchemy import Connection, select

from quipu.errors import InvalidField, MissingField, ShaclViolation, WriteRefused
from quipu.rdfio.formats import input_format
from quipu.shacl import registry
from quipu.shacl.rdf import parse_graph
from quipu.shacl.validate import Report, validate
from quipu.store import values
from quipu.store.database import Database
from quipu.store.schema import ROOT, facts
from quipu.store.views import TemporalView

_CHUNK = 500
HINT = "propose a schema change via quipu_propose_schema_change"


def payload_graph(data: bytes, fmt: str = "turtle", base_iri: str | None = None) -> Graph:
    """The document's statements (every graph of a quad format, flattened) as an rdflib graph."""
    return parse_graph(data, fmt, base_iri)


def referenced_iris(graph: Graph) -> set[str]:
    """IRIs in subject or object position: the nodes whose stored types are context."""
    out = {str(s) for s in graph.subjects() if isinstance(s, URIRef)}
    out |= {str(o) for o in graph.objects() if isinstance(o, URIRef)}
    return out


def add_store_types(
    db: Database, graph: Graph, target: int, into: Graph | None = None, conn: Connection | None = None
) -> int:
    """Add the current ``rdf:type`` facts of the referenced nodes in ``target`` and ROOT to
    ``into`` (default: ``graph``); returns how many were added. ``conn`` is the snapshot to read
    (the write's own transaction for a gate), else a fresh read."""
    into = graph if into is None else into
    if conn is None:
        with db.read() as fresh:
            return add_store_types(db, graph, target, into, fresh)
    wanted = sorted(referenced_iris(graph))
    added = 0
    ids = db.terms.lookup(conn, [values.RDF + "type", *wanted])
    type_id = ids.pop(values.RDF + "type", None)
    if type_id is None or not ids:
        return 0
    view = TemporalView(graphs=frozenset({ROOT, target}))
    entity_ids = sorted(set(ids.values()))
    c = facts.c
    rows: list[tuple[int, bytes]] = []
    for i in range(0, len(entity_ids), _CHUNK):
        query = select(c.e, c.v).where(view.where(facts), c.a == type_id, c.e.in_(entity_ids[i : i + _CHUNK]))
        rows += [(int(r.e), bytes(r.v)) for r in conn.execute(query)]
    class_ids = {values.ref_id(v) for _e, v in rows} - {None}
    iris = db.terms.iris(conn, [*ids.values(), *(i for i in class_ids if i is not None)])
    for e, v in rows:
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


def check_vocabulary(payload: Graph, sanctioned: frozenset[str]) -> None:
    """Refuse (400 ``unknown_type``) any asserted ``rdf:type`` class the shapes do not sanction."""
    unknown = sorted({str(o) for o in payload.objects(None, RDF.type) if str(o) not in sanctioned})
    if unknown:
        shown = ", ".join(f"<{c}>" for c in unknown[:5])
        raise WriteRefused(
            f"unknown rdf:type {shown}: not sanctioned by the loaded shape sets (a class must be an "
            "sh:targetClass or rdfs:subClassOf object in one of them); nothing was written — "
            f"{HINT}",
            field="turtle",
            reason="unknown_type",
            extra={"unknown_types": unknown},
        )


def gate_report(
    db: Database, payload: Graph, bundle: registry.Bundle, target: int, conn: Connection | None = None
) -> Report:
    """Validate the delta of a write against a bundle; "emit" shapes never appear as issues."""
    data = Graph(bind_namespaces="none")
    for triple in payload:
        data.add(triple)
    add_store_types(db, payload, target, into=data, conn=conn)
    add_class_axioms(bundle, data)
    return validate(data, bundle.graph, skip_shapes=bundle.emit)


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
) -> None:
    """Both gates for one write; returns when it may proceed.

    Inactive (and nearly free: one indexed lookup) with no stored shape sets and no request
    shapes. The vocabulary gate needs a stored set (rule 6); request shapes join the stored ones
    for SHACL (rule 5). Only Violation-severity results refuse **[designed here]**: warnings and
    infos never block. ``conn`` is the write's own transaction, so the shapes and the store types
    the gate reads are the ones the write commits against.
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
    report = gate_report(db, payload, bundle, target, conn)
    if report.count("Violation"):
        body = report.as_json()
        body["hint"] = HINT
        raise ShaclViolation(
            f"SHACL validation failed; nothing was written: {report.summary()}",
            body,
        )


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
    return validate(data_graph, bundle.graph)
