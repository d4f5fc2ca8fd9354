"""Rules as the SQL evaluator takes them: predicates and constants resolved to term ids.

A derivation is a write, so head IRIs are interned; body IRIs are only looked up (one the store
has never seen matches nothing), and literal constants become their stored value encoding.
"""

from __future__ import annotations

from dataclasses import dataclass

from quipu.errors import InvalidField
from quipu.reasoning.grammar import Agg, Atom, Iri, Lit, Term, Var
from quipu.reasoning.ruleset import Rule, RuleSet
from quipu.reasoning.strata import Stratum
from quipu.store import rule_eval, values
from quipu.store.context import WriteContext
from quipu.store.database import Database


@dataclass
class Compiled:
    rules: list[rule_eval.CompiledRule]
    plan: list[tuple[list[rule_eval.CompiledRule], frozenset[int], bool]]
    sources: dict[int, str]  # rule index -> its claims' source


def compile_all(db: Database, ctx: WriteContext, ruleset: RuleSet, strata: list[Stratum]) -> Compiled:
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
    return Compiled(
        compiled, plan, {c.index: f"reasoner:{r.id}" for r, c in zip(ruleset.rules, compiled, strict=True)}
    )


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
