"""The SWI-Prolog engine over MQI (spec §3.2-§3.5, §10): a real engine process, no mocks."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from quipu.logic.engine import Engine, find_swipl
from quipu.logic.errors import (
    ClauseRejected,
    EngineDied,
    EngineUnavailable,
    GoalRefused,
    PrologSyntaxError,
    QueryTimeout,
    StackLimit,
)
from quipu.logic.terms import Atom, Compound, PlString, solutions_json

ROOT = Path(__file__).resolve().parents[2]


def q(engine: Engine, goal: str, memory: str = "default") -> str:
    return solutions_json(engine.query(memory, goal))


# --------------------------------------------------------------------- transport and output


def test_engine_talks_over_a_unix_domain_socket(engine: Engine) -> None:
    thread: Any = engine._thread
    assert thread._socket.family == socket.AF_UNIX
    assert q(engine, "true") == "[{}]"


def test_missing_swipl_is_a_clear_error() -> None:
    with pytest.raises(EngineUnavailable, match="swi-prolog"):
        find_swipl("/nonexistent/swipl")
    with pytest.raises(EngineUnavailable):
        Engine(swipl="/nonexistent/swipl").start()


def test_nothing_the_engine_prints_reaches_our_stdout_or_stderr() -> None:
    script = textwrap.dedent(
        """
        from quipu.logic.engine import Engine
        with Engine() as e:
            e.ensure_memory("default")
            e.assertz("default", "noisy :- write(hello), nl, print(x)")
            for goal in ["write(out)", "format(user_output, 'o~n', [])", "format(user_error, 'e~n', [])",
                         "noisy", "print_message(error, format('m', []))", "undefined_thing"]:
                try:
                    e.query("default", goal)
                except Exception:
                    pass
        print("DONE")
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout == "DONE\n"
    assert run.stderr == ""


def test_a_goal_that_prints_still_answers(engine: Engine) -> None:
    assert q(engine, "write(hello), X = 1") == '[{"X":1}]'


# --------------------------------------------------------------------- dead engine and restart


def test_kill_9_of_the_engine_is_a_clear_error_and_restart_recovers(engine: Engine) -> None:
    engine.assertz("default", "fact(1)")
    reloaded: list[int] = []

    def reload(eng: Engine) -> None:
        reloaded.append(1)
        eng.load_clauses("default", ["fact(1)"])

    engine.add_restart_hook(reload)
    pid = engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(EngineDied, match=r"exited|stopped"):
        engine.query("default", "fact(X)")
    with pytest.raises(EngineDied):  # stays dead until restarted
        engine.query("default", "true")
    assert not engine.alive
    engine.restart()
    assert engine.alive and engine.pid != pid
    assert reloaded == [1]
    assert engine.memories() == ["default"]
    assert q(engine, "fact(X)") == '[{"X":1}]'


def test_engine_dying_mid_query_does_not_hang(engine: Engine) -> None:
    # halt is refused statically, so end the process from outside while a goal runs.
    engine.assertz("default", "wait :- repeat, fail")
    pid = engine.pid
    assert pid is not None
    killer = subprocess.Popen([sys.executable, "-c", f"import os,time; time.sleep(0.3); os.kill({pid}, 9)"])
    with pytest.raises(EngineDied):
        engine.query("default", "wait", timeout=30)
    killer.wait()
    engine.restart()
    assert q(engine, "true") == "[{}]"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_engine_exits_when_its_parent_is_killed() -> None:
    script = "import time\nfrom quipu.logic.engine import Engine\ne = Engine(); e.start(); print(e.pid, flush=True); time.sleep(120)\n"
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    status = Path(f"/proc/{child}/status")
    for _ in range(200):  # a bounded wait for the orphan to go, not a timing assertion
        if not status.exists() or "State:\tZ" in status.read_text():
            break
        time.sleep(0.05)
    assert not status.exists() or "State:\tZ" in status.read_text()


# --------------------------------------------------------------------- limits (R-Q1, R-Q2)


def test_stack_limit_is_64_mib(engine: Engine) -> None:
    assert q(engine, "current_prolog_flag(stack_limit, X)") == f'[{{"X":{64 * 1024 * 1024}}}]'


