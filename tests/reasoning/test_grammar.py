"""The rule grammar and rule-set loading, with the original's error texts word for word
(its reasoner reference and parser; tools-core §3.11 rule 1). No store: pure parsing."""

from __future__ import annotations

import pytest

from quipu.reasoning.grammar import XSD, Agg, Atom, Comparison, Iri, Lit, Var, parse_atom, parse_body
from quipu.reasoning.ruleset import RuleError, check_evaluable, parse_rules
from quipu.reasoning.strata import stratify

pytestmark = pytest.mark.backend_independent

P = "http://ex.org/"
HEAD = "@prefix rule: <http://quipu.local/rule#> . @prefix ex: <http://ex.org/r/> .\n"


def rules(*bodies: str, default: str | None = None) -> str:
    text = HEAD
    if default is not None:
        text += f'ex:set a rule:RuleSet ; rule:defaultPrefix "{default}" .\n'
    return text + "\n".join(bodies)


def test_atoms_take_variables_bare_names_full_iris_strings_and_literals() -> None:
    atom = parse_atom('tier(?s, "gold")', P)
    assert atom == Atom(P + "tier", (Var("s"), Lit("gold")))
    assert parse_atom("<http://x/p>( ?a ,nginx )", P).args == (Var("a"), Iri(P + "nginx"))
    assert parse_atom("<http://x/p>(?a, ?b)", P).predicate == "http://x/p"
    assert parse_atom('p(?a, "chat"@FR)', P).args[1] == Lit("chat", None, "fr")
    assert parse_atom(f'p(?a, "7"^^<{XSD}integer>)', P).args[1] == Lit("7", XSD + "integer")
    assert parse_atom('p(?a, "a, b")', P).args[1] == Lit("a, b")  # a comma inside quotes
    # [designed here] a numeral is a number; the original made it the IRI <prefix>42
    assert parse_atom("p(?a, 42)", P).args[1] == Lit("42", XSD + "integer")
    assert parse_atom("p(?a, -1.5)", P).args[1] == Lit("-1.5", XSD + "decimal")
    # the original's quirks are kept: no prefixed names, and `a` is a bare name like any other
    assert parse_atom("aegis:foo(?x, ?y)", P).predicate == P + "aegis:foo"
    assert parse_atom("a(?x, ?y)", P).predicate == P + "a"


def test_an_aggregate_is_read_in_a_head_only() -> None:
    assert parse_atom("size(?t, count(?p))", P, head=True).args == (Var("t"), Agg("count", "p"))
    assert parse_atom("size(?t, max( ?p ))", P, head=True).aggregate == Agg("max", "p")
    assert parse_atom("size(?t, count(?p))", P).args[1] == Iri(P + "count(?p)")  # a body: the original's
    doc = rules(
        'ex:r1 a rule:Rule ; rule:id "R1" ; rule:head "size(?t, count(?z))" ; rule:body "m(?p, ?t)" .'
    )
    with pytest.raises(RuleError, match=r'^rule "R1" head variable \?z is not bound in the body$'):
        parse_rules(doc, P)


def test_bodies_split_on_top_level_commas_and_read_not_as_negation() -> None:
    body, tests = parse_body("p(?x, ?y), not q(?y, ?x),, r(?x, c),", P)
    assert tests == []
    assert [(a.predicate, a.negated) for a in body] == [(P + "p", False), (P + "q", True), (P + "r", False)]
    assert parse_body("NOT p(?x, ?y)", P)[0][0].predicate == P + "NOT p"  # case-sensitive, as the original


