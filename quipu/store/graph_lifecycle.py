"""The store side of freeze and thaw: the frozen-pack registry, removing a frozen graph's local
rows, and restoring a pack's record under the live store's ids (tools-graphs-governance §1.4-§1.5).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update

from quipu.store import values
from quipu.store.archive_packs import PackRecord
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.schema import facts, frozen_packs, transactions, vector_state, vectors


@dataclass(frozen=True, slots=True)
class FreezeRecord:
    id: int
    graph_iri: str
    alias: str
    path: str
    content_hash: str
    frozen_at: str


def open_freeze(conn: Connection, graph_iri: str) -> FreezeRecord | None:
    """The freeze of ``graph_iri`` that no thaw has closed, if any."""
    c = frozen_packs.c
    row = conn.execute(
        select(c.id, c.graph_iri, c.alias, c.path, c.content_hash, c.frozen_at)
        .where(c.graph_iri == graph_iri, c.thawed_at.is_(None))
        .order_by(c.id.desc())
    ).first()
    return None if row is None else FreezeRecord(int(row[0]), *row[1:])


def aliases_in_use(conn: Connection) -> set[str]:
    """Every alias a freeze has ever used (a thawed pack stays on disk under its alias)."""
    return {str(r[0]) for r in conn.execute(select(frozen_packs.c.alias))}


def record_freeze(
    ctx: WriteContext, *, graph_iri: str, alias: str, path: str, content_hash: str, frozen_at: str,
    facts_count: int, transactions_count: int,
) -> None:  # fmt: skip
    ctx.conn.execute(
        insert(frozen_packs),
        {
            "graph_iri": graph_iri, "alias": alias, "path": path, "content_hash": content_hash,
            "frozen_at": frozen_at, "thawed_at": None, "facts": facts_count,
            "transactions": transactions_count,
        },
    )  # fmt: skip


def stamp_thawed(ctx: WriteContext, freeze_id: int, thawed_at: str) -> None:
    ctx.conn.execute(update(frozen_packs).where(frozen_packs.c.id == freeze_id).values(thawed_at=thawed_at))


def delete_rows(ctx: WriteContext, gid: int) -> int:
    """Remove every local fact row of a graph whose record now lives in a verified pack."""
    return int(ctx.conn.execute(delete(facts).where(facts.c.g == gid)).rowcount)


def restore(db: Database, ctx: WriteContext, gid: int, record: PackRecord) -> tuple[int, int]:
    """Write a pack's record back under graph ``gid``: every fact row with its bitemporal
    columns, each transaction reused when the live store still has it unchanged (same id,
    timestamp, actor and source) and copied otherwise, and the embeddings insert-or-ignore
    (rule TH-4). Returns (fact rows, vector rows written)."""
    iris = {r["e"] for r in record.facts} | {r["a"] for r in record.facts}
    iris |= {r["v_ref"] for r in record.facts if r["v_ref"] is not None}
    iris |= {v["entity_id"] for v in record.vectors}
    ids = db.terms.intern(ctx, sorted(iris))
    tx_map = _transactions(ctx, gid, record)
    rows = []
    for r in record.facts:
        v = bytes(r["v"])
        ref = None if r["v_ref"] is None else ids[r["v_ref"]]
        if ref is not None:
            v = values.ref(ref)
        rows.append(
            {
                **{k: r[k] for k in ("valid_from", "valid_to", "op", "v_num", "dup")},
                "e": ids[r["e"]], "a": ids[r["a"]], "v": v, "vh": values.digest(v), "v_ref": ref,
                "g": gid, "tx": tx_map[r["tx"]],
                "retracted_tx": None if r["retracted_tx"] is None else tx_map[r["retracted_tx"]],
            }
        )  # fmt: skip
    if rows:
        ctx.conn.execute(insert(facts), rows)
    return len(rows), _vectors(db, ctx, ids, record)


def _transactions(ctx: WriteContext, gid: int, record: PackRecord) -> dict[int, int]:
    used = {r["tx"] for r in record.facts} | {r["retracted_tx"] for r in record.facts if r["retracted_tx"]}
    out: dict[int, int] = {}
    c = transactions.c
    for tx in sorted(used):
        ts, actor, source, _graph, recorded_at = record.transactions[tx]
        live = ctx.conn.execute(select(c.timestamp, c.actor, c.source).where(c.id == tx)).first()
        if live is not None and tuple(live) == (ts, actor, source):
            out[tx] = tx
            continue
        new: int = ctx.conn.execute(
            insert(transactions)
            .values(timestamp=ts, actor=actor, source=source, graph=gid, recorded_at=recorded_at)
            .returning(c.id)
        ).scalar_one()
        out[tx] = int(new)
    return out


def _vectors(db: Database, ctx: WriteContext, ids: dict[str, int], record: PackRecord) -> int:
    missing = []
    for v in record.vectors:
        key = (vectors.c.entity_id == ids[v["entity_id"]], vectors.c.valid_from == v["valid_from"])
        if ctx.conn.execute(select(vectors.c.entity_id).where(*key)).first() is None:
            missing.append({**v, "entity_id": ids[v["entity_id"]]})
    current = {v["entity_id"] for v in missing if v["valid_to"] is None}
    if current:  # a live current row wins: the pack's is history here
        held = select(vectors.c.entity_id).where(
            vectors.c.entity_id.in_(current), vectors.c.valid_to.is_(None)
        )
        taken = {int(r[0]) for r in ctx.conn.execute(held)}
        missing = [v for v in missing if not (v["valid_to"] is None and v["entity_id"] in taken)]
    if not missing:
        return 0
    ctx.conn.execute(update(vector_state).values(generation=vector_state.c.generation + 1))
    generation = int(ctx.conn.execute(select(vector_state.c.generation)).scalar_one())
    ctx.conn.execute(insert(vectors), [{**v, "changed": generation} for v in missing])
    return len(missing)
