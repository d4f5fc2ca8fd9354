"""The change feed's read: one page of whole transactions from the fact log (tools-core §1.10,
DM §5, §11.3).

A page is chosen transaction by transaction, then read row by row:

* its transactions are those with ``id > since`` that wrote at least one row in scope (any
  graph, or one exact graph), oldest first, at most ``limit`` of them; a transaction that wrote
  no rows never appears;
* every row of each chosen transaction in scope is served, ordered by transaction then row id,
  the physical write order, so a page never splits a transaction and each entity's records
  arrive in commit order;
* a page also stops taking transactions once the next one would carry it past ``max_records``
  records (``MAX_PAGE_RECORDS``), but its first transaction is always taken whole, however large:
  a page is never empty while transactions remain, and never splits one.

``sequence`` is a record's 0-based position among the rows of its transaction that the page
serves. Every transaction this store writes touches exactly one graph (DM §3 rule 6), so under a
graph filter that is also its position among all of the transaction's rows; the two could differ
only for an imported legacy transaction that spans graphs.

Everything is read in one snapshot, so the watermark is never behind the page. Reads of the
``row`` state (``new_row``) and of retraction bookkeeping are batched: one query per page for
the retractions, one per transaction (per 500 entities) for the states.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from sqlalchemy import Connection, and_, case, func, select

from quipu.errors import InvalidField, UnknownGraph
from quipu.store import graph_registry, graph_scope, values
from quipu.store.database import Database
from quipu.store.reads import clamp_i64
from quipu.store.schema import (
    OP_ASSERT,
    OP_RETRACT,
    OP_TOMBSTONE,
    ROOT,
    facts,
    transactions,
)
from quipu.store.search_reads import id_chunks
from quipu.store.views import visible

NEW_VALUES: Final = "new_values"
OLD_AND_NEW: Final = "old_and_new_values"
NEW_ROW: Final = "new_row"
CAPTURES: Final = (NEW_VALUES, OLD_AND_NEW, NEW_ROW)
# Records a page may hold before it stops taking transactions (its first one is always whole):
# 10 000 transactions of a large ingest each would otherwise make one page of millions of rows.
MAX_PAGE_RECORDS: Final = 50_000
_TX_BATCH: Final = 1_000  # transactions counted per query while a page is chosen
_OPS: Final = {OP_ASSERT: "assert", OP_RETRACT: "retract", OP_TOMBSTONE: "tombstone"}
_f = facts.c
_t = transactions.c


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    tx: int
    g: int
    e: int
    a: int
    v: bytes
    op: int


def read_page(
    db: Database,
    *,
    since: int,
    limit: int,
    capture: str,
    graph: str | None,
    max_records: int = MAX_PAGE_RECORDS,
) -> dict[str, Any]:
    """One page of the change feed (the caller has checked ``since``, ``limit`` and ``capture``)."""
    if capture == NEW_ROW and db.archives.mounted:
        # rule FZ-3: a pack holds other transactions' rows, so no as-of-transaction read is exact
        raise InvalidField(
            "capture=new_row reads each entity as of its transaction, and transaction-time reads "
            "are refused while an archive pack is mounted: use new_values or old_and_new_values, "
            "or thaw the frozen graphs first",
            field="capture",
            reason="archives_mounted",
        )
    with db.read() as conn:
        gid = None if graph is None else feed_graph(db, conn, graph)
        if gid is not None:
            graph_scope.enforce(db, conn, (gid,))  # label floor; a frozen graph's rows readable
        elif db.archives.mounted:
            db.archives.install_view(conn)  # the whole log: frozen graphs' rows too
        head = conn.execute(select(_t.id, _t.timestamp).order_by(_t.id.desc()).limit(1)).first()
        chosen = _page_transactions(conn, clamp_i64(since), limit, gid, max_records)
        records: list[dict[str, Any]] = []
        if chosen:
            rows = _rows(conn, clamp_i64(since), chosen[-1], gid)
            if gid is None:  # the floor applies to each graph the page reads
                graph_scope.enforce(db, conn, {r.g for r in rows})
            records = _records(db, conn, rows, chosen, capture)
    return {
        "records": records,
        # rule 2: an empty page leaves the cursor where it was, so it never moves backwards
        "next_tx": chosen[-1] if chosen else since,
        # rule 3: the newest transaction of the whole store, whatever the graph filter
        "watermark_tx": int(head.id) if head is not None else 0,
        "watermark_timestamp": head.timestamp if head is not None else None,
        "capture": capture,
    }


def feed_graph(db: Database, conn: Connection, iri: str) -> int:
    """The graph id an exact graph filter names: ROOT for its IRI (``urn:quipu:graph:root``, an
    alias designed here), a registered graph, or any graph some row was written to (a companion
    ``#inferred`` graph is one); anything else is refused, never read as an empty page."""
    if not iri:
        raise InvalidField("'graph' must be a graph IRI, not an empty string", field="graph")
    gid, registered = graph_registry.lookup(db, conn, iri)
    if gid is not None and (
        gid == ROOT
        or registered is not None
        or conn.execute(select(_f.g).where(_f.g == gid).limit(1)).first() is not None
    ):
        return gid
    raise UnknownGraph(f"unknown graph IRI: {iri}", field="graph")


def _page_transactions(
    conn: Connection, since: int, limit: int, gid: int | None, max_records: int
) -> list[int]:
    """The page's transactions: ids with rows in scope after ``since``, within both bounds."""
    chosen: list[int] = []
    total = 0
    after = since
    while len(chosen) < limit:
        want = min(_TX_BATCH, limit - len(chosen))
        query = select(_f.tx, func.count()).where(_f.tx > after)
        if gid is not None:
            query = query.where(_f.g == gid)
        batch = conn.execute(query.group_by(_f.tx).order_by(_f.tx).limit(want)).all()
        for row in batch:
            n = int(row[1])
            if chosen and total + n > max_records:
                return chosen
            chosen.append(int(row[0]))
            total += n
        if len(batch) < want:
            break
        after = chosen[-1]
    return chosen


def _rows(conn: Connection, since: int, last: int, gid: int | None) -> list[_Row]:
    """Every row in scope of the transactions in (since, last], in write order (rule 5)."""
    query = select(_f.id, _f.tx, _f.g, _f.e, _f.a, _f.v, _f.op).where(_f.tx > since, _f.tx <= last)
    if gid is not None:
        query = query.where(_f.g == gid)
    return [
        _Row(int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), bytes(r[5]), int(r[6]))
        for r in conn.execute(query.order_by(_f.tx, _f.id))
    ]


