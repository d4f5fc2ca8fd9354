"""Reasoning runs inside one write: a full run, and maintenance from the companion's notes.

A full run evaluates every rule over the premise graph (``store.rule_eval``) and diffs each
rule's output against its claims. Maintenance propagates only the premise changes since the
companion's ``derivedAsOfTx`` (``store.rule_maintain``; docs/reasoning.md, "Maintenance").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from quipu.reasoning.companion import ACTOR, RuleTxs, bookkeeping, diff, digest
from quipu.reasoning.compile import compile_all
from quipu.reasoning.ruleset import RuleSet
from quipu.reasoning.strata import Stratum
from quipu.store import graph_registry, rule_eval, rule_maintain
from quipu.store.context import WriteContext
from quipu.store.database import Database


@dataclass(frozen=True)
class ReasonReport:
    rules: int
    strata_run: int
    asserted: int
    retracted: int
    per_rule: list[dict[str, Any]] = field(default_factory=list)
    inferred_graph: str = ""
    mode: str = "full"  # or "incremental": maintenance from the companion's notes

    def as_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules,
            "strata_run": self.strata_run,
            "asserted": self.asserted,
            "retracted": self.retracted,
            "per_rule": self.per_rule,
            "inferred_graph": self.inferred_graph,
        }


def full_run(
    db: Database,
    ctx: WriteContext,
    ruleset: RuleSet,
    strata: list[Stratum],
    premise: int,
    companion: str,
    ts: str,
) -> ReasonReport:
    c = compile_all(db, ctx, ruleset, strata)
    head_tx = graph_registry.head_of(ctx.conn, premise)
    rule_eval.evaluate(ctx, rule_eval.Facts(premise), c.plan, c.rules)
    companion_id, created = graph_registry.register(db, ctx, companion, created_at=ts, actor=ACTOR)
    txs = RuleTxs(ctx, companion_id, c.sources, ts)
    asserted = retracted = 0
    per_rule: list[dict[str, Any]] = []
    for rule, compiled in zip(ruleset.rules, c.rules, strict=True):
        new, stale = diff(ctx, compiled.index, companion_id, txs, ts)
        asserted += len(new)
        retracted += len(stale)
        per_rule.append({"rule": rule.id, "asserted": len(new)})
    bookkeeping(db, ctx, companion, companion_id, created, head_tx, ts, rules_digest=digest(ruleset))
    return ReasonReport(
        rules=len(ruleset.rules),
        strata_run=len(strata),
        asserted=asserted,
        retracted=retracted,
        per_rule=per_rule,
        inferred_graph=companion,
    )


def maintained_run(
    db: Database,
    ctx: WriteContext,
    ruleset: RuleSet,
    strata: list[Stratum],
    premise: int,
    companion: str,
    companion_id: int,
    since: int,
    head: int,
    ts: str,
) -> ReasonReport:
    """Bring the companion from premise transaction ``since`` to ``head`` (docs/reasoning.md,
    "Maintenance"): positive strata by delete-and-rederive, a stratum with negation or an
    aggregate that a change reaches re-evaluated whole; untouched strata cost nothing."""
    c = compile_all(db, ctx, ruleset, strata)
    first = graph_registry.next_tx(ctx.conn, premise, after=since)
    txs = RuleTxs(ctx, companion_id, c.sources, ts)
    m = rule_maintain.Maintenance(ctx, premise, companion_id, c.sources, since, first - 1, txs, ts)
    rule_maintain.prepare(ctx)
    relevant = {a.pred for r in c.rules for a in r.body if a.pred is not None} | {r.head for r in c.rules}
    rule_maintain.premise_changes(m, relevant)
    strata_run = 0
    for stratum_rules, predicates, recursive in c.plan:
        changed = rule_maintain.changed_predicates(ctx)
        if not any(a.pred in changed for r in stratum_rules for a in r.body):
            continue
        strata_run += 1
        if all(r.aggregate is None and not any(a.negated for a in r.body) for r in stratum_rules):
            rule_maintain.overdelete(m, stratum_rules)
            rule_maintain.rederive(m, stratum_rules)
            rule_maintain.settle(m, stratum_rules)
            continue
        # negation and aggregates are not monotone: the stratum is evaluated again, whole
        rule_eval.evaluate(ctx, m.settled, [(stratum_rules, predicates, recursive)], stratum_rules)
        added: list[tuple[int, int, bytes, int | None, float | None]] = []
        removed: list[tuple[int, int, bytes, int | None, float | None]] = []
        for rule in stratum_rules:
            new, stale = diff(ctx, rule.index, companion_id, txs, ts)
            m.asserted[rule.index] = len(new)
            m.retracted[rule.index] = len(stale)
            added += [(a, e, v, r, n) for e, a, v, _h, r, n in new]
            removed += [(a, e, v, None, None) for e, a, v in stale]
        rule_maintain.note_rows(ctx, rule_maintain.ADDED, added)
        rule_maintain.note_rows(ctx, rule_maintain.GONE, removed)
        rule_maintain.record(m, rule_maintain.GONE, rule_maintain.ADDED)
        rule_maintain.clear(ctx)
    bookkeeping(db, ctx, companion, companion_id, False, head, ts, rules_digest=digest(ruleset))
    return ReasonReport(
        rules=len(ruleset.rules),
        strata_run=strata_run,
        asserted=sum(m.asserted.values()),
        retracted=sum(m.retracted.values()),
        per_rule=[{"rule": r.id, "asserted": m.asserted.get(k, 0)} for k, r in enumerate(ruleset.rules)],
        inferred_graph=companion,
        mode="incremental",
    )
