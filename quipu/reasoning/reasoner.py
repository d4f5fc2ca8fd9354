"""``quipu_reason``: rules to fixpoint over one graph, derivations kept in its companion graph.

tools-core §3.11. One call is one database transaction: the rules are evaluated in SQL
(``store.rule_eval``) over the premise graph's current asserted statements, and each rule's new
output is diffed against what that rule derived before (its claims under source
``reasoner:<rule-id>`` in the companion graph): vanished tuples are retracted, new ones asserted,
one transaction per rule with changes (actor ``reasoner``), none when nothing changed. Every
refusal comes before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from quipu import times
from quipu.errors import InvalidField
from quipu.identity import Authenticated
from quipu.reasoning.grammar import Agg, Atom, Iri, Lit, Term, Var
from quipu.reasoning.rule_query import rule_query
from quipu.reasoning.ruleset import Rule, RuleError, RuleSet, check_evaluable, parse_rules
from quipu.reasoning.strata import Stratum, stratify
from quipu.shacl import registry as shape_registry
from quipu.store import graph_registry, graph_scope, rule_eval, values, writes
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.schema import ROOT_IRI
from quipu.store.stage import Row

ACTOR = "reasoner"
PLANE_SOURCE = "quipu:inferred-plane"
SOURCE_KIND = "http://aegis.gastown.local/ontology/sourceKind"
DERIVED_AS_OF = "http://quipu.local/graph#derivedAsOfTx"


@dataclass(frozen=True)
class ReasonReport:
    rules: int
    strata_run: int
    asserted: int
    retracted: int
    per_rule: list[dict[str, Any]] = field(default_factory=list)
    inferred_graph: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules,
            "strata_run": self.strata_run,
            "asserted": self.asserted,
            "retracted": self.retracted,
            "per_rule": self.per_rule,
            "inferred_graph": self.inferred_graph,
        }


def checked_rules(turtle: str | list[str], fallback_prefix: str) -> tuple[RuleSet, list[Stratum]]:
    """Parse, check and stratify, with the tool's 400 messages (§3.11 errors)."""
    try:
        ruleset = parse_rules(turtle, fallback_prefix)
        if not ruleset.rules:
            raise InvalidField("no 'a rule:Rule' subjects found in the rules", field="rules")
        strata = stratify(ruleset.rules)
    except RuleError as exc:
        raise InvalidField(f"rules failed to parse: {exc}", field="rules") from None
    for rule in ruleset.rules:
        try:
            check_evaluable(rule)
        except RuleError as exc:
            raise InvalidField(str(exc), field="rules") from None
    return ruleset, strata