def test_runaway_query_hits_the_time_limit_and_the_next_query_succeeds(engine: Engine) -> None:
    engine.assertz("default", "loop :- loop")
    with pytest.raises(QueryTimeout):
        engine.query("default", "loop")
    assert q(engine, "true") == "[{}]"
    pid = engine.pid
    with pytest.raises(QueryTimeout):
        engine.query("default", "repeat, fail")
    assert engine.pid == pid  # the cooperative limit keeps the same engine


def test_deep_recursion_hits_the_stack_limit_and_the_next_query_succeeds(engine: Engine) -> None:
    engine.assertz("default", "deep(N) :- deep(s(N))")
    # A generous timeout: on a loaded machine a 1 s limit can fire before 64 MiB of stack fills.
    with pytest.raises(StackLimit):
        engine.query("default", "deep(z)", timeout=30.0)
    with pytest.raises(StackLimit):
        engine.query("default", "length(L, N), N > 100000000", timeout=30.0)
    assert q(engine, "true") == "[{}]"


def test_a_goal_that_swallows_the_time_limit_is_stopped_and_the_engine_restarted(engine: Engine) -> None:
    engine.assertz("default", "spin :- repeat, fail")
    engine.assertz("default", "sneaky :- catch(spin, _, spin)")
    hook_runs: list[int] = []
    engine.add_restart_hook(lambda eng: hook_runs.append(1))
    pid = engine.pid
    with pytest.raises(QueryTimeout, match="restarted"):
        engine.query("default", "sneaky")
    assert engine.pid != pid and hook_runs == [1]
    assert q(engine, "true") == "[{}]"


# --------------------------------------------------------------------- untrusted goals (R-Q4)


@pytest.mark.parametrize(
    "goal",
    [
        "halt",
        "halt(0)",
        "true, halt",
        "\\+ halt",
        "findall(X, halt, L)",
        "forall(true, halt)",
        "catch(true, _, halt)",
        "maplist(halt, [0])",
        "call(halt)",
        "G = halt, call(G)",
        "X = halt, X",
        "system:halt",
        "user:file_search_path(X, Y)",
        "M = system, M:halt",
        "shell('ls')",
        "process_create(path(ls), [], [])",
        "open('/tmp/x', write, S)",
        "see('/etc/passwd')",
        "consult('/tmp/x.pl')",
        "['/tmp/x.pl']",
        "use_module(library(process))",
        "ensure_loaded(library(lists))",
        "load_files('/tmp/x', [])",
        "set_prolog_flag(unknown, fail)",
        "op(700, xfx, ===>)",
        "assertz(x(1))",
        "asserta(x(1))",
        "retract(x(_))",
        "abolish(x/1)",
        "nb_setval(k, 1)",
        "format('~@', [halt])",
        "delete_file('/tmp/x')",
        "thread_create(true, _, [])",
        "read_file_to_string('/etc/passwd', S, [])",
        "phrase({halt}, [], [])",
        "maplist([X]>>halt, [1])",
        "freeze(X, halt), X = 1",
        "when(nonvar(X), halt), X = 1",
        "setup_call_cleanup(true, true, halt)",
        "not(halt)",
        "aggregate_all(count, halt, C)",
    ],
)
def test_untrusted_goals_are_refused(engine: Engine, goal: str) -> None:
    with pytest.raises(GoalRefused):
        engine.query("default", goal)


def test_lambda_forms_the_check_does_not_know_cannot_run_halt(engine: Engine) -> None:
    # \X^G is not autoloaded by SWI-Prolog 9.0.4 (no solutions); where it is, it is refused.
    for goal in ["\\X^halt", "maplist(\\X^halt, [1])"]:
        with contextlib.suppress(GoalRefused):
            assert q(engine, goal) == "[]"
    assert engine.alive


def test_refusal_follows_rules_of_the_memory(engine: Engine) -> None:
    engine.assertz("default", "stop :- halt")
    engine.assertz("default", "indirect :- helper")
    engine.assertz("default", "helper :- assertz(x(1))")
    engine.assertz("default", "meta(G) :- call(G)")
    for goal in ["stop", "indirect", "meta(true)"]:
        with pytest.raises(GoalRefused):
            engine.query("default", goal)
    assert engine.alive


