"""The ``zpm`` command line as separate processes (spec logic-memory.md §9, §11.1): the checks of
the original's CLI scripts that tests/logic/test_cli.py does not already run as processes. (The
500 ms ``query-logic --goal true`` budget is not asserted: no timing assertions on a shared
machine.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quipu.logic.registry import load_tools
from tests.acceptance.logic.harness import zpm


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_exits_0_and_mentions_zpm_serve_and_commands(flag: str, tmp_path: Path) -> None:
    run = zpm(tmp_path, flag)  # no project needed
    assert run.returncode == 0
    assert "zpm" in run.stdout and "serve" in run.stdout and "COMMANDS" in run.stdout


def test_no_arguments_prints_the_help_with_commands_and_exits_1(tmp_path: Path) -> None:
    run = zpm(tmp_path)
    assert run.returncode == 1
    assert "COMMANDS" in run.stdout and "serve" in run.stdout
    assert run.stdout == zpm(tmp_path, "--help").stdout  # the same help


@pytest.mark.parametrize(
    "argv",
    [
        ["frobnicate"],
        ["--frobnicate"],
        ["query-logic", "--goal", "true", "--no-such-flag", "x"],
        ["query_logic", "--goal", "true"],  # commands are kebab case
        ["memory", "eat"],
    ],
)
def test_an_unknown_command_or_flag_exits_1_and_prints_nothing_on_stdout(
    argv: list[str], project: Path
) -> None:
    run = zpm(project, *argv)
    assert run.returncode == 1 and run.stdout == "" and run.stderr.strip()


@pytest.mark.parametrize(
    "argv",
    [
        ["explain-why", "--fact", "f(a)", "--max-depth", "abc"],
        ["get-kb-overview", "--sample-size", "many"],
        ["find-predicate-references", "--functor", "f", "--arity", "1.5"],
        ["rename-predicate", "--old-functor", "a", "--new-functor", "b", "--dry-run", "perhaps"],
    ],
)
def test_bad_integer_and_boolean_values_are_rejected_with_exit_1(argv: list[str], project: Path) -> None:
    run = zpm(project, *argv)
    assert run.returncode == 1 and run.stdout == ""
    assert argv[-2] in run.stderr  # the usage message names the flag
    journal = project / ".zpm" / "data" / "journal.wal"
    assert not journal.exists() or journal.stat().st_size == 0  # nothing ran


def test_version_and_init_spellings(tmp_path: Path) -> None:
    assert (zpm(tmp_path, "version").returncode, zpm(tmp_path, "version").stdout) == (0, "zpm 0.4.0\n")
    first, again = zpm(tmp_path, "init"), zpm(tmp_path, "init")
    assert (first.returncode, first.stdout) == (0, "Initialized .zpm/ project directory\n")
    assert again.returncode == 0 and "already" in again.stdout
    nested = tmp_path / "sub"
    nested.mkdir()
    # A tool command is discovered from a subdirectory like serve (R-B1).
    run = zpm(nested, "remember-fact", "--fact", "from(sub)")
    assert (run.returncode, run.stdout) == (0, "Asserted: from(sub)\n")
    assert not (nested / ".zpm").exists()


# Every tool as a kebab-case command with kebab flags (and the positional forms), one process each,
# in order on one project: each process replays what the ones before it journaled (§9.2).
# (argv, exit status, the text printed by --format json: exact, or a JSON value compared as JSON)
EVERY_COMMAND: list[tuple[list[str], int, str | None, object]] = [
    (["echo", "--message", "hi there"], 0, "hi there", None),
    (["remember-fact", "--fact", "depends_on(a, b)"], 0, "Asserted: depends_on(a, b)", None),
    (["remember-fact", "--fact", "depends_on(b, c)"], 0, "Asserted: depends_on(b, c)", None),
    (
        ["define-rule", "path(X, S)", "--body", "depends_on(S, X)"],
        0,
        "Asserted rule: path(X, S) :- depends_on(S, X)",
        None,
    ),
    (
        ["define-rule", "--head", "path(X, S)", "--body", "depends_on(S, M), path(X, M)"],
        0,
        "Asserted rule: path(X, S) :- depends_on(S, M), path(X, M)",
        None,
    ),
    (["query-logic", "--goal", "depends_on(a, X)"], 0, None, [{"X": "b"}]),
    (["trace-dependency", "--start-node", "a"], 0, None, ["b", "c"]),
    (["trace-dependency", "--start-node", "a), halt(0"], 1, "start_node must be a valid Prolog atom", None),
    (["define-rule", "integrity_violation(X)", "--body", "depends_on(X, X)"], 0, None, None),
    (["verify-consistency"], 0, None, {"violations": []}),
    (["verify-consistency", "--scope", "deployment"], 0, None, {"violations": []}),
    (
        ["explain-why", "--fact", "path(b, a)", "--max-depth", "0"],
        0,
        None,
        {
            "fact": "path(b, a)",
            "proven": True,
            "proof_tree": {
                "goal": "path(b, a)",
                "rule_applied": "path(X, S) :- depends_on(S, X)",
                "children": "truncated",
            },
        },
    ),
    (
        ["assume-fact", "ready(a)", "--assumption", "plan"],
        0,
        "Assumed: ready(a) under assumption 'plan'",
        None,
    ),
    (["assume-fact", "--fact", "ready(b)", "--assumption", "plan_b"], 0, None, None),
    (
        ["get-belief-status", "--fact", "ready(a)"],
        0,
        None,
        {"status": "in", "justifications": ["plan"], "source": "journal"},
    ),
    (["get-justification", "--assumption", "plan"], 0, None, {"facts": ["ready(a)"]}),
    (["list-assumptions"], 0, None, {"assumptions": ["plan", "plan_b"]}),
    (
        ["retract-assumption", "--assumption", "plan"],
        0,
        "Retracted assumption 'plan': 1 fact(s) removed",
        None,
    ),
    (["retract-assumption", "--assumption", "plan"], 1, "Unknown assumption 'plan'", None),
    (
        ["retract-assumptions", "--pattern", "plan_*"],
        0,
        "Retracted pattern 'plan_*': 1 assumption(s) removed",
        None,
    ),
    (["upsert-fact", "--fact", "deploy(prod, v1)"], 0, "Upserted: deploy(prod, v1)", None),
    (["update-fact", "--old-fact", "deploy(prod, v1)", "--new-fact", "deploy(prod, v2)"], 0, None, None),
    (["forget-fact", "--fact", "deploy(prod, v2)"], 0, "Retracted: deploy(prod, v2)", None),
    (["remember-fact", "--fact", "tmp(1)"], 0, None, None),
    (["clear-context", "--category", "tmp(_)"], 0, "Cleared all facts matching: tmp(_)", None),
    (
        ["get-knowledge-schema"],
        0,
        None,
        {
            "predicates": [
                {"name": "depends_on", "arity": 2, "type": "fact", "count": 2},
                {"name": "integrity_violation", "arity": 1, "type": "rule", "count": 1},
                {"name": "path", "arity": 2, "type": "rule", "count": 2},
            ],
            "total": 3,
        },
    ),
    (
        [
            "find-predicate-references",
            "--functor",
            "depends_on",
            "--arity",
            "2",
            "--include-cross-memory-refs",
            "false",
        ],
        0,
        None,
        {
            "target": "depends_on/2",
            "memory": "default",
            "rules": [
                {"head": "integrity_violation(X)", "body": "depends_on(X, X)", "memory": "default"},
                {"head": "path(X, S)", "body": "depends_on(S, M), path(X, M)", "memory": "default"},
                {"head": "path(X, S)", "body": "depends_on(S, X)", "memory": "default"},
            ],
            "direct_facts_count": 2,
            "facts_referenced_in_assumptions": [],
            "cross_memory_refs": [],
        },
    ),
    (
        ["rename-predicate", "--old-functor", "depends_on", "--new-functor", "needs", "--dry-run", "true"],
        0,
        None,
        {
            "renamed_facts": 2,
            "rewritten_rule_bodies": 3,
            "affected_rule_ids": ["path(X, S)", "integrity_violation(X)"],  # heads, once each
            "cross_memory_impact": {"rewritten": [], "warnings": [], "skipped_readonly": []},
            "is_error": False,
        },
    ),
    (["query-logic", "--goal", "needs(_, _)"], 0, None, []),  # the dry run changed nothing
    (["save-snapshot", "--name", "snap-1"], 0, "Snapshot 'snap-1' saved successfully.", None),
    (["list-snapshots"], 0, "Snapshots: [snap-1]", None),
    (["restore-snapshot", "--name", "snap-1"], 0, "Snapshot 'snap-1' restored successfully.", None),
    (["restore-snapshot", "--name", "missing"], 1, "ExecutionFailed", None),
    (["create-memory", "--name", "notes"], 0, "Created memory 'notes' (project scope)", None),
    (["remember-fact", "--fact", "note(1)", "--memory", "notes"], 0, None, None),  # mounted by the manifest
    (["unmount-memory", "--name", "notes"], 0, "Unmounted memory 'notes'", None),
    (["mount-memory", "--name", "notes", "--mode", "ro"], 0, "Mounted memory 'notes' (ro)", None),
    (["remember-fact", "--fact", "note(2)", "--memory", "notes"], 1, "Memory is read-only", None),
    (["query-logic", "--goal", "note(N)", "--memory", "notes"], 0, None, [{"N": 1}]),
    (
        ["list-memories"],
        0,
        None,
        {
            "memories": [
                {"name": "default", "scope": "project", "mounted": True, "mode": "rw"},
                {"name": "notes", "scope": "project", "mounted": True, "mode": "ro"},
            ]
        },
    ),
]


def test_every_tool_runs_as_a_kebab_case_command_with_json_output(project: Path) -> None:
    data = (project / ".zpm" / "data").resolve()
    steps = [
        *EVERY_COMMAND,
        (["get-persistence-status"], 0, None, None),
        (["get-kb-overview", "--sample-size", "1"], 0, None, None),
    ]
    covered = {argv[0] for argv, *_ in steps}
    assert covered == {tool.cli_command for tool in load_tools()}  # all 29 tools
    problems = []
    texts = []
    for argv, status, exact, value in steps:
        run = zpm(project, *argv, "--format", "json")
        try:
            printed = json.loads(run.stdout)
        except ValueError:
            problems.append(f"{argv}: stdout is not JSON: {run.stdout!r} {run.stderr!r}")
            continue
        ok = isinstance(printed, list) and len(printed) == 1 and isinstance(printed[0], str)
        ok = ok and run.returncode == status and run.stdout.endswith("\n") and run.stdout.count("\n") == 1
        if ok and exact is not None:
            ok = printed[0] == exact
        if ok and value is not None:
            ok = json.loads(printed[0]) == value
        if not ok:
            problems.append(
                f"{argv}: expected exit {status} {exact if exact is not None else value!r}, got {run}"
            )
        else:
            texts.append(printed[0])
    assert not problems, "\n".join(problems)
    status_text = texts[-2]
    assert status_text.startswith(f"status: active\ndir: {data}\nlast_snapshot: snap-1\njournal_size: ")
    overview = json.loads(texts[-1])
    assert [(p["functor"], len(p["samples"])) for p in overview["predicates"]] == [
        ("depends_on", 1),
        ("integrity_violation", 1),
        ("path", 1),
    ]


def test_text_format_prints_the_text_or_error_and_json_lists_start_with_a_bracket(project: Path) -> None:
    run = zpm(project, "list-assumptions", "--format", "json")
    assert run.returncode == 0 and run.stdout[0] in "[{"
    run = zpm(project, "list-memories")
    assert run.returncode == 0 and json.loads(run.stdout)["memories"][0]["name"] == "default"
    run = zpm(project, "query-logic", "--goal", "")
    assert (run.returncode, run.stdout) == (1, "ERROR: InvalidArguments\n")
    run = zpm(project, "update-fact", "--old_fact", "a(1)", "--new_fact", "a(2)")  # snake case too
    assert (run.returncode, run.stdout) == (1, "ERROR: No matching clause for: a(1)\n")
