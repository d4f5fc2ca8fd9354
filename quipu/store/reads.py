"""Read services over a ``TemporalView``: cord, unravel, entity, history, transactions, stats,
and the statement rows other readers (export, the rdflib view) build on. One snapshot each.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Connection, func, or_, select

from quipu.errors import InvalidField, NotFound
from quipu.store import graph_scope, values
from quipu.store.database import Database
from quipu.store.events import read_events
from quipu.store.schema import (
    META_IRI,
    OP_ASSERT,
    ROOT,
    ROOT_IRI,
    facts,
    graphs,
    terms,
    transaction_auth,
    transactions,
)
from quipu.store.views import TemporalView, primary, visible

RDF_TYPE = values.RDF + "type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


def clamp_i64(n: int) -> int:
    """A request integer bounded to what the database can bind (larger values mean "all")."""
    return max(I64_MIN, min(I64_MAX, n))


def read_point_tx(tx: int | None) -> int | None:
    """A transaction read point past every id (above 2^63-1) is the same read point as 2^63-1,
    which the database can bind; anything else is left for ``TemporalView.at`` to check."""
    if isinstance(tx, int) and not isinstance(tx, bool) and tx > I64_MAX:
        return I64_MAX
    return tx


def resolve_graph(db: Database, conn: Connection, iri: str | None) -> int | None:
    """A graph IRI → its id for reading: ROOT for none/ROOT's IRI, None when unknown."""
    if iri is None or iri == "" or iri == ROOT_IRI:
        return ROOT
    gid = db.terms.lookup(conn, (iri,)).get(iri)
    if gid is None:
        return None
    known = conn.execute(select(graphs.c.g).where(graphs.c.g == gid)).first()
    return gid if known is not None else None


def dictionary_generation(conn: Connection) -> tuple[int, int]:
    """Changes whenever a term or a graph is added: compiled queries that looked up an unknown
    IRI or the list of named graphs are only valid while it stays the same."""
    row = conn.execute(
        select(
            select(func.max(terms.c.id)).scalar_subquery(),
            select(func.count()).select_from(graphs).scalar_subquery(),
        )
    ).one()
    return int(row[0] or 0), int(row[1] or 0)


def named_graph_ids(conn: Connection, db: Database) -> list[int]:
    """Every registered graph except ROOT, the meta-graph and frozen graphs (the range of
    ``GRAPH ?g``: a frozen graph is read only by naming it, so silence never widens)."""
    meta = db.terms.lookup(conn, (META_IRI,)).get(META_IRI)
    query = select(graphs.c.g).where(graphs.c.g != ROOT, graphs.c.lifecycle.is_(None))
    rows = conn.execute(query.order_by(graphs.c.g))
    return [int(row[0]) for row in rows if row[0] != meta]


def statement_rows(
    conn: Connection, view: TemporalView, extra: Iterable[Any] = ()
) -> list[tuple[int, int, bytes]]:
    """Distinct visible (e, a, v) in the view (claims collapse to statements, DM §6.2)."""
    c = facts.c
    query = select(c.e, c.a, c.v).distinct().where(view.where(facts), *extra)
    return [(int(row[0]), int(row[1]), bytes(row[2])) for row in conn.execute(query)]


def subject_statement_rows(
    conn: Connection, view: TemporalView, subject: int
) -> list[tuple[int, int, bytes]]:
    """The visible statements whose subject is the term ``subject``."""
    return statement_rows(conn, view, [facts.c.e == subject])


def group_statement_rows(
    conn: Connection,
    view: TemporalView,
    *,
    group_predicates: Iterable[int],
    group_id: str,
    generated_by: int | None,
) -> list[tuple[int, int, bytes]]:
    """Visible statements about the subjects whose value under one of ``group_predicates`` is the
    string ``group_id`` (episode activities, DM §9.3), and about the subjects linked to one of
    them by ``generated_by`` (the entities those activities generated)."""
    enc = values.string(group_id)
    act = facts.alias("act")
    members = select(act.c.e).where(
        view.where(act), act.c.a.in_(list(group_predicates)), act.c.vh == values.digest(enc), act.c.v == enc
    )
    subjects: list[Any] = [facts.c.e.in_(members)]
    if generated_by is not None:
        gen = facts.alias("gen")
        generated = select(gen.c.e).where(view.where(gen), gen.c.a == generated_by, gen.c.v_ref.in_(members))
        subjects.append(facts.c.e.in_(generated))
    return statement_rows(conn, view, [or_(*subjects)])


