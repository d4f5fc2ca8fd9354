"""Writing an episode: one transaction with source ``episode:<name>`` (DM §9, tools-core §3.4).

Order inside the one database transaction: destination graph, gates (the SHACL seam), the
idempotency check against the activity's stored content hash, then the write. The stored hash
is read in the destination graph, so an identical episode is ``unchanged`` wherever it lives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from quipu import times
from quipu.episodes.build import Built, Episode, build
from quipu.errors import UnknownGraph, WriteRefused
from quipu.identity import Authenticated
from quipu.store import values
from quipu.store.context import EpisodeMark, Refusal, WriteContext
from quipu.store.database import Database
from quipu.store.ownership import plan_source
from quipu.store.schema import META_IRI, ROOT, ROOT_IRI
from quipu.store.writes import (
    assert_rows,
    close_claims,
    grouped_rows,
    live_value,
    open_transaction,
    register_graph_in,
    resolve_target_graph,
)

Outcome = Literal["created", "updated", "unchanged"]
# A write gate (SHACL, vocabulary): called inside the write with the destination graph id and the
# generated statements, before the idempotency check (tools-core §3.4 rule 3); it raises to refuse.
Gate = Callable[[WriteContext, int, Built], None]


@dataclass(frozen=True)
class EpisodeResult:
    tx_id: int
    count: int
    outcome: Outcome
    episode: str
    activity: str
    retracted: int = 0  # stale statements closed (activity descriptors, or a replaced snapshot)
    resolution_hints: list[dict[str, Any]] = field(default_factory=list)
    resolution_contentions: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "tx_id": self.tx_id,
            "count": self.count,
            "outcome": self.outcome,
            "episode": self.episode,
            "resolution_hints": self.resolution_hints,
            "resolution_contentions": self.resolution_contentions,
        }


def destination_graph(db: Database, ctx: WriteContext, iri: str | None, actor: str | None) -> int:
    """ROOT, a registered committed graph, or an unregistered IRI registered now (rule 10).

    Overlays and companion graphs are refused by ``resolve_target_graph``.
    """
    try:
        return resolve_target_graph(db, ctx, iri)
    except UnknownGraph:
        assert iri is not None
        values.check_iri(iri, "graph")
        if iri in (ROOT_IRI, META_IRI):
            raise WriteRefused(f"graph IRI <{iri}> is reserved", field="graph") from None
        return register_graph_in(db, ctx, iri, actor=actor)[0]


def stored_hash(db: Database, ctx: WriteContext, g: int, built: Built, base_ns: str) -> str | None:
    """The activity's current ``aegis:contentHash`` in ``g`` (DM §9.4), or None."""
    predicate = base_ns + "contentHash"
    ids = db.terms.lookup_in(ctx, (built.activity, predicate))
    if built.activity not in ids or predicate not in ids:
        return None
    stored = live_value(ctx, g, ids[built.activity], ids[predicate])
    if stored is None:
        return None
    decoded = values.decode(stored)
    return str(decoded.value) if decoded.kind == "str" else None


def ingest(
    db: Database,
    episode: Episode,
    *,
    base_ns: str,
    graph: str | None = None,
    valid_from: str | None = None,
    auth: Authenticated | None = None,
    gates: tuple[Gate, ...] = (),
) -> EpisodeResult:
    """Write ``episode`` (tools-core §3.4): ``created``, ``updated`` or ``unchanged``.

    The transaction time is always now; ``valid_from`` (already normalised) is the facts' valid
    time when a trusted caller gives one (the CLI, ``/episodes/complete``), else now too.
    """
    built = build(episode, base_ns)  # refuses bad types and relations before anything is written
    now = times.now()
    vf = valid_from or now
    with db.write(auth) as ctx:
        g = destination_graph(db, ctx, graph, episode.source)
        if gates:
            where = None if g == ROOT else db.terms.iris(ctx.conn, (g,))[g]
            refusal = Refusal(
                "shacl", where, episode.source, episode.tx_source, len(built.batch.statements), now
            )
            with ctx.gate(refusal):
                for gate in gates:
                    gate(ctx, g, built)
        ctx.episode = EpisodeMark(episode.name, built.activity, episode.group_id)
        previous = stored_hash(db, ctx, g, built, base_ns)
        if previous == built.content_hash:
            return EpisodeResult(0, 0, "unchanged", episode.name, built.activity)
        ids = db.terms.intern(ctx, built.batch.iris)
        new = grouped_rows(built.batch.statements, ids, {None: g}).get(g, {})
        source = episode.tx_source
        old = plan_source(db, ctx, g, source) if previous is not None or episode.replace_snapshot else None
        tx = open_transaction(ctx, timestamp=now, actor=episode.source, source=source, graph=g)
        retracted = 0
        if old is not None:
            activity = ids[built.activity]
            # Updated: only stale activity descriptors go; replacement: everything stale (DM §8).
            stale = [
                cid
                for statement, claims in old.claims.items()
                if statement not in new and (episode.replace_snapshot or statement[0] == activity)
                for cid in claims
            ]
            retracted = close_claims(ctx, tx, claim_ids=stale) if stale else 0
        assert_rows(ctx, tx, list(new.values()), vf)
    outcome: Outcome = "created" if previous is None else "updated"
    return EpisodeResult(tx.id, len(new), outcome, episode.name, built.activity, retracted)
