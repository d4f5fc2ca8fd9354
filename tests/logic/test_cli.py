"""The ``zpm`` command line (spec logic-memory.md §9, R-B2) and the dual-transport parity: the
same steps as separate CLI processes and as one MCP session end in the same state (§11.1)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from quipu.cli import zpm as cli
from quipu.logic import project as zpm_project
from quipu.logic.registry import find_command, flag_spellings, load_tools
from tests.acceptance.logic.harness import NO_ENGINE, ZPM, Run, result_text, session, zpm

QUIPU = Path(sys.executable).with_name("quipu")


@pytest.fixture(autouse=True)
def _zpm_installed() -> None:
    assert ZPM.is_file(), f"{ZPM} is missing: run `uv sync` to install the zpm console script"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    assert zpm_project.init(root)
    return root


def in_process(*argv: str) -> Run:
    """``zpm`` run in this process (for what needs no project: parsing, help, version)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(argv), out, err)
    return Run(code, out.getvalue(), err.getvalue())


# ---------------------------------------------------------------------------- built-in commands (§9.1)


def test_init_creates_the_layout_and_is_idempotent(tmp_path: Path) -> None:
    first = zpm(tmp_path, "init")
    assert (first.returncode, first.stdout) == (0, "Initialized .zpm/ project directory\n")
    assert (tmp_path / ".zpm" / "kb").is_dir() and (tmp_path / ".zpm" / "data").is_dir()
    assert (tmp_path / ".zpm" / ".gitignore").read_text() == "data/\n"
    (tmp_path / ".zpm" / "kb" / "keep.pl").write_text("kept(yes).\n")
    again = zpm(tmp_path, "init")
    assert (again.returncode, again.stdout) == (0, ".zpm/ project directory already initialized\n")
    assert (tmp_path / ".zpm" / "kb" / "keep.pl").read_text() == "kept(yes).\n"


def test_init_with_an_extra_argument_exits_1_and_creates_nothing(tmp_path: Path) -> None:
    run = zpm(tmp_path, "init", "extra")
    assert run.returncode == 1 and run.stdout == "" and "unexpected argument" in run.stderr
    assert not (tmp_path / ".zpm").exists()


def test_version_prints_zpm_0_4_0() -> None:
    run = zpm(Path.cwd(), "version")
    assert (run.returncode, run.stdout) == (0, "zpm 0.4.0\n")


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_commands_and_exits_0(flag: str) -> None:
    run = zpm(Path.cwd(), flag)
    assert run.returncode == 0
    assert "COMMANDS" in run.stdout and "zpm" in run.stdout
    listed = {line.split()[0] for line in run.stdout.splitlines() if line.startswith("    ") and line.split()}
    expected = {"init", "serve", "version", "memory", *(tool.cli_command for tool in load_tools())}
    assert expected <= listed
    assert len(load_tools()) == 29


def test_no_arguments_prints_the_help_and_exits_1() -> None:
    run = in_process()
    assert run.returncode == 1 and "COMMANDS" in run.stdout


@pytest.mark.parametrize(
    "argv", [["frobnicate"], ["--frobnicate"], ["echo", "--nope", "x"], ["memory", "eat"]]
)
def test_an_unknown_command_or_flag_exits_1_with_usage_on_stderr(argv: list[str]) -> None:
    run = in_process(*argv)
    assert run.returncode == 1 and run.stdout == "" and "Run 'zpm" in run.stderr


def test_a_tool_command_without_a_project_says_run_zpm_init(tmp_path: Path) -> None:
    run = zpm(tmp_path, "query-logic", "--goal", "true")
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.strip() == "zpm query-logic: NotFound. Run 'zpm init' first."  # R-B2


def test_serve_without_a_project_exits_1_mentioning_zpm_init(tmp_path: Path) -> None:
    run = zpm(tmp_path, "serve")
    assert run.returncode == 1 and "zpm init" in run.stderr and run.stdout == ""


# ---------------------------------------------------------------------------- parsing (§9.2), in process


def test_every_flag_is_accepted_in_kebab_and_snake_case() -> None:
    for tool in load_tools():
        command = tool.commands[0]
        for option in tool.options:
            value = {"integer": "3", "boolean": "true"}.get(option.type, "v")
            for flag in flag_spellings(option.argument):
                required = [
                    w
                    for o in tool.options
                    if o.required and o.argument != option.argument
                    for w in (o.flags[0], "x")
                ]
                arguments, output = cli.parse_tool_args(tool, command, [*required, flag, value])
                expected: Any = {"integer": 3, "boolean": True}.get(option.type, "v")
                assert arguments[option.argument] == expected, (tool.name, flag)
                assert output == "text"


