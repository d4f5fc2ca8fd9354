"""One exactly specified slice of the store, canonical and anchored (tools-graphs-governance §4.0).

The slice is the ``/export`` of its scope (ROOT, a graph, an episode group, or a CONSTRUCT),
relabelled with RDFC-1.0 so that the same triples give the same bytes in any store. It is
anchored to the latest committed transaction: ``tx_anchor`` and ``created_at`` come from that
transaction, never from the wall clock (rule SH-1, unchanged state shares identically), and an
export that a concurrent write overtook is taken again so the anchor names what was read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from quipu.errors import ServerBusy
from quipu.sharing.environment import Exporter
from quipu.store import share_state
from quipu.store.database import Database

_ATTEMPTS: Final = 5  # a slice overtaken by this many writes in a row is refused as busy


@dataclass(frozen=True, slots=True)
class Slice:
    ntriples: str  # RDFC-1.0 canonical N-Triples ("" for an empty slice)
    triples: int
    tx_anchor: int
    created_at: str
    store_id: str
    kind: str
    value: str | None


def take(db: Database, export: Exporter, kind: str, value: str | None) -> Slice:
    """The canonical slice of one scope (``kind`` is root, graph, group or construct)."""
    scope = {"graph": "graph", "group": "group_id", "construct": "construct"}
    for _ in range(_ATTEMPTS):
        with db.read() as conn:
            before = share_state.anchor(conn)
            identity = share_state.store_id(conn)
        arguments = {scope[kind]: value} if kind in scope else {}
        result = export(format="ntriples", **arguments)
        with db.read() as conn:
            after = share_state.anchor(conn)
        if after == before:
            from quipu.sharing import canonical  # its library loads with the first share

            text = canonical.canonical_nquads(result.rdf)
            return Slice(text, text.count("\n"), before[0], before[1], identity, kind, value)
    raise ServerBusy("the store kept changing while the share was taken; retry", retry_after=1)