def _records(
    db: Database, conn: Connection, rows: Sequence[_Row], chosen: Sequence[int], capture: str
) -> list[dict[str, Any]]:
    meta = _transaction_meta(conn, chosen)
    retractions = _retractions(conn, [r for r in rows if r.op == OP_RETRACT])
    states = _states(conn, rows) if capture == NEW_ROW else {}
    ids: set[int] = {g for r in rows if (g := r.g) != ROOT}
    for r in rows:
        ids.update((r.e, r.a))
    for state in states.values():
        ids.update(a for a, _v in state)
    for v in _values(rows, states):
        ref = values.ref_id(v)
        if ref is not None:
            ids.add(ref)
    iri_of = db.terms.iris(conn, ids)
    out: list[dict[str, Any]] = []
    sequence, current = 0, -1
    for r in rows:
        if r.tx != current:
            sequence, current = 0, r.tx
        timestamp, actor, source = meta[r.tx]
        op = _OPS.get(r.op, "assert")
        record: dict[str, Any] = {
            "tx": r.tx,
            "sequence": sequence,
            "timestamp": timestamp,
            "actor": actor,
            "source": source,
            "op": op,
            "graph": "ROOT" if r.g == ROOT else iri_of[r.g],
            "entity": iri_of[r.e],
            "attribute": iri_of[r.a],
        }
        if r.op != OP_RETRACT:
            record["value"] = change_value(r.v, iri_of)
        else:
            if capture != NEW_VALUES:  # new_values identifies the fact but withholds its value
                record["old_value"] = change_value(r.v, iri_of)
            closed, still = retractions.get(r.id, (0, False))
            record["closed_claims"] = closed
            record["still_visible"] = still
        if capture == NEW_ROW:
            record["row"] = _row_json(states[(r.tx, r.g, r.e)], iri_of)
        out.append(record)
        sequence += 1
    return out