class Reasoner:
    """The reasoning family's service: rules from the request or from the stored shapes."""

    def __init__(self, db: Database, base_ns: str) -> None:
        self.db = db
        self.base_ns = base_ns  # bare names resolve here last [designed here; docs/reasoning.md]
        self.rule_query = partial(rule_query, db)  # quipu_rule_query: a read, no state of its own

    def stored_rules(self) -> list[str]:
        """The Turtle of the stored shape sets, where rules live beside shapes (``POST /shapes``)."""
        return [found.turtle for found in shape_registry.current(self.db)]

    def reason(
        self,
        *,
        rules: str | None = None,
        prefix: str | None = None,
        graph: str | None = None,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> ReasonReport:
        text: str | list[str] = rules if rules is not None and rules.strip() else self.stored_rules()
        if not text:
            raise InvalidField(
                "no rules: pass 'rules' (Turtle) or load rules via POST /shapes first", field="rules"
            )
        ts = times.normalise_timestamp(timestamp)
        ruleset, strata = checked_rules(text, prefix if prefix else self.base_ns)
        premise_iri = graph if graph else ROOT_IRI
        with self.db.write(auth) as ctx:
            premise = writes.resolve_target_graph(self.db, ctx, graph)
            graph_scope.enforce(self.db, ctx.conn, (premise,))  # the premises are a read of it
            companion = writes.companion_iri(premise_iri)
            return _run(self.db, ctx, ruleset, strata, premise, companion, ts)


def _run(
    db: Database,
    ctx: WriteContext,
    ruleset: RuleSet,
    strata: list[Stratum],
    premise: int,
    companion: str,
    ts: str,
) -> ReasonReport:
    head_iris = {r.head.predicate for r in ruleset.rules} | {
        a.iri for r in ruleset.rules for a in r.head.args if isinstance(a, Iri)
    }
    interned = db.terms.intern(ctx, sorted(head_iris))  # a derivation is a write: heads intern
    body_iris = (
        {a.predicate for r in ruleset.rules for a in r.body}
        | {t.iri for r in ruleset.rules for a in r.body for t in a.args if isinstance(t, Iri)}
        | {t.iri for r in ruleset.rules for c in r.tests for t in (c.left, c.right) if isinstance(t, Iri)}
    )
    known = {**db.terms.lookup_in(ctx, sorted(body_iris - set(interned))), **interned}
    compiled = [_compile(k, rule, known) for k, rule in enumerate(ruleset.rules)]
    by_id = {r.id: c for r, c in zip(ruleset.rules, compiled, strict=True)}
    plan = [
        (
            [by_id[r.id] for r in stratum.rules],
            frozenset(known[p] for p in stratum.predicates if p in known),
            stratum.recursive,
        )
        for stratum in strata
    ]
    head_tx = graph_registry.head_of(ctx.conn, premise)
    rule_eval.evaluate(ctx, premise, plan, compiled)
    companion_id, created = graph_registry.register(db, ctx, companion, created_at=ts, actor=ACTOR)
    asserted = retracted = 0
    per_rule: list[dict[str, Any]] = []
    for rule, c in zip(ruleset.rules, compiled, strict=True):
        source = f"reasoner:{rule.id}"
        wanted = {
            (s, p, v): (s, p, v, values.digest(v), ref, num)
            for p, s, v, ref, num in rule_eval.output(ctx, c.index)
        }
        held = rule_eval.claims_of_source(ctx, companion_id, source)
        new: list[Row] = [row for key, row in wanted.items() if key not in held]
        stale = [claim for key, claim in held.items() if key not in wanted]
        if new or stale:
            tx = writes.open_transaction(ctx, timestamp=ts, actor=ACTOR, source=source, graph=companion_id)
            if stale:
                retracted += writes.close_claims(ctx, tx, claim_ids=stale)
            if new:
                writes.assert_rows(ctx, tx, new, ts)
        asserted += len(new)
        per_rule.append({"rule": rule.id, "asserted": len(new)})
    _bookkeeping(db, ctx, companion, companion_id, created, head_tx, ts)
    return ReasonReport(
        rules=len(ruleset.rules),
        strata_run=len(strata),
        asserted=asserted,
        retracted=retracted,
        per_rule=per_rule,
        inferred_graph=companion,
    )


def _bookkeeping(
    db: Database, ctx: WriteContext, companion: str, gid: int, created: bool, head_tx: int, ts: str
) -> None:
    """DM §3 rule 4: ``sourceKind "inferred"`` once, and ``derivedAsOfTx`` kept single-valued."""
    ids = db.terms.intern(ctx, (companion, SOURCE_KIND, DERIVED_AS_OF))
    e = ids[companion]
    rows: list[Row] = []
    if created:
        kind = values.string("inferred")
        rows.append((e, ids[SOURCE_KIND], kind, values.digest(kind), None, None))
    note = values.literal(str(head_tx), values.XSD_INTEGER)
    current = writes.live_value(ctx, gid, e, ids[DERIVED_AS_OF])
    stale_note = current not in (None, note)
    if current != note:
        rows.append((e, ids[DERIVED_AS_OF], note, values.digest(note), None, values.numeric(note)))
    if not rows:  # a rerun over unchanged premises writes nothing
        return
    tx = writes.open_transaction(ctx, timestamp=ts, actor="quipu", source=PLANE_SOURCE, graph=gid)
    if stale_note:
        writes.close_claims(ctx, tx, e=e, a=ids[DERIVED_AS_OF])
    writes.assert_rows(ctx, tx, rows, ts)


def _slot(term: Term, known: dict[str, int]) -> rule_eval.Slot:
    assert not isinstance(term, Agg), "an aggregate stands only in a head's object position"
    if isinstance(term, Var):
        return rule_eval.Slot(var=term.name)
    if isinstance(term, Iri):
        tid = known.get(term.iri)
        return rule_eval.Slot(ref=tid) if tid is not None else rule_eval.Slot(unknown=True)
    assert isinstance(term, Lit)
    try:
        encoded = values.literal(term.lexical, term.datatype, term.lang)
    except Exception as exc:  # a malformed typed literal: the rule's own mistake
        raise InvalidField(f"bad literal in a rule: {exc}", field="rules") from None
    return rule_eval.Slot(value=encoded)


def _atom(atom: Atom, known: dict[str, int]) -> rule_eval.BodyAtom:
    s, o = atom.args
    return rule_eval.BodyAtom(known.get(atom.predicate), _slot(s, known), _slot(o, known), atom.negated)


def _compile(index: int, rule: Rule, known: dict[str, int]) -> rule_eval.CompiledRule:
    s, o = rule.head.args
    aggregate = o if isinstance(o, Agg) else None
    return rule_eval.CompiledRule(
        index=index,
        head=known[rule.head.predicate],
        s=_slot(s, known),
        o=rule_eval.Slot(var=aggregate.var) if aggregate is not None else _slot(o, known),
        aggregate=aggregate.fn if aggregate is not None else None,
        body=tuple(_atom(a, known) for a in rule.body),
        tests=tuple(
            rule_eval.Test(_slot(t.left, known), t.op, _slot(t.right, known), t.negated) for t in rule.tests
        ),
    )
