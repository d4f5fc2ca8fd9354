"""Overlays: scratch layers bound once to a committed parent (tools-graphs-governance §2).

Overlay rows are ordinary fact rows of the overlay graph. An assert is an assert claim, a
retract closes the overlay's own assert, and a tombstone is a row of its own op saying "this
exact triple of the parent is absent in my view". The parent is never written (rule OW-4).
"""

from __future__ import annotations

import json
from typing import Any, Final

from sqlalchemy import Connection

from quipu import times
from quipu.errors import InvalidField
from quipu.identity import Authenticated
from quipu.store import graph_facts, graph_registry, graph_scope, values
from quipu.store.database import Database
from quipu.store.graph_facts import Key
from quipu.store.graph_registry import GraphRecord
from quipu.store.schema import META_IRI, OP_TOMBSTONE, ROOT, ROOT_IRI
from quipu.store.writes import is_companion, open_transaction

OPS: Final = ("assert", "retract", "tombstone")
PRECEDENCE: Final = ("nearest", "governed")


def create(
    db: Database, overlay: object, parent_branch: object = None, *, auth: Authenticated | None = None
) -> dict[str, Any]:
    """Register ``overlay`` over ``parent_branch`` (ROOT when absent); bind-once (rule OC-1)."""
    if overlay is None:
        raise InvalidField("missing 'overlay'", field="overlay")
    iri = values.check_iri(overlay, "overlay")
    if graph_registry.is_reserved(iri) or is_companion(iri):
        raise InvalidField(f"'overlay' <{iri}> is a reserved graph IRI", field="overlay")
    parent_iri = ROOT_IRI if parent_branch is None else values.check_iri(parent_branch, "parent_branch")
    if parent_iri == iri:
        raise InvalidField("an overlay cannot be its own parent", field="parent_branch")
    if parent_iri == META_IRI:
        raise InvalidField("the meta-graph cannot be an overlay's parent", field="parent_branch")
    with db.write(auth) as ctx:
        pid = ROOT if parent_iri == ROOT_IRI else db.terms.lookup_in(ctx, (parent_iri,)).get(parent_iri)
        parent = None if pid is None else graph_registry.record(ctx.conn, pid)
        if parent is None:
            raise InvalidField(f"parent <{parent_iri}> is not a registered graph", field="parent_branch")
        if parent.cls != "committed":  # rule OC-2: overlays never nest
            raise InvalidField(
                f"parent <{parent_iri}> is an overlay: an overlay must extend a committed graph",
                field="parent_branch",
            )
        gid, _ = graph_registry.register(db, ctx, iri, cls="overlay", parent=parent.g, created_at=times.now())
        rec = graph_registry.record(ctx.conn, gid)
        assert rec is not None
        if rec.cls != "overlay" or rec.parent != parent.g:
            raise InvalidField(
                f"<{iri}> is already registered as {'an overlay' if rec.cls == 'overlay' else 'a committed'} graph"
                + (f" over graph {rec.parent}" if rec.cls == "overlay" else "")
                + "; an overlay cannot rebind",
                field="overlay",
            )
    return {"g": gid, "parent_branch": parent.g}


def _overlay(db: Database, conn: Connection, iri: str) -> GraphRecord:
    gid, rec = graph_registry.lookup(db, conn, iri)
    if gid is None:
        raise InvalidField(f"overlay <{iri}> is not interned", field="overlay", reason="not_found")
    if rec is None or rec.cls != "overlay":
        raise InvalidField(
            f"<{iri}> is not a registered overlay (committed graphs are written with quipu_knot)",
            field="overlay",
        )
    return rec


def write(
    db: Database,
    *,
    overlay: object,
    op: object,
    subject: object,
    predicate: object,
    object: object,
    timestamp: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    """One overlay primitive in a transaction of its own (rules OW-1..OW-4)."""
    for name, given in (("overlay", overlay), ("op", op), ("subject", subject), ("predicate", predicate)):
        if given is None:
            raise InvalidField(f"missing '{name}'", field=name)
    if op not in OPS:
        raise InvalidField(f"'op' must be one of {', '.join(OPS)}, got {op!r}", field="op")
    iri = values.check_iri(overlay, "overlay")
    s = values.check_iri(subject, "subject", blank=True)
    p = values.check_iri(predicate, "predicate")
    parsed = values.from_json(object, "object")  # a bare string is a literal, never an edge (OW-1)
    o: str | bytes
    if parsed.iri is not None:
        o = parsed.iri
    else:
        assert parsed.encoded is not None
        o = parsed.encoded
    start = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        rec = _overlay(db, ctx.conn, iri)
        source = "overlay-tombstone" if op == "tombstone" else "overlay"
        tx = open_transaction(ctx, timestamp=start, actor=None, source=source, graph=rec.g)
        if op == "assert":
            graph_facts.assert_triples(db, ctx, tx, [(s, p, o)], start)
        elif op == "retract":
            graph_facts.close_triple(db, ctx, tx, (s, p, o))
        else:  # at most one active tombstone per triple; the transaction is opened anyway (OW-3)
            graph_facts.tombstone(db, ctx, tx, (s, p, o), start)
    return {"tx_id": tx.id}


def compose(db: Database, overlay: object, precedence: object = None) -> dict[str, Any]:
    """The overlay stacked on its parent, current state only; never writes (rule CP-4)."""
    if overlay is None:
        raise InvalidField("missing 'overlay'", field="overlay")
    mode = "nearest" if precedence is None else precedence
    if mode not in PRECEDENCE:
        raise InvalidField(
            f"'precedence' must be nearest or governed, got {precedence!r}", field="precedence"
        )
    iri = values.check_iri(overlay, "overlay")
    with db.read() as conn:
        rec = _overlay(db, conn, iri)
        assert rec.parent is not None
        # A read of both graphs: the label floor applies, and a frozen parent reads from its pack.
        graph_scope.enforce(db, conn, (rec.g, rec.parent))
        mine = graph_facts.live(conn, rec.g)
        parent = graph_facts.live(conn, rec.parent)
        hidden = graph_facts.live(conn, rec.g, OP_TOMBSTONE)
        result = nearest(mine, parent, hidden) if mode == "nearest" else governed(mine, parent, hidden)
        ids = {t for e, a, v in result for t in (e, a, values.ref_id(v)) if t is not None}
        iri_of = db.terms.iris(conn, ids)
    triples = [
        {"subject": iri_of[e], "predicate": iri_of[a], "object": values.to_json(v, iri_of)}
        for e, a, v in result
    ]
    triples.sort(key=lambda t: (t["subject"], t["predicate"], json.dumps(t["object"], sort_keys=True)))
    return {"count": len(triples), "triples": triples, "precedence": mode}


def nearest(mine: set[Key], parent: set[Key], hidden: set[Key]) -> set[Key]:
    """Every overlay assert; every parent assert the overlay does not tombstone (a tombstone
    never hides the overlay's own asserts); deduplicated on (s, p, o)."""
    return mine | (parent - hidden)


def governed(mine: set[Key], parent: set[Key], hidden: set[Key]) -> set[Key]:
    """The parent always wins: every parent assert, plus overlay asserts on slots (s, p) the
    parent does not claim and the overlay has not tombstoned."""
    claimed = {(e, a) for e, a, _ in parent}
    return parent | {k for k in mine if (k[0], k[1]) not in claimed and k not in hidden}