def test_positional_forms_of_define_rule_assume_fact_and_memory_commands() -> None:
    tool, command = find_command("define-rule") or pytest.fail("define-rule")
    assert cli.parse_tool_args(tool, command, ["mortal(X)", "--body", "human(X)"])[0] == {
        "head": "mortal(X)",
        "body": "human(X)",
    }
    assert cli.parse_tool_args(tool, command, ["--head", "m(X)", "--body=h(X)"])[0] == {
        "head": "m(X)",
        "body": "h(X)",
    }
    tool, command = find_command("assume-fact") or pytest.fail("assume-fact")
    assert cli.parse_tool_args(tool, command, ["wet(grass)", "--assumption", "rain", "--format", "json"]) == (
        {"fact": "wet(grass)", "assumption": "rain"},
        "json",
    )
    tool, command = find_command("memory mount") or pytest.fail("memory mount")
    assert cli.parse_tool_args(tool, command, ["notes", "--mode", "ro"])[0] == {"name": "notes", "mode": "ro"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain-why", "--fact", "f(a)", "--max-depth", "abc"], "--max-depth takes an integer"),
        (
            ["rename-predicate", "--old-functor", "a", "--new-functor", "b", "--dry-run", "maybe"],
            "true or false",
        ),
        (["remember-fact"], "missing required flag --fact"),
        (["remember-fact", "--fact"], "--fact needs a value"),
        (["remember-fact", "--fact", "a(b)", "stray"], "unexpected argument 'stray'"),
        (["query-logic", "--goal", "true", "--format", "xml"], "--format takes text or json"),
    ],
)
def test_bad_values_missing_arguments_and_stray_words_exit_1(argv: list[str], message: str) -> None:
    run = in_process(*argv)
    assert run.returncode == 1 and run.stdout == ""
    assert message in run.stderr


def test_a_command_help_shows_both_flag_spellings_and_exits_0() -> None:
    run = in_process("rename-predicate", "--help")
    assert run.returncode == 0
    assert "--old-functor, --old_functor <string> (required)" in run.stdout
    assert "--dry-run, --dry_run true|false" in run.stdout


def test_text_and_json_rendering() -> None:
    assert cli.render("Asserted: parent(tom, bob)", False, "text") == "Asserted: parent(tom, bob)\n"
    assert cli.render("No such", True, "text") == "ERROR: No such\n"
    assert cli.render("Asserted: parent(tom, bob)", False, "json") == '["Asserted: parent(tom, bob)"]\n'


# ---------------------------------------------------------------------------- tool commands, as processes


def test_tool_commands_print_text_or_a_json_array_and_replay_between_processes(project: Path) -> None:
    run = zpm(project, "remember-fact", "--fact", "parent(tom, bob)", "--format", "json")
    assert (run.returncode, run.stdout) == (0, '["Asserted: parent(tom, bob)"]\n')
    run = zpm(project, "define-rule", "ancestor(X, Y)", "--body", "parent(X, Y)")
    assert (run.returncode, run.stdout) == (0, "Asserted rule: ancestor(X, Y) :- parent(X, Y)\n")
    run = zpm(project, "query-logic", "--goal", "ancestor(X, bob)", "--format", "json")
    assert run.returncode == 0
    (text,) = json.loads(run.stdout)
    assert json.loads(text) == [{"X": "tom"}]  # JSON inside a JSON string (§9.2)


def test_a_tool_error_prints_error_text_and_exits_1(project: Path) -> None:
    run = zpm(project, "forget-fact", "--fact", "absent(x)")
    assert (run.returncode, run.stdout) == (1, "ERROR: No matching clause found for: absent(x)\n")
    run = zpm(project, "remember-fact", "--fact", "", "--format", "json")
    assert (run.returncode, run.stdout) == (1, '["InvalidArguments"]\n')


def test_without_an_engine_a_tool_command_prints_execution_failed(project: Path) -> None:
    run = zpm(project, "echo", "--message", "hi", env=NO_ENGINE)
    assert (run.returncode, run.stdout) == (1, "ERROR: ExecutionFailed\n")
    assert "swipl" in run.stderr


def test_snake_case_flags_and_list_assumptions_json(project: Path) -> None:
    assert zpm(project, "remember-fact", "--fact", "likes(a, b)").returncode == 0
    run = zpm(project, "update-fact", "--old_fact", "likes(a, b)", "--new-fact", "likes(a, c)")
    assert (run.returncode, run.stdout) == (0, "Updated: likes(a, b) -> likes(a, c)\n")
    run = zpm(project, "list-assumptions", "--format", "json")
    assert run.returncode == 0 and run.stdout.startswith("[")
    assert json.loads(json.loads(run.stdout)[0]) == {"assumptions": []}


