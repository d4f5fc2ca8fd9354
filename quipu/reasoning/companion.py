"""What a reasoning run writes into the companion graph, and what the companion says about itself.

Each rule's claims carry source ``reasoner:<rule-id>``, in one transaction per rule with changes
(actor ``reasoner``). The companion's own notes, under source ``quipu:inferred-plane``:
``sourceKind "inferred"`` (DM §3 rule 4), ``derivedAsOfTx`` (the premise head it reflects) and
``rulesDigest`` (the rules it was derived by), which tell maintenance where to start.
"""

from __future__ import annotations

import hashlib

from quipu.reasoning.ruleset import RuleSet
from quipu.store import rule_eval, values, writes
from quipu.store.context import TxInfo, WriteContext
from quipu.store.database import Database
from quipu.store.stage import Row

ACTOR = "reasoner"
PLANE_SOURCE = "quipu:inferred-plane"
SOURCE_KIND = "http://aegis.gastown.local/ontology/sourceKind"
DERIVED_AS_OF = "http://quipu.local/graph#derivedAsOfTx"
RULES_DIGEST = "http://quipu.local/graph#rulesDigest"
# The premise head the rules' claims reflect. Not derivedAsOfTx: an OWL materialisation into
# the same companion moves that one too, and maintenance must not skip changes it never saw.
RULES_AS_OF = "http://quipu.local/graph#rulesAsOfTx"


class RuleTxs:
    """Each rule's transaction in this call, opened on its first change (rule 4: one per rule
    with changes, none when nothing changed)."""

    def __init__(self, ctx: WriteContext, companion: int, sources: dict[int, str], ts: str) -> None:
        self.ctx, self.companion, self.sources, self.ts = ctx, companion, sources, ts
        self.opened: dict[int, TxInfo] = {}

    def __call__(self, rule: int) -> TxInfo:
        if rule not in self.opened:
            self.opened[rule] = writes.open_transaction(
                self.ctx, timestamp=self.ts, actor=ACTOR, source=self.sources[rule], graph=self.companion
            )
        return self.opened[rule]


def diff(
    ctx: WriteContext, rule: int, companion: int, txs: RuleTxs, ts: str
) -> tuple[list[Row], list[tuple[int, int, bytes]]]:
    """Rule ``rule``'s projected output (OUT) against its claims in the companion: assert what
    is new, retract what vanished. Returns the rows asserted and the statements retracted."""
    wanted = {
        (s, p, v): (s, p, v, values.digest(v), ref, num) for p, s, v, ref, num in rule_eval.output(ctx, rule)
    }
    held = rule_eval.claims_of_source(ctx, companion, txs.sources[rule])
    new: list[Row] = [row for key, row in wanted.items() if key not in held]
    stale = {key: claim for key, claim in held.items() if key not in wanted}
    if stale:
        writes.close_claims(ctx, txs(rule), claim_ids=list(stale.values()))
    if new:
        writes.assert_rows(ctx, txs(rule), new, ts)
    return new, list(stale)


def bookkeeping(
    db: Database,
    ctx: WriteContext,
    companion: str,
    gid: int,
    created: bool,
    head_tx: int,
    ts: str,
    *,
    rules_digest: str | None = None,
) -> None:
    """DM §3 rule 4: ``sourceKind "inferred"`` once, and the single-valued note ``derivedAsOfTx``
    (the premise head the companion reflects), for every writer of derivations. A rule run also
    keeps ``rulesAsOfTx`` (the head the rules' claims reflect) and ``rulesDigest`` (the rules
    they were derived by); an OWL materialisation passes no digest and leaves those alone."""
    ids = db.terms.intern(ctx, (companion, SOURCE_KIND, DERIVED_AS_OF, RULES_AS_OF, RULES_DIGEST))
    e = ids[companion]
    rows: list[Row] = []
    stale: list[int] = []
    if created:
        kind = values.string("inferred")
        rows.append((e, ids[SOURCE_KIND], kind, values.digest(kind), None, None))
    head = values.literal(str(head_tx), values.XSD_INTEGER)
    notes_kept = [(ids[DERIVED_AS_OF], head)]
    if rules_digest is not None:
        notes_kept += [(ids[RULES_AS_OF], head), (ids[RULES_DIGEST], values.string(rules_digest))]
    for attr, note in notes_kept:
        current = writes.live_value(ctx, gid, e, attr)
        if current != note:
            rows.append((e, attr, note, values.digest(note), None, values.numeric(note)))
            if current is not None:
                stale.append(attr)
    if not rows:  # a rerun over unchanged premises writes nothing
        return
    tx = writes.open_transaction(ctx, timestamp=ts, actor="quipu", source=PLANE_SOURCE, graph=gid)
    for attr in stale:
        writes.close_claims(ctx, tx, e=e, a=attr)
    writes.assert_rows(ctx, tx, rows, ts)


def notes(db: Database, ctx: WriteContext, companion: str, gid: int) -> tuple[int | None, str | None]:
    """The companion's ``rulesAsOfTx`` and ``rulesDigest``, where it has them."""
    ids = db.terms.lookup_in(ctx, [companion, RULES_AS_OF, RULES_DIGEST])
    if len(ids) < 3:
        return None, None
    head = writes.live_value(ctx, gid, ids[companion], ids[RULES_AS_OF])
    kept = writes.live_value(ctx, gid, ids[companion], ids[RULES_DIGEST])
    since = None if head is None else int(values.decode(head).lexical)
    return since, None if kept is None else values.decode(kept).lexical


def digest(ruleset: RuleSet) -> str:
    """What a companion was derived with: the parsed rules, names resolved, in order. Kept on
    the companion so maintenance can tell its materialisation belongs to these rules."""
    return hashlib.sha256(repr(ruleset.rules).encode()).hexdigest()