def entity_fact_rows(
    conn: Connection, view: TemporalView, entities: Iterable[int]
) -> list[tuple[int, int, bytes, int]]:
    """``(e, a, v, tx)`` of every visible claim about these subjects, by subject, predicate term
    id, transaction and row (the order entity texts are built in, tools-search §3.2)."""
    c = facts.c
    query = (
        select(c.e, c.a, c.v, c.tx)
        .where(view.where(facts), c.e.in_(list(entities)))
        .order_by(c.e, c.a, c.tx, c.id)
    )
    return [(int(r[0]), int(r[1]), bytes(r[2]), int(r[3])) for r in conn.execute(query)]


def subjects_with_facts(conn: Connection, view: TemporalView) -> list[int]:
    """Every term that is the subject of a visible claim, ascending."""
    query = select(facts.c.e).distinct().where(view.where(facts)).order_by(facts.c.e)
    return [int(row[0]) for row in conn.execute(query)]


def statement_ids(rows: Iterable[tuple[int, int, bytes]]) -> set[int]:
    ids: set[int] = set()
    for e, a, v in rows:
        ids.add(e)
        ids.add(a)
        ref = values.ref_id(v)
        if ref is not None:
            ids.add(ref)
    return ids


def events(db: Database, *, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
    """Semantic events after an offset, oldest first, in the wire envelope (DM §11.1)."""
    with db.read() as conn:
        return read_events(conn, after=after, limit=limit)


# -- cord ------------------------------------------------------------------------------------


def cord(
    db: Database,
    *,
    type: str | None = None,
    predicate: str | None = None,
    limit: int = 100,
    max_rows: int = 10_000,
) -> dict[str, Any]:
    """List ROOT entities, optionally of one asserted type or using one predicate."""
    if type is not None:
        values.check_iri(type, "type")
    if predicate is not None:
        values.check_iri(predicate, "predicate")
    limit = max(1, min(int(limit), max_rows))
    view = TemporalView()
    c = facts.c
    with db.read() as conn:
        graph_scope.enforce(db, conn, (ROOT,))  # ROOT is read: the label floor applies
        subjects = select(c.e).distinct().where(view.where(facts))
        if type is not None:  # type wins over predicate (original behaviour)
            ids = db.terms.lookup(conn, (RDF_TYPE, type))
            if len(ids) < 2:
                return {"entities": [], "count": 0}
            subjects = subjects.where(c.a == ids[RDF_TYPE], c.v_ref == ids[type])
        elif predicate is not None:
            pid = db.terms.lookup(conn, (predicate,)).get(predicate)
            if pid is None:
                return {"entities": [], "count": 0}
            subjects = subjects.where(c.a == pid)
        chosen = [int(row[0]) for row in conn.execute(subjects)]
        names = db.terms.iris(conn, chosen)
        chosen = sorted(chosen, key=names.__getitem__)[:limit]
        rows = statement_rows(conn, view, [c.e.in_(chosen)]) if chosen else []
        iri_of = db.terms.iris(conn, statement_ids(rows))
    by_entity: dict[int, list[tuple[str, bytes]]] = {e: [] for e in chosen}
    for e, a, v in rows:
        by_entity[e].append((iri_of[a], v))
    entities = []
    for e in chosen:
        facts_out = [
            {"predicate": p, "value": values.to_json(v, iri_of)}
            for p, v in sorted(by_entity[e], key=lambda pv: (pv[0], _value_key(pv[1], iri_of)))
        ]
        entities.append({"iri": iri_of[e], "facts": facts_out})
    return {"entities": entities, "count": len(entities)}


def _value_key(v: bytes, iri_of: dict[int, str]) -> tuple[str, ...]:
    """Values in a stable order: references by IRI first, then literals by lexical form."""
    d = values.decode(v)
    if d.kind == "ref":
        return ("0", iri_of[d.value])
    if d.kind == "bytes":
        return ("2", v.hex())
    return ("1", d.lexical, d.datatype or "", d.lang or "")


# -- unravel ---------------------------------------------------------------------------------


def unravel(db: Database, *, tx: int | None = None, valid_at: str | None = None) -> dict[str, Any]:
    """Every ROOT claim visible at a transaction and/or valid instant (one row per claim)."""
    if tx is None and valid_at is None:
        raise InvalidField("unravel needs 'tx' or 'valid_at' (or both)", field="tx")
    tx = read_point_tx(tx)
    graph_scope.refuse_tx_travel(db, tx)
    view = TemporalView.at(as_of_tx=tx, valid_at=valid_at)
    c = facts.c
    query = select(c.e, c.a, c.v, c.valid_from, c.valid_to, c.tx, c.retracted_tx, c.id).where(
        view.where(facts)
    )
    with db.read() as conn:
        graph_scope.enforce(db, conn, (ROOT,))  # ROOT is read: the label floor applies
        rows = conn.execute(query).all()
        iri_of = db.terms.iris(conn, statement_ids((r.e, r.a, bytes(r.v)) for r in rows))
    rows = sorted(rows, key=lambda r: (iri_of[r.e], iri_of[r.a], r.tx, r.id))
    out = [
        {
            "entity": iri_of[r.e],
            "predicate": iri_of[r.a],
            "value": values.to_json(bytes(r.v), iri_of),
            "valid_from": r.valid_from,
            "valid_to": r.valid_to,
            "tx": r.tx,
            "retracted_tx": r.retracted_tx,
        }
        for r in rows
    ]
    return {"facts": out, "count": len(out)}


# -- entity ----------------------------------------------------------------------------------


def entity(db: Database, iri: str, *, expanded: bool = False) -> dict[str, Any]:
    """The current ROOT description of one subject as JSON-LD with full IRIs as keys."""
    values.check_iri(iri, "iri", blank=True)
    view = TemporalView()
    doc: dict[str, Any] = {"@id": iri}
    with db.read() as conn:
        graph_scope.enforce(db, conn, (ROOT,))  # ROOT is read: the label floor applies
        tid = db.terms.lookup(conn, (iri,)).get(iri)
        if tid is None:
            return doc
        rows = statement_rows(conn, view, [facts.c.e == tid])
        iri_of = db.terms.iris(conn, statement_ids(rows))
        labels: dict[int, list[bytes]] = {}
        refs = {r for _e, _a, v in rows if (r := values.ref_id(v)) is not None}
        label_id = db.terms.lookup(conn, (RDFS_LABEL,)).get(RDFS_LABEL)
        if expanded and refs and label_id is not None:
            c = facts.c
            for e, _a, v in statement_rows(conn, view, [c.e.in_(refs), c.a == label_id]):
                labels.setdefault(e, []).append(v)
            label_refs = {r for vs in labels.values() for v in vs if (r := values.ref_id(v)) is not None}
            iri_of.update(db.terms.iris(conn, label_refs - iri_of.keys()))
    grouped: dict[str, list[Any]] = {}
    for _e, a, v in sorted(rows, key=lambda r: (iri_of[r[1]], _value_key(r[2], iri_of))):
        pred = iri_of[a]
        ref = values.ref_id(v)
        if pred == RDF_TYPE and ref is not None:
            grouped.setdefault("@type", []).append(iri_of[ref])
            continue
        grouped.setdefault(pred, []).append(_jsonld_value(v, iri_of, labels.get(ref) if ref else None))
    for key, items in grouped.items():
        doc[key] = items[0] if len(items) == 1 else items
    return doc


def _jsonld_value(v: bytes, iri_of: dict[int, str], labels: list[bytes] | None) -> Any:
    d = values.decode(v)
    if d.kind == "ref":
        node: dict[str, Any] = {"@id": iri_of[d.value]}
        if labels:
            # JSON-LD value forms, in value order, like every other property of the document
            texts = [
                _jsonld_value(x, iri_of, None) for x in sorted(labels, key=lambda x: _value_key(x, iri_of))
            ]
            node[RDFS_LABEL] = texts[0] if len(texts) == 1 else texts
        return node
    if d.kind == "float" and not math.isfinite(d.value):
        return {"@value": d.lexical, "@type": d.datatype}  # INF/NaN are not JSON numbers
    if d.kind in ("str", "int", "float", "bool"):
        return values.to_json(v, iri_of)
    if d.kind == "lang":
        return {"@value": d.lexical, "@language": d.lang}
    if d.kind == "typed":
        return {"@value": d.lexical, "@type": d.datatype}
    return "[binary]"


# -- entity history ---------------------------------------------------------------------------


def entity_history(db: Database, iri: str) -> dict[str, Any]:
    """Every ROOT fact-log row with ``iri`` as subject: claims and retraction records."""
    if not isinstance(iri, str) or not iri:
        raise InvalidField("missing 'iri' parameter", field="iri")
    c = facts.c
    with db.read() as conn:
        graph_scope.enforce(db, conn, (ROOT,))  # ROOT is read: the label floor applies
        tid = db.terms.lookup(conn, (iri,)).get(iri)
        if tid is None:
            raise NotFound(f"entity not found: {iri}", field="iri")
        rows = conn.execute(
            select(c.id, c.e, c.a, c.v, c.tx, c.valid_from, c.valid_to, c.op).where(
                c.g == ROOT, c.e == tid, c.op.in_((OP_ASSERT, 0))
            )
        ).all()
        iri_of = db.terms.iris(conn, statement_ids((r.e, r.a, bytes(r.v)) for r in rows))
    rows = sorted(rows, key=lambda r: (r.tx, iri_of[r.a], r.id))
    history = [
        {
            "op": "assert" if r.op == OP_ASSERT else "retract",
            "predicate": iri_of[r.a],
            "value": values.to_json(bytes(r.v), iri_of),
            "tx": r.tx,
            "valid_from": r.valid_from,
            "valid_to": r.valid_to,
        }
        for r in rows
    ]
    return {"iri": iri, "history": history, "count": len(history)}


# -- transactions ----------------------------------------------------------------------------


def transaction_log(db: Database, *, since: int | None = 0, limit: int | None = 1000) -> dict[str, Any]:
    """Transaction metadata with ``id > since``, oldest first; ``limit`` None reads them all."""
    t, auth = transactions.c, transaction_auth.c
    query = (
        select(t.id, t.timestamp, t.actor, t.source, auth.principal, auth.credential_id, auth.auth_class)
        .select_from(transactions.outerjoin(transaction_auth, auth.tx_id == t.id))
        .where(t.id > clamp_i64(since or 0))
        .order_by(t.id)
    )
    if limit is not None:
        query = query.limit(max(1, min(int(limit), 10_000)))
    with db.read() as conn:
        rows = conn.execute(query).all()
    out = [
        {
            "id": r.id,
            "timestamp": r.timestamp,
            "actor": r.actor,
            "source": r.source,
            "authenticated": None
            if r.principal is None
            else {"principal": r.principal, "credential_id": r.credential_id, "auth_class": r.auth_class},
        }
        for r in rows
    ]
    return {"transactions": out, "count": len(out)}


# -- fragments -------------------------------------------------------------------------------

FRAGMENT_PAGE_MAX = 1000
_OBJECT_IRI_SCHEMES = ("http://", "https://", "urn:")


def fragments(
    db: Database,
    *,
    subject: str | None = None,
    predicate: str | None = None,
    object: str | None = None,
    page: int = 1,
    page_size: int = 100,
) -> dict[str, Any]:
    """One page of the Triple Pattern Fragment ``subject predicate object`` over ROOT's current
    statements (tools-core §1.8). An absent or empty term is a wildcard; ``object`` is an IRI
    when it starts with http://, https:// or urn:, else a plain string literal matched by its
    encoding. Counting and paging run in SQL, ordered by subject, predicate, then object."""
    subject, predicate, object = subject or None, predicate or None, object or None
    if subject is not None:
        values.check_iri(subject, "subject", blank=True)
    if predicate is not None:
        values.check_iri(predicate, "predicate")
    page = max(1, page)
    page_size = max(1, min(page_size, FRAGMENT_PAGE_MAX))
    out: dict[str, Any] = {"triples": [], "totalCount": 0, "page": page, "pageSize": page_size}
    object_iri = object if object is not None and object.startswith(_OBJECT_IRI_SCHEMES) else None
    c = facts.c
    # Current state of one graph: exactly one live claim per statement has dup = 0 (schema.py),
    # so counting claims with it counts distinct statements without a DISTINCT.
    conds: list[Any] = [TemporalView().where(facts), primary(facts)]
    with db.read() as conn:
        graph_scope.enforce(db, conn, (ROOT,))  # ROOT is read: the label floor applies
        named = [x for x in (subject, predicate, object_iri) if x is not None]
        ids = db.terms.lookup(conn, named)
        if len(ids) < len(set(named)):
            return out  # an IRI the store has never seen matches nothing (reads never intern)
        if subject is not None:
            conds.append(c.e == ids[subject])
        if predicate is not None:
            conds.append(c.a == ids[predicate])
        if object_iri is not None:
            ref = values.ref(ids[object_iri])
            conds += [c.vh == values.digest(ref), c.v_ref == ids[object_iri]]
        elif object is not None:
            enc = values.string(object)
            conds += [c.vh == values.digest(enc), c.v == enc]
        total = int(conn.execute(select(func.count()).select_from(facts).where(*conds)).scalar_one())
        out["totalCount"] = total
        offset = (page - 1) * page_size
        if offset >= total:
            return out
        s, p, o = terms.alias("s"), terms.alias("p"), terms.alias("o")
        query = (
            select(c.v, s.c.iri, p.c.iri, o.c.iri)
            .select_from(facts.join(s, s.c.id == c.e).join(p, p.c.id == c.a).outerjoin(o, o.c.id == c.v_ref))
            .where(*conds)
            # references (by IRI) before literals (by encoding): a total, repeatable order
            .order_by(s.c.iri, p.c.iri, o.c.iri.is_(None), o.c.iri, c.v)
            .limit(page_size)
            .offset(offset)
        )
        rows = conn.execute(query).all()
    triples = []
    for row in rows:
        v = bytes(row[0])
        ref_id = values.ref_id(v)
        obj = values.to_json(v, {} if ref_id is None else {ref_id: str(row[3])})
        triples.append({"subject": str(row[1]), "predicate": str(row[2]), "object": obj})
    out["triples"] = triples
    return out


# -- stats -----------------------------------------------------------------------------------


class _PerHead:
    """One value of a store, recomputed only when the transaction head has moved."""

    def __init__(self, compute: Callable[[Connection, int], dict[str, Any]]) -> None:
        self._compute = compute
        self._lock = threading.Lock()
        self._head = -1
        self._value: dict[str, Any] = {}

    def get(self, db: Database) -> dict[str, Any]:
        with db.read() as conn:
            head = db.head_tx(conn)
            with self._lock:
                if head == self._head:
                    return dict(self._value)
            value = self._compute(conn, head)
        with self._lock:
            self._head, self._value = head, value
        return dict(value)


def _counts(conn: Connection, head: int) -> dict[str, Any]:
    live = (
        select(facts.c.e, facts.c.a, facts.c.v)
        .distinct()
        .where(visible(facts, None, None), facts.c.g == ROOT)
        .subquery()
    )
    row = conn.execute(
        select(func.count(), func.count(live.c.e.distinct()), func.count(live.c.a.distinct()))
    ).one()
    return {"facts": int(row[0]), "entities": int(row[1]), "predicates": int(row[2])}


def _time_span(conn: Connection, head: int) -> dict[str, Any]:
    c = facts.c
    row = conn.execute(
        select(func.min(c.valid_from), func.max(c.valid_from), func.max(c.valid_to)).where(
            c.g == ROOT, c.op == OP_ASSERT
        )
    ).one()
    # Stored instants share one normalised form (times.normalise_valid_at), so text order is time
    # order and min/max need no parsing.
    latest = max((t for t in (row[1], row[2]) if t is not None), default=None)
    return {"head_tx": int(head), "valid_time": {"earliest": row[0], "latest": latest}}


def stats_cache() -> _PerHead:
    """ROOT counts: distinct statements, subjects and predicates of the current state."""
    return _PerHead(_counts)


def time_span_cache() -> _PerHead:
    """Where ROOT's history lies, for a time slider: the transaction head, and the earliest and
    latest valid-time instants any ROOT assertion names (a valid_from, or a closed valid_to);
    one scan of ROOT's assertions."""
    return _PerHead(_time_span)
