"""The store side of sharing (tools-graphs-governance §4): this store's identity, the anchor
transaction of a snapshot, the canonical-order rows of a graph slice, and import reviews.

Reviews are the state machine of one imported share: ``staged`` or ``quarantined`` when import
writes it, ``promoted`` after ``/import/promote``, ``rejected``/``expired`` when an operator
closes it (a closed review refuses import until reopened). A refused import writes no row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select, update

from quipu.store.context import WriteContext, head_tx
from quipu.store.reads import statement_ids, statement_rows
from quipu.store.schema import LIVE, OP_ASSERT, ROOT, facts, share_imports, store_identity, transactions
from quipu.store.stage import Row
from quipu.store.terms import TermDictionary
from quipu.store.views import TemporalView

EPOCH = "1970-01-01T00:00:00Z"


def store_id(conn: Connection) -> str:
    """The identity the migration gave this store (every share it makes carries it)."""
    value = conn.execute(select(store_identity.c.id)).scalar()
    if value is None:  # only a store built outside the migrations lacks it
        raise LookupError("this store has no identity row (store_identity): run the migrations")
    return str(value)


def anchor(conn: Connection) -> tuple[int, str]:
    """The latest committed transaction and its timestamp (``EPOCH`` for an empty store)."""
    tx = head_tx(conn)
    if tx == 0:
        return 0, EPOCH
    ts = conn.execute(select(transactions.c.timestamp).where(transactions.c.id == tx)).scalar()
    return tx, str(ts)


def graph_triples(
    conn: Connection, terms: TermDictionary, graphs: Iterable[int], *, as_of_tx: int | None = None
) -> tuple[list[tuple[int, int, bytes]], dict[int, str]]:
    """Distinct visible statements of ``graphs`` (current, or as of ``as_of_tx``) and the IRIs
    of every term they use."""
    rows = statement_rows(conn, TemporalView(as_of_tx=as_of_tx, graphs=frozenset(graphs)))
    return rows, terms.iris(conn, statement_ids(rows))


@dataclass(frozen=True, slots=True)
class Review:
    share_id: str
    state: str
    staging_graph: str
    import_id: str
    graph_hash: str
    source: str
    tx_id: int | None
    promoted_tx: int | None
    updated_at: str


def review(conn: Connection, share_id: str) -> Review | None:
    row = conn.execute(select(share_imports).where(share_imports.c.share_id == share_id)).first()
    if row is None:
        return None
    m = row._mapping
    return Review(
        str(m["share_id"]),
        str(m["state"]),
        str(m["staging_graph"]),
        str(m["import_id"]),
        str(m["graph_hash"]),
        str(m["source"]),
        None if m["tx_id"] is None else int(m["tx_id"]),
        None if m["promoted_tx"] is None else int(m["promoted_tx"]),
        str(m["updated_at"]),
    )


def put_review(ctx: WriteContext, record: Review) -> None:
    """Insert or replace the review row of one share (inside the write that changed it)."""
    values: dict[str, Any] = {
        "state": record.state,
        "staging_graph": record.staging_graph,
        "import_id": record.import_id,
        "graph_hash": record.graph_hash,
        "source": record.source,
        "tx_id": record.tx_id,
        "promoted_tx": record.promoted_tx,
        "updated_at": record.updated_at,
    }
    where = share_imports.c.share_id == record.share_id
    if ctx.conn.execute(select(share_imports.c.share_id).where(where)).first() is None:
        ctx.conn.execute(insert(share_imports).values(share_id=record.share_id, **values))
    else:
        ctx.conn.execute(update(share_imports).where(where).values(**values))


# -- promotion ---------------------------------------------------------------------------------

_ROW_COLUMNS = (facts.c.e, facts.c.a, facts.c.v, facts.c.vh, facts.c.v_ref, facts.c.v_num)


def live_rows(conn: Connection, graph: int) -> list[Row]:
    """The live statements of one graph as write rows (term ids are the store's own)."""
    query = select(*_ROW_COLUMNS).where(facts.c.g == graph, LIVE)
    out: list[Row] = []
    found: list[Any] = list(conn.execute(query))
    for e, a, v, vh, ref, num in found:
        out.append((int(e), int(a), bytes(v), bytes(vh), None if ref is None else int(ref), num))
    return out


def retracted_since_promotion(conn: Connection, source_prefix: str) -> set[tuple[int, int, bytes]]:
    """Statements an earlier promotion (a transaction whose source starts with
    ``source_prefix``) wrote into ROOT and that ROOT has since retracted, with no live claim
    left: a later promotion of the same share must not bring them back."""
    written = (
        select(facts.c.e, facts.c.a, facts.c.v)
        .join(transactions, transactions.c.id == facts.c.tx)
        .where(
            facts.c.g == ROOT,
            facts.c.op == OP_ASSERT,
            facts.c.retracted_tx.is_not(None),
            transactions.c.source.startswith(source_prefix, autoescape=True),
        )
        .distinct()
    )
    rows: list[Any] = list(conn.execute(written))
    closed = {(int(e), int(a), bytes(v)) for e, a, v in rows}
    if not closed:
        return closed
    live = select(facts.c.e, facts.c.a, facts.c.v).where(
        facts.c.g == ROOT, LIVE, facts.c.e.in_({e for e, _a, _v in closed})
    )
    kept: list[Any] = list(conn.execute(live))
    return closed - {(int(e), int(a), bytes(v)) for e, a, v in kept}
