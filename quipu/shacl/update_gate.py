"""The vocabulary and SHACL gates of a SPARQL Update (tools-core §3.10 rule 8).

Per destination graph, the statements the update inserts there are validated as a delta, as
``/knot`` validates its payload: the inserted statements, plus the ``rdf:type`` context of the
nodes they reference in that graph and in ROOT. The context is the state the update leaves
behind: stored types the update deletes are dropped, types it inserts into ROOT join a named
graph's context. Deletions alone are never validated. Runs inside the update's write
transaction, before anything is interned, so a refusal leaves nothing written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rdflib import Graph
from rdflib.term import Node

from quipu.shacl import registry
from quipu.shacl.gate import add_store_types, check_vocabulary, gate_report, referenced_iris, shacl_refusal
from quipu.store.context import Refusal, WriteContext
from quipu.store.database import Database
from quipu.store.schema import ROOT, ROOT_IRI

Triple = tuple[Node, Node, Node]


@dataclass
class GraphDelta:
    """What an update does to one destination graph, as far as the gates care."""

    graph: str | None  # the graph IRI; None for ROOT
    gid: int | None  # the committed graph's id; None when the update creates the graph
    inserted: list[Triple]  # every statement the update inserts into the graph
    deleted_types: set[Triple] = field(default_factory=set)  # rdf:type statements it deletes there
    # ROOT's side, for a named graph: the rdf:type statements the update deletes from / adds to ROOT.
    root_deleted_types: set[Triple] = field(default_factory=set)
    root_added_types: list[Triple] = field(default_factory=list)


def _context(db: Database, ctx: WriteContext, delta: GraphDelta, payload: Graph) -> Graph:
    """The rdf:type facts of the referenced nodes once the update has run (ROOT and the graph)."""
    types = Graph(bind_namespaces="none")
    root = Graph(bind_namespaces="none")
    add_store_types(db, payload, ROOT, into=root, conn=ctx.conn, graphs=frozenset({ROOT}))
    gone = delta.deleted_types if delta.graph is None else delta.root_deleted_types
    for triple in root:
        if triple not in gone:
            types.add(triple)
    if delta.graph is None:
        return types
    if delta.gid is not None:
        own = Graph(bind_namespaces="none")
        add_store_types(db, payload, delta.gid, into=own, conn=ctx.conn, graphs=frozenset({delta.gid}))
        for triple in own:
            if triple not in delta.deleted_types:
                types.add(triple)
    wanted = referenced_iris(payload)
    for triple in delta.root_added_types:
        if str(triple[0]) in wanted:
            types.add(triple)
    return types


def check_update(
    db: Database,
    ctx: WriteContext,
    deltas: Iterable[GraphDelta],
    *,
    actor: str | None,
    source: str | None,
    timestamp: str,
    stored: Sequence[registry.ShapeSet] | None = None,
) -> None:
    """Refuse the whole update at the first destination graph whose inserts fail a gate.

    Inactive (one indexed lookup) with no stored shape set. The vocabulary gate refuses with 400
    ``unknown_type``, the SHACL gate with 400 ``shacl_violation`` carrying the report and the
    graph (tools-core §3.10 Errors); either is recorded as ``write.refused`` (gate ``shacl``)
    after the rollback. Emit-mode shapes queue ``shacl.violation`` advisories for ROOT.
    """
    sets = list(stored) if stored is not None else registry.open_sets(ctx.conn)
    if not sets:
        return
    bundle = registry.bundle(s.turtle for s in sets)
    for delta in deltas:
        if not delta.inserted:
            continue  # deletions alone are not validated (rule 8)
        payload = Graph(bind_namespaces="none")
        for triple in delta.inserted:
            payload.add(triple)
        types = _context(db, ctx, delta, payload)
        target = ROOT if delta.gid is None else delta.gid
        refusal = Refusal("shacl", delta.graph, actor, source, len(delta.inserted), timestamp)
        with ctx.gate(refusal):
            check_vocabulary(payload, bundle.vocabulary, field="update")
            queue = ctx.advisories if delta.graph is None else None  # only ROOT commits emit events
            report = gate_report(
                db, payload, bundle, target, ctx.conn, advisories=queue, types=types, in_place=True
            )
            if report.count("Violation"):
                where = delta.graph or ROOT_IRI
                raise shacl_refusal(
                    report,
                    f"SHACL validation failed for the statements inserted into <{where}>: "
                    f"{report.summary()}. No facts were written",
                    graph=delta.graph,
                )
