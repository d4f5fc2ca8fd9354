"""The semantic event log (DM §11.1): events written inside the transaction they describe.

``emit`` runs at the end of every write transaction, before the commit, so offset order is commit
order and a rolled-back write leaves no event. Only ROOT transactions emit semantic events, and
only for logical transitions: a claim that made its statement visible (a live claim written with
``dup = 0``) or a retraction after which no live claim of the statement remains. Ownership-only
claims and idempotent re-ingests therefore emit nothing.

``record_refusal`` appends ``write.refused`` in a transaction of its own, after the refused write
rolled back (an event inside it would vanish with it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from json.encoder import encode_basestring
from typing import Any, Final

from sqlalchemy import (
    CompoundSelect,
    Connection,
    Select,
    bindparam,
    exists,
    insert,
    select,
    text,
    union_all,
)

from quipu import times
from quipu.store.bulk_events import LOGICAL, LargeTransaction
from quipu.store.context import Refusal, TxInfo, WriteContext, head_tx
from quipu.store.dialect import Dialect
from quipu.store.schema import ROOT, ROOT_IRI, events, facts, graphs, schema_terms
from quipu.store.terms import TermDictionary

# (kind, term) pairs known to be in schema_terms: only ever grows, so never stale.
SeenTerms = set[tuple[str, str]]

SCHEMA = "quipu.event/v1"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
EPISODE_SOURCE = "episode:"
REASON_LIMIT = 500

log = logging.getLogger("quipu.events")


# Logical transitions of one ROOT transaction, in physical write order (DM §11.1).
_TRANSITIONS = text(f"SELECT f.op, f.e, f.a, f.v_ref FROM facts f WHERE {LOGICAL} ORDER BY f.id")
_BATCH = 5000  # transitions above which the database writes the entity and edge events

_INSERT_EVENT = insert(events).values(
    {c: bindparam(c) for c in ("type", "ts", "subject", "group_id", "tx_id", "payload")}
)
_INSERT_NEW = _INSERT_EVENT.returning(events.c.event_offset)
_INSERT_TERM = insert(schema_terms).values({c: bindparam(c) for c in ("term", "kind", "first_offset")})
_EVENT_COLUMNS = ("type", "ts", "subject", "group_id", "tx_id", "payload")
_WIDTHS = (1, 2, 4, 8, 16, 32, 64)  # IN-list sizes: a few prepared statements serve every write


# Built on first use and kept (``Dialect.prepared`` caches by statement identity): the widest
# ones take tens of milliseconds to construct, which every process would pay at import.
@cache
def _seen_statement(width: int) -> CompoundSelect[Any]:
    """Which of ``width`` terms were the subject of a fact row before ``:tx``, in any graph.

    One EXISTS per candidate stops at the first row, so a subject with a long history costs one
    index probe per graph (the g IN list lets the (g, e, ...) index answer it without a scan).
    """
    every_graph = select(graphs.c.g).scalar_subquery()  # ROOT (0) is a seeded row
    probes: list[Select[Any]] = []
    for i in range(width):
        f = facts.alias(f"f{i}")
        earlier = exists().where(
            f.c.g.in_(every_graph), f.c.e == bindparam(f"e{i}"), f.c.tx < bindparam("tx")
        )
        probes.append(select(bindparam(f"e{i}").label("e")).where(earlier))
    return union_all(*probes)


@cache
def _known_statement(width: int) -> Select[Any]:
    t = schema_terms.c
    return select(t.term, t.kind).where(t.term.in_([bindparam(f"t{i}") for i in range(width)]))


def _padded(values: list[Any], prefix: str, pad: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """Chunks of ``values`` as (width, params), each padded up to a prepared width."""
    top = _WIDTHS[-1]
    for i in range(0, len(values), top):
        chunk = values[i : i + top]
        width = next(w for w in _WIDTHS if w >= len(chunk))
        chunk = chunk + [pad] * (width - len(chunk))
        yield width, {f"{prefix}{k}": v for k, v in enumerate(chunk)}


_Row = tuple[str, str, str | None, str | None, int, str]


_JSON_BOOL: Final = {True: "true", False: "false"}


def _row(
    kind: str, ts: str, subject: str | None, group: str | None, tx: int, payload: dict[str, Any] | str
) -> _Row:
    """An event row; ``payload`` is a dict, or its JSON text already written as json.dumps would."""
    if not isinstance(payload, str):
        payload = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return (kind, ts, subject, group, tx, payload)


def emit(ctx: WriteContext, terms: TermDictionary, seen: SeenTerms) -> None:
    """Append the events of the writes made in ``ctx`` (called just before the commit)."""
    first_tx = min((tx.id for tx in ctx.transactions), default=0)
    for tx in ctx.transactions:
        if tx.graph == ROOT:
            _emit_root(ctx, terms, seen, tx, first_tx)
    if ctx.advisories:
        tx_id = ctx.transactions[-1].id if ctx.transactions else head_tx(ctx.conn)
        ts = ctx.transactions[-1].timestamp if ctx.transactions else times.now()
        group = ctx.episode.group_id if ctx.episode is not None else None
        rows = [_row(a.type, a.ts or ts, a.subject, group, tx_id, a.payload) for a in ctx.advisories]
        ctx.dialect.insert_tuples(ctx.conn, events, _EVENT_COLUMNS, rows)


def _emit_root(
    ctx: WriteContext, terms: TermDictionary, seen_terms: SeenTerms, info: TxInfo, first_tx: int
) -> None:
    """Events of one ROOT transaction, in the order of DM §11.1.

    A transaction of up to ``_BATCH`` transitions is read into Python and its events are built
    there; a larger one (a bulk load) has its entity and edge events written by the database
    (``bulk_events``), so it never holds them in memory and does no work per claim here.
    """
    tx = info.id
    conn, prepared = ctx.conn, ctx.dialect.prepared
    rdf_type = terms.lookup_in(ctx, (RDF_TYPE,)).get(RDF_TYPE)
    before = first_tx or tx
    cursor = prepared(_TRANSITIONS).run(conn, {"tx": tx})
    batch = cursor.fetchmany(_BATCH + 1)
    cursor.close()
    if not batch:
        return
    if len(batch) > _BATCH:
        large = LargeTransaction(ctx, tx, rdf_type, before)
        shape = large.shape()
        out = _Pending(ctx)
        _head_events(ctx, terms, seen_terms, info, out, shape.transitions, large.asserted())
        out.flush()
        large.write(shape, info.timestamp, _group(ctx))
        return
    asserted: dict[tuple[bool, int], None] = {}  # (is type, term id) in first-appearance order
    touched: dict[int, None] = {}
    edges: list[tuple[int, int, int, int]] = []
    for op, e, a, ref in batch:
        touched[e] = None
        if op == 1:
            if a != rdf_type:
                asserted[(False, a)] = None
            elif ref is not None:
                asserted[(True, ref)] = None
        if ref is not None and a != rdf_type:
            edges.append((op, e, a, ref))
    out = _Pending(ctx)
    _head_events(ctx, terms, seen_terms, info, out, len(batch), list(asserted))
    ts, group = info.timestamp, _group(ctx)

    def add(kind: str, subject: str | None, payload: dict[str, Any] | str) -> None:
        out.add(_row(kind, ts, subject, group, tx, payload))

    # one look-up for every subject and object
    candidates = set(touched) | {ref for _op, _e, _a, ref in edges}
    seen = _seen_before(ctx, candidates - set(ctx.pending_terms.values()), before)
    iri = terms.iris_in(ctx, candidates | {a for _op, _e, a, _r in edges})
    for e in touched:
        add("entity.updated" if e in seen else "entity.added", iri[e], "{}")
    _add_edges(add, edges, iri, seen, seen)
    out.flush()


def _group(ctx: WriteContext) -> str | None:
    return ctx.episode.group_id if ctx.episode is not None else None


def _head_events(
    ctx: WriteContext,
    terms: TermDictionary,
    seen_terms: SeenTerms,
    info: TxInfo,
    out: _Pending,
    count: int,
    asserted: list[tuple[bool, int]],
) -> None:
    """episode.ingested, then type.new and predicate.new (DM §11.1 items 1 and 2)."""
    ts, tx, source, group = info.timestamp, info.id, info.source, _group(ctx)
    if source is not None and source.startswith(EPISODE_SOURCE):
        name = source[len(EPISODE_SOURCE) :]
        mark = ctx.episode
        subject = mark.activity if mark is not None and mark.name == name else None
        out.add(_row("episode.ingested", ts, subject, group, tx, {"name": name, "facts": count}))
    for kind, term in _new_schema_terms(ctx, terms, seen_terms, asserted):
        out.first_of(_row(f"{kind}.new", ts, term, group, tx, {f"{kind}_iri": term}), kind, term)


def _add_edges(
    add: Callable[[str, str | None, dict[str, Any] | str], None],
    edges: Sequence[tuple[int, int, int, int]],
    iri: dict[int, str],
    subject_seen: set[int],
    object_seen: set[int],
) -> None:
    # The payload text is assembled here, byte for byte what _row's json.dumps writes for the
    # same dict: a bulk load has an edge per reference statement, and json.dumps per edge cost
    # about a tenth of loading a million statements (measured).
    enc = encode_basestring
    texts = {e: enc(iri[e]) for _op, e, _a, _ref in edges}
    texts.update((a, enc(iri[a])) for _op, _e, a, _ref in edges)
    texts.update((ref, enc(iri[ref])) for _op, _e, _a, ref in edges)
    for op, e, a, ref in edges:
        payload = (
            f'{{"subject":{texts[e]},"predicate":{texts[a]},"object":{texts[ref]},'
            f'"subject_preexisting":{_JSON_BOOL[e in subject_seen]},'
            f'"object_preexisting":{_JSON_BOOL[ref in object_seen]}}}'
        )
        add("edge.added" if op == 1 else "edge.retracted", iri[e], payload)


class _Pending:
    """Event rows waiting to be inserted, in order, with one executemany per flush.

    A ``*.new`` event is inserted on its own (after what precedes it), because its offset
    becomes its term's ``first_offset``.
    """

    def __init__(self, ctx: WriteContext) -> None:
        self.ctx = ctx
        self.rows: list[_Row] = []

    def add(self, row: _Row) -> None:
        self.rows.append(row)

    def first_of(self, row: _Row, kind: str, term: str) -> None:
        self.flush()
        prepared = self.ctx.dialect.prepared
        cursor = prepared(_INSERT_NEW).run(self.ctx.conn, dict(zip(_EVENT_COLUMNS, row, strict=True)))
        offset = int(cursor.fetchone()[0])
        prepared(_INSERT_TERM).run(self.ctx.conn, {"term": term, "kind": kind, "first_offset": offset})

    def flush(self) -> None:
        if self.rows:
            self.ctx.dialect.insert_tuples(self.ctx.conn, events, _EVENT_COLUMNS, self.rows)
            self.rows = []


def _new_schema_terms(
    ctx: WriteContext, terms: TermDictionary, seen: SeenTerms, asserted: list[tuple[bool, int]]
) -> list[tuple[str, str]]:
    """(kind, term) seen for the first time in the store's life, in first-appearance order."""
    if not asserted:
        return []
    iri = terms.iris_in(ctx, {tid for _is_type, tid in asserted})
    wanted = [("type" if is_type else "predicate", iri[tid]) for is_type, tid in asserted]
    unknown = [key for key in wanted if key not in seen]
    if not unknown:
        return []
    names = sorted({term for _kind, term in unknown})
    known: set[tuple[str, str]] = set()
    for width, params in _padded(names, "t", ""):
        rows = ctx.dialect.prepared(_known_statement(width)).run(ctx.conn, params)
        known.update((str(kind), str(term)) for term, kind in rows)
    seen.update(known)  # committed long ago: safe to remember now
    fresh = [key for key in unknown if key not in known]
    ctx.schema_terms.extend(fresh)  # remembered after the commit
    return fresh