def test_memory_commands_wrap_the_memory_tools(project: Path) -> None:
    run = zpm(project, "memory", "create", "--name", "notes")
    assert (run.returncode, run.stdout) == (0, "Created memory 'notes' (project scope)\n")
    # R-CM2, R-M6: not mounted by create, but the manifest mounts it in every later process.
    run = zpm(project, "memory", "mount", "notes")
    assert (run.returncode, run.stdout) == (1, "ERROR: Memory 'notes' is already mounted\n")
    run = zpm(project, "unmount-memory", "--name", "notes")
    assert (run.returncode, run.stdout) == (0, "Unmounted memory 'notes'\n")
    run = zpm(project, "memory", "mount", "notes", "--mode", "ro")
    assert (run.returncode, run.stdout) == (0, "Mounted memory 'notes' (ro)\n")
    run = zpm(project, "remember-fact", "--fact", "n(1)", "--memory", "notes")
    assert run.returncode == 1 and run.stdout.startswith("ERROR: ")  # read-only across processes (R-M6)
    listed = zpm(project, "memory", "list", "--format", "json")
    assert listed.returncode == 0 and "notes" in json.loads(listed.stdout)[0]
    run = zpm(project, "memory", "unmount", "notes")
    assert (run.returncode, run.stdout) == (0, "Unmounted memory 'notes'\n")


def test_quipu_logic_is_an_alias_of_zpm(project: Path) -> None:
    assert QUIPU.is_file()
    for argv in (["version"], ["remember-fact", "--fact", "via(quipu)"]):
        a = zpm(project, *argv)
        assert a.returncode == 0
    run = Run(*_run(QUIPU, project, "logic", "query-logic", "--goal", "via(X)", "--format", "json"))
    assert run.returncode == 0 and json.loads(json.loads(run.stdout)[0]) == [{"X": "quipu"}]
    version = Run(*_run(QUIPU, project, "logic", "version"))
    assert (version.returncode, version.stdout) == (0, "zpm 0.4.0\n")


