"""Rule sets from Turtle in the rule vocabulary (tools-core §3.11 rule 1).

Only subjects typed ``rule:Rule`` are rules, so rules can share a document with SHACL shapes.
Rules are ordered by their subject (IRI, or ``_:`` and the blank node's label), which decides
``per_rule`` order and which error is reported first, as in the original. A rule without
``rule:id`` is named by its subject. The first rule that fails stops the whole parse, and the
messages are the original's (``grammar``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyoxigraph as ox

from quipu.reasoning.grammar import (
    Agg,
    Atom,
    Comparison,
    Lit,
    RuleSyntaxError,
    Var,
    debug,
    parse_atom,
    parse_body,
)

RULE = "http://quipu.local/rule#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


class RuleError(Exception):
    """A rule set that cannot be evaluated; the message is the reason, ready for the caller."""


@dataclass(frozen=True)
class Rule:
    id: str
    head: Atom
    body: tuple[Atom, ...]
    tests: tuple[Comparison, ...] = ()

    @property
    def positive(self) -> list[Atom]:
        return [a for a in self.body if not a.negated]

    @property
    def negative(self) -> list[Atom]:
        return [a for a in self.body if a.negated]


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...] = field(default_factory=tuple)

    @property
    def heads(self) -> frozenset[str]:
        return frozenset(r.head.predicate for r in self.rules)


def _key(term: ox.NamedNode | ox.BlankNode) -> str:
    return term.value if isinstance(term, ox.NamedNode) else "_:" + term.value


def parse_rules(turtle: str | Sequence[str], fallback_prefix: str) -> RuleSet:
    """The rules of a Turtle document (or of several, read as one: the stored shape sets);
    ``fallback_prefix`` resolves bare names when neither the rule nor a ``rule:RuleSet`` gives
    one."""
    triples: list[ox.Triple] = []
    for document in [turtle] if isinstance(turtle, str) else turtle:
        try:
            triples += ox.parse(document.encode("utf-8"), format=ox.RdfFormat.TURTLE)
        except (SyntaxError, ValueError) as exc:
            raise RuleError(f"rule Turtle parse error: {exc}") from None
    by_subject: dict[str, list[tuple[str, object]]] = defaultdict(list)
    for t in triples:
        if isinstance(t.subject, ox.NamedNode | ox.BlankNode):
            by_subject[_key(t.subject)].append((t.predicate.value, t.object))

    def first_str(props: list[tuple[str, object]], name: str) -> str | None:
        for p, o in props:
            if p == RULE + name and isinstance(o, ox.Literal):
                return o.value
        return None

    def typed(props: list[tuple[str, object]], cls: str) -> bool:
        return any(p == RDF_TYPE and isinstance(o, ox.NamedNode) and o.value == RULE + cls for p, o in props)

    default_prefix = next(
        (
            found
            for key in sorted(by_subject)
            if typed(by_subject[key], "RuleSet")
            and (found := first_str(by_subject[key], "defaultPrefix")) is not None
        ),
        None,
    )
    rules: list[Rule] = []
    for key in sorted(by_subject):
        props = by_subject[key]
        if not typed(props, "Rule"):
            continue
        rule_id = first_str(props, "id") or key
        prefix = first_str(props, "prefix") or default_prefix or fallback_prefix
        head_src = first_str(props, "head")
        if head_src is None:
            raise RuleError(f"rule {debug(rule_id)} is missing required property rule:head")
        body_src = first_str(props, "body")
        if body_src is None:
            raise RuleError(f"rule {debug(rule_id)} is missing required property rule:body")
        try:
            head = parse_atom(head_src, prefix, head=True)
        except RuleSyntaxError as exc:
            raise RuleError(f"rule {debug(rule_id)} rule:head: {exc}") from None
        try:
            body, tests = parse_body(body_src, prefix)
        except RuleSyntaxError as exc:
            raise RuleError(f"rule {debug(rule_id)} rule:body: {exc}") from None
        bound = {v for atom in body if not atom.negated for v in atom.variables}
        for name in dict.fromkeys(head.variables):
            if name not in bound:
                raise RuleError(f"rule {debug(rule_id)} head variable ?{name} is not bound in the body")
        rules.append(Rule(rule_id, head, tuple(body), tuple(tests)))
    return RuleSet(tuple(rules))


def check_evaluable(rule: Rule) -> None:
    """What the evaluator cannot run, refused before anything is written (the original's
    feature texts, in its order; string constants are evaluable here)."""

    def refuse(feature: str) -> RuleError:
        return RuleError(f"rule {debug(rule.id)} uses unsupported feature: {feature}")

    if len(rule.head.args) != 2:
        raise refuse("non-binary head atom")
    if any(len(atom.args) != 2 for atom in rule.body):
        raise refuse("non-binary body atom")
    if not rule.positive:
        raise refuse("body needs at least one positive atom")
    bound = {v for atom in rule.positive for v in atom.variables}
    if any(v not in bound for atom in rule.negative for v in atom.variables):
        raise refuse("unsafe negation: variable not bound by a positive atom")
    if any(v not in bound for test in rule.tests for v in test.variables):  # [designed here]
        raise refuse("unsafe comparison: variable not bound by a positive atom")
    if isinstance(rule.head.args[0], Lit):  # [designed here] a literal cannot be a subject
        raise refuse("literal in the subject position of the head atom")
    if isinstance(rule.head.args[0], Agg):  # [designed here] an aggregate is a value
        raise refuse("aggregate in the subject position of the head atom")
    if any(isinstance(a, Var) and a.name not in bound for a in rule.head.args):
        raise refuse("head variable not bound by a positive body atom")
