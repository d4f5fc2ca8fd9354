"""The logic memory's runtime (quipu/logic/runtime.py; spec §6, §7, §8) on real files and a real
engine: start-up loading, restarts, journal replay, degraded mode, mounts, engine death."""

from __future__ import annotations

import json
import os
import resource
import signal
from pathlib import Path

import pytest

from quipu.logic import project
from quipu.logic.journal import Entry, encode_batch
from quipu.logic.project import Mount, ProjectNotFound, read_manifest, write_manifest
from quipu.logic.runtime import LogicRuntime
from quipu.logic.snapshots import render_snapshot
from tests.logic.runtime_support import (
    Session,
    existing,
    journal_lines,
    require_swipl,
    root,
    session,
    sourced_facts,
    state,
)

__all__ = ["root", "session"]  # fixtures


def write_journal(path: Path, *batches: list[tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        for batch in batches:
            handle.write(encode_batch([Entry(1714000000, op, clause) for op, clause in batch]))  # type: ignore[arg-type]


def snapshot_file(path: Path, epoch: int, preds: dict[tuple[str, int], list[str]]) -> None:
    path.write_text(render_snapshot(epoch, list(preds), list(preds.values())), encoding="utf-8")


# ---------------------------------------------------------------------------- start-up


def test_open_finds_the_project_from_a_subdirectory_and_creates_missing_dirs(root: Path) -> None:
    (root / ".zpm" / "data").rmdir()
    nested = root / "a" / "b"
    nested.mkdir(parents=True)
    s = Session(nested)
    try:
        assert s.runtime.project.root == root
        assert (root / ".zpm" / "data").is_dir()  # R-W0
        assert s.runtime.mounted("default") is not None
        assert s.runtime.memories.mode("default") == "rw"
        assert s.runtime.memories.mode("other") is None
    finally:
        s.close()


def test_first_boot_writes_a_manifest_listing_project_memories_rw(root: Path) -> None:
    project.create_memory_dir(project.Project(root), "notes", "project")
    s = Session(root)
    try:
        manifest = read_manifest(project.Project(root))
        assert manifest.mounts is not None
        assert [(m.name, m.mode) for m in manifest.mounts] == [("notes", "rw")]  # R-M5
        assert s.runtime.memories.mode("notes") == "rw"
    finally:
        s.close()


def test_manifest_modes_are_applied_and_missing_directories_skipped_with_a_warning(root: Path) -> None:
    proj = project.Project(root)
    project.create_memory_dir(proj, "lib", "project")
    mounts = [
        project.mount_entry(proj, "lib", "project", "ro"),
        project.mount_entry(proj, "gone", "project", "rw"),
        project.mount_entry(proj, "default", "project", "ro"),
    ]
    write_manifest(proj, mounts)
    s = Session(root)
    try:
        assert s.runtime.memories.mode("lib") == "ro"
        assert s.runtime.memories.mode("default") == "ro"  # the entry only sets the mode
        assert s.runtime.memories.mode("gone") is None
        assert s.warnings.mention("gone")
        assert s.call("remember_fact", {"fact": "a(1)"}).text == "Memory is read-only"  # R-M8
    finally:
        s.close()


def test_a_manifest_that_does_not_parse_is_ignored_and_not_overwritten(root: Path) -> None:
    proj = project.Project(root)
    project.create_memory_dir(proj, "notes", "project")
    proj.manifest_path.write_text("{not json", encoding="utf-8")
    s = Session(root)
    try:
        assert s.runtime.memories.mode("notes") is None  # nothing extra is mounted
        assert s.warnings.mention("mounts.json")
        assert proj.manifest_path.read_text(encoding="utf-8") == "{not json"
    finally:
        s.close()


def test_seed_files_load_in_name_order_and_a_broken_one_does_not_stop_start_up(root: Path) -> None:
    kb = root / ".zpm" / "kb"
    (kb / "b.pl").write_text("order(b).\n", encoding="utf-8")
    (kb / "a.pl").write_text("order(a).\nbroken(( .\nafter(1).\n", encoding="utf-8")
    (kb / "c.pl").write_text(":- initialization(halt).\nsafe(1).\n", encoding="utf-8")
    (kb / "notes.txt").write_text("ignored(1).\n", encoding="utf-8")
    s = Session(root)
    try:
        assert s.rows("order(X)") == [{"X": "a"}, {"X": "b"}]
        assert s.rows("after(X)") == [{"X": 1}]  # the clause after the broken one loads
        assert s.rows("safe(X)") == [{"X": 1}]
        assert s.rows("ignored(X)") == []
        assert s.warnings.mention("a.pl:2")  # R-B5/§8.2: file and line named
        assert s.warnings.mention("c.pl:1")  # R-B6: the directive is not executed
    finally:
        s.close()


def test_seed_predicates_stay_dynamic(root: Path) -> None:
    (root / ".zpm" / "kb" / "seed.pl").write_text("color(red).\ncolor(blue).\n", encoding="utf-8")
    s = Session(root)
    try:
        s.ok("remember_fact", {"fact": "color(green)"})  # R-B4
        s.ok("forget_fact", {"fact": "color(red)"})
        assert s.rows("color(X)") == [{"X": "blue"}, {"X": "green"}]
    finally:
        s.close()


def test_a_snapshot_in_kb_is_not_also_loaded_as_a_seed_file(root: Path) -> None:
    feature = [f"feature(f{i}, on, {i})" for i in range(4)]
    snapshot_file(root / ".zpm" / "kb" / "snap.pl", 1714000000, {("feature", 3): feature})
    s = Session(root)
    try:
        assert len(s.rows("feature(A, B, C)")) == 4  # R-B3: 4, not 8
        assert s.runtime.mounted("default").stats.snapshot == "snap"  # type: ignore[union-attr]
    finally:
        s.close()


def test_the_snapshot_replaces_only_the_predicates_it_declares(root: Path) -> None:
    kb = root / ".zpm" / "kb"
    (kb / "seed.pl").write_text("color(seed).\nsize(seed).\n", encoding="utf-8")
    snapshot_file(kb / "snap.pl", 1714000000, {("color", 1): ["color(snap)"]})
    s = Session(root)
    try:
        assert s.rows("color(X)") == [{"X": "snap"}]  # §8.2 step 2
        assert s.rows("size(X)") == [{"X": "seed"}]
    finally:
        s.close()


def test_the_newest_snapshot_by_header_epoch_is_loaded_not_the_greatest_name(root: Path) -> None:
    kb = root / ".zpm" / "kb"
    snapshot_file(kb / "zzz.pl", 1000, {("v", 1): ["v(old)"]})
    snapshot_file(kb / "aaa.pl", 2000, {("v", 1): ["v(new)"]})
    s = Session(root)
    try:
        assert s.rows("v(X)") == [{"X": "new"}]  # R-N4
    finally:
        s.close()


def test_the_journal_replays_after_the_snapshot(root: Path) -> None:
    kb = root / ".zpm" / "kb"
    snapshot_file(kb / "s.pl", 1000, {("n", 1): ["n(1)", "n(2)", "n(2)"]})
    write_journal(
        root / ".zpm" / "data" / "journal.wal",
        [("assert", "n(3)")],
        [("retract", "n(2)")],  # one copy (R-W2)
        [("assert", "r(X) :- n(X)")],
        [("retractall", "n(1)")],
    )
    s = Session(root)
    try:
        assert s.rows("n(X)") == [{"X": 2}, {"X": 3}]
        assert s.rows("r(X)") == [{"X": 2}, {"X": 3}]
    finally:
        s.close()


def test_corrupt_journal_lines_are_skipped_with_a_warning_naming_file_and_line(root: Path) -> None:
    path = root / ".zpm" / "data" / "journal.wal"
    path.write_text(
        '{"ts":1,"op":"assert","clause":"ok(1)"}\n'
        "not json\n"
        '{"ts":1,"op":"explode","clause":"ok(9)"}\n'
        '{"ts":1,"op":"assert","clause":"bad(("}\n'
        '{"ts":1,"op":"assert","clause":"ok(2)"}\n',
        encoding="utf-8",
    )
    s = Session(root)
    try:
        assert s.rows("ok(X)") == [{"X": 1}, {"X": 2}]  # R-B5: replay goes on
        for line in (2, 3, 4):
            assert s.warnings.mention(f"journal.wal:{line}")
    finally:
        s.close()


def test_a_torn_journal_tail_is_ignored(root: Path) -> None:
    path = root / ".zpm" / "data" / "journal.wal"
    write_journal(path, [("assert", "kept(1)")])
    with path.open("ab") as handle:
        # an unfinished two-entry batch: its first line, then half of the second
        handle.write(encode_batch([Entry(1, "assert", "torn(1)"), Entry(1, "assert", "torn(2)")])[:-20])
    s = Session(root)
    try:
        assert s.rows("kept(X)") == [{"X": 1}]
        assert s.rows("torn(X)") == []  # never a prefix of a batch
        s.ok("remember_fact", {"fact": "later(1)"})
    finally:
        s.close()
    s = Session(root)
    try:
        assert s.rows("later(X)") == [{"X": 1}]  # the next batch did not glue onto the tail
        assert s.rows("torn(X)") == []
    finally:
        s.close()


# ---------------------------------------------------------------------------- restarts


def mutate(s: Session) -> None:
    s.ok("remember_fact", {"fact": "parent(alice, bob)"})
    s.ok("remember_fact", {"fact": "parent(bob, carol)"})
    s.ok("remember_fact", {"fact": "parent(bob, carol)"})
    s.ok("define_rule", {"head": "grandparent(X, Z)", "body": "parent(X, Y), parent(Y, Z)"})
    s.ok("remember_fact", {"fact": "likes(Who, 'ice cream') :- parent(Who, _)"})
    s.ok("forget_fact", {"fact": "parent(bob, carol)"})
    s.ok("update_fact", {"old_fact": "parent(alice, bob)", "new_fact": "parent(alice, bea)"})
    s.ok("upsert_fact", {"fact": "age(alice, 40)"})
    s.ok("upsert_fact", {"fact": "age(alice, 41)"})
    s.ok("remember_fact", {"fact": "tmp(1)"})
    s.ok("clear_context", {"category": "tmp(_)"})
    s.ok("remember_fact", {"fact": "q('it''s', \"str\", [1, -2.5], f(g(h)), a+b)"})


def test_restart_keeps_every_acknowledged_write(root: Path) -> None:
    s = Session(root)
    try:
        mutate(s)
        live = state(s.predicates())
        live_sources = sourced_facts(s.predicates())
    finally:
        s.close()
    s = Session(root)
    try:
        assert state(s.predicates()) == live
        after = sourced_facts(s.predicates())
        assert set(after) == set(live_sources)
        assert set(after.values()) == {"journal"}  # R-TM9: replayed from the journal
        assert s.rows("grandparent(alice, W)") == []
        assert s.rows("age(alice, A)") == [{"A": 41}]
    finally:
        s.close()


def test_a_snapshot_plus_journal_round_trip_equals_the_live_state(root: Path) -> None:
    s = Session(root)
    try:
        mutate(s)
        s.ok("save_snapshot", {"name": "mid"})
        s.ok("remember_fact", {"fact": "parent(carol, dan)"})
        s.ok("forget_fact", {"fact": "age(alice, _)"})
        s.ok("define_rule", {"head": "ancestor(X, Y)", "body": "parent(X, Y)"})
        live = state(s.predicates())
        live_sources = sourced_facts(s.predicates())
    finally:
        s.close()
    s = Session(root)
    try:
        assert s.runtime.mounted("default").stats.snapshot == "mid"  # type: ignore[union-attr]
        assert state(s.predicates()) == live
        after = sourced_facts(s.predicates())
        assert existing(after, live) == existing(live_sources, live)
        assert after["parent(carol, dan)"] == "journal"
        assert after["parent(alice, bea)"] == "snapshot"  # R-TM9
    finally:
        s.close()


def test_a_restored_snapshot_survives_a_restart_with_later_mutations(root: Path) -> None:
    s = Session(root)
    try:
        s.ok("remember_fact", {"fact": "v(1)"})
        s.ok("save_snapshot", {"name": "one"})
        s.ok("remember_fact", {"fact": "v(2)"})
        s.ok("remember_fact", {"fact": "w(2)"})
        s.ok("save_snapshot", {"name": "two"})
        s.ok("restore_snapshot", {"name": "one"})
        s.ok("remember_fact", {"fact": "v(3)"})
        live = state(s.predicates())
    finally:
        s.close()
    s = Session(root)
    try:
        assert s.runtime.mounted("default").stats.snapshot == "two"  # type: ignore[union-attr]
        assert state(s.predicates()) == live  # R-RS3
        assert s.rows("v(X)") == [{"X": 1}, {"X": 3}]
        assert s.rows("w(X)") == []
    finally:
        s.close()


def test_killing_the_engine_process_reloads_the_state_through_the_restart_hook(session: Session) -> None:
    session.ok("remember_fact", {"fact": "alive(1)"})
    session.ok("save_snapshot", {"name": "base"})
    session.ok("remember_fact", {"fact": "alive(2)"})
    before = state(session.predicates())
    pid = session.runtime.engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    failed = session.call("query_logic", {"goal": "alive(X)"})
    assert failed.is_error and failed.text == "ExecutionFailed"  # the call that met the dead engine
    assert session.runtime.engine.pid != pid
    assert session.rows("alive(X)") == [{"X": 1}, {"X": 2}]
    assert state(session.predicates()) == before
    session.ok("remember_fact", {"fact": "alive(3)"})  # writing goes on to the same journal
    assert [e["clause"] for e in journal_lines(session.runtime.project.journal_path)] == [
        "alive(2)",
        "alive(3)",
    ]


def test_a_restart_does_not_load_anything_twice(session: Session) -> None:
    (session.root / ".zpm" / "kb" / "seed.pl").write_text("s(1).\n", encoding="utf-8")
    session.ok("remember_fact", {"fact": "j(1)"})
    session.runtime.engine.restart()
    session.runtime.engine.restart()
    assert session.rows("s(X)") == [{"X": 1}]
    assert session.rows("j(X)") == [{"X": 1}]


# ---------------------------------------------------------------------------- journal sink


def test_each_mutation_is_one_stamped_batch_in_the_journal(session: Session) -> None:
    session.ok("remember_fact", {"fact": "parent(alice, bob)"})
    session.ok("upsert_fact", {"fact": "age(bob, 3)"})
    session.call("forget_fact", {"fact": "nothing(here)"})  # fails: nothing journaled (R-W4)
    data = session.runtime.project.journal_path.read_bytes()
    lines = data.decode().split("\n")[:-1]
    assert json.loads(lines[0])["clause"] == "parent(alice, bob)"
    assert list(json.loads(lines[0])) == ["ts", "op", "clause"]  # R-W1
    assert [json.loads(line)["op"] for line in lines] == ["assert", "retractall", "assert"]
    assert lines[1].endswith(" ") and not lines[2].endswith(" ")  # one two-entry batch
    assert all(isinstance(json.loads(line)["ts"], int) for line in lines)


def test_degraded_mode_when_the_data_directory_cannot_be_used(root: Path) -> None:
    data = root / ".zpm" / "data"
    write_journal(data / "journal.wal", [("assert", "from_journal(1)")])
    snapshot_file(root / ".zpm" / "kb" / "snap.pl", 1000, {("from_snapshot", 1): ["from_snapshot(1)"]})
    (root / ".zpm" / "kb" / "seed.pl").write_text("from_seed(1).\n", encoding="utf-8")
    (data / "journal.wal").unlink()
    data.rmdir()
    data.write_text("a file where the directory should be\n", encoding="utf-8")  # we run as root
    s = Session(root)
    try:
        assert s.runtime.mounted("default").status == "degraded"  # type: ignore[union-attr]
        assert s.warnings.mention("degraded")  # R-N7, on stderr by default
        assert s.rows("from_seed(X)") == [{"X": 1}]  # seeds still load
        assert s.rows("from_snapshot(X)") == []  # nothing from snapshots
        assert s.ok("remember_fact", {"fact": "in_memory(1)"}) == "Asserted: in_memory(1)"
        assert s.rows("in_memory(X)") == [{"X": 1}]
        assert data.read_text(encoding="utf-8") == "a file where the directory should be\n"
    finally:
        s.close()


def test_a_failing_journal_write_turns_persistence_degraded_and_the_tool_still_answers(root: Path) -> None:
    s = Session(root)
    try:
        assert s.runtime.mounted("default").status == "active"  # type: ignore[union-attr]
        # A file size limit below the batch: the write comes up short (EFBIG), like a full disk.
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (10, hard))
        try:
            answer = s.ok("remember_fact", {"fact": "kept(1)"})
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            signal.signal(signal.SIGXFSZ, previous)
        assert answer == "Asserted: kept(1)"
        assert s.runtime.mounted("default").status == "degraded"  # type: ignore[union-attr]
        assert s.warnings.mention("persistence is now degraded")
        assert s.rows("kept(X)") == [{"X": 1}]  # the mutation stays in memory
        assert s.ok("get_persistence_status").startswith("status: degraded\n")
        s.ok("remember_fact", {"fact": "kept(2)"})
        assert s.runtime.project.journal_path.read_bytes() == b""  # nothing half-written, nothing more
    finally:
        s.close()


# ---------------------------------------------------------------------------- named memories


def test_a_named_memory_loads_knowledge_pl_snapshot_and_journal_of_its_own(root: Path) -> None:
    proj = project.Project(root)
    directory = project.create_memory_dir(proj, "notes", "project")
    with (directory / "knowledge.pl").open("a", encoding="utf-8") as handle:
        handle.write("topic(seeded).\n")
    snapshot_file(directory / "snap.pl", 1000, {("entry", 1): ["entry(snap)"]})
    write_journal(directory / "journal.wal", [("assert", "entry(journal)")])
    s = Session(root)
    try:
        assert s.rows("topic(X)", "notes") == [{"X": "seeded"}]  # R-M3: the header is not run
        assert s.rows("entry(X)", "notes") == [{"X": "snap"}, {"X": "journal"}]
        assert s.rows("entry(X)") == []  # R-M1
        s.ok("remember_fact", {"fact": "entry(live)", "memory": "notes"})
        assert journal_lines(directory / "journal.wal")[-1]["clause"] == "entry(live)"
        assert journal_lines(proj.journal_path) == []
    finally:
        s.close()


def test_a_read_only_memory_loads_its_files_and_never_writes(root: Path) -> None:
    proj = project.Project(root)
    directory = project.create_memory_dir(proj, "lib", "project")
    write_journal(directory / "journal.wal", [("assert", "book(one)")])
    write_manifest(proj, [project.mount_entry(proj, "lib", "project", "ro")])
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    s = Session(root)
    try:
        assert s.rows("book(X)", "lib") == [{"X": "one"}]
        assert s.call("remember_fact", {"fact": "book(two)", "memory": "lib"}).text == "Memory is read-only"
        s.runtime.journal_sink.append("lib", [("assert", "book(three)")])  # the sink refuses too
        assert s.call("save_snapshot", {"name": "x", "memory": "lib"}).text == "Memory is read-only"
    finally:
        s.close()
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def test_mount_and_unmount_at_run_time(session: Session) -> None:
    proj = session.runtime.project
    directory = project.create_memory_dir(proj, "extra", "project")
    write_journal(directory / "journal.wal", [("assert", "x(1)")])
    mounted = session.runtime.mount(Mount("extra", ".zpm/kb/extra", "project", "rw"))
    assert mounted.stats.journal_entries == 1
    assert session.rows("extra:x(X)") == [{"X": 1}]  # R-M2
    with pytest.raises(ValueError):
        session.runtime.mount(Mount("extra", ".zpm/kb/extra", "project", "rw"))
    session.runtime.unmount("extra")
    assert session.runtime.memories.mode("extra") is None
    with pytest.raises(ValueError):
        session.runtime.unmount("default")


def test_open_without_a_project_raises_project_not_found(tmp_path: Path) -> None:
    require_swipl()
    with pytest.raises(ProjectNotFound):
        LogicRuntime.open(tmp_path)


def test_a_global_memory_is_mounted_from_its_absolute_manifest_path(root: Path, tmp_path: Path) -> None:
    proj = project.Project(root)
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    directory = project.create_memory_dir(proj, "shared", "global", env)
    assert directory == tmp_path / "xdg" / "zpm" / "kb" / "shared"  # §7.2
    write_journal(directory / "journal.wal", [("assert", "g(1)")])
    write_manifest(proj, [project.mount_entry(proj, "shared", "global", "rw", env)])
    s = Session(root)
    try:
        assert s.rows("g(X)", "shared") == [{"X": 1}]
        s.ok("remember_fact", {"fact": "g(2)", "memory": "shared"})
        assert [e["clause"] for e in journal_lines(directory / "journal.wal")] == ["g(1)", "g(2)"]
    finally:
        s.close()