def _seen_before(ctx: WriteContext, ids: set[int], tx: int) -> set[int]:
    found: set[int] = set()
    for width, params in _padded(sorted(ids), "e", -1):
        params["tx"] = tx
        found.update(int(r[0]) for r in ctx.dialect.prepared(_seen_statement(width)).run(ctx.conn, params))
    return found


def record_refusal(conn: Connection, dialect: Dialect, refusal: Refusal, reason: str) -> None:
    """Append ``write.refused`` after the refused write rolled back; never masks the refusal."""
    try:
        with conn.begin():
            dialect.begin_write(conn)
            row = _row(
                "write.refused",
                refusal.timestamp or times.now(),
                refusal.graph or ROOT_IRI,
                None,
                head_tx(conn),
                {
                    "gate": refusal.gate,
                    "graph": refusal.graph or ROOT_IRI,
                    "actor": refusal.actor,
                    "source": refusal.source,
                    "reason": reason[:REASON_LIMIT],
                    "refused_datums": refusal.datums,
                },
            )
            conn.execute(_INSERT_EVENT, dict(zip(_EVENT_COLUMNS, row, strict=True)))
    except Exception:  # the caller's refusal is what the client must see
        log.exception("could not record write.refused")


def read_events(conn: Connection, *, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
    """Events after an offset, oldest first, in their wire envelope (DM §11.1)."""
    query = select(events).where(events.c.event_offset > after).order_by(events.c.event_offset)
    if limit is not None:
        query = query.limit(limit)
    return [
        {
            "schema": SCHEMA,
            "offset": int(r.event_offset),
            "type": r.type,
            "ts": r.ts,
            "subject": r.subject,
            "group_id": r.group_id,
            "tx_id": int(r.tx_id),
            "payload": json.loads(r.payload),
        }
        for r in conn.execute(query)
    ]
