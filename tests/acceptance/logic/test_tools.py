"""Every tool's success and error paths over stdio (spec logic-memory.md §4, §11.1): the seed's
request/response examples reproduced exactly (JSON texts compared as JSON), plus the error cases the
seed names only in prose. Each test is one ``zpm serve`` session playing a script of calls."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from tests.acceptance.logic.harness import NO_ENGINE
from tests.acceptance.logic.steps import Step, fails, ok, ok_json, play, seed, seeded

BAD = "InvalidArguments"
QUERY_FAILED = "Query execution failed"
NOT_MOUNTED = "Memory not mounted: ghost"


def missing_values(tool: str, argument: str, others: dict[str, object]) -> list[Step]:
    """R-A1: the argument absent, null, of the wrong JSON type or empty."""
    return [
        fails(tool, others, BAD),
        fails(tool, {**others, argument: None}, BAD),
        fails(tool, {**others, argument: 42}, BAD),
        fails(tool, {**others, argument: ""}, BAD),
    ]


# ---------------------------------------------------------------------------- echo, remember, define, forget


def test_echo_remember_fact_define_rule_and_forget_fact(project: Path) -> None:
    play(
        project,
        [
            seeded("echo#1"),
            fails("echo", {}, seed("echo#2")["text"]),
            fails("echo", {"message": None}, BAD),
            fails("echo", {"message": 7}, BAD),
            ok("echo", {"message": ""}, ""),  # the one exception to R-A1
            ok("echo", {"message": "hi", "extra": [1]}, "hi"),  # R-A3
            seeded("remember_fact#1"),
            *missing_values("remember_fact", "fact", {}),
            ok("remember_fact", {"fact": " human(plato). "}, "Asserted:  human(plato). "),  # R-A5
            fails("remember_fact", {"fact": "bad(("}, "Failed to assert: bad(("),
            fails("remember_fact", {"fact": "a(1). a(2)."}, "Failed to assert: a(1). a(2)."),  # R-P1
            ok(
                "remember_fact", {"fact": "thinker(X) :- human(X)"}, "Asserted: thinker(X) :- human(X)"
            ),  # R-F2
            fails("remember_fact", {"fact": "x(1)", "memory": "ghost"}, NOT_MOUNTED),
            ok("remember_fact", {"fact": "x(1)", "memory": ""}, "Asserted: x(1)"),  # R-A4
            seeded("define_rule#1"),
            fails("define_rule", {"body": "human(X)"}, seed("define_rule#2")["text"]),
            fails("define_rule", {"head": "mortal(X)"}, BAD),
            fails("define_rule", {"head": "mortal(X)", "body": ""}, BAD),
            fails("define_rule", {"head": "", "body": "human(X)"}, BAD),
            fails("define_rule", {"head": "mortal(X", "body": "human(X)"}, seed("define_rule#3")["text"]),
            Step(
                "define_rule",
                {"head": "3", "body": "true"},
                error=True,
                prefix="Invalid Prolog syntax in rule: ",
            ),
            Step(
                "define_rule",
                {"head": "m(X)", "body": "h(X) +"},
                error=True,
                prefix="Invalid Prolog syntax in rule: ",
            ),
            fails("define_rule", {"head": "m(X)", "body": "h(X)", "memory": "ghost"}, NOT_MOUNTED),
            ok_json("query_logic", {"goal": "mortal(X)"}, [{"X": "socrates"}, {"X": "plato"}]),
            ok_json("query_logic", {"goal": "thinker(X)"}, [{"X": "socrates"}, {"X": "plato"}]),
            seeded("forget_fact#1"),
            seeded("forget_fact#2"),  # the same fact again: gone
            fails("forget_fact", {}, seed("forget_fact#3")["text"]),
            *missing_values("forget_fact", "fact", {}),
            fails("forget_fact", {"fact": "mortal(X)"}, "No matching clause found for: mortal(X)"),  # R-FF1
            ok("remember_fact", {"fact": "dup(1)"}),
            ok("remember_fact", {"fact": "dup(1)"}),
            ok("forget_fact", {"fact": "dup(X)"}, "Retracted: dup(X)"),
            ok_json("query_logic", {"goal": "dup(X)"}, [{"X": 1}]),  # one copy only
            fails("forget_fact", {"fact": "dup(1)", "memory": "ghost"}, NOT_MOUNTED),
            ok_json("query_logic", {"goal": "mortal(X)"}, [{"X": "plato"}]),
        ],
    )


# ---------------------------------------------------------------------------- query_logic


def test_query_logic_encodings_limits_and_refusals(project: Path) -> None:
    play(
        project,
        [
            ok_json("query_logic", {"goal": "fruit(X)"}, []),  # undefined predicate: [] (R-Q6)
            ok("remember_fact", {"fact": "fruit(apple)"}),
            ok("remember_fact", {"fact": "fruit(banana)"}),
            seeded("query_logic#1"),
            seeded("query_logic#2", {"goal": "fruit(cherry)"}),
            fails("query_logic", {}, seed("query_logic#3")["text"]),
            *missing_values("query_logic", "goal", {}),
            fails("query_logic", {"goal": "contributor(X,"}, QUERY_FAILED),  # §11.3: the later behaviour
            ok_json("query_logic", {"goal": "fruit(apple)"}, [{}]),  # R-J2
            ok("remember_fact", {"fact": "fruit(apple)"}),
            ok_json("query_logic", {"goal": "fruit(apple)"}, [{}, {}]),
            ok("remember_fact", {"fact": "item('Tag-Triggered', \"1.0\", [x, y], f(- 1), 2.5)"}),
            ok_json(
                "query_logic",
                {"goal": "item(A, S, L, C, F)"},
                [
                    {
                        "A": "Tag-Triggered",
                        "S": "1.0",
                        "L": ["x", "y"],
                        "C": {"functor": "f", "args": [{"functor": "-", "args": [1]}]},
                        "F": 2.5,
                    }
                ],
            ),
            ok_json("query_logic", {"goal": "item(_, _Ignored, _, _, Y)"}, [{"Y": 2.5}]),
            ok_json("query_logic", {"goal": "Y = b, X = a"}, [{"Y": "b", "X": "a"}]),  # R-J1 order
            ok_json("query_logic", {"goal": "between(1, 1000000000, X)"}, [{"X": i} for i in range(1, 101)]),
            fails("query_logic", {"goal": "assertz(fruit(kiwi))"}, QUERY_FAILED),  # R-Q4
            fails("query_logic", {"goal": "retract(fruit(apple))"}, QUERY_FAILED),
            fails("query_logic", {"goal": "shell('touch x')"}, QUERY_FAILED),
            fails("query_logic", {"goal": "open('x', write, _)"}, QUERY_FAILED),
            fails("query_logic", {"goal": "consult('x')"}, QUERY_FAILED),
            fails("query_logic", {"goal": "lists:append(X, Y, [1])"}, QUERY_FAILED),
            ok_json("query_logic", {"goal": "X is 1 / 0"}, []),  # runtime error: no solutions (R-Q5)
            ok_json(
                "query_logic", {"goal": "findall(_F, fruit(_F), L)"}, [{"L": ["apple", "banana", "apple"]}]
            ),
            Step("query_logic", {"goal": "X = _"}, prefix='[{"X":"_'),  # R-J3: an unbound variable
            fails("query_logic", {"goal": "true", "memory": "ghost"}, NOT_MOUNTED),
            ok_json(
                "query_logic",
                {"goal": "fruit(X)", "memory": None},
                [{"X": "apple"}, {"X": "banana"}, {"X": "apple"}],
            ),
        ],
    )
    assert not (project / "x").exists()
    journal = (project / ".zpm" / "data" / "journal.wal").read_text(encoding="utf-8")
    assert "kiwi" not in journal and journal.count("\n") == 4  # R-Q8: only the four remember_fact calls


# ---------------------------------------------------------------------------- trace_dependency, schema


def test_trace_dependency_and_get_knowledge_schema(project: Path) -> None:
    play(
        project,
        [
            seeded("get_knowledge_schema#2"),
            ok_json("trace_dependency", {"start_node": "a"}, []),  # R-TD3: no path/2 yet
            ok("define_rule", {"head": "path(X, Start)", "body": "depends_on(Start, X)"}),
            ok("define_rule", {"head": "path(X, Start)", "body": "depends_on(Start, Mid), path(X, Mid)"}),
            ok("remember_fact", {"fact": "depends_on(a, b)"}),
            ok("remember_fact", {"fact": "depends_on(b, c)"}),
            ok("remember_fact", {"fact": "depends_on(a, c)"}),
            seeded("trace_dependency#1"),  # duplicates removed (R-TD2)
            seeded("trace_dependency#2", {"start_node": "c"}),
            fails("trace_dependency", {}, seed("trace_dependency#3")["text"]),
            *missing_values("trace_dependency", "start_node", {}),
            fails("trace_dependency", {"start_node": "a), halt(0"}, "start_node must be a valid Prolog atom"),
            fails("trace_dependency", {"start_node": "Upper"}, "start_node must be a valid Prolog atom"),
            ok_json("trace_dependency", {"start_node": "_b"}, []),  # [a-z_] may start a node
            fails("trace_dependency", {"start_node": "a", "memory": "ghost"}, NOT_MOUNTED),
            ok("remember_fact", {"fact": "path(1, n)"}),
            ok("remember_fact", {"fact": "path(f(x), n)"}),
            ok_json("trace_dependency", {"start_node": "n"}, [1]),  # numbers kept, compounds skipped
            ok("remember_fact", {"fact": "user_prefers(dark_mode)"}),
            ok("remember_fact", {"fact": "user_prefers(vim)"}),
            # R-I3: sorted by name then arity (the seed lists the same entries in another order).
            ok_json(
                "get_knowledge_schema",
                {},
                {
                    "predicates": sorted(
                        json.loads(seed("get_knowledge_schema#1")["text"])["predicates"],
                        key=lambda p: p["name"],
                    ),
                    "total": 3,
                },
            ),
            fails("get_knowledge_schema", {"memory": "ghost"}, NOT_MOUNTED),
        ],
    )
    # The server survived the injection attempt: the batch was answered to the end.


# ---------------------------------------------------------------------------- verify_consistency, explain_why


def test_verify_consistency_and_explain_why(project: Path) -> None:
    play(
        project,
        [
            seeded("verify_consistency#2"),  # no integrity_violation/1 at all
            seeded("explain_why#2"),  # nothing to prove it yet
            ok("define_rule", {"head": "risky(X)", "body": "untested(X), in_production(X)"}),
            ok("remember_fact", {"fact": "untested(deploy_v3)"}),
            ok("remember_fact", {"fact": "in_production(deploy_v3)"}),
            ok("remember_fact", {"fact": "in_production(deploy_v2)"}),
            ok("define_rule", {"head": "integrity_violation(X)", "body": "risky(X)"}),
            seeded("verify_consistency#1"),
            ok_json("verify_consistency", {"scope": "deployment"}, {"violations": []}),
            ok("define_rule", {"head": "integrity_violation_deployment(X)", "body": "in_production(X)"}),
            ok_json(
                "verify_consistency", {"scope": "deployment"}, {"violations": ["deploy_v3", "deploy_v2"]}
            ),
            fails("verify_consistency", {"scope": "x), halt(0"}, BAD),
            fails("verify_consistency", {"scope": 5}, BAD),
            fails("verify_consistency", {"memory": "ghost"}, NOT_MOUNTED),
            seeded("explain_why#1"),
            ok_json(
                "explain_why",
                {"fact": "risky(deploy_v2)"},
                {"fact": "risky(deploy_v2)", "proven": False, "proof_tree": None},
            ),
            fails("explain_why", {}, seed("explain_why#3")["text"]),
            *missing_values("explain_why", "fact", {}),
            fails("explain_why", {"fact": "risky(deploy_v3)", "max_depth": "two"}, BAD),
            ok_json(
                "explain_why",
                {"fact": "risky(deploy_v3)", "max_depth": 0},
                {
                    "fact": "risky(deploy_v3)",
                    "proven": True,
                    "proof_tree": {
                        "goal": "risky(deploy_v3)",
                        "rule_applied": "risky(X) :- untested(X), in_production(X)",
                        "children": "truncated",
                    },
                },
            ),
            ok("define_rule", {"head": "big(X)", "body": "size(X, N), N > 10"}),
            ok("remember_fact", {"fact": "size(a, 12)"}),
            ok_json(
                "explain_why",
                {"fact": "big(a)"},
                {
                    "fact": "big(a)",
                    "proven": True,
                    "proof_tree": {
                        "goal": "big(a)",
                        "rule_applied": "big(X) :- size(X, N), N>10",
                        "children": [
                            {"goal": "size(a, 12)", "rule_applied": "fact", "children": []},
                            {"goal": "12>10", "rule_applied": "builtin", "children": []},
                        ],
                    },
                },
            ),
            fails("explain_why", {"fact": "risky(("}, "ExecutionFailed"),
            fails("explain_why", {"fact": "halt"}, "ExecutionFailed"),
            fails("explain_why", {"fact": "risky(X)", "memory": "ghost"}, NOT_MOUNTED),
        ],
    )


# ---------------------------------------------------------------------------- find references, rename


def test_find_predicate_references_and_rename_predicate(project: Path) -> None:
    rename = seed("rename_predicate#1")["arguments"]
    play(
        project,
        [
            ok("remember_fact", {"fact": "task_status(f025, in_progress)"}),
            ok("assume_fact", {"fact": "task_status(f024, done)", "assumption": "sprint_planning"}),
            ok("define_rule", {"head": "active_work(X)", "body": "task_status(X, in_progress)"}),
            seeded("find_predicate_references#1"),
            seeded("find_predicate_references#2", {"functor": "nonexistent_predicate"}),
            ok_json(
                "find_predicate_references",
                {"functor": "task_status"},
                {**json.loads(seed("find_predicate_references#1")["text"]), "target": "task_status"},
            ),
            ok_json(
                "find_predicate_references",
                {"functor": "task_status", "arity": 3},
                {
                    "target": "task_status/3",
                    "memory": "default",
                    "rules": [],
                    "direct_facts_count": 0,
                    "facts_referenced_in_assumptions": [],
                    "cross_memory_refs": [],
                },
            ),
            fails("find_predicate_references", {}, seed("find_predicate_references#4")["text"]),
            fails("find_predicate_references", {"functor": 3}, BAD),
            fails(
                "find_predicate_references",
                {"functor": "Task-Status"},
                seed("find_predicate_references#5")["text"],
            ),
            fails("find_predicate_references", {"functor": "a), halt(0"}, BAD),
            seeded("find_predicate_references#6", {"functor": "task_status", "memory": "unknown_segment"}),
            fails(
                "find_predicate_references",
                {"functor": "task_status", "arity": -1},
                seed("find_predicate_references#7")["text"],
            ),
            fails("find_predicate_references", {"functor": "task_status", "arity": "2"}, BAD),
            seeded("rename_predicate#1"),
            ok_json("query_logic", {"goal": "active_work(X)"}, [{"X": "f025"}]),
            ok_json(
                "query_logic",
                {"goal": "feature_status(X, Y)"},
                [{"X": "f025", "Y": "in_progress"}, {"X": "f024", "Y": "done"}],
            ),
            ok_json(
                "get_justification",
                {"assumption": "sprint_planning"},
                {"facts": ["feature_status(f024, done)"]},
            ),
            ok("remember_fact", {"fact": "task_status(solo)"}),
            ok("remember_fact", {"fact": "task_status(a, b)"}),
            fails(
                "rename_predicate",
                {"old_functor": "task_status", "new_functor": "feature_status"},
                seed("rename_predicate#3")["text"],
            ),
            seeded("rename_predicate#4"),
            seeded("rename_predicate#6", {"old_functor": "=", "new_functor": "equals", "arity": 2}),
            fails(
                "rename_predicate",
                {"old_functor": "keep", "new_functor": "is", "arity": 2},
                "Cannot rename ISO operator: is/2",
            ),
            fails("rename_predicate", {"new_functor": "x"}, seed("rename_predicate#7")["text"]),
            fails("rename_predicate", {"old_functor": "task_status"}, BAD),
            fails("rename_predicate", {"old_functor": "task_status", "new_functor": ""}, BAD),
            fails("rename_predicate", {"old_functor": "task_status", "new_functor": "x", "arity": -2}, BAD),
            fails("rename_predicate", {"old_functor": "task_status", "new_functor": "Bad"}, BAD),
            fails(
                "rename_predicate",
                {"old_functor": "task_status", "new_functor": "x", "memory": "ghost"},
                NOT_MOUNTED,
            ),
            fails(
                "rename_predicate",
                {"old_functor": "task_status", "new_functor": "task_status", "arity": 1},
                "old_functor and new_functor are identical",
            ),
            ok_json(
                "rename_predicate",
                {"old_functor": "never_seen", "new_functor": "other"},
                {
                    "renamed_facts": 0,
                    "rewritten_rule_bodies": 0,
                    "affected_rule_ids": [],
                    "cross_memory_impact": {"rewritten": [], "warnings": [], "skipped_readonly": []},
                    "is_error": False,
                },
            ),
            ok_json(
                "query_logic", {"goal": "task_status(X)"}, [{"X": "solo"}]
            ),  # the failures changed nothing
        ],
    )
    assert rename["dry_run"] is False


# ---------------------------------------------------------------------------- clear, update, upsert


def test_clear_context_update_fact_and_upsert_fact(project: Path) -> None:
    play(
        project,
        [
            ok("remember_fact", {"fact": "project(beta, x)"}),
            ok("remember_fact", {"fact": "project(alpha, y)"}),
            ok("define_rule", {"head": "project(beta, Z)", "body": "member(Z, [z])"}),
            seeded("clear_context#1"),
            ok_json(
                "query_logic", {"goal": "project(P, Q)"}, [{"P": "alpha", "Q": "y"}]
            ),  # the rule went too
            seeded("clear_context#2", {"category": "nonexistent(_, _)"}),
            fails("clear_context", {}, seed("clear_context#3")["text"]),
            *missing_values("clear_context", "category", {}),
            fails("clear_context", {"category": "project(("}, BAD),
            fails("clear_context", {"category": "project(_, _)", "memory": "ghost"}, NOT_MOUNTED),
            ok("remember_fact", {"fact": "hypothesis"}),
            ok("remember_fact", {"fact": "hypothesis(one)"}),
            ok("clear_context", {"category": "hypothesis"}, "Cleared all facts matching: hypothesis"),
            ok_json("query_logic", {"goal": "hypothesis(X)"}, [{"X": "one"}]),  # R-CC1: arity 0 only
            ok_json("query_logic", {"goal": "hypothesis"}, []),
            ok("remember_fact", {"fact": 'server(alpha, "1.0")'}),
            seeded("update_fact#1"),
            ok_json("query_logic", {"goal": "server(alpha, V)"}, [{"V": "2.0"}]),
            seeded("update_fact#2"),  # the old version is gone now
            seeded(
                "update_fact#3", {"old_fact": 'server(alpha, "2.0")', "new_fact": "server(alpha, X) :- x(X)"}
            ),
            fails("update_fact", {"new_fact": "a(1)"}, seed("update_fact#4")["text"]),
            *missing_values("update_fact", "old_fact", {"new_fact": "a(1)"}),
            *missing_values("update_fact", "new_fact", {"old_fact": 'server(alpha, "2.0")'}),
            fails("update_fact", {"old_fact": 'server(alpha, "2.0")', "new_fact": "server(("}, BAD),
            fails(
                "update_fact",
                {"old_fact": 'server(alpha, "2.0")', "new_fact": "b(1)", "memory": "ghost"},
                NOT_MOUNTED,
            ),
            ok_json("query_logic", {"goal": "server(alpha, V)"}, [{"V": "2.0"}]),  # all or nothing (R-U1)
            ok("remember_fact", {"fact": "deploy(prod, v1)"}),
            ok("remember_fact", {"fact": "deploy(staging, v1)"}),
            ok("remember_fact", {"fact": "deploy(prod)"}),
            seeded("upsert_fact#1"),
            seeded("upsert_fact#1"),  # idempotent (R-UP2)
            ok_json(
                "query_logic",
                {"goal": "deploy(E, V)"},
                [{"E": "staging", "V": "v1"}, {"E": "prod", "V": "v2"}],
            ),
            ok_json("query_logic", {"goal": "deploy(prod)"}, [{}]),  # another arity is untouched (R-UP1)
            ok("upsert_fact", {"fact": "fresh(new)"}, "Upserted: fresh(new)"),
            seeded("upsert_fact#2", {"fact": "deploy(prod, V) :- v(V)"}),
            fails("upsert_fact", {}, seed("upsert_fact#3")["text"]),
            *missing_values("upsert_fact", "fact", {}),
            fails("upsert_fact", {"fact": "deploy(prod, v3)", "memory": "ghost"}, NOT_MOUNTED),
        ],
    )


# ---------------------------------------------------------------------------- truth maintenance tools


def test_assumption_tools_success_and_error_paths(project: Path) -> None:
    play(
        project,
        [
            seeded("list_assumptions#2"),
            seeded("assume_fact#1"),
            ok(
                "assume_fact",
                {"fact": "available(server_b)", "assumption": "infra_healthy"},
                "Assumed: available(server_b) under assumption 'infra_healthy'",
            ),
            ok("assume_fact", {"fact": "funded(q3)", "assumption": "budget_approved"}),
            fails("assume_fact", {"assumption": "a"}, seed("assume_fact#2")["text"]),
            *missing_values("assume_fact", "fact", {"assumption": "a"}),
            *missing_values("assume_fact", "assumption", {"fact": "f(1)"}),
            fails("assume_fact", {"fact": "f(1)", "assumption": "Not_plain"}, BAD),
            fails("assume_fact", {"fact": "f(1)", "assumption": "a), halt(0"}, BAD),
            fails(
                "assume_fact",
                {"fact": "f(X) :- g(X)", "assumption": "a"},
                "assume_fact: fact must not contain rule syntax",
            ),
            fails(
                "assume_fact", {"fact": "f((", "assumption": "a"}, "assume_fact: failed to assert fact: f(("
            ),
            fails("assume_fact", {"fact": "f(1)", "assumption": "a", "memory": "ghost"}, NOT_MOUNTED),
            seeded("get_belief_status#1"),
            ok_json(
                "get_belief_status",
                {"fact": "available(X)"},
                {
                    "status": "in",
                    "justifications": ["infra_healthy", "infra_healthy"],
                    "source": "interactive",
                },
            ),
            ok_json(
                "get_belief_status",
                {"fact": "available(nowhere)"},
                {"status": "out", "justifications": [], "source": "unknown"},
            ),
            fails("get_belief_status", {}, seed("get_belief_status#2")["text"]),
            *missing_values("get_belief_status", "fact", {}),
            fails("get_belief_status", {"fact": "available(server_a)", "memory": "ghost"}, NOT_MOUNTED),
            ok_json(
                "get_justification",
                {"assumption": "infra_healthy"},
                {"facts": ["available(server_a)", "available(server_b)"]},
            ),
            ok_json("get_justification", {"assumption": "nobody_said"}, {"facts": []}),
            fails("get_justification", {}, seed("get_justification#2")["text"]),
            *missing_values("get_justification", "assumption", {}),
            fails("get_justification", {"assumption": "Upper"}, BAD),
            fails("get_justification", {"assumption": "infra_healthy", "memory": "ghost"}, NOT_MOUNTED),
            seeded("list_assumptions#1"),
            fails("list_assumptions", {"memory": "ghost"}, NOT_MOUNTED),
            seeded("retract_assumption#1"),
            seeded("retract_assumption#3", {"assumption": "nonexistent"}),
            seeded("retract_assumption#3", {"assumption": "nonexistent"}),
            fails("retract_assumption", {}, seed("retract_assumption#2")["text"]),
            *missing_values("retract_assumption", "assumption", {}),
            fails("retract_assumption", {"assumption": "Upper"}, BAD),
            fails("retract_assumption", {"assumption": "budget_approved", "memory": "ghost"}, NOT_MOUNTED),
            ok_json("list_assumptions", {}, {"assumptions": ["budget_approved"]}),
            ok("assume_fact", {"fact": "up(a)", "assumption": "infra_net"}),
            ok("assume_fact", {"fact": "up(b)", "assumption": "infra_disk"}),
            ok("assume_fact", {"fact": "up(c)", "assumption": "infra_cpu"}),
            ok("assume_fact", {"fact": "up(d)", "assumption": "infra"}),  # `infra_*` needs the underscore
            seeded("retract_assumptions#1"),
            ok_json("query_logic", {"goal": "up(X)"}, [{"X": "d"}]),
            ok(
                "retract_assumptions",
                {"pattern": "infra_*"},
                "Retracted pattern 'infra_*': 0 assumption(s) removed",
            ),
            ok(
                "retract_assumptions",
                {"pattern": "?nfra"},
                "Retracted pattern '?nfra': 1 assumption(s) removed",
            ),
            fails("retract_assumptions", {}, seed("retract_assumptions#2")["text"]),
            *missing_values("retract_assumptions", "pattern", {}),
            fails("retract_assumptions", {"pattern": "Infra*"}, BAD),
            fails("retract_assumptions", {"pattern": "infra-*"}, BAD),
            fails("retract_assumptions", {"pattern": "*", "memory": "ghost"}, NOT_MOUNTED),
            ok("retract_assumptions", {"pattern": "*"}, "Retracted pattern '*': 1 assumption(s) removed"),
            seeded("list_assumptions#2"),
        ],
    )


# ---------------------------------------------------------------------------- snapshots and persistence status


def test_snapshot_tools_and_persistence_status(project: Path) -> None:
    data = (project / ".zpm" / "data").resolve()
    texts = play(
        project,
        [
            seeded("list_snapshots#2"),
            ok(
                "get_persistence_status",
                {},
                f"status: active\ndir: {data}\nlast_snapshot: none\njournal_size: 0 bytes",
            ),
            ok("remember_fact", {"fact": "kept(one)"}),
            seeded("save_snapshot#1"),
            ok("remember_fact", {"fact": "kept(two)"}),
            ok("save_snapshot", {"name": "daily_backup"}, "Snapshot 'daily_backup' saved successfully."),
            ok("save_snapshot", {"name": "test-snap"}, "Snapshot 'test-snap' saved successfully."),  # R-SS1
            fails("save_snapshot", {}, seed("save_snapshot#2")["text"]),
            *missing_values("save_snapshot", "name", {}),
            fails("save_snapshot", {"name": "../escape"}, BAD),
            fails("save_snapshot", {"name": "a\\b"}, BAD),
            fails("save_snapshot", {"name": ".hidden"}, BAD),
            fails("save_snapshot", {"name": "x", "memory": "ghost"}, NOT_MOUNTED),
            ok("list_snapshots", {}, "Snapshots: [before_refactor, daily_backup, test-snap]"),
            fails("list_snapshots", {"memory": "ghost"}, NOT_MOUNTED),
            ok(
                "get_persistence_status",
                {},
                f"status: active\ndir: {data}\nlast_snapshot: test-snap\njournal_size: 0 bytes",
            ),
            ok("remember_fact", {"fact": "kept(three)"}),
            seeded("restore_snapshot#1"),
            ok_json("query_logic", {"goal": "kept(X)"}, [{"X": "one"}]),
            ok("remember_fact", {"fact": "kept(after)"}),  # R-RS2: restored predicates stay modifiable
            ok(
                "restore_snapshot",
                {"name": "daily_backup.pl"},
                "Snapshot 'daily_backup.pl' restored successfully.",
            ),
            ok_json("query_logic", {"goal": "kept(X)"}, [{"X": "one"}, {"X": "two"}]),
            seeded("restore_snapshot#2", {"name": "no_such_snapshot"}),
            fails("restore_snapshot", {}, seed("restore_snapshot#3")["text"]),
            *missing_values("restore_snapshot", "name", {}),
            fails("restore_snapshot", {"name": "daily_backup", "memory": "ghost"}, NOT_MOUNTED),
            Step(
                "get_persistence_status",
                {},
                prefix=f"status: active\ndir: {data}\nlast_snapshot: test-snap\n",
            ),
        ],
    )
    kb = project / ".zpm" / "kb"
    assert sorted(p.name for p in kb.iterdir()) == ["before_refactor.pl", "daily_backup.pl", "test-snap.pl"]
    journal = data / "journal.wal"
    size = re.fullmatch(r"journal_size: (\d+) bytes", texts[-1].splitlines()[-1])
    assert size is not None and int(size.group(1)) == journal.stat().st_size > 0  # R-PS1
    assert seed("get_persistence_status#1")["text"].splitlines()[0] == "status: active"


def test_without_an_engine_the_tools_fail_with_execution_failed(project: Path) -> None:
    play(
        project,
        [
            seeded("verify_consistency#3"),
            seeded("get_knowledge_schema#3"),
            fails("query_logic", {"goal": "true"}, "ExecutionFailed"),
            fails("remember_fact", {"fact": "a(1)"}, "ExecutionFailed"),
        ],
        env=NO_ENGINE,
    )


def test_without_an_engine_overview_and_references_say_prolog_engine_is_not_initialized(
    project: Path,
) -> None:
    play(
        project,
        [
            seeded("get_kb_overview#3"),
            fails("find_predicate_references", {"functor": "a"}, "Prolog engine is not initialized"),
        ],
        env=NO_ENGINE,
    )


# ---------------------------------------------------------------------------- get_kb_overview


def test_get_kb_overview_reproduces_the_seed_shape(project: Path) -> None:
    texts = play(
        project,
        [
            ok_json(
                "get_kb_overview",
                {},
                {
                    **json.loads(seed("get_kb_overview#2")["text"]),
                    # A started server has a memory registry and an active journal (R-O6, R-O7).
                    "persistence": {"wal_pending": 0, "healthy": True},
                    "mounts": {
                        "available": True,
                        "count": 1,
                        "items": [{"name": "default", "scope": "project", "mode": "rw"}],
                    },
                },
            ),
            ok("remember_fact", {"fact": "parent(tom, bob)"}),
            ok("remember_fact", {"fact": "parent(bob, sue)"}),
            ok("remember_fact", {"fact": "parent(sue, amy)"}),
            ok("define_rule", {"head": "ancestor(X, Y)", "body": "parent(X, Y)"}),
            ok("assume_fact", {"fact": "available(server_a)", "assumption": "infra_healthy"}),
            ok("forget_fact", {"fact": "available(server_a)"}),  # its justification stays (R-FF2)
            ok("save_snapshot", {"name": "before_refactor"}),
            ok("clear_context", {"category": "nothing_here"}),  # one journal line each (R-CC4)
            ok("clear_context", {"category": "nothing_there"}),
            Step("get_kb_overview", {"sample_size": 2}),
            Step("get_kb_overview", {"sample_size": "abc"}),  # not an integer: the default, 2 (R-O2)
            Step("get_kb_overview", {"sample_size": -4}),
            Step("get_kb_overview", {"sample_size": 500}),
        ],
    )
    expected = json.loads(seed("get_kb_overview#1")["text"])
    expected["predicates"][0]["count"] = 3  # a third parent/2 fact, beyond the two samples
    snapshot = project / ".zpm" / "kb" / "before_refactor.pl"
    mtime = datetime.fromtimestamp(snapshot.stat().st_mtime, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    expected["snapshots"]["latest_at"] = mtime
    got = [json.loads(text) for text in texts[-4:]]
    assert got[0] == expected and got[1] == expected
    assert [p["samples"] for p in got[2]["predicates"]] == [[], []]
    assert got[3]["predicates"][0]["samples"] == ["parent(tom, bob)", "parent(bob, sue)", "parent(sue, amy)"]
    assert all(g["truncated"] is False for g in got)


def test_user_predicates_named_like_refused_builtins_are_queryable_but_builtins_stay_refused(
    project: Path,
) -> None:
    """R-Q4 refuses system predicates, not the memory's own ones that share a prefix or a name at
    another arity (``set_``, ``process_``, ``prolog_`` are prefixes of refused families)."""
    play(
        project,
        [
            ok("remember_fact", {"fact": "set_point(20)"}),
            ok("remember_fact", {"fact": "process_step(one)"}),
            ok("remember_fact", {"fact": "open(door)"}),
            ok("define_rule", {"head": "hot(X)", "body": "set_point(X), X > 10"}),
            ok_json("query_logic", {"goal": "set_point(X)"}, [{"X": 20}]),
            ok_json("query_logic", {"goal": "process_step(X)"}, [{"X": "one"}]),
            ok_json("query_logic", {"goal": "open(X)"}, [{"X": "door"}]),
            ok_json("query_logic", {"goal": "hot(X)"}, [{"X": 20}]),
            ok_json(
                "explain_why",
                {"fact": "open(door)"},
                {
                    "fact": "open(door)",
                    "proven": True,
                    "proof_tree": {"goal": "open(door)", "rule_applied": "fact", "children": []},
                },
            ),
            ok("define_rule", {"head": "sneaky", "body": "shell('touch pwned')"}),
            fails("query_logic", {"goal": "sneaky"}, QUERY_FAILED),  # a rule body is checked too
            fails("query_logic", {"goal": "set_prolog_flag(double_quotes, atom)"}, QUERY_FAILED),
            fails("query_logic", {"goal": "open(f, write, _)"}, QUERY_FAILED),
        ],
    )
    assert not (project / "pwned").exists()