def test_comparisons_are_body_pieces_with_the_operator_between_spaces() -> None:
    atoms, tests = parse_body('age(?p, ?a), ?a >= 39, not ?n = "x", ?p != <http://x/y>, p(?a, ?b)', P)
    assert [a.predicate for a in atoms] == [P + "age", P + "p"]
    assert tests == [
        Comparison(Var("a"), ">=", Lit("39", XSD + "integer")),
        Comparison(Var("n"), "=", Lit("x"), negated=True),
        Comparison(Var("p"), "!=", Iri("http://x/y")),
    ]
    # operators inside quotes, IRIs or parentheses are not comparisons
    assert parse_body('p(?x, "a > b")', P)[1] == []
    assert parse_body("<http://x/a>(?x, ?y)", P)[1] == []


@pytest.mark.parametrize(
    ("head", "body", "message"),
    [
        ("foo bar", "p(?x, ?y)", 'rule "R1" rule:head: expected `(` in atom "foo bar"'),
        ("p(?x, ?y", "p(?x, ?y)", 'rule "R1" rule:head: expected trailing `)` in atom "p(?x, ?y"'),
        ("(?x, ?y)", "p(?x, ?y)", 'rule "R1" rule:head: missing predicate name in atom "(?x, ?y)"'),
        ("p(?x, )", "p(?x, ?y)", None),  # an empty trailing piece is dropped, as the original
        ("p(?, ?y)", "p(?x, ?y)", 'rule "R1" rule:head: variable name missing after `?`'),
        ("p(?x, ?y)", " , ", 'rule "R1" rule:body: empty body'),
        ("p(?x, ?z)", "p(?x, ?y)", 'rule "R1" head variable ?z is not bound in the body'),
        ("p(?x, ?y)", "q(?x, ?w), not r(?w, ?y)", 'rule "R1" head variable ?y is not bound in the body'),
    ],
)
def test_syntax_errors_read_as_the_original_writes_them(head: str, body: str, message: str | None) -> None:
    doc = rules(f'ex:r1 a rule:Rule ; rule:id "R1" ; rule:head "{head}" ; rule:body "{body}" .')
    if message is None:
        parse_rules(doc, P)
        return
    with pytest.raises(RuleError) as caught:
        parse_rules(doc, P)
    assert str(caught.value) == message


def test_missing_head_is_reported_before_a_missing_body() -> None:
    with pytest.raises(RuleError, match=r'^rule "R1" is missing required property rule:head$'):
        parse_rules(rules('ex:r1 a rule:Rule ; rule:id "R1" .'), P)
    with pytest.raises(RuleError, match=r'^rule "R1" is missing required property rule:body$'):
        parse_rules(rules('ex:r1 a rule:Rule ; rule:id "R1" ; rule:head "p(?x, ?y)" .'), P)


def test_a_turtle_error_and_an_empty_document() -> None:
    with pytest.raises(RuleError, match=r"^rule Turtle parse error: "):
        parse_rules(HEAD + 'ex:r1 a rule:Rule ; rule:head "p(?x, ?y) .', P)
    assert parse_rules("", P).rules == ()


def test_rules_are_ordered_by_subject_and_named_by_it_without_an_id() -> None:
    doc = rules(
        'ex:z a rule:Rule ; rule:id "last" ; rule:head "p(?x, ?y)" ; rule:body "q(?x, ?y)" .',
        'ex:a a rule:Rule ; rule:head "p(?x, ?y)" ; rule:body "r(?x, ?y)" .',
        'ex:m rule:head "ignored(?x, ?y)" ; rule:body "q(?x, ?y)" .',  # not typed rule:Rule
    )
    assert [r.id for r in parse_rules(doc, P).rules] == ["http://ex.org/r/a", "last"]


def test_bare_names_resolve_by_rule_prefix_then_rule_set_default_then_the_fallback() -> None:
    doc = rules(
        'ex:a a rule:Rule ; rule:prefix "http://own/" ; rule:head "p(?x, c)" ; rule:body "q(?x, ?y)" .',
        'ex:b a rule:Rule ; rule:head "p(?x, ?y)" ; rule:body "q(?x, ?y)" .',
        default="http://set/",
    )
    first, second = parse_rules(doc, "http://fallback/").rules
    assert first.head == Atom("http://own/p", (Var("x"), Iri("http://own/c")))
    assert second.head.predicate == "http://set/p"
    no_set = rules('ex:b a rule:Rule ; rule:head "p(?x, ?y)" ; rule:body "q(?x, ?y)" .')
    assert parse_rules(no_set, "http://fallback/").rules[0].head.predicate == "http://fallback/p"


