"""Retracting an episode: close what ``episode:<name>`` owns, guarding identity (DM §10, tools-core §3.8).

Closure is scoped to the episode's source, so other producers' claims of the same statements
survive. Each graph the episode wrote into gets its own transaction (ROOT first, then ascending
graph id), all inside one database transaction, under source ``retract-episode:<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from quipu import times
from quipu.episodes.build import SOURCE_PREFIX
from quipu.errors import InvalidField, MissingField, WriteRefused
from quipu.identity import Authenticated
from quipu.store import values
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.ownership import (
    RDF_TYPE,
    RDFS_LABEL,
    Orphan,
    graphs_written_by,
    identity_orphans,
    owned_claims,
)
from quipu.store.writes import close_claims, open_transaction

Policy = Literal["preserve", "refuse", "allow"]
POLICIES: Final[tuple[Policy, ...]] = ("preserve", "refuse", "allow")
RETRACT_PREFIX = "retract-episode:"

_Statement = tuple[int, int, bytes]


def episode_name(episode: object = None, episode_id: object = None, name: object = None) -> str:
    """The episode named by the request: ``episode`` > ``episode_id`` > ``name``."""
    for value in (episode, episode_id, name):
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                break
            return value
    raise MissingField("missing 'episode' (or 'episode_id') parameter", field="episode")


def orphan_policy(on_orphan: object = None, orphan_policy: object = None) -> Policy:
    given = on_orphan if on_orphan is not None else orphan_policy
    if given is None:
        return "preserve"
    if isinstance(given, str) and given.strip().lower() in POLICIES:
        return cast(Policy, given.strip().lower())
    raise InvalidField(
        f"invalid 'on_orphan': {given!r} (accepted: preserve, refuse, allow)", field="on_orphan"
    )


@dataclass
class _GraphPlan:
    graph: int
    close: dict[_Statement, list[int]]
    preserved: list[_Statement]
    orphans: dict[int, Orphan]


def _plan(db: Database, ctx: WriteContext, g: int, source: str, policy: Policy) -> _GraphPlan:
    claims = owned_claims(ctx, g, source)
    orphans = identity_orphans(db, ctx, g, claims, source)
    known = db.terms.lookup_in(ctx, (RDFS_LABEL, RDF_TYPE))
    label, rtype = known.get(RDFS_LABEL), known.get(RDF_TYPE)

    def kept(s: _Statement) -> bool:
        o = orphans.get(s[0])
        return o is not None and ((s[1] == label and o.lost_label) or (s[1] == rtype and o.lost_type))

    if policy != "preserve":
        return _GraphPlan(g, claims, [], orphans)
    preserved = [s for s in claims if kept(s)]
    return _GraphPlan(g, {s: ids for s, ids in claims.items() if not kept(s)}, preserved, orphans)


def _statement_json(s: _Statement, iri_of: dict[int, str]) -> dict[str, Any]:
    return {"entity": iri_of[s[0]], "predicate": iri_of[s[1]], "value": values.to_json(s[2], iri_of)}


def retract_episode(
    db: Database,
    episode: str,
    *,
    on_orphan: str | None = None,
    timestamp: str | None = None,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    """Close every live claim of ``episode:<episode>`` (tools-core §3.8) under an orphan policy."""
    name = episode
    policy = orphan_policy(on_orphan)
    ts = times.normalise_timestamp(timestamp)
    source = SOURCE_PREFIX + name
    with db.write(auth) as ctx:
        plans = [_plan(db, ctx, g, source, policy) for g in graphs_written_by(ctx, source)]
        ids: set[int] = set()
        for p in plans:
            for e, a, v in [*p.close, *p.preserved]:
                ids |= {e, a} | ({r} if (r := values.ref_id(v)) is not None else set())
        iri_of = db.terms.iris(ctx.conn, ids)
        orphans = [
            {"entity": iri_of[o.entity], "lost_label": o.lost_label, "lost_type": o.lost_type}
            for p in plans
            for o in p.orphans.values()
        ]
        orphans.sort(key=lambda o: str(o["entity"]))
        if policy == "refuse" and orphans:
            lost = "; ".join(
                f"<{o['entity']}> would lose its "
                + " and ".join(
                    w for w, flag in (("label", o["lost_label"]), ("type", o["lost_type"])) if flag
                )
                for o in orphans
            )
            raise WriteRefused(
                f"refusing to retract episode '{name}': it would orphan the identity of "
                f"{len(orphans)} entity(ies) other producers still reference: {lost}; "
                "use on_orphan 'preserve' to keep their identity or 'allow' to retract it",
                reason="would_orphan",
                field="on_orphan",
                extra={"identity_orphan_entities": orphans},
            )
        tx_id, retracted = 0, 0
        for p in plans:
            if not p.close:
                continue
            tx = open_transaction(ctx, timestamp=ts, actor=actor, source=RETRACT_PREFIX + name, graph=p.graph)
            retracted += close_claims(ctx, tx, claim_ids=[c for ids_ in p.close.values() for c in ids_])
            tx_id = tx.id

    def listed(statements: list[_Statement]) -> list[dict[str, Any]]:
        rows = [_statement_json(s, iri_of) for s in statements]
        return sorted(rows, key=lambda r: (r["entity"], r["predicate"], repr(r["value"])))

    closed = [s for p in plans for s in p.close]
    preserved = [s for p in plans for s in p.preserved]
    return {
        "tx_id": tx_id,
        "retracted": retracted,
        "episode": name,
        "statements": listed(closed) if tx_id else [],
        "on_orphan": policy,
        "identity_preserved": len(preserved),
        "identity_preserved_statements": listed(preserved),
        "identity_orphans": len(orphans),
        "identity_orphan_entities": orphans,
    }