def test_the_rule_check_sees_rules_among_many_facts_and_forgets_removed_rules(engine: Engine) -> None:
    engine.load_clauses("default", [f"big({i})" for i in range(5000)])
    engine.assertz("default", "big(X) :- halt, X = 0")
    with pytest.raises(GoalRefused):
        engine.query("default", "big(1)")
    assert engine.retractall("default", "big(_)") == 5001
    engine.assertz("default", "big(7)")
    assert q(engine, "big(X)") == '[{"X":7}]'


def test_a_refused_mutation_changes_nothing(engine: Engine) -> None:
    engine.assertz("default", "x(0)")
    with pytest.raises(GoalRefused):
        engine.query("default", "assertz(x(1)), retract(x(0))")
    assert q(engine, "x(X)") == '[{"X":0}]'


def test_ordinary_goals_with_builtins_and_libraries_are_allowed(engine: Engine) -> None:
    engine.load_clauses("default", ["n(1)", "n(2)", "n(3)", "r(X, Y) :- n(X), Y is X * 2"])
    assert q(engine, "findall(X, n(X), L), sum_list(L, S)") == '[{"X":"_G1","L":[1,2,3],"S":6}]'
    assert q(engine, "aggregate_all(count, n(_), C)") == '[{"C":3}]'
    assert q(engine, "n(X), X > 1, \\+ X = 3") == '[{"X":2}]'
    assert q(engine, "maplist([A, B]>>(B is A + 1), [1, 2], L)") == '[{"A":"_G1","B":"_G2","L":[2,3]}]'
    assert q(engine, "setof(X, Y^r(X, Y), L)") == '[{"X":"_G1","Y":"_G2","L":[1,2,3]}]'
    assert q(engine, "(n(4) -> X = yes ; X = no)") == '[{"X":"no"}]'
    assert q(engine, "format(atom(A), '~w-~w', [a, b])") == '[{"A":"a-b"}]'


# --------------------------------------------------------------------- memories as modules


def test_memories_are_isolated_modules_with_qualified_reads(engine: Engine) -> None:
    engine.ensure_memory("audit")
    engine.assertz("audit", "secret(42)")
    engine.assertz("default", "pub(1)")
    assert q(engine, "secret(X)") == "[]"
    assert q(engine, "pub(X)", memory="audit") == "[]"
    assert q(engine, "audit:secret(X)") == '[{"X":42}]'
    engine.assertz("default", "via(X) :- audit:secret(X)")
    assert q(engine, "via(X)") == '[{"X":42}]'
    assert q(engine, "elsewhere:secret(X)") == "[]"  # R-M2: no memory mounted by that name
    with pytest.raises(GoalRefused, match="not a memory"):
        engine.query("default", "lists:append(X, Y, [1])")  # R-Q4: a library module is no memory


def test_memory_modules_do_not_see_engine_predicates_in_user(engine: Engine) -> None:
    assert q(engine, "catch(file_search_path(X, Y), _, fail)") == "[]"
    assert q(engine, "file_search_path(X, Y)") == "[]"


def test_drop_memory_removes_its_clauses_only(engine: Engine) -> None:
    engine.ensure_memory("scratch")
    engine.load_clauses("scratch", ["s(1)", "s(2)"])
    engine.assertz("default", "d(1)")
    engine.drop_memory("scratch")
    assert engine.memories() == ["default"]
    with pytest.raises(ValueError):
        engine.query("scratch", "s(X)")
    assert q(engine, "d(X)") == '[{"X":1}]'
    engine.ensure_memory("scratch")
    assert q(engine, "s(X)", memory="scratch") == "[]"


def test_memory_names_are_plain_atoms_and_not_engine_modules(engine: Engine) -> None:
    for bad in ["Default", "a-b", "a b", "", "x)"]:
        with pytest.raises(ValueError):
            engine.ensure_memory(bad)
    for reserved in ["user", "system", "lists", "apply", "quipu_logic"]:
        assert engine.is_reserved_name(reserved)
        with pytest.raises(ValueError):
            engine.ensure_memory(reserved)
    assert not engine.is_reserved_name("feature_auth")


# --------------------------------------------------------------------- storing and removing