def _transaction_meta(
    conn: Connection, chosen: Iterable[int]
) -> dict[int, tuple[str, str | None, str | None]]:
    out: dict[int, tuple[str, str | None, str | None]] = {}
    for chunk in id_chunks(chosen):
        query = select(_t.id, _t.timestamp, _t.actor, _t.source).where(_t.id.in_(chunk))
        out.update({int(r[0]): (r[1], r[2], r[3]) for r in conn.execute(query)})
    return out


def _retractions(conn: Connection, retracts: Sequence[_Row]) -> dict[int, tuple[int, bool]]:
    """For each retraction record: how many claims its transaction closed, and whether another
    owner's claim keeps the statement visible right after that transaction (DM §5.3, §7)."""
    if not retracts:
        return {}
    r, c = facts.alias("r"), facts.alias("c")
    # visible() at the record's own transaction: the one temporal predicate (DM §6.2, §14.3)
    alive = visible(c, cast(Any, r.c.tx), None)
    same = and_(c.c.g == r.c.g, c.c.e == r.c.e, c.c.a == r.c.a, c.c.vh == r.c.vh, c.c.v == r.c.v)
    out: dict[int, tuple[int, bool]] = {}
    for chunk in id_chunks(row.id for row in retracts):
        query = (
            select(
                r.c.id,
                func.sum(case((and_(c.c.op == OP_ASSERT, c.c.retracted_tx == r.c.tx), 1), else_=0)),
                func.max(case((alive, 1), else_=0)),
            )
            .select_from(r.outerjoin(c, same))
            .where(r.c.id.in_(chunk))
            .group_by(r.c.id)
        )
        out.update({int(row[0]): (int(row[1] or 0), bool(row[2])) for row in conn.execute(query)})
    return out


_State = list[tuple[int, bytes]]  # (attribute id, value) of one entity's visible statements


def _states(conn: Connection, rows: Sequence[_Row]) -> dict[tuple[int, int, int], _State]:
    """Each touched entity's statements in its graph right after the record's transaction (the
    as-of-transaction read, DM §6.2), read once per (transaction, graph, entity)."""
    wanted: dict[tuple[int, int], set[int]] = {}
    for r in rows:
        wanted.setdefault((r.tx, r.g), set()).add(r.e)
    out: dict[tuple[int, int, int], _State] = {}
    for (tx, g), entities in wanted.items():
        for e in entities:
            out[(tx, g, e)] = []
        for chunk in id_chunks(entities):
            query = (
                select(_f.e, _f.a, _f.v)
                .where(_f.g == g, _f.e.in_(chunk), visible(facts, tx, None))
                .order_by(_f.e, _f.a, _f.id)
            )
            for row in conn.execute(query):
                state = out[(tx, g, int(row[0]))]
                item = (int(row[1]), bytes(row[2]))
                if item not in state:  # claims collapse to statements (DM §6.2)
                    state.append(item)
    return out


def _values(rows: Sequence[_Row], states: dict[tuple[int, int, int], _State]) -> Iterable[bytes]:
    yield from (r.v for r in rows)
    for state in states.values():
        yield from (v for _a, v in state)


def _row_json(state: _State, iri_of: dict[int, str]) -> dict[str, Any]:
    """``{attribute IRI: value}``, or a list of values for a many-valued attribute."""
    grouped: dict[str, list[object]] = {}
    for a, v in state:
        grouped.setdefault(iri_of[a], []).append(change_value(v, iri_of))
    return {k: vs[0] if len(vs) == 1 else vs for k, vs in sorted(grouped.items())}


def change_value(v: bytes, iri_of: dict[int, str]) -> object:
    """A stored value as the change feed writes it: DM §2.1's output form, except that a
    reference is ``{"ref": iri}`` (an edge is then never mistaken for a string) and raw bytes are
    ``{"bytes_len": n}`` (the feed notifies; bodies belong on the entity read path)."""
    d = values.decode(v)
    if d.kind == "ref":
        return {"ref": iri_of[d.value]}
    if d.kind == "bytes":
        return {"bytes_len": len(d.value)}
    return values.to_json(v, iri_of)
