"""``quipu_import_promote``: an eligible staged share into ROOT (tools-graphs-governance §4.3).

Promotion is the explicit second act after import. It reads the staging graph's live
statements and asserts them into ROOT in one transaction through the store's write path, with
the stored shape sets gating it as they gate any ROOT write (rule PR-1); the review becomes
``promoted`` and ``import.promoted`` is queued in that same transaction (PR-3). The staging
graph stays (PR-2), and nothing is merged: IRIs arrive as they were staged (PR-4).

A statement an earlier promotion of this share wrote and ROOT has since retracted is not
brought back: it is counted in ``suppressed_retractions`` instead.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from quipu import times
from quipu.errors import BadRequest
from quipu.identity import Authenticated
from quipu.rdfio import serialize
from quipu.shacl import gate
from quipu.sharing import manifest as mf
from quipu.sharing.reviews import CLOSED, STAGING
from quipu.store import graph_registry, share_state
from quipu.store.context import QueuedEvent, Refusal
from quipu.store.database import Database
from quipu.store.schema import ROOT
from quipu.store.writes import assert_rows, open_transaction


def promote(
    db: Database, *, share_id: str, actor: str | None = None, auth: Authenticated | None = None
) -> dict[str, Any]:
    mf.check_share_id(share_id)
    with db.read() as conn:
        review = share_state.review(conn, share_id)
    if review is None or not review.staging_graph.startswith(STAGING):
        raise BadRequest(
            f"no eligible staged import for share {share_id} (quarantined shares cannot be promoted)",
            reason="no_eligible_import",
            field="share_id",
        )
    if review.state in CLOSED:
        raise BadRequest(
            f"the review of share {share_id} is {review.state}", reason="review_closed", field="share_id"
        )
    ts = times.now()
    principal = auth.principal if auth is not None else None
    claim = f":claimed-actor={actor}" if actor is not None and actor.strip() else ""
    prefix = f"share-promotion:{share_id}"
    with db.write(auth) as ctx:
        gid, record = graph_registry.lookup(db, ctx.conn, review.staging_graph)
        if gid is None or record is None or record.cls != "committed":
            raise BadRequest(
                f"the staging graph {review.staging_graph} is not a committed graph", field="share_id"
            )
        rows = share_state.live_rows(ctx.conn, gid)
        suppressed = share_state.retracted_since_promotion(ctx.conn, prefix)
        eligible = [r for r in rows if (r[0], r[1], r[2]) not in suppressed]
        iri_of = db.terms.iris_in(ctx, {t for r in eligible for t in (r[0], r[1], r[4]) if t is not None})
        document = serialize.ntriples(
            (serialize.iri_term(iri_of[e]), f"<{iri_of[a]}>", serialize.value_term(v, iri_of))
            for e, a, v, _vh, _ref, _num in eligible
        )
        with ctx.gate(Refusal("shacl", None, principal, prefix + claim, len(eligible), ts)):
            gate.check_write(
                db,
                document.encode("utf-8"),
                fmt="nt",
                target=ROOT,
                conn=ctx.conn,
                advisories=ctx.advisories,
            )
        tx = open_transaction(ctx, timestamp=ts, actor=principal, source=prefix + claim, graph=ROOT)
        assert_rows(ctx, tx, eligible, ts)
        share_state.put_review(ctx, replace(review, state="promoted", promoted_tx=tx.id, updated_at=ts))
        ctx.advisories.append(
            QueuedEvent(
                "import.promoted",
                review.import_id,
                {
                    "share_id": share_id,
                    "staging_graph": review.staging_graph,
                    "tx_id": tx.id,
                    "triples": len(eligible),
                },
            )
        )
    return {
        "outcome": "promoted",
        "share_id": share_id,
        "staging_graph": review.staging_graph,
        "tx_id": tx.id,
        "triples": len(eligible),
        "suppressed_retractions": len(rows) - len(eligible),
    }
