"""The persistence tools (spec §4.22-§4.25, §6.4-§6.7; quipu/logic/persistence_tools.py) on real
files and a real engine: the seed document's examples and the R- rules of those sections."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from quipu.logic import project
from quipu.logic.persistence_tools import TOOL_NAMES, PersistenceService
from quipu.logic.snapshots import read_header
from tests.logic.runtime_support import Session, journal_lines, root, session, state

__all__ = ["root", "session"]  # fixtures

SEED = Path(__file__).parent / "seed_examples.json"


def seed_example(key: str) -> dict[str, Any]:
    examples = json.loads(SEED.read_text(encoding="utf-8"))["examples"]
    found = [e for e in examples if e["key"] == key]
    assert len(found) == 1, key
    example: dict[str, Any] = found[0]
    return example


def snapshot_text(s: Session, name: str, directory: Path | None = None) -> str:
    folder = directory if directory is not None else s.root / ".zpm" / "kb"
    return (folder / f"{name}.pl").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- seed examples


def test_the_service_runs_exactly_the_four_persistence_tools(session: Session) -> None:
    assert TOOL_NAMES == ("save_snapshot", "restore_snapshot", "list_snapshots", "get_persistence_status")
    assert all(session.persistence.handles(name) for name in TOOL_NAMES)
    assert not session.persistence.handles("remember_fact")
    with pytest.raises(KeyError):
        session.persistence.call("remember_fact", {"fact": "a"})


def test_seed_save_snapshot(session: Session) -> None:
    example = seed_example("save_snapshot#1")
    result = session.call("save_snapshot", example["arguments"])
    assert (result.text, result.is_error) == (example["text"], example["is_error"])


@pytest.mark.parametrize("arguments", [{}, {"name": None}, {"name": ""}, {"name": 7}])
def test_seed_save_snapshot_invalid_arguments(session: Session, arguments: dict[str, Any]) -> None:
    example = seed_example("save_snapshot#2")
    result = session.call("save_snapshot", arguments)
    assert (result.text, result.is_error) == (example["text"], True)


def test_seed_restore_snapshot(session: Session) -> None:
    example = seed_example("restore_snapshot#1")
    session.ok("save_snapshot", {"name": "before_refactor"})
    result = session.call("restore_snapshot", example["arguments"])
    assert (result.text, result.is_error) == (example["text"], example["is_error"])


def test_seed_restore_snapshot_not_found(session: Session) -> None:
    example = seed_example("restore_snapshot#2")
    result = session.call("restore_snapshot", example["arguments"])
    assert (result.text, result.is_error) == (example["text"], True)
    assert journal_lines(session.runtime.project.journal_path) == []


@pytest.mark.parametrize("arguments", [{}, {"name": None}, {"name": ""}])
def test_seed_restore_snapshot_invalid_arguments(session: Session, arguments: dict[str, Any]) -> None:
    example = seed_example("restore_snapshot#3")
    result = session.call("restore_snapshot", arguments)
    assert (result.text, result.is_error) == (example["text"], True)


def test_seed_list_snapshots(session: Session) -> None:
    example = seed_example("list_snapshots#1")
    session.ok("save_snapshot", {"name": "daily_backup"})
    session.ok("save_snapshot", {"name": "before_refactor"})
    result = session.call("list_snapshots", example["arguments"])
    assert (result.text, result.is_error) == (example["text"], False)


def test_seed_list_snapshots_empty(session: Session) -> None:
    example = seed_example("list_snapshots#2")
    assert session.call("list_snapshots", example["arguments"]).text == example["text"]


def test_seed_get_persistence_status(session: Session) -> None:
    example = seed_example("get_persistence_status#1")
    session.ok("save_snapshot", {"name": "before_refactor"})
    # One journal line of exactly 1024 bytes: {"ts":<10 digits>,"op":"assert","clause":"..."}\n
    fact = "note(" + "a" * (1024 - 44 - len("note()")) + ")"
    session.ok("remember_fact", {"fact": fact})
    data_dir = session.runtime.project.data_dir
    assert (data_dir / "journal.wal").stat().st_size == 1024
    result = session.call("get_persistence_status", example["arguments"])
    # The seed ran with its data directory at /tmp/zpm-persistence; ours is the project's.
    expected = example["text"].replace("/tmp/zpm-persistence", str(data_dir.absolute()))
    assert (result.text, result.is_error) == (expected, False)


def test_seed_get_persistence_status_unavailable(root: Path) -> None:
    example = seed_example("get_persistence_status#2")
    s = Session(root)
    s.close()
    result = PersistenceService(s.runtime).call("get_persistence_status", {})
    assert (result.text, result.is_error) == (example["text"], True)


# ---------------------------------------------------------------------------- save_snapshot


def test_r_n2_snapshot_content_header_dynamic_lines_then_clauses(session: Session) -> None:
    session.ok("remember_fact", {"fact": "parent(alice, bob)"})
    session.ok("define_rule", {"head": "grand(X, Z)", "body": "parent(X, Y), parent(Y, Z)"})
    session.ok("remember_fact", {"fact": "parent(bob, carol)"})
    session.ok("save_snapshot", {"name": "s"})
    lines = snapshot_text(session, "s").splitlines()
    assert lines[0].startswith("%% zpm snapshot ")
    epoch = int(lines[0].split()[-1])
    assert read_header(session.root / ".zpm" / "kb" / "s.pl") == epoch
    assert lines[1:5] == [
        ":- dynamic(grand/2).",
        ":- dynamic(parent/2).",
        ":- dynamic(tms_justification/2).",  # always declared, also when empty
        ":- dynamic(zpm_source/2).",
    ]
    assert lines[5:8] == [
        "grand(X, Z) :- parent(X, Y), parent(Y, Z).",
        "parent(alice, bob).",
        "parent(bob, carol).",  # grouped by predicate, database order, author names (R-P5)
    ]
    assert lines[8:] == [
        "zpm_source(parent(alice, bob), interactive).",
        "zpm_source(parent(bob, carol), interactive).",
    ]
    assert not (session.root / ".zpm" / "kb" / "s.pl.tmp").exists()  # R-N1


def test_r_n2_tricky_terms_round_trip_through_save_and_restore(session: Session) -> None:
    facts = [
        "t('hello world', 'it''s', \"a string\", -3, -2.5)",
        "t(f(g(h(1))), [a, [b, c], []], 'A', x, [H|T])",
        "t(1 + 2 * 3, - 1, a = b, (a :- b), 0)",
        "t('\\n', '', [], {x, y}, 'don''t')",
    ]
    for fact in facts:
        session.ok("remember_fact", {"fact": fact})
    session.ok("define_rule", {"head": "r(X)", "body": "t(X, _, _, _, _), \\+ X = 0, (X = a ; true)"})
    before = state(session.predicates())
    session.ok("save_snapshot", {"name": "tricky"})
    session.ok("clear_context", {"category": "t(_, _, _, _, _)"})
    session.ok("clear_context", {"category": "r(_)"})
    session.ok("restore_snapshot", {"name": "tricky"})
    assert state(session.predicates()) == before
    assert len(session.rows("t(A, B, C, D, E)")) == 4


def test_r_ss1_names_with_dashes_are_valid_and_a_trailing_pl_is_kept(session: Session) -> None:
    assert session.ok("save_snapshot", {"name": "test-snap"}) == "Snapshot 'test-snap' saved successfully."
    assert session.ok("save_snapshot", {"name": "x.pl"}) == "Snapshot 'x.pl' saved successfully."
    assert (session.root / ".zpm" / "kb" / "x.pl.pl").is_file()
    assert session.ok("list_snapshots") == "Snapshots: [test-snap, x.pl]"


@pytest.mark.parametrize("name", ["a/b", "a\\b", "a\0b", ".hidden", "../escape"])
def test_snapshot_names_with_separators_nul_or_a_leading_dot_are_invalid(session: Session, name: str) -> None:
    result = session.call("save_snapshot", {"name": name})
    assert (result.text, result.is_error) == ("InvalidArguments", True)
    assert session.call("restore_snapshot", {"name": name}).text == "InvalidArguments"
    assert sorted(p.name for p in (session.root / ".zpm" / "kb").iterdir()) == []


def test_r_ss2_saving_again_overwrites_and_rotates_the_journal(session: Session) -> None:
    data = session.runtime.project.data_dir
    session.ok("remember_fact", {"fact": "v(1)"})
    session.ok("save_snapshot", {"name": "s"})
    assert (data / "journal.wal").stat().st_size == 0  # R-N5
    archives = sorted(p.name for p in data.glob("journal-*.wal"))
    assert len(archives) == 1
    assert json.loads((data / archives[0]).read_text(encoding="utf-8"))["clause"] == "v(1)"
    session.ok("remember_fact", {"fact": "v(2)"})
    session.ok("save_snapshot", {"name": "s"})
    assert "v(2)." in snapshot_text(session, "s")
    assert "journal_size: 0 bytes" in session.ok("get_persistence_status")


def test_save_snapshot_in_degraded_mode_fails_and_writes_nothing(root: Path) -> None:
    data = root / ".zpm" / "data"
    data.rmdir()
    data.write_text("", encoding="utf-8")
    s = Session(root)
    try:
        s.ok("remember_fact", {"fact": "v(1)"})
        result = s.call("save_snapshot", {"name": "s"})
        assert (result.text, result.is_error) == ("ExecutionFailed", True)  # §4.22 [changed]
        assert not (root / ".zpm" / "kb" / "s.pl").exists()
        status = s.call("get_persistence_status")
        assert not status.is_error  # degraded is not an error
        assert status.text == (
            f"status: degraded\ndir: {data.absolute()}\nlast_snapshot: none\njournal_size: 0 bytes"
        )
    finally:
        s.close()


def test_memory_argument_not_mounted_and_read_only(root: Path) -> None:
    proj = project.Project(root)
    project.create_memory_dir(proj, "lib", "project")
    project.write_manifest(proj, [project.mount_entry(proj, "lib", "project", "ro")])
    s = Session(root)
    try:
        for tool in ("save_snapshot", "restore_snapshot"):
            result = s.call(tool, {"name": "x", "memory": "lib"})
            assert (result.text, result.is_error) == ("Memory is read-only", True)  # R-M8
            assert s.call(tool, {"name": "x", "memory": "nope"}).text == "Memory not mounted: nope"
        assert s.call("list_snapshots", {"memory": "nope"}).text == "Memory not mounted: nope"  # R-M7
        assert s.ok("list_snapshots", {"memory": "lib"}) == "Snapshots: []"  # reads work on ro
        assert s.ok("list_snapshots", {"memory": ""}) == "Snapshots: []"
        assert s.call("list_snapshots", {"memory": 3}).text == "InvalidArguments"
    finally:
        s.close()


def test_snapshots_of_a_named_memory_live_in_its_directory(session: Session) -> None:
    proj = session.runtime.project
    directory = project.create_memory_dir(proj, "notes", "project")
    session.runtime.mount(project.mount_entry(proj, "notes", "project", "rw"))
    session.ok("remember_fact", {"fact": "topic(a)", "memory": "notes"})
    session.ok("save_snapshot", {"name": "snap", "memory": "notes"})
    assert (directory / "snap.pl").is_file()  # R-N1
    assert (directory / "journal.wal").stat().st_size == 0
    assert session.ok("list_snapshots", {"memory": "notes"}) == "Snapshots: [snap]"  # not knowledge.pl
    assert session.ok("list_snapshots") == "Snapshots: []"
    knowledge = session.call("save_snapshot", {"name": "knowledge", "memory": "notes"})
    assert knowledge.text == "InvalidArguments"  # would overwrite knowledge.pl
    assert (directory / "knowledge.pl").read_text(encoding="utf-8") == ":- module(notes, []).\n"


# ---------------------------------------------------------------------------- restore_snapshot


def test_r_rs2_restore_replaces_everything_including_seed_content(root: Path) -> None:
    (root / ".zpm" / "kb" / "seed.pl").write_text("seeded(1).\n", encoding="utf-8")
    s = Session(root)
    try:
        s.ok("save_snapshot", {"name": "empty"})  # holds seeded(1)
        s.ok("clear_context", {"category": "seeded(_)"})
        s.ok("save_snapshot", {"name": "bare"})
        s.ok("remember_fact", {"fact": "later(1)"})
        s.ok("define_rule", {"head": "r(X)", "body": "later(X)"})
        s.ok("restore_snapshot", {"name": "bare"})
        assert s.rows("seeded(X)") == []
        assert s.rows("later(X)") == []
        assert s.rows("r(X)") == []
        s.ok("restore_snapshot", {"name": "empty"})
        assert s.rows("seeded(X)") == [{"X": 1}]
        s.ok("remember_fact", {"fact": "seeded(2)"})  # restored predicates stay modifiable
        s.ok("forget_fact", {"fact": "seeded(1)"})
        assert s.rows("seeded(X)") == [{"X": 2}]
    finally:
        s.close()


def test_r_rs1_name_and_name_pl_designate_the_same_file(session: Session) -> None:
    session.ok("remember_fact", {"fact": "v(1)"})
    session.ok("save_snapshot", {"name": "snap"})
    session.ok("remember_fact", {"fact": "v(2)"})
    assert session.ok("restore_snapshot", {"name": "snap.pl"}) == "Snapshot 'snap.pl' restored successfully."
    assert session.rows("v(X)") == [{"X": 1}]


def test_r_n6_restore_appends_one_batch_and_neither_rotates_nor_creates_a_snapshot(session: Session) -> None:
    session.ok("remember_fact", {"fact": "keep(1)"})
    session.ok("save_snapshot", {"name": "snap"})
    session.ok("remember_fact", {"fact": "gone(1)"})
    session.ok("define_rule", {"head": "rule(X)", "body": "gone(X)"})
    kb_before = sorted(p.name for p in (session.root / ".zpm" / "kb").iterdir())
    path = session.runtime.project.journal_path
    size = path.stat().st_size
    session.ok("restore_snapshot", {"name": "snap"})
    data = path.read_bytes()[size:]
    lines = data.decode().split("\n")[:-1]
    assert all(line.endswith(" ") for line in lines[:-1]) and not lines[-1].endswith(" ")  # one batch
    entries = [(json.loads(line)["op"], json.loads(line)["clause"]) for line in lines]
    assert entries == [
        ("retractall", "gone(_)"),
        ("retractall", "keep(_)"),
        ("retractall", "rule(_)"),
        ("retractall", "zpm_source(_, _)"),
        ("assert", "keep(1)"),
    ]
    assert sorted(p.name for p in (session.root / ".zpm" / "kb").iterdir()) == kb_before
    assert len(list(session.runtime.project.data_dir.glob("journal-*.wal"))) == 1  # only save's archive


def test_restore_of_a_file_that_is_not_a_snapshot_fails_and_changes_nothing(session: Session) -> None:
    kb = session.root / ".zpm" / "kb"
    (kb / "seed.pl").write_text("x(1).\n", encoding="utf-8")
    (kb / "cut.pl").write_text("%% zpm snapshot 5\n:- dynamic(x/1).\nx(2).\nx(3", encoding="utf-8")
    session.ok("remember_fact", {"fact": "x(9)"})
    size = session.runtime.project.journal_path.stat().st_size
    for name in ("seed", "cut", "missing"):
        result = session.call("restore_snapshot", {"name": name})
        assert (result.text, result.is_error) == ("ExecutionFailed", True)
    assert session.rows("x(X)") == [{"X": 9}]
    assert session.runtime.project.journal_path.stat().st_size == size


# ---------------------------------------------------------------------------- list / status


def test_r_ls1_r_n3_only_snapshot_files_are_listed_sorted_without_pl(session: Session) -> None:
    kb = session.root / ".zpm" / "kb"
    (kb / "seed.pl").write_text("x(1).\n", encoding="utf-8")
    (kb / "sub").mkdir()
    (kb / "sub" / "deep.pl").write_text("%% zpm snapshot 1\n", encoding="utf-8")
    for name in ("zeta", "alpha", "Mid"):
        session.ok("save_snapshot", {"name": name})
    assert session.ok("list_snapshots") == "Snapshots: [Mid, alpha, zeta]"


def test_r_ps1_last_snapshot_is_the_most_recently_saved_not_the_greatest_name(session: Session) -> None:
    kb = session.root / ".zpm" / "kb"
    (kb / "zzz.pl").write_text("%% zpm snapshot 100\n", encoding="utf-8")
    session.ok("save_snapshot", {"name": "aaa"})  # a later header epoch (R-N4)
    lines = session.ok("get_persistence_status").split("\n")
    assert lines[0] == "status: active"
    assert lines[1] == f"dir: {session.runtime.project.data_dir.absolute()}"
    assert lines[2] == "last_snapshot: aaa"
    assert lines[3] == "journal_size: 0 bytes"
    session.ok("remember_fact", {"fact": "v(1)"})
    size = session.runtime.project.journal_path.stat().st_size
    assert session.ok("get_persistence_status").endswith(f"journal_size: {size} bytes")


def test_get_persistence_status_ignores_arguments_and_reports_the_default_memory(session: Session) -> None:
    text = session.ok("get_persistence_status", {"memory": "nope", "extra": 1})
    assert text.startswith("status: active\n")
    assert "last_snapshot: none" in text


def test_a_dead_engine_fails_the_call_and_comes_back_with_its_state(session: Session) -> None:
    session.ok("remember_fact", {"fact": "v(1)"})
    pid = session.runtime.engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert session.call("save_snapshot", {"name": "s"}).text == "ExecutionFailed"
    assert session.ok("save_snapshot", {"name": "s"}) == "Snapshot 's' saved successfully."
    assert "v(1)." in snapshot_text(session, "s")
