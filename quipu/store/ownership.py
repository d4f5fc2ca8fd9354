"""Source ownership: what one producer owns, and source-scoped retraction (DM §7, §8.1, §10).

Several sources can own one statement, each through its own claim. Retracting a source closes
only that source's claims, so a statement stays visible while any other owner still claims it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, or_, select

from quipu import times
from quipu.errors import InvalidField, WriteRefused
from quipu.identity import Authenticated
from quipu.store import values
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.schema import OP_ASSERT, ROOT, ROOT_IRI, facts, transactions
from quipu.store.writes import close_claims, open_transaction, resolve_target_graph

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDF_TYPE = values.RDF + "type"
SAMPLE_SIZE = 20
_CHUNK = 500

_f, _t = facts.c, transactions.c
_LIVE = [_f.op == OP_ASSERT, _f.valid_to.is_(None)]
_OWNED = (
    select(_f.id, _f.e, _f.a, _f.v)
    .join_from(facts, transactions, _t.id == _f.tx)
    .where(_f.g == bindparam("g"), *_LIVE, _t.source == bindparam("src"))
)
_OWNED_COUNT = (
    select(func.count())
    .select_from(facts.join(transactions, _t.id == _f.tx))
    .where(_f.g == bindparam("g"), *_LIVE, _t.source == bindparam("src"))
)


def producer_family(source: str | None) -> str | None:
    """``snapshot:code:<repo>[:<partition>]`` keys form one producer per repository (DM §8.2)."""
    if source is None or not source.startswith("snapshot:code:"):
        return None
    repo = source.split(":", 3)[2]
    return f"snapshot:code:{repo}" if repo else None


def same_producer(claim_source: str | None, source: str) -> bool:
    if claim_source == source:
        return True
    family = producer_family(source)
    return family is not None and producer_family(claim_source) == family


@dataclass
class SourcePlan:
    """Live statements a source owns in one graph, with the claim rows behind them."""

    graph: int
    claims: dict[tuple[int, int, bytes], list[int]]

    @property
    def planned(self) -> int:
        return len(self.claims)

    @property
    def claim_ids(self) -> list[int]:
        return [cid for ids in self.claims.values() for cid in ids]


def owned_claims(ctx: WriteContext, g: int, source: str) -> dict[tuple[int, int, bytes], list[int]]:
    """Every live claim ``source`` holds in ``g``, grouped by statement (no guard applied)."""
    claims: dict[tuple[int, int, bytes], list[int]] = {}
    for row in ctx.conn.execute(_OWNED, {"g": g, "src": source}):
        claims.setdefault((int(row.e), int(row.a), bytes(row.v)), []).append(int(row.id))
    return claims


@dataclass(frozen=True)
class Orphan:
    """An entity a plan would leave referenced but unlabelled or untyped (DM §10)."""

    entity: int
    lost_label: bool
    lost_type: bool


def identity_orphans(
    db: Database, ctx: WriteContext, g: int, statements: Iterable[tuple[int, int, bytes]], source: str
) -> dict[int, Orphan]:
    """The identity orphans of retracting ``statements`` (owned by ``source``) in ``g`` (DM §10).

    A candidate (subject of a planned label or type claim) is still referenced when a live claim
    of another producer has it as subject or object; it loses its label (type) when the plan
    holds a label (type) claim of it and no other producer labels (types) it.
    """
    known = db.terms.lookup_in(ctx, (RDFS_LABEL, RDF_TYPE))
    label, rtype = known.get(RDFS_LABEL), known.get(RDF_TYPE)
    planned: dict[int, set[int]] = {}
    for e, a, _v in statements:
        if a in (label, rtype):
            planned.setdefault(e, set()).add(a)
    if not planned:
        return {}
    candidates = sorted(planned)
    referenced: set[int] = set()
    elsewhere: dict[int, set[int]] = {}
    for i in range(0, len(candidates), _CHUNK):
        chunk = candidates[i : i + _CHUNK]
        rows = ctx.conn.execute(
            select(_f.e, _f.a, _f.v_ref, _t.source)
            .join_from(facts, transactions, _t.id == _f.tx)
            .where(_f.g == g, *_LIVE, or_(_f.e.in_(chunk), _f.v_ref.in_(chunk)))
        )
        for row in rows:
            if same_producer(row.source, source):
                continue
            if row.e in planned:
                referenced.add(row.e)
                elsewhere.setdefault(row.e, set()).add(row.a)
            if row.v_ref in planned:
                referenced.add(row.v_ref)
    out: dict[int, Orphan] = {}
    for e in sorted(referenced):
        other = elsewhere.get(e, set())
        lost_label = label in planned[e] and label not in other
        lost_type = rtype in planned[e] and rtype not in other
        if lost_label or lost_type:
            out[e] = Orphan(e, lost_label, lost_type)
    return out


def graphs_written_by(ctx: WriteContext, source: str) -> list[int]:
    """The graphs the transactions of ``source`` wrote, ROOT first, then by ascending id."""
    t = transactions.c
    rows = ctx.conn.execute(select(t.graph).distinct().where(t.source == source))
    return sorted({int(r.graph or ROOT) for r in rows})


def plan_source(db: Database, ctx: WriteContext, g: int, source: str) -> SourcePlan:
    """The source's live claims in ``g``, minus labels the identity guard keeps (DM §8.1, §10).

    An entity keeps its label when something outside the producer still references it (as
    subject or as object) and no other producer gives it a label; its types are not spared.
    """
    claims = owned_claims(ctx, g, source)
    label = db.terms.lookup_in(ctx, (RDFS_LABEL,)).get(RDFS_LABEL)
    labels = [k for k in claims if k[1] == label]
    if labels:
        kept = {e for e, o in identity_orphans(db, ctx, g, labels, source).items() if o.lost_label}
        claims = {k: ids for k, ids in claims.items() if not (k[1] == label and k[0] in kept)}
    return SourcePlan(g, claims)


def retract_source(
    db: Database,
    source: str,
    repair: str,
    *,
    apply: bool = False,
    expect: int | None = None,
    graph: str | None = None,
    timestamp: str | None = None,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    """Plan (default) or apply the retraction of everything ``source`` owns live in a graph."""
    if not isinstance(source, str) or not source.strip():
        raise InvalidField(
            "missing 'source': give the exact transaction source to clear "
            "(read it from the transaction log or an entity's history)",
            field="source",
        )
    if not isinstance(repair, str) or not repair.strip():
        raise InvalidField("missing 'repair': give a ticket or reason for this repair", field="repair")
    if expect is not None and (isinstance(expect, bool) or not isinstance(expect, int)):
        raise InvalidField("'expect' must be an integer", field="expect")
    src, ticket = source.strip(), repair.strip()
    ts = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        g = resolve_target_graph(db, ctx, graph)
        plan = plan_source(db, ctx, g, src)
        out = _describe(db, ctx, plan, src, ticket, graph)
        if not apply:
            return out
        if expect is None:
            raise InvalidField(
                f"apply requires 'expect': the current plan is {plan.planned} statement(s)", field="expect"
            )
        if expect != plan.planned:
            raise WriteRefused(
                f"expect={expect} does not match the current plan of {plan.planned} statement(s)",
                reason="expect_mismatch",
                field="expect",
            )
        tx = open_transaction(ctx, timestamp=ts, actor=actor, source=f"repair:{ticket}", graph=g)
        close_claims(ctx, tx, claim_ids=plan.claim_ids)
        remaining = ctx.conn.execute(_OWNED_COUNT, {"g": g, "src": src}).scalar_one()
    out.update(applied=True, tx_id=tx.id, retracted=plan.planned, remaining=int(remaining))
    return out


def _describe(
    db: Database, ctx: WriteContext, plan: SourcePlan, source: str, ticket: str, graph: str | None
) -> dict[str, Any]:
    statements = list(plan.claims)
    ids = {e for e, _a, _v in statements} | {a for _e, a, _v in statements}
    ids |= {r for _e, _a, v in statements if (r := values.ref_id(v)) is not None}
    iri_of = db.terms.iris(ctx.conn, ids)
    ordered = sorted(statements, key=lambda s: (iri_of[s[0]], iri_of[s[1]], s[2]))
    sample = [
        {"entity": iri_of[e], "predicate": iri_of[a], "value": values.to_json(v, iri_of)}
        for e, a, v in ordered[:SAMPLE_SIZE]
    ]
    return {
        "source": source,
        "graph": ROOT_IRI if plan.graph == ROOT else graph,
        "planned": plan.planned,
        "entities": len({e for e, _a, _v in statements}),
        "applied": False,
        "tx_id": None,
        "retracted": None,
        "repair_source": f"repair:{ticket}",
        "sample": sample,
        "sample_truncated": len(statements) > SAMPLE_SIZE,
    }
