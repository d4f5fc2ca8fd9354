"""The knowledge tools (spec §4.1-§4.7, §4.11-§4.15) on a real engine: texts from the seed
document, the R- rules of those sections, and the journal batches they hand over (§6.3)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from typing import Any

import pytest

from quipu.logic.engine import Engine
from quipu.logic.knowledge import KnowledgeService, StaticMemories, ToolResult, balanced_parentheses


class RecordingJournal:
    def __init__(self) -> None:
        self.batches: list[tuple[str, list[tuple[str, str]]]] = []

    def append(self, memory: str, entries: Sequence[tuple[str, str]]) -> None:
        self.batches.append((memory, list(entries)))


@pytest.fixture
def journal() -> RecordingJournal:
    return RecordingJournal()


@pytest.fixture
def memories(engine: Engine) -> StaticMemories:
    for name in ("feature_auth", "frozen"):
        engine.ensure_memory(name)
    return StaticMemories({"default": "rw", "feature_auth": "rw", "frozen": "ro"})


@pytest.fixture
def kb(engine: Engine, memories: StaticMemories, journal: RecordingJournal) -> KnowledgeService:
    return KnowledgeService(engine, memories, journal)


def ok(result: ToolResult) -> str:
    assert not result.is_error, result.text
    return result.text


def err(result: ToolResult) -> str:
    assert result.is_error, result.text
    return result.text


def q(kb: KnowledgeService, goal: str, memory: str | None = None) -> Any:
    args: dict[str, Any] = {"goal": goal}
    if memory is not None:
        args["memory"] = memory
    return json.loads(ok(kb.query_logic(args)))


def facts(kb: KnowledgeService, *texts: str, memory: str = "default") -> None:
    for text in texts:
        ok(kb.remember_fact({"fact": text, "memory": memory}))


# --------------------------------------------------------------------- the seed's examples


def test_seed_echo(kb: KnowledgeService) -> None:
    assert kb.echo({"message": "Hello, world!"}) == ToolResult("Hello, world!", False)
    assert kb.echo({}) == ToolResult("InvalidArguments", True)
    assert kb.echo({"message": None}) == ToolResult("InvalidArguments", True)


def test_seed_remember_fact(kb: KnowledgeService) -> None:
    assert kb.remember_fact({"fact": "human(socrates)"}) == ToolResult("Asserted: human(socrates)")
    assert kb.remember_fact({}) == ToolResult("InvalidArguments", True)
    assert kb.remember_fact({"fact": None}) == ToolResult("InvalidArguments", True)
    assert kb.remember_fact({"fact": ""}) == ToolResult("InvalidArguments", True)


def test_seed_remember_fact_with_memory_parameter(kb: KnowledgeService) -> None:
    assert ok(kb.remember_fact({"fact": "task_done(login)", "memory": "feature_auth"})) == (
        "Asserted: task_done(login)"
    )
    assert q(kb, "task_done(X)", "feature_auth") == [{"X": "login"}]
    assert q(kb, "task_done(X)") == []


def test_seed_define_rule(kb: KnowledgeService) -> None:
    assert kb.define_rule({"head": "mortal(X)", "body": "human(X)"}) == ToolResult(
        "Asserted rule: mortal(X) :- human(X)"
    )
    for args in ({"head": "mortal(X)"}, {"body": "human(X)"}, {"head": "", "body": "human(X)"}, {}):
        assert kb.define_rule(args) == ToolResult("InvalidArguments", True)
    assert kb.define_rule({"head": "mortal(X", "body": "human(X)"}) == ToolResult(
        "Invalid Prolog syntax in rule: unbalanced parentheses", True
    )


def test_seed_query_logic(kb: KnowledgeService) -> None:
    assert kb.query_logic({"goal": "fruit(X)"}) == ToolResult("[]")
    facts(kb, "fruit(apple)", "fruit(banana)")
    assert kb.query_logic({"goal": "fruit(X)"}) == ToolResult('[{"X":"apple"},{"X":"banana"}]')
    for args in ({}, {"goal": None}, {"goal": ""}):
        assert kb.query_logic(args) == ToolResult("InvalidArguments", True)


def test_seed_trace_dependency(kb: KnowledgeService) -> None:
    assert kb.trace_dependency({"start_node": "a"}) == ToolResult("[]")
    ok(kb.define_rule({"head": "path(X, Start)", "body": "depends_on(Start, X)"}))
    ok(kb.define_rule({"head": "path(X, Start)", "body": "depends_on(Start, Mid), path(X, Mid)"}))
    facts(kb, "depends_on(a, b)", "depends_on(b, c)")
    assert kb.trace_dependency({"start_node": "a"}) == ToolResult('["b","c"]')
    for args in ({}, {"start_node": None}, {"start_node": ""}):
        assert kb.trace_dependency(args) == ToolResult("InvalidArguments", True)


def test_seed_verify_consistency(kb: KnowledgeService, engine: Engine) -> None:
    assert kb.verify_consistency({}) == ToolResult('{"violations":[]}')
    facts(kb, "untested(deploy_v3)", "in_production(deploy_v3)")
    ok(kb.define_rule({"head": "integrity_violation(X)", "body": "untested(X), in_production(X)"}))
    assert kb.verify_consistency({}) == ToolResult('{"violations":["deploy_v3"]}')
    engine.close()  # the engine unavailable
    assert kb.verify_consistency({}) == ToolResult("ExecutionFailed", True)


def test_seed_explain_why(kb: KnowledgeService) -> None:
    not_proven = '{"fact":"risky(deploy_v3)","proven":false,"proof_tree":null}'
    assert kb.explain_why({"fact": "risky(deploy_v3)"}) == ToolResult(not_proven)
    ok(kb.define_rule({"head": "risky(X)", "body": "untested(X), in_production(X)"}))
    facts(kb, "untested(deploy_v3)", "in_production(deploy_v3)")
    proven = (
        '{"fact":"risky(deploy_v3)","proven":true,"proof_tree":{"goal":"risky(deploy_v3)",'
        '"rule_applied":"risky(X) :- untested(X), in_production(X)","children":[{"goal":"untested(deploy_v3)",'
        '"rule_applied":"fact","children":[]},{"goal":"in_production(deploy_v3)","rule_applied":"fact",'
        '"children":[]}]}}'
    )
    assert kb.explain_why({"fact": "risky(deploy_v3)"}) == ToolResult(proven)
    for args in ({}, {"fact": None}, {"fact": ""}):
        assert kb.explain_why(args) == ToolResult("InvalidArguments", True)


def test_seed_get_knowledge_schema(kb: KnowledgeService, engine: Engine) -> None:
    assert kb.get_knowledge_schema({}) == ToolResult('{"predicates":[],"total":0}')
    assert kb.get_knowledge_schema(None) == ToolResult('{"predicates":[],"total":0}')
    facts(kb, "user_prefers(tea)", "user_prefers(quiet)", "depends_on(a, b)", "depends_on(b, c)")
    facts(kb, "depends_on(c, d)", "path(a, b)", "path(x, y)")
    ok(kb.define_rule({"head": "path(X, Y)", "body": "depends_on(X, Y)"}))
    ok(kb.define_rule({"head": "path(X, Y)", "body": "depends_on(X, Z), path(Z, Y)"}))
    # The seed lists them in the original's arbitrary order; R-I3 sorts by name, then arity.
    seed_entries: list[dict[str, Any]] = [
        {"name": "user_prefers", "arity": 1, "type": "fact", "count": 2},
        {"name": "depends_on", "arity": 2, "type": "fact", "count": 3},
        {"name": "path", "arity": 2, "type": "both", "count": 4},
    ]
    got = json.loads(ok(kb.get_knowledge_schema({})))
    assert got == {"predicates": sorted(seed_entries, key=lambda e: (e["name"], e["arity"])), "total": 3}
    engine.close()
    assert kb.get_knowledge_schema({}) == ToolResult("ExecutionFailed", True)


def test_seed_forget_fact(kb: KnowledgeService) -> None:
    assert kb.forget_fact({"fact": "human(socrates)"}) == ToolResult(
        "No matching clause found for: human(socrates)", True
    )
    facts(kb, "human(socrates)")
    assert kb.forget_fact({"fact": "human(socrates)"}) == ToolResult("Retracted: human(socrates)")
    for args in ({}, {"fact": None}, {"fact": ""}):
        assert kb.forget_fact(args) == ToolResult("InvalidArguments", True)


def test_seed_clear_context(kb: KnowledgeService) -> None:
    facts(kb, "project(beta, x)", "project(alpha, y)")
    assert kb.clear_context({"category": "project(beta, _)"}) == ToolResult(
        "Cleared all facts matching: project(beta, _)"
    )
    assert q(kb, "project(P, _)") == [{"P": "alpha"}]
    assert kb.clear_context({"category": "nonexistent(_, _)"}) == ToolResult(
        "Cleared all facts matching: nonexistent(_, _)"
    )
    for args in ({}, {"category": None}, {"category": ""}):
        assert kb.clear_context(args) == ToolResult("InvalidArguments", True)


def test_seed_clear_context_with_memory_segment(kb: KnowledgeService) -> None:
    facts(kb, "task_status(a, done)", memory="feature_auth")
    facts(kb, "task_status(b, open)")
    assert ok(kb.clear_context({"category": "task_status(_, _)", "memory": "feature_auth"})) == (
        "Cleared all facts matching: task_status(_, _)"
    )
    assert q(kb, "task_status(X, _)", "feature_auth") == []
    assert q(kb, "task_status(X, _)") == [{"X": "b"}]


def test_seed_update_fact(kb: KnowledgeService) -> None:
    args = {"old_fact": 'server(alpha, "1.0")', "new_fact": 'server(alpha, "2.0")'}
    assert kb.update_fact(args) == ToolResult('No matching clause for: server(alpha, "1.0")', True)
    facts(kb, 'server(alpha, "1.0")')
    assert kb.update_fact(args) == ToolResult('Updated: server(alpha, "1.0") -> server(alpha, "2.0")')
    assert q(kb, "server(alpha, V)") == [{"V": "2.0"}]
    assert kb.update_fact({"old_fact": 'server(alpha, "2.0")', "new_fact": "a :- b"}) == ToolResult(
        "new_fact must not contain rule syntax", True
    )
    for bad in ({"old_fact": 'server(alpha, "1.0")'}, {"new_fact": "x"}, {"old_fact": "", "new_fact": "x"}):
        assert kb.update_fact(bad) == ToolResult("InvalidArguments", True)


def test_seed_upsert_fact(kb: KnowledgeService) -> None:
    assert kb.upsert_fact({"fact": "deploy(prod, v2)"}) == ToolResult("Upserted: deploy(prod, v2)")
    assert kb.upsert_fact({"fact": "deploy(prod, v3) :- true"}) == ToolResult(
        "fact must not contain rule syntax", True
    )
    for args in ({}, {"fact": None}, {"fact": ""}):
        assert kb.upsert_fact(args) == ToolResult("InvalidArguments", True)


# --------------------------------------------------------------------- §2.4 arguments


def test_r_a1_missing_null_wrong_type_or_empty_required_string(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    for value in (None, 1, True, ["human(x)"], {"a": 1}, ""):
        assert kb.remember_fact({"fact": value}) == ToolResult("InvalidArguments", True)
    assert kb.echo({"message": ""}) == ToolResult("")  # the one exception
    assert kb.echo({"message": 5}) == ToolResult("InvalidArguments", True)
    assert journal.batches == []


def test_r_a1_arguments_that_are_not_an_object(kb: KnowledgeService) -> None:
    assert kb.call("remember_fact", ["human(x)"]) == ToolResult("InvalidArguments", True)
    assert kb.call("get_knowledge_schema", None) == ToolResult('{"predicates":[],"total":0}')


def test_r_a2_optional_arguments_of_the_wrong_type(kb: KnowledgeService) -> None:
    assert kb.query_logic({"goal": "true", "memory": 3}) == ToolResult("InvalidArguments", True)
    assert kb.explain_why({"fact": "true", "max_depth": "2"}) == ToolResult("InvalidArguments", True)
    assert kb.explain_why({"fact": "true", "max_depth": True}) == ToolResult("InvalidArguments", True)
    assert kb.explain_why({"fact": "true", "max_depth": 1.5}) == ToolResult("InvalidArguments", True)
    assert kb.verify_consistency({"scope": 7}) == ToolResult("InvalidArguments", True)


def test_r_a3_unknown_extra_arguments_are_ignored(kb: KnowledgeService) -> None:
    assert ok(kb.remember_fact({"fact": "a(1)", "colour": "blue"})) == "Asserted: a(1)"
    assert ok(kb.echo({"message": "hi", "x": None})) == "hi"


def test_r_a4_memory_absent_null_or_empty_means_default(kb: KnowledgeService) -> None:
    for memory in (None, ""):
        ok(kb.remember_fact({"fact": "here(1)", "memory": memory}))
    assert q(kb, "here(X)") == [{"X": 1}, {"X": 1}]
    assert q(kb, "here(X)", "") == [{"X": 1}, {"X": 1}]


def test_r_a5_success_texts_quote_arguments_as_received(kb: KnowledgeService) -> None:
    assert ok(kb.remember_fact({"fact": "human(socrates)."})) == "Asserted: human(socrates)."
    assert ok(kb.remember_fact({"fact": " human( plato ) "})) == "Asserted:  human( plato ) "
    assert ok(kb.define_rule({"head": "m(X)", "body": "human(X)."})) == "Asserted rule: m(X) :- human(X)."
    assert ok(kb.forget_fact({"fact": "human(socrates) ."})) == "Retracted: human(socrates) ."


# --------------------------------------------------------------------- §7.5 memories


def test_r_m7_a_memory_that_is_not_mounted(kb: KnowledgeService, journal: RecordingJournal) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("remember_fact", {"fact": "a(1)"}),
        ("define_rule", {"head": "a(X)", "body": "b(X)"}),
        ("query_logic", {"goal": "true"}),
        ("trace_dependency", {"start_node": "a"}),
        ("verify_consistency", {}),
        ("explain_why", {"fact": "true"}),
        ("get_knowledge_schema", {}),
        ("forget_fact", {"fact": "a(1)"}),
        ("clear_context", {"category": "a(_)"}),
        ("update_fact", {"old_fact": "a(1)", "new_fact": "a(2)"}),
        ("upsert_fact", {"fact": "a(1)"}),
    ]
    for name, args in calls:
        for memory in ("unknown_segment", "__all__"):
            assert kb.call(name, {**args, "memory": memory}) == ToolResult(
                f"Memory not mounted: {memory}", True
            )
    assert journal.batches == []


def test_r_m8_mutations_of_a_read_only_memory_are_refused(
    kb: KnowledgeService, engine: Engine, journal: RecordingJournal
) -> None:
    engine.assertz("frozen", "old(1)")
    mutations: list[tuple[str, dict[str, Any]]] = [
        ("remember_fact", {"fact": "a(1)"}),
        ("define_rule", {"head": "a(X)", "body": "b(X)"}),
        ("forget_fact", {"fact": "old(1)"}),
        ("clear_context", {"category": "old(_)"}),
        ("update_fact", {"old_fact": "old(1)", "new_fact": "old(2)"}),
        ("upsert_fact", {"fact": "old(3)"}),
    ]
    for name, args in mutations:
        assert kb.call(name, {**args, "memory": "frozen"}) == ToolResult("Memory is read-only", True)
    assert journal.batches == []
    # Reads work on read-only memories.
    assert q(kb, "old(X)", "frozen") == [{"X": 1}]
    assert json.loads(ok(kb.get_knowledge_schema({"memory": "frozen"})))["total"] == 1
    assert ok(kb.explain_why({"fact": "old(1)", "memory": "frozen"})).startswith(
        '{"fact":"old(1)","proven":true'
    )


def test_r_m8_applies_to_default_when_it_is_mounted_read_only(
    engine: Engine, journal: RecordingJournal
) -> None:
    kb = KnowledgeService(engine, StaticMemories({"default": "ro"}), journal)
    assert kb.remember_fact({"fact": "a(1)"}) == ToolResult("Memory is read-only", True)
    assert ok(kb.query_logic({"goal": "true"})) == "[{}]"


def test_r_m1_memories_are_isolated(kb: KnowledgeService) -> None:
    facts(kb, "secret(42)", memory="feature_auth")
    assert q(kb, "secret(X)") == []
    assert q(kb, "feature_auth:secret(X)") == [{"X": 42}]


# --------------------------------------------------------------------- remember_fact (§4.2)


def test_r_f1_asserting_twice_stores_two_clauses(kb: KnowledgeService) -> None:
    facts(kb, "human(socrates)", "human(socrates)")
    assert q(kb, "human(socrates)") == [{}, {}]


def test_r_f2_a_rule_text_is_stored_as_a_rule(kb: KnowledgeService, journal: RecordingJournal) -> None:
    facts(kb, "b(1)", "a(X) :- b(X)")
    assert q(kb, "a(X)") == [{"X": 1}]
    assert json.loads(ok(kb.get_knowledge_schema({})))["predicates"][0] == {
        "name": "a",
        "arity": 1,
        "type": "rule",
        "count": 1,
    }
    assert journal.batches[-1] == ("default", [("assert", "a(X) :- b(X)")])


def test_r_f3_the_source_of_a_remembered_fact_is_interactive(kb: KnowledgeService) -> None:
    facts(kb, "ready(a)", "ready(a)")
    assert q(kb, "zpm_source(ready(a), S)") == [{"S": "interactive"}]  # one record per fact
    ok(kb.upsert_fact({"fact": "deploy(prod, v2)"}))
    ok(kb.update_fact({"old_fact": "ready(a)", "new_fact": "ready(b)"}))
    assert q(kb, "zpm_source(deploy(prod, v2), S)") == [{"S": "interactive"}]
    assert q(kb, "zpm_source(ready(b), S)") == [{"S": "interactive"}]


def test_r_f4_the_assert_entry_is_written_only_for_a_valid_clause(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    for bad in ("human(", "a(1). a(2).", "X", "42", "atom_length(a, 1)", ":- halt", "m:foo(1)"):
        assert kb.remember_fact({"fact": bad}) == ToolResult(f"Failed to assert: {bad}", True)
    assert journal.batches == []
    ok(kb.remember_fact({"fact": "parent(alice,bob)."}))
    ok(kb.remember_fact({"fact": "k(_, Y, _)"}))
    assert journal.batches == [
        ("default", [("assert", "parent(alice, bob)")]),
        ("default", [("assert", "k(_, Y, _)")]),  # R-W5: author names, re-parses to the same clause
    ]


# --------------------------------------------------------------------- define_rule (§4.3)


def test_r_d1_head_and_body_are_one_clause_with_shared_variables(kb: KnowledgeService) -> None:
    facts(kb, "p(1, a)", "p(2, b)", "q(b)")
    ok(kb.define_rule({"head": "r(X)", "body": "p(X, Y), q(Y)"}))
    ok(kb.define_rule({"head": "r(X)", "body": "X = 9"}))
    assert q(kb, "r(X)") == [{"X": 2}, {"X": 9}]  # appended after the existing clause


def test_r_d2_the_journal_entry_is_head_and_body_as_received(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    ok(kb.define_rule({"head": " mortal(X) ", "body": "human(X)."}))
    ok(kb.define_rule({"head": "path(X,Y)", "body": "edge(X,Y)"}))
    assert journal.batches == [
        ("default", [("assert", "mortal(X) :- human(X)")]),
        ("default", [("assert", "path(X,Y) :- edge(X,Y)")]),
    ]


@pytest.mark.parametrize(
    ("head", "body"),
    [("mortal(X", "human(X)"), ("mortal(X)", "human(X))"), ("m(X)", ")human(X)("), ("m(X)", "(a, (b)")],
)
def test_define_rule_unbalanced_parentheses(
    kb: KnowledgeService, journal: RecordingJournal, head: str, body: str
) -> None:
    assert kb.define_rule({"head": head, "body": body}) == ToolResult(
        "Invalid Prolog syntax in rule: unbalanced parentheses", True
    )
    assert journal.batches == []


def test_parentheses_inside_quotes_strings_codes_and_comments_do_not_count(kb: KnowledgeService) -> None:
    assert balanced_parentheses("a(X) :- X = ')'")
    assert balanced_parentheses('a(X) :- X = "(("')
    assert balanced_parentheses("a(X) :- X = 0'(")
    assert balanced_parentheses("a(X) :- X = 'it''s ('")
    assert balanced_parentheses("a(X) :- X = 'a\\'('")
    assert balanced_parentheses("a(X) :- b(X) % (")
    assert not balanced_parentheses("a(X :- b(X) /* ) */")
    ok(kb.define_rule({"head": "paren(X)", "body": "X = ')'"}))
    ok(kb.define_rule({"head": "code(X)", "body": "X = 0'("}))
    assert q(kb, "paren(X), code(C)") == [{"X": ")", "C": 40}]


@pytest.mark.parametrize(
    ("head", "body", "reason"),
    [
        ("m(X)", "human(X) human(Y)", "operator expected"),
        ("42", "true", "the head is not an atom or compound"),
        ("X", "human(X)", "the head is a variable"),
        ("atom_length(A, B)", "true", "cannot redefine built-in atom_length/2"),
    ],
)
def test_define_rule_other_syntax_errors_carry_a_short_reason(
    kb: KnowledgeService, journal: RecordingJournal, head: str, body: str, reason: str
) -> None:
    assert kb.define_rule({"head": head, "body": body}) == ToolResult(
        f"Invalid Prolog syntax in rule: {reason}", True
    )
    assert journal.batches == []


# --------------------------------------------------------------------- query_logic (§4.4, §3)


def test_query_syntax_error_is_query_execution_failed(kb: KnowledgeService) -> None:
    for goal in ("contributor(X,", "(((", "foo) bar", "a(1). a(2)."):
        assert kb.query_logic({"goal": goal}) == ToolResult("Query execution failed", True)


def test_runaway_query_hits_the_time_limit_and_the_next_call_succeeds(kb: KnowledgeService) -> None:
    ok(kb.remember_fact({"fact": "loop :- loop."}))
    assert kb.query_logic({"goal": "loop"}) == ToolResult("Query execution failed", True)
    assert kb.query_logic({"goal": "true"}) == ToolResult("[{}]")
    assert ok(kb.remember_fact({"fact": "after(1)"})) == "Asserted: after(1)"


def test_halt_is_refused(kb: KnowledgeService, engine: Engine) -> None:
    for goal in ("halt", "halt(0)", "true, halt", "call(halt)"):
        assert kb.query_logic({"goal": goal}) == ToolResult("Query execution failed", True)
    assert engine.alive
    assert kb.query_logic({"goal": "true"}) == ToolResult("[{}]")


def test_r_q2_stack_limit_is_query_execution_failed(kb: KnowledgeService) -> None:
    ok(kb.define_rule({"head": "deep(N)", "body": "deep(s(N))"}))
    assert kb.query_logic({"goal": "deep(z)"}) == ToolResult("Query execution failed", True)
    assert kb.query_logic({"goal": "true"}) == ToolResult("[{}]")


def test_r_q3_at_most_100_solutions(kb: KnowledgeService) -> None:
    assert len(q(kb, "between(1, inf, X)")) == 100


def test_r_q4_refused_goals_change_nothing(kb: KnowledgeService, journal: RecordingJournal) -> None:
    facts(kb, "x(0)")
    before = list(journal.batches)
    refused = (
        "assertz(x(1))",
        "retract(x(0))",
        "shell(ls)",
        "open('/tmp/q', write, S)",
        "nowhere:assertz(x(1))",
    )
    for goal in (*refused, "lists:append(X, Y, Z)", "system:retract(x(0))"):
        assert kb.query_logic({"goal": goal}) == ToolResult("Query execution failed", True), goal
    assert kb.query_logic({"goal": "nowhere:x(X)"}) == ToolResult("[]")  # R-M2: no such memory mounted
    assert q(kb, "x(X)") == [{"X": 0}]
    assert journal.batches == before


def test_r_q6_runtime_errors_give_no_solutions(kb: KnowledgeService) -> None:
    assert kb.query_logic({"goal": "undefined_thing(X)"}) == ToolResult("[]")
    assert kb.query_logic({"goal": "X is foo + 1"}) == ToolResult("[]")


def test_r_q7_a_qualified_goal_reads_a_mounted_memory(kb: KnowledgeService) -> None:
    facts(kb, "task_done(login)", memory="feature_auth")
    assert q(kb, "feature_auth:task_done(X)") == [{"X": "login"}]


def test_r_q8_query_logic_writes_no_journal(kb: KnowledgeService, journal: RecordingJournal) -> None:
    facts(kb, "f(1)")
    before = list(journal.batches)
    q(kb, "f(X)")
    q(kb, "undefined(_)")
    kb.query_logic({"goal": "halt"})
    assert journal.batches == before


def test_r_q9_output_of_a_goal_is_discarded(kb: KnowledgeService, capfd: pytest.CaptureFixture[str]) -> None:
    assert q(kb, "write(hello), nl, X = 1") == [{"X": 1}]
    out, _ = capfd.readouterr()
    assert "hello" not in out


def test_r_j_encoding_of_solutions(kb: KnowledgeService) -> None:
    facts(kb, "f(1)", "f(1)")
    assert ok(kb.query_logic({"goal": "f(1)"})) == "[{},{}]"  # R-J2
    assert ok(kb.query_logic({"goal": "f(2)"})) == "[]"
    assert ok(kb.query_logic({"goal": "X = g('Tag-Triggered', [a, 2], \"s\"), _Y = 1"})) == (
        '[{"X":{"functor":"g","args":["Tag-Triggered",["a",2],"s"]}}]'  # R-J3, R-J4
    )


# --------------------------------------------------------------------- trace_dependency (§4.5)


def test_trace_dependency_start_node_must_be_an_atom(kb: KnowledgeService, engine: Engine) -> None:
    for bad in ("a), halt(0", "A", "1a", "a b", "a-b"):
        assert kb.trace_dependency({"start_node": bad}) == ToolResult(
            "start_node must be a valid Prolog atom", True
        )
    assert engine.alive


def test_r_td1_the_start_node_is_the_second_argument(kb: KnowledgeService) -> None:
    facts(kb, "path(b, a)", "path(a, z)")
    assert ok(kb.trace_dependency({"start_node": "a"})) == '["b"]'
    facts(kb, "path(q, '_x')")
    assert ok(kb.trace_dependency({"start_node": "_x"})) == '["q"]'  # an atom, not a variable


def test_r_td2_values_kinds_order_and_duplicates(kb: KnowledgeService) -> None:
    facts(kb, "path(b, a)", "path(3, a)", "path(f(x), a)", 'path("s", a)', "path(b, a)", "path(2.5, a)")
    assert ok(kb.trace_dependency({"start_node": "a"})) == '["b",3,2.5]'


def test_r_td3_no_path_predicate_is_an_empty_list(kb: KnowledgeService) -> None:
    assert kb.trace_dependency({"start_node": "a"}) == ToolResult("[]")


def test_trace_dependency_time_limit_is_execution_failed(kb: KnowledgeService) -> None:
    ok(kb.define_rule({"head": "path(X, Y)", "body": "path(X, Y)"}))
    assert kb.trace_dependency({"start_node": "a"}) == ToolResult("ExecutionFailed", True)
    assert ok(kb.query_logic({"goal": "true"})) == "[{}]"


# --------------------------------------------------------------------- verify_consistency (§4.6)


def test_verify_consistency_scope_must_be_a_word(kb: KnowledgeService) -> None:
    for bad in ("deploy ment", "a(X)", "x), halt", "", "é"):
        assert kb.verify_consistency({"scope": bad}) == ToolResult("InvalidArguments", True)


def test_r_v1_the_scope_selects_integrity_violation_scope(kb: KnowledgeService) -> None:
    facts(kb, "integrity_violation(general)", "integrity_violation_deployment(deploy_v3)")
    facts(kb, "integrity_violation(a, b)")  # another arity is not consulted
    assert ok(kb.verify_consistency({})) == '{"violations":["general"]}'
    assert ok(kb.verify_consistency({"scope": "deployment"})) == '{"violations":["deploy_v3"]}'
    assert ok(kb.verify_consistency({"scope": "Other_1"})) == '{"violations":[]}'


def test_r_v2_canonical_renderings_in_order_with_duplicates(kb: KnowledgeService) -> None:
    facts(kb, "integrity_violation(b)", "integrity_violation(f(x,'A b'))", "integrity_violation(b)")
    facts(kb, "integrity_violation([1,2])", 'integrity_violation("1.0")', "integrity_violation(g(_))")
    assert json.loads(ok(kb.verify_consistency({}))) == {
        "violations": ["b", "f(x, 'A b')", "b", "[1, 2]", '"1.0"', "g(A)"]
    }


def test_r_v2_errors_and_the_time_limit_give_no_violations(kb: KnowledgeService) -> None:
    ok(kb.define_rule({"head": "integrity_violation(X)", "body": "X is foo + 1"}))
    assert ok(kb.verify_consistency({})) == '{"violations":[]}'
    ok(kb.define_rule({"head": "integrity_violation_loop(X)", "body": "integrity_violation_loop(X)"}))
    assert ok(kb.verify_consistency({"scope": "loop"})) == '{"violations":[]}'
    ok(kb.define_rule({"head": "integrity_violation_bad(X)", "body": "halt, X = 1"}))
    assert ok(kb.verify_consistency({"scope": "bad"})) == '{"violations":[]}'
    assert ok(kb.query_logic({"goal": "true"})) == "[{}]"


# --------------------------------------------------------------------- explain_why (§4.7)


def explain(kb: KnowledgeService, fact: str, **extra: Any) -> Any:
    return json.loads(ok(kb.explain_why({"fact": fact, **extra})))


def test_r_e1_proven_iff_a_solution_within_the_time_limit(kb: KnowledgeService) -> None:
    facts(kb, "loop :- loop")
    assert explain(kb, "loop") == {"fact": "loop", "proven": False, "proof_tree": None}
    assert explain(kb, "undefined(x)") == {"fact": "undefined(x)", "proven": False, "proof_tree": None}
    assert explain(kb, "true")["proven"] is True


def test_r_e2_first_solution_root_verbatim_and_instantiated_children(kb: KnowledgeService) -> None:
    facts(kb, "parent(tom, bob)", "parent(bob, sue)", "parent(bob, ann)")
    ok(kb.define_rule({"head": "grand(X, Z)", "body": "parent(X, Y), parent(Y, Z)"}))
    tree = explain(kb, "grand(tom,Who).")
    assert tree["fact"] == "grand(tom,Who)."
    assert list(tree["proof_tree"]) == ["goal", "rule_applied", "children"]
    assert tree["proof_tree"]["goal"] == "grand(tom,Who)."
    assert [child["goal"] for child in tree["proof_tree"]["children"]] == [
        "parent(tom, bob)",
        "parent(bob, sue)",
    ]


def test_r_e3_the_first_clause_whose_body_succeeds_is_applied(kb: KnowledgeService) -> None:
    facts(kb, "b(2)")
    ok(kb.define_rule({"head": "a(Thing)", "body": "c(Thing)"}))
    ok(kb.define_rule({"head": "a(Thing)", "body": "b(Thing)"}))
    tree = explain(kb, "a(2)")["proof_tree"]
    assert tree["rule_applied"] == "a(Thing) :- b(Thing)"
    assert tree["children"] == [{"goal": "b(2)", "rule_applied": "fact", "children": []}]


def test_r_e3_cut_commits_like_prolog(kb: KnowledgeService) -> None:
    facts(kb, "n(1)", "n(2)")
    ok(kb.define_rule({"head": "first(X)", "body": "n(X), !"}))
    ok(kb.define_rule({"head": "only2", "body": "first(X), X = 2"}))
    assert explain(kb, "only2")["proven"] is False  # as query_logic: the cut keeps n(1)
    assert q(kb, "only2") == []


def test_r_e4_builtins_and_control_constructs_are_leaves(kb: KnowledgeService) -> None:
    facts(kb, "age(ann, 20)", "banned(bob)")
    ok(kb.define_rule({"head": "adult(P)", "body": "age(P, A), A >= 18, \\+ banned(P), (A > 90 ; true)"}))
    children = explain(kb, "adult(ann)")["proof_tree"]["children"]
    assert children == [
        {"goal": "age(ann, 20)", "rule_applied": "fact", "children": []},
        {"goal": "20>=18", "rule_applied": "builtin", "children": []},
        {"goal": "\\+banned(ann)", "rule_applied": "builtin", "children": []},
        {"goal": "20>90;true", "rule_applied": "builtin", "children": []},
    ]


def test_r_e5_depth_truncation(kb: KnowledgeService) -> None:
    facts(kb, "c(1)")
    ok(kb.define_rule({"head": "b(X)", "body": "c(X)"}))
    ok(kb.define_rule({"head": "a(X)", "body": "b(X)"}))
    assert explain(kb, "a(1)", max_depth=0)["proof_tree"]["children"] == "truncated"
    one = explain(kb, "a(1)", max_depth=1)["proof_tree"]
    assert one["children"] == [{"goal": "b(1)", "rule_applied": "b(X) :- c(X)", "children": "truncated"}]
    two = explain(kb, "a(1)", max_depth=2)["proof_tree"]["children"][0]["children"]
    assert two == [{"goal": "c(1)", "rule_applied": "fact", "children": []}]  # a fact has no children
    assert explain(kb, "a(1)", max_depth=-1) == explain(kb, "a(1)")


def test_explain_why_unparsable_or_refused_is_execution_failed(kb: KnowledgeService, engine: Engine) -> None:
    assert kb.explain_why({"fact": "risky(("}) == ToolResult("ExecutionFailed", True)
    assert kb.explain_why({"fact": "halt"}) == ToolResult("ExecutionFailed", True)
    assert engine.alive


def test_explain_why_follows_qualified_goals_into_mounted_memories(kb: KnowledgeService) -> None:
    facts(kb, "secret(42)", memory="feature_auth")
    ok(kb.define_rule({"head": "via(X)", "body": "feature_auth:secret(X)"}))
    assert explain(kb, "via(V)")["proof_tree"]["children"] == [
        {"goal": "feature_auth:secret(42)", "rule_applied": "fact", "children": []}
    ]


# --------------------------------------------------------------------- get_knowledge_schema (§4.11)


def test_r_s1_entries_types_counts_and_order(kb: KnowledgeService, engine: Engine) -> None:
    facts(kb, "zeta(1)", "alpha(1, 2)", "alpha(1)", "alpha(X) :- zeta(X)", "mixed(1)", "mixed(X) :- zeta(X)")
    engine.load_clauses(
        "default", [":- dynamic(declared/1)", "'Odd name'(1)", "tms_justification(zeta(1), a)"]
    )
    assert json.loads(ok(kb.get_knowledge_schema({}))) == {
        "predicates": [
            {"name": "alpha", "arity": 1, "type": "both", "count": 2},
            {"name": "alpha", "arity": 2, "type": "fact", "count": 1},
            {"name": "mixed", "arity": 1, "type": "both", "count": 2},
            {"name": "zeta", "arity": 1, "type": "fact", "count": 1},
        ],
        "total": 4,
    }


def test_r_s2_loaded_predicates_appear(kb: KnowledgeService, engine: Engine) -> None:
    engine.load_clauses("default", [f"feature(f{i}, x, y)" for i in range(4)])
    assert ok(kb.get_knowledge_schema({})) == (
        '{"predicates":[{"name":"feature","arity":3,"type":"fact","count":4}],"total":1}'
    )


def test_r_i2_library_predicates_never_appear(kb: KnowledgeService) -> None:
    q(kb, "append([1], [2], L), sum_list([1, 2], S)")
    assert ok(kb.get_knowledge_schema({})) == '{"predicates":[],"total":0}'


# --------------------------------------------------------------------- forget_fact (§4.12)


def test_r_ff1_removes_one_copy_of_the_first_fact_never_a_rule(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    facts(kb, "p(1)", "p(1)", "p(X) :- X = 2")
    ok(kb.forget_fact({"fact": "p(1)"}))
    assert q(kb, "p(X)") == [{"X": 1}, {"X": 2}]
    ok(kb.forget_fact({"fact": "p(_)"}))
    assert kb.forget_fact({"fact": "p(_)"}) == ToolResult("No matching clause found for: p(_)", True)
    assert q(kb, "p(X)") == [{"X": 2}]


def test_r_ff2_justification_and_source_records_are_left_alone(kb: KnowledgeService, engine: Engine) -> None:
    engine.load_clauses("default", ["ready(a)", "tms_justification(ready(a), infra)"])
    facts(kb, "ready(b)")
    ok(kb.forget_fact({"fact": "ready(a)"}))
    ok(kb.forget_fact({"fact": "ready(b)"}))
    assert q(kb, "tms_justification(F, A)") == [{"F": {"functor": "ready", "args": ["a"]}, "A": "infra"}]
    assert q(kb, "zpm_source(ready(b), S)") == [{"S": "interactive"}]


def test_r_ff3_one_retract_entry_only_when_a_clause_was_removed(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    facts(kb, "p(1, a)")
    journal.batches.clear()
    kb.forget_fact({"fact": "p(2, _)"})
    kb.forget_fact({"fact": "broken("})
    assert journal.batches == []
    ok(kb.forget_fact({"fact": "p(1,Which)."}))
    assert journal.batches == [("default", [("retract", "p(1, Which)")])]


def test_forget_fact_unparsable_or_not_a_fact_is_invalid(kb: KnowledgeService) -> None:
    for bad in ("human(", "X", "42", "a :- b", "m:x(1)"):
        assert kb.forget_fact({"fact": bad}) == ToolResult("InvalidArguments", True)


# --------------------------------------------------------------------- clear_context (§4.13)


def test_r_cc1_removes_facts_and_rules_whose_head_unifies(kb: KnowledgeService) -> None:
    facts(kb, "role(a, x)", "role(b, y)", "role(X, z) :- X = c", "role(solo)", "hypothesis", "hypothesis(1)")
    ok(kb.clear_context({"category": "role(_, _)"}))
    assert q(kb, "role(X, Y)") == []
    assert q(kb, "role(X)") == [{"X": "solo"}]
    ok(kb.clear_context({"category": "hypothesis"}))  # a bare atom: only the 0-arity predicate
    assert q(kb, "hypothesis") == []
    assert q(kb, "hypothesis(X)") == [{"X": 1}]


def test_r_cc2_clearing_a_named_memory_never_touches_another(kb: KnowledgeService) -> None:
    facts(kb, "item(1)")
    facts(kb, "item(2)", memory="feature_auth")
    ok(kb.clear_context({"category": "item(_)", "memory": "feature_auth"}))
    assert q(kb, "item(X)") == [{"X": 1}]
    assert q(kb, "item(X)", "feature_auth") == []


def test_r_cc3_tms_records_are_untouched(
    kb: KnowledgeService, engine: Engine, journal: RecordingJournal
) -> None:
    engine.load_clauses("default", ["ready(a)", "tms_justification(ready(a), infra)"])
    facts(kb, "ready(b)")
    ok(kb.clear_context({"category": "ready(_)"}))
    journal.batches.clear()
    for pattern in ("tms_justification(_, _)", "zpm_source(_, _)"):
        assert ok(kb.clear_context({"category": pattern})) == f"Cleared all facts matching: {pattern}"
    assert q(kb, "tms_justification(F, A)") == [{"F": {"functor": "ready", "args": ["a"]}, "A": "infra"}]
    assert q(kb, "zpm_source(ready(b), S)") == [{"S": "interactive"}]
    assert journal.batches == []  # journaling those patterns would clear the records on replay


def test_r_cc4_one_retractall_entry_also_when_nothing_matched(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    ok(kb.clear_context({"category": "nonexistent(_, _)"}))
    ok(kb.clear_context({"category": "project(beta,Who)."}))
    assert journal.batches == [
        ("default", [("retractall", "nonexistent(_, _)")]),
        ("default", [("retractall", "project(beta, Who)")]),
    ]


def test_clear_context_unparsable_pattern_is_invalid_and_not_journaled(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    for bad in ("project(beta,", "X", "1", "a :- b"):
        assert kb.clear_context({"category": bad}) == ToolResult("InvalidArguments", True)
    assert journal.batches == []


# --------------------------------------------------------------------- update_fact (§4.14)


def test_r_u1_all_or_nothing(kb: KnowledgeService, journal: RecordingJournal) -> None:
    facts(kb, "s(a, 1)", "s(b, 1)", "other(x)")
    journal.batches.clear()
    assert kb.update_fact({"old_fact": "s(c, 1)", "new_fact": "s(c, 2)"}) == ToolResult(
        "No matching clause for: s(c, 1)", True
    )
    assert kb.update_fact({"old_fact": "s(a, 1)", "new_fact": "s(a,"}) == ToolResult("InvalidArguments", True)
    assert kb.update_fact({"old_fact": "s(a,", "new_fact": "s(a, 2)"}) == ToolResult("InvalidArguments", True)
    assert kb.update_fact({"old_fact": "s(a, 1)", "new_fact": "atom_length(a, 1)"}) == ToolResult(
        "InvalidArguments", True
    )
    assert journal.batches == []
    assert q(kb, "s(X, V)") == [{"X": "a", "V": 1}, {"X": "b", "V": 1}]
    ok(kb.update_fact({"old_fact": "s(a, 1)", "new_fact": "s(a, 2)"}))
    assert q(kb, "s(X, V)") == [{"X": "b", "V": 1}, {"X": "a", "V": 2}]  # appended, not in place


def test_r_u1_rule_syntax_in_new_fact_even_when_written_without_the_operator(kb: KnowledgeService) -> None:
    facts(kb, "a(1)")
    assert kb.update_fact({"old_fact": "a(1)", "new_fact": "':-'(a(2), b)"}) == ToolResult(
        "new_fact must not contain rule syntax", True
    )
    assert kb.update_fact({"old_fact": "a(1)", "new_fact": "'\\x3a\\-'(a(2), b)"}) == ToolResult(
        "new_fact must not contain rule syntax", True
    )
    assert q(kb, "a(X)") == [{"X": 1}]


def test_r_u2_one_batch_retract_old_then_assert_new(kb: KnowledgeService, journal: RecordingJournal) -> None:
    facts(kb, 'server(alpha, "1.0")')
    journal.batches.clear()
    ok(kb.update_fact({"old_fact": 'server(alpha,"1.0").', "new_fact": 'server(alpha,"2.0")'}))
    assert journal.batches == [
        ("default", [("retract", 'server(alpha, "1.0")'), ("assert", 'server(alpha, "2.0")')])
    ]


# --------------------------------------------------------------------- upsert_fact (§4.15)


def test_r_up1_key_is_functor_arity_and_first_argument(kb: KnowledgeService) -> None:
    facts(kb, "deploy(prod, v1)", "deploy(prod, v0)", "deploy(dev, v1)", "deploy(prod)", "deploy(prod, a, b)")
    facts(kb, "deploy(prod, X) :- X = rule")
    ok(kb.upsert_fact({"fact": "deploy(prod, v2)"}))
    assert q(kb, "deploy(E, V)") == [{"E": "dev", "V": "v1"}, {"E": "prod", "V": "v2"}]
    assert q(kb, "deploy(E)") == [{"E": "prod"}]
    assert q(kb, "deploy(E, A, B)") == [{"E": "prod", "A": "a", "B": "b"}]
    facts(kb, "mode(on)", "mode(off)", "flag", "flag")
    ok(kb.upsert_fact({"fact": "mode(on)"}))
    ok(kb.upsert_fact({"fact": "flag"}))
    assert q(kb, "mode(M)") == [{"M": "off"}, {"M": "on"}]
    assert q(kb, "flag") == [{}]


def test_r_up2_idempotent(kb: KnowledgeService) -> None:
    ok(kb.upsert_fact({"fact": "deploy(prod, v2)"}))
    ok(kb.upsert_fact({"fact": "deploy(prod, v2)"}))
    assert q(kb, "deploy(E, V)") == [{"E": "prod", "V": "v2"}]


def test_r_up3_a_variable_first_argument_replaces_the_whole_predicate(kb: KnowledgeService) -> None:
    facts(kb, "deploy(prod, v1)", "deploy(dev, v1)")
    ok(kb.upsert_fact({"fact": "deploy(_, v9)"}))
    assert q(kb, "deploy(E, V)") == [{"E": "_G1", "V": "v9"}]


def test_r_up4_one_batch_retractall_pattern_then_assert(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    ok(kb.upsert_fact({"fact": "deploy(prod,v2)"}))
    ok(kb.upsert_fact({"fact": "flag."}))
    ok(kb.upsert_fact({"fact": "solo(X)"}))
    assert journal.batches == [
        ("default", [("retractall", "deploy(prod, _)"), ("assert", "deploy(prod, v2)")]),
        ("default", [("retractall", "flag"), ("assert", "flag")]),
        ("default", [("retractall", "solo(X)"), ("assert", "solo(X)")]),
    ]


def test_upsert_fact_unparsable_is_invalid_and_not_journaled(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    for bad in ("deploy(prod,", "X", "7"):
        assert kb.upsert_fact({"fact": bad}) == ToolResult("InvalidArguments", True)
    assert journal.batches == []


# --------------------------------------------------------------------- journal discipline (§6.3)


def test_r_w4_replaying_the_journal_reproduces_the_live_state(
    kb: KnowledgeService, journal: RecordingJournal, engine: Engine
) -> None:
    facts(kb, "p(1, X)", "p(Y, 2)", "p(2, 2)", "k(_, Z, _)", "r(X) :- p(X, _)")
    ok(kb.define_rule({"head": "s(A)", "body": "p(A, A)"}))
    ok(kb.forget_fact({"fact": "p(2, _)"}))  # the pattern unifies p(Y, 2) first, not p(1, X)
    ok(kb.upsert_fact({"fact": "u(a, 1)"}))
    ok(kb.upsert_fact({"fact": "u(a, 2)"}))
    ok(kb.update_fact({"old_fact": "u(a, _)", "new_fact": "u(b, 3)"}))
    ok(kb.clear_context({"category": "k(_, _, _)"}))
    kb.forget_fact({"fact": "never(1)"})
    kb.update_fact({"old_fact": "never(1)", "new_fact": "never(2)"})
    live = _user_clauses(engine, "default")
    engine.ensure_memory("replayed")
    for _, entries in journal.batches:
        for op, clause in entries:
            if op == "assert":
                engine.assertz("replayed", clause)
            elif op == "retract":
                engine.retract_first_fact("replayed", clause)
            else:
                engine.retractall("replayed", clause)
    assert _user_clauses(engine, "replayed") == live


def _user_clauses(engine: Engine, memory: str) -> list[tuple[str, int, tuple[str, ...]]]:
    return [
        (p.name, p.arity, p.clauses)
        for p in engine.predicates(memory)
        if p.clauses and p.name not in ("zpm_source", "tms_justification")
    ]


def test_r_w6_read_only_tools_never_write_to_the_journal(
    kb: KnowledgeService, journal: RecordingJournal
) -> None:
    facts(kb, "path(b, a)", "integrity_violation(x)")
    journal.batches.clear()
    kb.echo({"message": "x"})
    kb.query_logic({"goal": "path(X, Y)"})
    kb.trace_dependency({"start_node": "a"})
    kb.verify_consistency({})
    kb.explain_why({"fact": "path(b, a)"})
    kb.get_knowledge_schema({})
    assert journal.batches == []


def test_every_mutation_is_one_batch_for_its_memory(kb: KnowledgeService, journal: RecordingJournal) -> None:
    ok(kb.remember_fact({"fact": "a(1)", "memory": "feature_auth"}))
    ok(kb.upsert_fact({"fact": "a(2)", "memory": "feature_auth"}))
    assert [memory for memory, _ in journal.batches] == ["feature_auth", "feature_auth"]
    assert len(journal.batches[1][1]) == 2


# --------------------------------------------------------------------- engine failures


def test_a_dead_engine_fails_the_call_and_the_next_call_succeeds(
    kb: KnowledgeService, engine: Engine
) -> None:
    pid = engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert kb.query_logic({"goal": "true"}) == ToolResult("ExecutionFailed", True)
    assert kb.query_logic({"goal": "true"}) == ToolResult("[{}]")
    assert ok(kb.remember_fact({"fact": "back(1)"})) == "Asserted: back(1)"
    assert engine.pid != pid


def test_the_helper_survives_a_restart(kb: KnowledgeService, engine: Engine) -> None:
    engine.restart()
    assert ok(kb.upsert_fact({"fact": "after(restart)"})) == "Upserted: after(restart)"
    assert ok(kb.get_knowledge_schema({})) == (
        '{"predicates":[{"name":"after","arity":1,"type":"fact","count":1}],"total":1}'
    )


def test_unknown_tool_name_is_a_key_error(kb: KnowledgeService) -> None:
    assert not kb.handles("assume_fact")
    with pytest.raises(KeyError):
        kb.call("assume_fact", {})


def test_tool_result_as_mcp_result() -> None:
    assert ToolResult("x").as_mcp() == {"content": [{"type": "text", "text": "x"}], "isError": False}
    assert ToolResult("InvalidArguments", True).as_mcp()["isError"] is True
