"""Persistence across restarts and start-up loading over stdio (spec logic-memory.md §6, §8,
§11.1): each test runs two or more ``zpm serve`` processes on the same project folder."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from quipu.logic import project as zpm_project
from tests.acceptance.logic.harness import ZPM, handshake, run_batch, text_of, tool_call
from tests.acceptance.logic.steps import Step, fails, ok, ok_json, play

NOBODY = 65534


def feature_facts() -> list[Step]:
    return [ok("remember_fact", {"fact": f"feature(f{i}, area_{i}, {i})"}) for i in range(1, 5)]


# ---------------------------------------------------------------------------- journal replay


def test_a_second_server_sees_journal_facts_and_honours_clear_context_on_replay(project: Path) -> None:
    play(
        project,
        [
            ok("remember_fact", {"fact": "task(write)"}),
            ok("remember_fact", {"fact": "task(test)"}),
            ok("remember_fact", {"fact": "note(keep)"}),
            ok("define_rule", {"head": "task(X)", "body": "note(X)"}),
            ok("clear_context", {"category": "task(_)"}),  # facts and the rule (R-CC1)
            ok("remember_fact", {"fact": "task(ship)"}),
            ok("upsert_fact", {"fact": "level(a, 1)"}),
            ok("upsert_fact", {"fact": "level(a, 2)"}),
            ok("update_fact", {"old_fact": "note(keep)", "new_fact": "note(kept)"}),
            fails(
                "update_fact",
                {"old_fact": "note(absent)", "new_fact": "note(x)"},
                "No matching clause for: note(absent)",
            ),
            fails("remember_fact", {"fact": "broken(("}, "Failed to assert: broken(("),
        ],
    )
    journal = project / ".zpm" / "data" / "journal.wal"
    entries = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    assert all(list(entry) == ["ts", "op", "clause"] for entry in entries)  # R-W1
    assert not any("absent" in e["clause"] or "broken" in e["clause"] for e in entries)  # R-W4
    play(
        project,
        [
            ok_json("query_logic", {"goal": "task(X)"}, [{"X": "ship"}]),
            ok_json("query_logic", {"goal": "note(X)"}, [{"X": "kept"}]),
            ok_json("query_logic", {"goal": "level(a, L)"}, [{"L": 2}]),
            ok_json(
                "get_belief_status",
                {"fact": "task(ship)"},
                {"status": "out", "justifications": [], "source": "journal"},
            ),
        ],
    )


# ---------------------------------------------------------------------------- snapshots


def test_a_restart_restores_the_snapshot_plus_later_journal_entries(project: Path) -> None:
    data = (project / ".zpm" / "data").resolve()
    play(
        project,
        [
            ok("remember_fact", {"fact": "city(paris)"}),
            ok("remember_fact", {"fact": "city(rome)"}),
            ok("save_snapshot", {"name": "cities"}, "Snapshot 'cities' saved successfully."),
            ok("remember_fact", {"fact": "city(oslo)"}),
            ok("forget_fact", {"fact": "city(rome)"}),
        ],
    )
    snapshot = project / ".zpm" / "kb" / "cities.pl"
    assert snapshot.read_text(encoding="utf-8").startswith("%% zpm snapshot ")  # R-N2, in .zpm/kb/
    assert (data / "journal.wal").is_file() and len((data / "journal.wal").read_text().splitlines()) == 2
    assert not list((project / ".zpm" / "kb").glob("*.tmp"))
    texts = play(
        project,
        [
            ok_json("query_logic", {"goal": "city(X)"}, [{"X": "paris"}, {"X": "oslo"}]),
            ok_json(
                "get_belief_status",
                {"fact": "city(paris)"},
                {"status": "out", "justifications": [], "source": "snapshot"},
            ),
            ok_json(
                "get_belief_status",
                {"fact": "city(oslo)"},
                {"status": "out", "justifications": [], "source": "journal"},
            ),
            Step(
                "get_persistence_status", {}, prefix=f"status: active\ndir: {data}\nlast_snapshot: cities\n"
            ),
            ok("list_snapshots", {}, "Snapshots: [cities]"),
        ],
    )
    assert texts[3].endswith(f"journal_size: {(data / 'journal.wal').stat().st_size} bytes")


def test_restart_then_restore_snapshot_shows_count_4_and_exactly_four_f_bindings(project: Path) -> None:
    play(project, [*feature_facts(), ok("save_snapshot", {"name": "test-snap"})])
    play(project, [ok("remember_fact", {"fact": "feature(f5, extra, 5)"})])
    # Restart: the snapshot in .zpm/kb/ is loaded once, not also as a seed file (R-B3).
    batch = run_batch(
        project,
        [
            *handshake(),
            tool_call(1, "restore_snapshot", {"name": "test-snap"}),
            tool_call(2, "get_knowledge_schema", {}),
            tool_call(3, "query_logic", {"goal": "feature(F, _, _)"}),
            tool_call(4, "remember_fact", {"fact": "feature(f6, later, 6)"}),  # R-RS2: still modifiable
        ],
    )
    assert text_of(batch[1]) == "Snapshot 'test-snap' restored successfully."
    assert json.loads(text_of(batch[2])) == {
        "predicates": [{"name": "feature", "arity": 3, "type": "fact", "count": 4}],
        "total": 1,
    }
    assert '"count":4' in text_of(batch[2])
    line = next(line for line in batch.lines if json.loads(line).get("id") == 3)
    assert line.count('\\"F\\":') == 4  # counted in the envelope, as the original's suite does (R-J4)
    assert batch[4]["result"]["isError"] is False
    # R-RS3: the restore is durable; the write after it too.
    play(
        project,
        [ok_json("query_logic", {"goal": "feature(F, _, _)"}, [{"F": f"f{i}"} for i in (1, 2, 3, 4, 6)])],
    )


def test_the_newest_snapshot_by_save_time_wins_over_the_greatest_name(project: Path) -> None:
    play(
        project,
        [
            ok("remember_fact", {"fact": "v(1)"}),
            ok("save_snapshot", {"name": "zzz"}),
            ok("remember_fact", {"fact": "v(2)"}),
            ok("save_snapshot", {"name": "aaa"}),  # rotates the journal: v(2) lives only in aaa
        ],
    )
    play(project, [ok_json("query_logic", {"goal": "v(X)"}, [{"X": 1}, {"X": 2}])])  # R-N4


# ---------------------------------------------------------------------------- start-up loading (§8.2)


def test_seed_files_load_and_other_or_broken_files_are_skipped(project: Path) -> None:
    kb = project / ".zpm" / "kb"
    (kb / "family.pl").write_text(
        "parent(tom, bob).\nparent(bob, ann).\ngrandparent(X, Z) :- parent(X, Y), parent(Y, Z).\n",
        encoding="utf-8",
    )
    (kb / "notes.txt").write_text("hidden(yes).\n", encoding="utf-8")
    (kb / "broken.pl").write_text("this is (not prolog.\n", encoding="utf-8")
    (kb / "danger.pl").write_text(":- initialization(halt).\nsafe(yes).\n", encoding="utf-8")  # R-B6
    batch = run_batch(
        project,
        [
            *handshake(),
            tool_call(1, "query_logic", {"goal": "grandparent(tom, Z)"}),
            tool_call(2, "query_logic", {"goal": "hidden(X)"}),
            tool_call(3, "explain_why", {"fact": "parent(tom, bob)"}),  # R-E5
            tool_call(4, "forget_fact", {"fact": "parent(bob, ann)"}),  # seed predicates are dynamic (R-B4)
            tool_call(5, "remember_fact", {"fact": "parent(bob, eve)"}),
            tool_call(6, "query_logic", {"goal": "grandparent(tom, Z)"}),
            tool_call(7, "list_snapshots", {}),  # seed files are not snapshots (R-N3)
            tool_call(8, "query_logic", {"goal": "safe(X)"}),
            tool_call(9, "get_belief_status", {"fact": "parent(tom, bob)"}),
        ],
    )
    assert batch.returncode == 0
    assert json.loads(text_of(batch[1])) == [{"Z": "ann"}]
    assert json.loads(text_of(batch[2])) == []
    assert json.loads(text_of(batch[3])) == {
        "fact": "parent(tom, bob)",
        "proven": True,
        "proof_tree": {"goal": "parent(tom, bob)", "rule_applied": "fact", "children": []},
    }
    assert text_of(batch[4]) == "Retracted: parent(bob, ann)" and batch[5]["result"]["isError"] is False
    assert json.loads(text_of(batch[6])) == [{"Z": "eve"}]
    assert text_of(batch[7]) == "Snapshots: []"
    assert json.loads(text_of(batch[8])) == [{"X": "yes"}]
    assert json.loads(text_of(batch[9]))["source"] == "unknown"  # R-TM9: seed files
    assert "broken.pl" in batch.stderr  # skipped with a warning
    assert (kb / "family.pl").read_text(encoding="utf-8").startswith("parent(tom, bob).")  # never rewritten


def test_missing_kb_and_data_directories_are_created_at_start_up(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    (root / ".zpm").mkdir(parents=True)  # a .zpm/ with nothing in it (R-W0)
    data = (root / ".zpm" / "data").resolve()
    play(
        root,
        [
            Step(
                "get_persistence_status",
                {},
                f"status: active\ndir: {data}\nlast_snapshot: none\njournal_size: 0 bytes",
            ),
            ok("remember_fact", {"fact": "made(it)"}),
        ],
    )
    assert (root / ".zpm" / "kb").is_dir() and data.is_dir()
    assert (data / "journal.wal").read_text(encoding="utf-8").count("\n") == 1


# ---------------------------------------------------------------------------- degraded mode (§6.7)


def degraded_steps(data: Path) -> list[Step]:
    return [
        Step("get_persistence_status", {}, prefix=f"status: degraded\ndir: {data}\n"),
        ok("remember_fact", {"fact": "in_memory(yes)"}),
        ok_json("query_logic", {"goal": "in_memory(X)"}, [{"X": "yes"}]),
        ok_json("query_logic", {"goal": "seeded(X)"}, [{"X": "still"}]),  # seed files are still loaded
        fails("save_snapshot", {"name": "nope"}, "ExecutionFailed"),
        Step("get_kb_overview", {}),
    ]


def test_degraded_mode_when_the_data_directory_cannot_be_created(project: Path) -> None:
    """Runs as any user: ``.zpm/data`` is a regular file, so no directory can be made there."""
    data = project / ".zpm" / "data"
    shutil.rmtree(data)
    data.write_text("not a directory\n", encoding="utf-8")
    (project / ".zpm" / "kb" / "seed.pl").write_text("seeded(still).\n", encoding="utf-8")
    texts = play(project, degraded_steps(data.resolve()))
    assert json.loads(texts[-1])["persistence"] == {"wal_pending": 0, "healthy": False}
    assert data.read_text(encoding="utf-8") == "not a directory\n"
    assert sorted(p.name for p in (project / ".zpm" / "kb").iterdir()) == ["seed.pl"]


def _unprivileged_prefix() -> list[str]:
    """How to run ``zpm serve`` as the unprivileged uid 65534, or skip saying why not."""
    if os.geteuid() != 0:
        return []
    runner = shutil.which("setpriv")
    if runner is None:
        pytest.skip("running as root and setpriv is not installed: cannot drop to an unprivileged user")
    prefix = [runner, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import quipu.logic"], capture_output=True, timeout=60, check=False
    )
    if probe.returncode != 0 or not os.access(ZPM, os.X_OK):
        pytest.skip(
            f"running as root, and uid {NOBODY} cannot run this virtualenv's interpreter "
            f"{Path(sys.executable).resolve()} (a parent directory is not traversable by it), so the "
            "unwritable-data-directory scenario (§6.7, §11.3) cannot run unprivileged here: "
            f"{probe.stderr.decode('utf-8', 'replace').strip()[-200:]}"
        )
    return prefix


@pytest.fixture
def shared_project() -> Iterator[Path]:
    """A project another user can read and traverse (pytest's tmp_path is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="zpm-degraded-"))
    try:
        root = base / "proj"
        root.mkdir()
        assert zpm_project.init(root)
        for path in (base, root, root / ".zpm", root / ".zpm" / "kb"):
            path.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_degraded_mode_for_an_unwritable_data_directory_as_an_unprivileged_user(shared_project: Path) -> None:
    prefix = _unprivileged_prefix()
    seed = shared_project / ".zpm" / "kb" / "seed.pl"
    seed.write_text("seeded(still).\n", encoding="utf-8")
    seed.chmod(0o644)
    data = shared_project / ".zpm" / "data"
    data.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        texts = play(
            shared_project, degraded_steps(data.resolve()), env={"HOME": str(shared_project)}, prefix=prefix
        )
    finally:
        data.chmod(0o755)
    assert json.loads(texts[-1])["persistence"]["healthy"] is False
    assert list(data.iterdir()) == []
