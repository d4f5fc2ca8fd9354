"""The store half of cross-graph alignment (tools-graphs-governance §3.1, §3.3).

Two operations, each one snapshot or one transaction:

* ``labelled_entities``: for each named source graph, its live plain-string ``rdfs:label`` rows
  with the entity's live ``rdf:type`` in the *same* graph (alignment is graph-scoped, §3.1 step 1).
  An IRI that names no known graph (ROOT by ``urn:quipu:graph:root``, or a registered graph) is
  refused: an absent graph must never read as zero candidates (rule AP-1).
* ``write_alignment``: registers the derived alignment graph, then asserts the derived facts and
  makes each provenance value the only one of its (subject, predicate) in that graph, in one write
  transaction; it answers how many live statements the graph gained (rule AA-3).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, func, select

from quipu.errors import UnknownGraph, WriteRefused
from quipu.identity import Authenticated
from quipu.store import graph_registry, graph_scope, reads, values
from quipu.store.database import Database
from quipu.store.graph_facts import Triple, assert_triples
from quipu.store.labels import label_rows
from quipu.store.schema import facts
from quipu.store.views import TemporalView, primary
from quipu.store.writes import close_claims, open_transaction, refuse_unwritable, register_graph_in

LabelRow = tuple[str, str, str]  # (entity IRI, label, type IRI or "")


def _known(db: Database, conn: Connection, field: str, iri: str) -> int:
    gid = reads.resolve_graph(db, conn, iri)
    if gid is None:
        raise UnknownGraph(
            f"'{field}' <{iri}> is not a known graph: name a registered graph (or ROOT as "
            f"urn:quipu:graph:root); an absent graph is refused rather than read as empty",
            field=field,
        )
    return gid


def labelled_entities(db: Database, graphs: Sequence[tuple[str, str]]) -> list[list[LabelRow]]:
    """Per ``(field, graph IRI)``: that graph's current label rows, one per (label, type) pair.

    The graphs' label floors apply (they are read), and a frozen graph's pack is mounted first.
    """
    with db.read() as conn:
        gids = [_known(db, conn, field, iri) for field, iri in graphs]
        graph_scope.enforce(db, conn, gids)
        ids = db.terms.lookup(conn, (reads.RDFS_LABEL, reads.RDF_TYPE))
        label = ids.get(reads.RDFS_LABEL)
        if label is None:  # nothing in this store has ever carried a label
            return [[] for _ in gids]
        rdf_type = ids.get(reads.RDF_TYPE)
        return [label_rows(conn, TemporalView(graphs=frozenset({g})), label, rdf_type) for g in gids]


def live_statements(conn: Connection, gid: int) -> int:
    """Current statements of one graph (a statement with two owners counts once)."""
    view = TemporalView(graphs=frozenset({gid}))
    query = select(func.count()).select_from(facts).where(view.where(facts), primary(facts))
    return int(conn.execute(query).scalar_one())


def write_alignment(
    db: Database,
    *,
    graph: str,
    sources: Sequence[tuple[str, str]],
    asserted: Sequence[Triple],
    single_valued: Sequence[tuple[str, str, str]],
    source: str,
    timestamp: str,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> int:
    """Write an apply into ``graph`` (registered here on first use); the live-statement increase.

    ``sources`` (field, IRI) must be known graphs. ``single_valued`` (subject, predicate, string)
    triples replace any other current value of their (subject, predicate) in ``graph`` (rule
    AA-4, set semantics). With nothing to write no transaction is recorded.
    """
    with db.write(auth) as ctx:
        for field, iri in sources:
            _known(db, ctx.conn, field, iri)
        gid, _created = register_graph_in(db, ctx, graph, actor=actor, timestamp=timestamp)
        record = graph_registry.record(ctx.conn, gid)
        assert record is not None
        if record.cls != "committed":
            raise WriteRefused(f"alignment graph <{graph}> is registered as an overlay", field="graph")
        refuse_unwritable(graph, record.lifecycle)
        if not asserted and not single_valued:
            return 0
        before = live_statements(ctx.conn, gid)
        tx = open_transaction(ctx, timestamp=timestamp, actor=actor, source=source, graph=gid)
        ids = db.terms.intern(ctx, sorted({t for s, p, _v in single_valued for t in (s, p)}))
        for subject, predicate, text in single_valued:
            close_claims(ctx, tx, e=ids[subject], a=ids[predicate], keep=values.string(text))
        literals: list[Triple] = [(s, p, values.string(text)) for s, p, text in single_valued]
        assert_triples(db, ctx, tx, [*asserted, *literals], timestamp)
        return live_statements(ctx.conn, gid) - before
