"""Writing what the stored ontologies entail into ROOT's companion graph (§8.1 OL-2, errata).

One call is one database transaction: the premises are ROOT's current statements of the
properties and classes the axioms name (plus every statement touching an ``owl:sameAs`` node),
the closure is computed (closure.py), and the new statements are asserted into
``urn:quipu:graph:root#inferred`` in one transaction, actor ``owl``, source ``owl:materialize``.
``load`` only adds; ``materialize`` also retracts what the source holds and no longer follows
[designed here].
"""

from __future__ import annotations

from rdflib import Literal, URIRef
from rdflib.namespace import OWL, RDF
from rdflib.term import Node

from quipu.owl.axioms import Axioms
from quipu.owl.closure import Entailed, entail
from quipu.owl.families import Triple, count
from quipu.reasoning.companion import bookkeeping
from quipu.store import graph_registry, graph_scope, owl_facts, rule_eval, values, writes
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.rdf_terms import TermMaker
from quipu.store.schema import ROOT, ROOT_IRI
from quipu.store.stage import Row
from quipu.store.views import TemporalView

ACTOR = "owl"
SOURCE = "owl:materialize"
COMPANION = writes.companion_iri(ROOT_IRI)


def _premises(db: Database, ctx: WriteContext, ax: Axioms) -> tuple[list[Triple], dict[Node, bytes]]:
    """ROOT's statements the families read, as rdflib triples, and each literal's encoding."""
    conn, view = ctx.conn, TemporalView(graphs=frozenset({ROOT}))
    graph_scope.enforce(db, conn, (ROOT,))
    wanted = sorted({str(RDF.type), str(OWL.sameAs), *ax.properties(), *ax.classes()})
    ids = db.terms.lookup_in(ctx, wanted)
    props = [ids[p] for p in ax.properties() if p in ids]
    rows = owl_facts.with_predicates(conn, view, props)
    if str(RDF.type) in ids:
        rows |= owl_facts.typed(conn, view, ids[str(RDF.type)], [ids[c] for c in ax.classes() if c in ids])
    if str(OWL.sameAs) in ids:
        same = owl_facts.with_predicates(conn, view, [ids[str(OWL.sameAs)]])
        nodes = {e for e, _a, _v in same} | {r for _e, _a, v in same if (r := values.ref_id(v)) is not None}
        rows |= same | owl_facts.touching(conn, view, nodes)
    maker = TermMaker(db, conn)
    maker.load({e for e, _a, _v in rows} | {a for _e, a, _v in rows})
    triples: list[Triple] = []
    spelled: dict[Node, bytes] = {}
    for e, a, v in sorted(rows):
        s, p, o = maker.term(e), maker.term(a), maker.value(v)
        if isinstance(s, URIRef) and isinstance(p, URIRef):  # store blank nodes stay out
            triples.append((s, p, o))
            if isinstance(o, Literal):
                spelled[o] = v
    return triples, spelled


def _rows(
    db: Database, ctx: WriteContext, found: Entailed, spelled: dict[Node, bytes]
) -> dict[tuple[int, int, bytes], tuple[Row, str]]:
    iris = {str(t) for triple in found.family for t in triple if isinstance(t, URIRef)}
    ids = db.terms.intern(ctx, sorted(iris))  # a derivation is a write: its terms intern
    out: dict[tuple[int, int, bytes], tuple[Row, str]] = {}
    for (s, p, o), family in found.family.items():
        v = values.ref(ids[str(o)]) if isinstance(o, URIRef) else spelled[o]
        row: Row = (ids[str(s)], ids[str(p)], v, values.digest(v), values.ref_id(v), values.numeric(v))
        out[(row[0], row[1], v)] = (row, family)
    return out


def materialise(
    db: Database, ctx: WriteContext, ax: Axioms, ts: str, *, retract_stale: bool
) -> dict[str, int]:
    """Assert the new entailments of ``ax`` into ROOT's companion; the per-family counts of what
    was written (``retracted`` too with ``retract_stale``)."""
    head = graph_registry.head_of(ctx.conn, ROOT)
    triples, spelled = _premises(db, ctx, ax)
    found = entail(ax, triples)
    wanted = _rows(db, ctx, found, spelled)
    gid, created = graph_registry.register(db, ctx, COMPANION, created_at=ts, actor=ACTOR)
    held = rule_eval.claims_of_source(ctx, gid, SOURCE)
    new = {key: item for key, item in wanted.items() if key not in held}
    stale = [claim for key, claim in held.items() if key not in wanted] if retract_stale else []
    counts = count(family for _row, family in new.values())
    retracted = 0
    if new or stale:
        tx = writes.open_transaction(ctx, timestamp=ts, actor=ACTOR, source=SOURCE, graph=gid)
        if stale:
            retracted = writes.close_claims(ctx, tx, claim_ids=stale)
        writes.assert_rows(ctx, tx, [row for row, _f in new.values()], ts)
    bookkeeping(db, ctx, COMPANION, gid, created, head, ts)  # derivedAsOfTx; the rules' notes stay
    if retract_stale:
        counts["retracted"] = retracted
    return counts
