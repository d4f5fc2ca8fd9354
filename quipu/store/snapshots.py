"""Snapshot replacement: a producer key's new inventory replaces its old one (DM §8).

In one transaction on the destination graph the key's live claims are planned (the identity
guard keeps labels of entities others still reference; types are never kept), statements also
in the new payload are left untouched, the rest are closed scoped to the key with the
transaction ``timestamp`` as closure stamp, and the payload is asserted under the key.
"""

from __future__ import annotations

from quipu.errors import WriteRefused
from quipu.identity import Authenticated
from quipu.store.database import Database
from quipu.store.ownership import plan_source
from quipu.store.statements import StatementBatch
from quipu.store.writes import (
    KnotResult,
    WriteCheck,
    assert_rows,
    close_claims,
    grouped_rows,
    open_transaction,
    resolve_target_graph,
)

SNAPSHOT_PREFIX = "snapshot:"


def snapshot_source(key: str) -> str:
    """The transaction source of a replacement: ``snapshot:<key>`` (DM §4.1)."""
    return SNAPSHOT_PREFIX + key


def replace_snapshot(
    db: Database,
    batch: StatementBatch,
    *,
    key: str,
    timestamp: str,
    valid_from: str,
    actor: str | None = None,
    graph: str | None = None,
    auth: Authenticated | None = None,
    check: WriteCheck | None = None,
) -> KnotResult:
    """Replace everything ``snapshot:<key>`` owns live in ``graph`` (ROOT by default) by ``batch``.

    ``timestamp`` and ``valid_from`` arrive normalised. Other sources' claims on the same
    statements survive (the statements stay visible), and no other graph is touched.
    """
    if batch.graphs:
        # One key replaces its inventory in one graph; a multi-graph document has no single one.
        raise WriteRefused(
            "replace_snapshot takes a single-graph document; this one names graphs "
            f"{', '.join(sorted(batch.graphs))}",
            field="graph",
        )
    source = snapshot_source(key)
    with db.write(auth) as ctx:
        g = resolve_target_graph(db, ctx, graph)
        if check is not None:
            check(ctx, g)
        ids = db.terms.intern(ctx, batch.iris)
        new = grouped_rows(batch.statements, ids, {None: g}).get(g, {})
        old = plan_source(db, ctx, g, source)
        tx = open_transaction(ctx, timestamp=timestamp, actor=actor, source=source, graph=g)
        # Statements in both versions keep their claims (tx, valid_from) untouched.
        stale = [cid for statement, claims in old.claims.items() if statement not in new for cid in claims]
        retracted = close_claims(ctx, tx, claim_ids=stale) if stale else 0
        claims = assert_rows(ctx, tx, list(new.values()), valid_from)
    return KnotResult(tx.id, len(new), valid_from, claims, (tx.id,), retracted)
