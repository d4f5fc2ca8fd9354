"""The vocabulary and SHACL gates of an episode write (tools-core §3.4, DM §12 steps 3-4).

Fits the ``ingest`` gate seam: it runs inside the write's own transaction, before the
idempotency check, and validates the episode's generated statements as a delta (``gate_report``).
The closed-vocabulary gate is on as soon as a shape set is stored (§2.2 rule 4); the stored sets
SHACL-gate an episode only with ``shacl.validate_on_write``; request ``shapes`` always do.
"""

from __future__ import annotations

from rdflib import RDF, Graph, URIRef

from quipu.episodes.build import Built
from quipu.episodes.ingest import Gate
from quipu.episodes.iris import PROV
from quipu.errors import ShaclViolation
from quipu.shacl import registry
from quipu.shacl.gate import HINT, check_vocabulary, gate_report
from quipu.store.context import WriteContext
from quipu.store.database import Database

# Quipu's own provenance scaffolding, typed by every episode: never a vocabulary question.
_SCAFFOLDING = frozenset({URIRef(PROV + "Activity"), RDF.Statement})


class EpisodeShaclViolation(ShaclViolation):
    """A SHACL failure of an episode: an HTTP 400 on every route (tools-core §3.4, §6 rule 1),
    unlike ``/knot``'s 200 ``conforms: false``; the body carries the same structured report."""


def _node_types(payload: Graph) -> Graph:
    out = Graph(bind_namespaces="none")
    for s, o in payload.subject_objects(RDF.type):
        if o not in _SCAFFOLDING:
            out.add((s, RDF.type, o))
    return out


def episode_gate(db: Database, *, request_shapes: str | None = None, validate_on_write: bool = False) -> Gate:
    """The gate for one episode write; request shapes that do not parse are refused (400) now."""
    extra = request_shapes if request_shapes is not None and request_shapes.strip() else None
    if extra is not None:
        registry.parse_shapes(extra, "shapes")

    def gate(ctx: WriteContext, target: int, built: Built) -> None:
        sets = registry.open_sets(ctx.conn)
        shacl_texts = [s.turtle for s in sets] if validate_on_write else []
        if extra is not None:
            shacl_texts.append(extra)
        if not sets and not shacl_texts:
            return  # nearly free: one indexed lookup
        payload = built.graph()
        if sets:
            check_vocabulary(_node_types(payload), registry.bundle(s.turtle for s in sets).vocabulary)
        if not shacl_texts:
            return
        bundle = registry.bundle(shacl_texts)
        report = gate_report(db, payload, bundle, target, ctx.conn, advisories=ctx.advisories, in_place=True)
        if report.count("Violation"):
            body = report.as_json()
            body["hint"] = HINT
            raise EpisodeShaclViolation(
                f"SHACL validation failed; nothing was written: {report.summary()}", body
            )

    return gate