def test_assert_appends_and_duplicates_are_kept(engine: Engine) -> None:
    engine.assertz("default", "human(socrates)")
    engine.assertz("default", "human(socrates).")
    assert q(engine, "human(socrates)") == "[{},{}]"


def test_retract_first_fact_removes_one_copy_and_never_rules(engine: Engine) -> None:
    engine.load_clauses("default", ["p(1)", "p(1)", "p(X) :- X = 2"])
    assert engine.retract_first_fact("default", "p(1)")
    assert q(engine, "p(X)") == '[{"X":1},{"X":2}]'
    assert engine.retract_first_fact("default", "p(_)")
    assert not engine.retract_first_fact("default", "p(_)")
    assert q(engine, "p(X)") == '[{"X":2}]'
    assert not engine.retract_first_fact("default", "never(seen)")


def test_retractall_removes_facts_and_rules_of_matching_heads(engine: Engine) -> None:
    engine.load_clauses("default", ["role(a, x)", "role(b, y)", "role(X, z) :- X = c", "keep(1)"])
    assert engine.retractall("default", "role(a, _)") == 2  # the rule's head role(X, z) unifies too
    assert engine.retractall("default", "role(_, _)") == 1
    assert engine.retractall("default", "role(_, _)") == 0
    assert engine.retractall("default", "undefined_pred(_)") == 0
    assert q(engine, "keep(X)") == '[{"X":1}]'


@pytest.mark.parametrize("text", ["human(", "a(1). a(2).", "foo) bar", "", "   ", "% only a comment"])
def test_text_that_is_not_exactly_one_term_is_a_syntax_error(engine: Engine, text: str) -> None:
    with pytest.raises(PrologSyntaxError):
        engine.assertz("default", text)
    with pytest.raises(PrologSyntaxError):
        engine.query("default", text)


@pytest.mark.parametrize(
    "text", ["X", "X :- true", "42", "atom_length(a, 1)", "(a, b)", "m:foo(1)", ":- halt"]
)
def test_terms_that_are_not_storable_clauses_are_rejected(engine: Engine, text: str) -> None:
    with pytest.raises(ClauseRejected):
        engine.assertz("default", text)


@pytest.mark.parametrize(
    "text", ["ok(1)", "ok(1).", "  ok(1) .  ", "ok(1). % a comment", "ok(1) % a comment"]
)
def test_surrounding_space_a_final_period_and_comments_are_ignored(engine: Engine, text: str) -> None:
    engine.assertz("default", text)
    assert q(engine, "ok(X)") == '[{"X":1}]'


def test_parsing_a_clause_never_runs_it(engine: Engine) -> None:
    engine.assertz("default", "boom :- halt")
    engine.assertz("default", "stored(halt)")
    assert engine.alive
    assert q(engine, "stored(X)") == '[{"X":"halt"}]'


# --------------------------------------------------------------------- bulk loads


def test_bulk_load_uses_a_bounded_number_of_calls(engine: Engine) -> None:
    calls: list[str] = []
    original = engine._call

    def counting(goal: str, timeout: float | None) -> Any:
        calls.append(goal[:30])
        return original(goal, timeout)

    engine._call = counting  # type: ignore[method-assign]
    clauses = [f"item({i}, 'name {i}')" for i in range(12_000)]
    report = engine.load_clauses("default", clauses)
    engine._call = original  # type: ignore[method-assign]
    assert report.loaded == 12_000 and report.failures == ()
    assert len(calls) <= 3
    assert q(engine, "aggregate_all(count, item(_, _), N)") == '[{"N":12000}]'


def test_bulk_load_skips_bad_entries_and_reports_them(engine: Engine) -> None:
    report = engine.load_clauses(
        "default",
        [":- dynamic(empty/1)", "a(1)", "broken(", ":- initialization(halt)", "a(2).", ":- module(m, [])"],
    )
    assert report.loaded == 4
    assert [(f.index, f.text) for f in report.failures] == [(2, "broken("), (3, ":- initialization(halt)")]
    assert "directive" in report.failures[1].message
    assert engine.alive
    assert q(engine, "a(X)") == '[{"X":1},{"X":2}]'
    assert [(p.name, p.arity, p.clauses) for p in engine.predicates("default")] == [
        ("a", 1, ("a(1)", "a(2)")),
        ("empty", 1, ()),
    ]