@pytest.mark.parametrize(
    ("head", "body", "feature"),
    [
        ("p(?x)", "q(?x, ?y)", "non-binary head atom"),
        ("p(?x, ?y)", "q(?x, ?y, ?z)", "non-binary body atom"),
        ("p(?x, ?y)", "q(?x, ?y), not r(?x)", "non-binary body atom"),
        ("p(?x, ?y)", "q(?x, ?y), not r(?x, ?z)", "unsafe negation: variable not bound by a positive atom"),
        ('p(\\"lit\\", ?y)', "q(?x, ?y)", "literal in the subject position of the head atom"),
        ("p(?x, ?y)", "q(?x, ?y), ?z > 3", "unsafe comparison: variable not bound by a positive atom"),
        ("p(count(?x), ?y)", "q(?x, ?y)", "aggregate in the subject position of the head atom"),
    ],
)
def test_unevaluable_rules_name_the_feature(head: str, body: str, feature: str) -> None:
    doc = rules(f'ex:r1 a rule:Rule ; rule:id "R1" ; rule:head "{head}" ; rule:body "{body}" .')
    (rule,) = parse_rules(doc, P).rules
    with pytest.raises(RuleError) as caught:
        check_evaluable(rule)
    assert str(caught.value) == f'rule "R1" uses unsupported feature: {feature}'


def test_a_body_of_only_negated_atoms_is_refused() -> None:
    doc = rules('ex:r1 a rule:Rule ; rule:id "R1" ; rule:head "p(c, d)" ; rule:body "not q(c, d)" .')
    (rule,) = parse_rules(doc, P).rules
    with pytest.raises(RuleError, match="body needs at least one positive atom"):
        check_evaluable(rule)


def test_a_negation_cycle_is_refused_naming_every_predicate_of_it() -> None:
    doc = rules(
        'ex:a a rule:Rule ; rule:id "A" ; rule:head "p(?x, ?y)" ; rule:body "e(?x, ?y), not q(?x, ?y)" .',
        'ex:b a rule:Rule ; rule:id "B" ; rule:head "q(?x, ?y)" ; rule:body "e(?x, ?y), p(?x, ?y)" .',
    )
    with pytest.raises(RuleError) as caught:
        stratify(parse_rules(doc, P).rules)
    assert str(caught.value) == (
        'rule set is not stratifiable: negation cycle through ["http://ex.org/p", "http://ex.org/q"]'
    )
    own = rules(
        'ex:a a rule:Rule ; rule:id "A" ; rule:head "p(?x, ?y)" ; rule:body "e(?x, ?y), not p(?x, ?y)" .'
    )
    with pytest.raises(RuleError, match=r'negation cycle through \["http://ex.org/p"\]$'):
        stratify(parse_rules(own, P).rules)


def test_strata_put_what_a_negation_reads_first() -> None:
    doc = rules(
        'ex:a a rule:Rule ; rule:id "A" ; rule:head "risky(?x, ?y)" ; rule:body "reach(?x, ?y), not ok(?x, ?y)" .',
        'ex:b a rule:Rule ; rule:id "B" ; rule:head "reach(?x, ?y)" ; rule:body "dep(?x, ?y)" .',
        'ex:c a rule:Rule ; rule:id "C" ; rule:head "reach(?x, ?z)" ; rule:body "dep(?x, ?y), reach(?y, ?z)" .',
    )
    strata = stratify(parse_rules(doc, P).rules)
    assert [sorted(r.id for r in s.rules) for s in strata] == [["B", "C"], ["A"]]
    assert [s.recursive for s in strata] == [True, False]