def _run(program: Path, cwd: Path, *args: str) -> tuple[int, str, str]:
    import subprocess

    done = subprocess.run([str(program), *args], cwd=cwd, capture_output=True, timeout=60, check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


# ---------------------------------------------------------------------------- dual transport (§11.1)

# Each step: the CLI words (as the original's CLI and the suite spell them) and the same call over MCP.
STEPS: list[tuple[list[str], str, dict[str, Any]]] = [
    (["remember-fact", "--fact", "parent(tom, bob)"], "remember_fact", {"fact": "parent(tom, bob)"}),
    (["remember-fact", "--fact", "parent(bob, ann)"], "remember_fact", {"fact": "parent(bob, ann)"}),
    (
        ["define-rule", "grandparent(X, Z)", "--body", "parent(X, Y), parent(Y, Z)"],
        "define_rule",
        {"head": "grandparent(X, Z)", "body": "parent(X, Y), parent(Y, Z)"},
    ),
    (
        ["assume-fact", "wet(grass)", "--assumption", "rain"],
        "assume_fact",
        {"fact": "wet(grass)", "assumption": "rain"},
    ),
    (
        ["assume-fact", "wet(street)", "--assumption", "rain"],
        "assume_fact",
        {"fact": "wet(street)", "assumption": "rain"},
    ),
    (
        ["assume-fact", "wet(street)", "--assumption", "hose"],
        "assume_fact",
        {"fact": "wet(street)", "assumption": "hose"},
    ),
    (["retract-assumption", "--assumption", "rain"], "retract_assumption", {"assumption": "rain"}),
    (
        ["update-fact", "--old-fact", "parent(bob, ann)", "--new-fact", "parent(bob, eve)"],
        "update_fact",
        {"old_fact": "parent(bob, ann)", "new_fact": "parent(bob, eve)"},
    ),
    (["upsert-fact", "--fact", "color(sky, blue)"], "upsert_fact", {"fact": "color(sky, blue)"}),
    (["upsert-fact", "--fact", "color(sky, grey)"], "upsert_fact", {"fact": "color(sky, grey)"}),
    (["remember-fact", "--fact", "tmp(1)"], "remember_fact", {"fact": "tmp(1)"}),
    (["clear-context", "--category", "tmp"], "clear_context", {"category": "tmp"}),
    (["forget-fact", "--fact", "nothing(here)"], "forget_fact", {"fact": "nothing(here)"}),
    # "notes" was created before either side started (create_memory mounts only at the next
    # process start, R-CM2, so creating it here would differ by design); the manifest carries
    # each mount change from one CLI process to the next (R-M6).
    (["mount-memory", "--name", "notes"], "mount_memory", {"name": "notes"}),
    (["unmount-memory", "--name", "notes"], "unmount_memory", {"name": "notes"}),
    (["memory", "mount", "notes", "--mode", "ro"], "mount_memory", {"name": "notes", "mode": "ro"}),
    (
        ["remember-fact", "--fact", "note(zero)", "--memory", "notes"],
        "remember_fact",
        {"fact": "note(zero)", "memory": "notes"},
    ),
    (["memory", "unmount", "notes"], "unmount_memory", {"name": "notes"}),
    (["memory", "mount", "--name", "notes"], "mount_memory", {"name": "notes"}),
    (
        ["remember-fact", "--fact", "note(one)", "--memory", "notes"],
        "remember_fact",
        {"fact": "note(one)", "memory": "notes"},
    ),
    (
        ["rename-predicate", "--old-functor", "color", "--new_functor", "colour", "--dry-run", "false"],
        "rename_predicate",
        {"old_functor": "color", "new_functor": "colour", "dry_run": False},
    ),
]
# The end state, read the same way on both sides.
PROBES: list[tuple[str, dict[str, Any]]] = [
    ("query_logic", {"goal": "grandparent(X, Z)"}),
    ("query_logic", {"goal": "wet(W)"}),
    ("query_logic", {"goal": "colour(S, C)"}),
    ("query_logic", {"goal": "note(N)", "memory": "notes"}),
    ("get_knowledge_schema", {}),
    ("list_assumptions", {}),
    ("get_belief_status", {"fact": "wet(street)"}),
    ("list_memories", {}),
]


def _journal(root: Path, relative: str) -> list[tuple[str, str]]:
    path = root / relative
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [(entry["op"], entry["clause"]) for entry in map(json.loads, lines)]  # ts differs


def test_the_same_steps_as_cli_processes_and_as_one_mcp_session_end_in_the_same_state(tmp_path: Path) -> None:
    by_cli, by_mcp = tmp_path / "cli", tmp_path / "mcp"
    for root in (by_cli, by_mcp):
        root.mkdir()
        assert zpm_project.init(root)
        assert zpm(root, "memory", "create", "notes").returncode == 0

    cli_texts = []
    for argv, _, _ in STEPS:
        run = zpm(by_cli, *argv, "--format", "json")
        (text,) = json.loads(run.stdout)
        cli_texts.append((text, run.returncode))
    with session(by_mcp) as served:
        mcp_texts = []
        for _, name, arguments in STEPS:
            result = served.call(name, arguments)
            mcp_texts.append((result_text(result), 1 if result["isError"] else 0))
    assert cli_texts == mcp_texts
    failed = [STEPS[i][1] for i, (_, code) in enumerate(cli_texts) if code]
    assert failed == ["forget_fact", "mount_memory", "remember_fact"]  # absent, already mounted, ro

    # The end state, read by fresh processes of both kinds on both projects.
    states = {}
    for root in (by_cli, by_mcp):
        with session(root) as served:
            over_mcp = [result_text(served.call(name, arguments)) for name, arguments in PROBES]
        over_cli = []
        for name, arguments in PROBES:
            _, command = find_command(name.replace("_", "-")) or pytest.fail(name)
            argv = [command.spelling, *(w for k, v in arguments.items() for w in (f"--{k}", str(v)))]
            over_cli.append(json.loads(zpm(root, *argv, "--format", "json").stdout)[0])
        assert over_cli == over_mcp
        states[root] = over_mcp
    assert states[by_cli] == states[by_mcp]
    state = states[by_cli]
    assert json.loads(state[0]) == [{"X": "tom", "Z": "eve"}]
    assert json.loads(state[1]) == [{"W": "street"}]
    assert json.loads(state[2]) == [{"S": "sky", "C": "grey"}]
    assert json.loads(state[3]) == [{"N": "one"}]
    for relative in (".zpm/data/journal.wal", ".zpm/kb/notes/journal.wal"):
        assert _journal(by_cli, relative) == _journal(by_mcp, relative)
        assert _journal(by_cli, relative)
    assert (by_cli / ".zpm" / "mounts.json").read_text() == (by_mcp / ".zpm" / "mounts.json").read_text()
