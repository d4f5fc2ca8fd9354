"""Where ROOT's side of a merge conflict came from (tools-graphs-governance §4.4
``provenance.ours``): the live ROOT claims of one (subject, predicate) slot, each with the
transaction that wrote it.

Every live claim is listed, ownership claims of a second source included: each is a separate
act someone can be asked about. One read snapshot answers every slot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from quipu.store import values
from quipu.store.database import Database
from quipu.store.schema import facts, transactions
from quipu.store.views import TemporalView


@dataclass(frozen=True, slots=True)
class SlotClaim:
    value: bytes  # the stored value (render it with the IRIs of ``SlotClaims.iris``)
    valid_from: str
    tx: int
    actor: str | None
    source: str | None


@dataclass(frozen=True, slots=True)
class SlotClaims:
    by_slot: dict[tuple[str, str], list[SlotClaim]]  # (subject IRI, predicate IRI) -> claims
    iris: dict[int, str]  # every term id a claimed value refers to


def slot_claims(db: Database, slots: Iterable[tuple[str, str]]) -> SlotClaims:
    """Live ROOT claims of each (subject IRI, predicate IRI), oldest transaction first; a slot
    whose subject or predicate the store has never seen has none."""
    wanted = sorted(set(slots))
    out: dict[tuple[str, str], list[SlotClaim]] = {slot: [] for slot in wanted}
    refs: set[int] = set()
    f, t = facts.alias("f"), transactions.alias("t")
    view = TemporalView()
    with db.read() as conn:
        ids = db.terms.lookup(conn, {name for slot in wanted for name in slot})
        for subject, predicate in wanted:
            e, a = ids.get(subject), ids.get(predicate)
            if e is None or a is None:
                continue
            query = (
                select(f.c.v, f.c.valid_from, f.c.tx, t.c.actor, t.c.source)
                .join_from(f, t, t.c.id == f.c.tx)
                .where(view.where(f), f.c.e == e, f.c.a == a)
                .order_by(f.c.tx, f.c.id)
            )
            rows: list[Any] = list(conn.execute(query))
            for v, valid_from, tx, actor, source in rows:
                claim = SlotClaim(bytes(v), str(valid_from), int(tx), actor, source)
                out[(subject, predicate)].append(claim)
                ref = values.ref_id(claim.value)
                if ref is not None:
                    refs.add(ref)
        iris = db.terms.iris(conn, refs) if refs else {}
    return SlotClaims(out, iris)
