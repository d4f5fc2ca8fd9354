"""Explain's rule branch: re-match a stored Datalog rule against the current facts (EX-1).

The head is bound to the fact, then the positive body atoms are matched one by one against the
current ROOT and companion (backtracking), negated atoms must find nothing and comparisons must
hold. The first solution's atoms are the premises [designed here: one solution, not all].
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any

from quipu.owl.store_facts import StoreFacts
from quipu.reasoning.grammar import Agg, Atom, Comparison, Iri, Lit, Term, Var
from quipu.reasoning.ruleset import Rule, RuleError, parse_rules
from quipu.store import values
from quipu.store.owl_facts import Statement

Bindings = dict[str, bytes]
# an ordering operator as a test of the sign of (left - right)
_ORDER: dict[str, Callable[[int], bool]] = {
    "<": lambda x: x < 0,
    "<=": lambda x: x <= 0,
    ">": lambda x: x > 0,
    ">=": lambda x: x >= 0,
}


class RuleMatcher:
    def __init__(self, facts: StoreFacts, rules: Callable[[], list[str]], base_ns: str) -> None:
        self.facts = facts
        self._texts = rules
        self.base_ns = base_ns

    @cached_property
    def stored(self) -> dict[str, Rule] | str:
        """The stored rules by id, or why they cannot be read."""
        texts = self._texts()
        if not texts:
            return {}
        try:
            return {r.id: r for r in parse_rules(texts, self.base_ns).rules}
        except RuleError as exc:
            return f"the stored rules no longer parse: {exc}"

    def derivation(
        self, rule_id: str, fact: Statement, node: Callable[[Statement], dict[str, Any]]
    ) -> dict[str, Any]:
        stored = self.stored
        if isinstance(stored, str):
            return {"kind": "rule", "rule": rule_id, "note": stored}
        rule = stored.get(rule_id)
        if rule is None:
            return {"kind": "rule", "rule": rule_id, "note": "the rule is no longer stored"}
        out: dict[str, Any] = {"kind": "rule", "rule": rule_id, "head": rule.head.predicate}
        if isinstance(rule.head.args[1], Agg):
            out["note"] = "an aggregate's premises are its whole group: they are not re-matched"
            return out
        e, _a, v = fact
        start: Bindings = {}
        if not (
            self._bind(rule.head.args[0], values.ref(e), start) and self._bind(rule.head.args[1], v, start)
        ):
            out["premises"] = {"note": "the head no longer matches this fact"}
            return out
        for premises in self._solve(rule, list(rule.positive), start, []):
            out["premises"] = [node(p) for p in premises]
            return out
        out["premises"] = {"note": "no current premises re-match the rule"}
        return out

    # -- matching

    def _constant(self, term: Term) -> bytes | None:
        if isinstance(term, Iri):
            tid = self.facts.id_of(term.iri)
            return None if tid is None else values.ref(tid)
        assert isinstance(term, Lit)
        try:
            return values.literal(term.lexical, term.datatype, term.lang)
        except Exception:  # a malformed literal matches nothing
            return None

    def _bind(self, term: Term, value: bytes, env: Bindings) -> bool:
        if isinstance(term, Var):
            bound = env.setdefault(term.name, value)
            return bound == value
        return self._constant(term) == value

    def _value(self, term: Term, env: Bindings) -> bytes | None:
        return env.get(term.name) if isinstance(term, Var) else self._constant(term)

    def _solve(
        self, rule: Rule, atoms: list[Atom], env: Bindings, done: list[Statement]
    ) -> Iterator[list[Statement]]:
        if not atoms:
            if all(self._absent(a, env) for a in rule.negative) and all(
                self._holds(t, env) for t in rule.tests
            ):
                yield done
            return
        atom, rest = atoms[0], atoms[1:]
        a = self.facts.id_of(atom.predicate)
        if a is None:
            return
        s, o = atom.args
        sv, ov = self._value(s, env), self._value(o, env)
        e = None if sv is None else values.ref_id(sv)
        if sv is not None and e is None:
            return  # a literal never stands in subject position
        for row in self.facts.rows(a, e=e, v=ov):
            trial = dict(env)
            if self._bind(s, values.ref(row[0]), trial) and self._bind(o, row[2], trial):
                yield from self._solve(rule, rest, trial, [*done, row])

    def _absent(self, atom: Atom, env: Bindings) -> bool:
        a = self.facts.id_of(atom.predicate)
        sv, ov = (self._value(t, env) for t in atom.args)
        e = None if sv is None else values.ref_id(sv)
        return a is None or e is None or not self.facts.rows(a, e=e, v=ov)

    def _holds(self, test: Comparison, env: Bindings) -> bool:
        left, right = self._value(test.left, env), self._value(test.right, env)
        if left is None or right is None:
            return False
        return _compare(left, test.op, right) != test.negated


def _compare(left: bytes, op: str, right: bytes) -> bool:
    """The rule language's comparison (docs/reasoning.md): numbers by value, simple strings by
    code point, term identity otherwise."""
    x, y = values.numeric(left), values.numeric(right)
    if op in ("=", "!="):
        same = x == y if x is not None and y is not None else left == right
        return same if op == "=" else not same
    if x is not None and y is not None:
        return _ORDER[op]((x > y) - (x < y))
    a, b = values.decode(left), values.decode(right)
    if a.kind == "str" and b.kind == "str":
        return _ORDER[op]((a.lexical > b.lexical) - (a.lexical < b.lexical))
    return False
