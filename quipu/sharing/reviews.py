"""Closing and reopening the review of an imported share (tools-graphs-governance §4.2 step 1).

An operator who decides against a share closes its review as ``rejected`` (or ``expired``): the
share then refuses import and promotion until the review is reopened. Closing changes no fact:
the staging or quarantine graph stays as evidence. These are CLI acts (``quipu import reject``,
``expire``, ``reopen``); no tool of the 77 closes a review.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from quipu import times
from quipu.errors import BadRequest
from quipu.identity import Authenticated
from quipu.sharing import manifest as mf
from quipu.store import share_state
from quipu.store.context import QueuedEvent
from quipu.store.database import Database

CLOSED: Final = ("rejected", "expired")
STAGING: Final = "urn:quipu:import:staging:"


def close(db: Database, share_id: str, state: str, *, auth: Authenticated | None = None) -> dict[str, Any]:
    """Close the review of an imported share as ``rejected`` or ``expired``."""
    if state not in CLOSED:
        raise BadRequest(f"a review closes as rejected or expired, not {state!r}", field="state")
    return _move(db, share_id, lambda _review: state, auth)


def reopen(db: Database, share_id: str, *, auth: Authenticated | None = None) -> dict[str, Any]:
    """Reopen a closed review: it is staged or quarantined again, as its graph says."""

    def state(review: share_state.Review) -> str:
        if review.state not in CLOSED:
            raise BadRequest(
                f"the review of share {share_id} is {review.state}, not closed", field="share_id"
            )
        if review.promoted_tx is not None:
            return "promoted"
        return "staged" if review.staging_graph.startswith(STAGING) else "quarantined"

    return _move(db, share_id, state, auth)


def _move(db: Database, share_id: str, next_state: Any, auth: Authenticated | None) -> dict[str, Any]:
    mf.check_share_id(share_id)
    with db.write(auth) as ctx:
        review = share_state.review(ctx.conn, share_id)
        if review is None:
            raise BadRequest(f"no import of share {share_id} to review", reason="no_import", field="share_id")
        state = next_state(review)
        ts = times.now()
        share_state.put_review(ctx, replace(review, state=state, updated_at=ts))
        ctx.advisories.append(
            QueuedEvent(
                f"import.{'reopened' if state not in CLOSED else state}",
                review.import_id,
                {"share_id": share_id},
            )
        )
    return {
        "share_id": share_id,
        "state": state,
        "previous": review.state,
        "staging_graph": review.staging_graph,
    }