def test_loaded_predicates_stay_dynamic(engine: Engine) -> None:
    engine.load_clauses("default", [":- dynamic(t/1)", "t(1)"])
    engine.assertz("default", "t(2)")
    assert engine.retract_first_fact("default", "t(1)")
    assert q(engine, "t(X)") == '[{"X":2}]'


# --------------------------------------------------------------------- solutions as JSON (§3.5)


def test_solution_keys_follow_first_occurrence_and_hide_underscore_names(engine: Engine) -> None:
    engine.load_clauses("default", ["pair(a, 1)", "pair(b, 2)"])
    assert q(engine, "pair(Y, X)") == '[{"Y":"a","X":1},{"Y":"b","X":2}]'
    assert q(engine, "pair(_, X), pair(_Hidden, X)") == '[{"X":1},{"X":2}]'


def test_ground_goals_give_empty_objects_and_failure_gives_an_empty_list(engine: Engine) -> None:
    engine.load_clauses("default", ["f(1)", "f(1)"])
    assert q(engine, "f(1)") == "[{},{}]"
    assert q(engine, "f(2)") == "[]"
    assert q(engine, "no_such_predicate(X)") == "[]"
    assert q(engine, "X is foo + 1") == "[]"  # a runtime error: no solutions (R-Q5)


def test_values_encode_per_r_j3(engine: Engine) -> None:
    sols = engine.query(
        "default",
        "X = f('Tag-Triggered', \"1.0\", [a, 2], [], g(Y), 1.5, 123456789012345678901234567890), Z = Y",
    )
    text = solutions_json(sols)
    assert text == (
        '[{"X":{"functor":"f","args":["Tag-Triggered","1.0",["a",2],[],{"functor":"g","args":["_G1"]},1.5,'
        '123456789012345678901234567890]},"Y":"_G1","Z":"_G1"}]'
    )
    value = sols.rows[0][0]
    assert isinstance(value, Compound)
    assert value.args[0] == Atom("Tag-Triggered") and value.args[1] == PlString("1.0")


def test_at_most_the_first_100_solutions_and_no_more_are_computed(engine: Engine) -> None:
    sols = engine.query("default", "between(1, inf, X)")
    assert [row[0] for row in sols.rows] == list(range(1, 101))
    assert len(engine.query("default", "between(1, 500, X)", limit=7).rows) == 7


# --------------------------------------------------------------------- canonical rendering (§3.4)


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("parent(tom,bob)", "parent(tom, bob)"),
        ("[x,y]", "[x, y]"),
        ("'Tag-Triggered Release Workflows'", "'Tag-Triggered Release Workflows'"),
        ('"1.0"', '"1.0"'),
        ("'it\\'s'", "'it\\'s'"),
        ("a-b", "a-b"),
        ("X>20", "X>20"),
        ("f(-(1))", "f(- 1)"),
        ("f(-1)", "f(-1)"),
        ("a :- b,c", "a :- b, c"),
        ("active_work(X):-task_status(X,in_progress)", "active_work(X) :- task_status(X, in_progress)"),
        ("p(_, Y, _)", "p(A, Y, B)"),
        ("q(B, _)", "q(B, A)"),
        ("h :- true", "h"),
    ],
)
def test_canonical_rendering(engine: Engine, text: str, rendered: str) -> None:
    assert engine.render(text) == rendered


def test_stored_clauses_render_with_the_author_variable_names(engine: Engine) -> None:
    engine.assertz("default", "active_work(Task) :- task_status(Task, in_progress)")
    engine.load_clauses(
        "default", ["ancestor(Old, Young) :- parent(Old, Mid), ancestor(Mid, Young)", "k(_, _)"]
    )
    by_name = {p.name: p.clauses for p in engine.predicates("default")}
    assert by_name["active_work"] == ("active_work(Task) :- task_status(Task, in_progress)",)
    assert by_name["ancestor"] == ("ancestor(Old, Young) :- parent(Old, Mid), ancestor(Mid, Young)",)
    assert by_name["k"] == ("k(A, B)",)
    assert engine.retractall("default", "active_work(_)") == 1
    assert {p.name: p.clauses for p in engine.predicates("default")}["active_work"] == ()
