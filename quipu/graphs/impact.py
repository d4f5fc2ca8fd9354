"""``quipu_impact``: what is downstream of an entity, and what would be after retracting it
(tools-core §1.12).

The walk is breadth-first over ROOT's current reference statements, outgoing only. With
``remove``, the entity's own statements are retracted inside a write transaction that is always
rolled back: the walk reads the speculative state through that transaction's connection, and
afterwards no transaction, event or refusal record exists (rule 7: the transaction log is
unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from quipu.errors import NotFound
from quipu.identity import Authenticated
from quipu.store import projection as reads
from quipu.store import values
from quipu.store.database import Database
from quipu.store.schema import ROOT
from quipu.store.writes import close_claims, open_transaction


@dataclass(frozen=True)
class Reached:
    term: int
    depth: int
    via_predicate: int | None
    via_subject: int | None


Walked = tuple[int, list[Reached], list[dict[str, Any]], int]  # root, reached, rows, edges


class _Rollback(Exception):
    """Carries the walk out of the speculative transaction, which it thereby rolls back."""

    def __init__(self, found: Walked) -> None:
        super().__init__("speculative retraction rolled back")
        self.found = found


def walk(
    conn: Connection, root: int, hops: int, predicates: Sequence[int] | None
) -> tuple[list[Reached], int]:
    """Entities reached from ``root`` within ``hops``, each once at its smallest depth with the
    edge that first reached it (depth, then discovery order), and every edge examined."""
    reached = [Reached(root, 0, None, None)]
    seen = {root}
    frontier = [root]
    examined = 0
    for depth in range(1, hops + 1):
        if not frontier:
            break
        out = reads.outgoing(conn, frontier, predicates)
        following: list[int] = []
        for node in frontier:
            for predicate, target in out.get(node, ()):
                examined += 1
                if target not in seen:
                    seen.add(target)
                    following.append(target)
                    reached.append(Reached(target, depth, predicate, node))
        frontier = following
    return reached, examined


def impact(
    db: Database,
    entity: str,
    *,
    remove: bool,
    hops: int,
    predicates: Sequence[str] | None,
    timestamp: str,
    ppr: Callable[[int, list[int]], dict[int, float]] | None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    """The impact walk. ``ppr(root, terms)`` scores the reached terms when ranking is asked for
    (over the current graph: a counterfactual root has no out-edges left to rank along)."""
    values.check_iri(entity, "entity")
    if remove:
        try:
            with db.write(auth) as ctx:

                def retract(root: int) -> None:
                    tx = open_transaction(
                        ctx, timestamp=timestamp, actor=None, source="impact:counterfactual", graph=ROOT
                    )
                    close_claims(ctx, tx, e=root)

                raise _Rollback(_walked(db, ctx.conn, entity, predicates, hops, retract))
        except _Rollback as done:
            root, reached, rows, examined = done.found
    else:
        with db.read() as conn:
            root, reached, rows, examined = _walked(db, conn, entity, predicates, hops, None)
    if ppr is not None:
        scores = ppr(root, [r.term for r in reached])
        for row, r in zip(rows, reached, strict=True):
            row["ppr"] = scores.get(r.term, 0.0)
        rows.sort(key=lambda row: (-row["ppr"], row["iri"]))
    return {
        "root": entity,
        "reached": rows,
        "reached_count": len(reached) - 1,
        "hops": hops,
        "edges": examined,
        "counterfactual": remove,
        "ranked_by_ppr": ppr is not None,
    }


def _walked(
    db: Database,
    conn: Connection,
    entity: str,
    predicates: Sequence[str] | None,
    hops: int,
    retract: Callable[[int], None] | None,
) -> Walked:
    """Look the entity up, retract it first when asked, walk and name what was reached: all in
    one snapshot (the read's, or the speculative transaction's)."""
    found = db.terms.lookup(conn, [entity, *(predicates or ())])
    root = found.get(entity)
    if root is None:
        raise NotFound(f"entity not found: {entity}", field="entity")
    # Unknown predicates contribute nothing; an empty list means every predicate.
    allowed = [found[p] for p in predicates if p in found] if predicates else None
    if retract is not None:
        retract(root)
    reached, examined = walk(conn, root, hops, allowed)
    ids = {r.term for r in reached} | {
        t for r in reached for t in (r.via_predicate, r.via_subject) if t is not None
    }
    names = db.terms.iris(conn, ids)
    rows: list[dict[str, Any]] = [
        {
            "iri": names[r.term],
            "depth": r.depth,
            "via_predicate": names[r.via_predicate] if r.via_predicate is not None else None,
            "via_subject": names[r.via_subject] if r.via_subject is not None else None,
        }
        for r in reached
    ]
    return root, reached, rows, examined
