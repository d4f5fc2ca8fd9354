"""Snapshot files (spec §4.22–§4.24, §6.4, §6.6; quipu/logic/snapshots.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quipu.logic.journal import Entry
from quipu.logic.snapshots import (
    SnapshotError,
    SnapshotInfo,
    SnapshotNameError,
    dynamic_indicators,
    indicator,
    latest_by_name,
    list_snapshots,
    list_text,
    most_general_head,
    most_recent,
    quote_atom,
    read_snapshot,
    render_snapshot,
    restore_batch,
    restore_name,
    restored_text,
    saved_text,
    validate_name,
    write_snapshot,
)

PREDICATES = [
    ["parent(tom, bob)", "parent(bob, sue)"],
    ["ancestor(X, Y) :- parent(X, Y)", "ancestor(X, Y) :- parent(X, Z), ancestor(Z, Y)"],
    ["tms_justification(a, infra_healthy)"],
]
DYNAMICS = [("parent", 2), ("ancestor", 2), ("tms_justification", 2), ("zpm_source", 2)]


def test_snapshot_content_is_header_declarations_then_grouped_clauses() -> None:
    assert render_snapshot(1714000000, DYNAMICS, PREDICATES) == (
        "%% zpm snapshot 1714000000\n"
        ":- dynamic(parent/2).\n"
        ":- dynamic(ancestor/2).\n"
        ":- dynamic(tms_justification/2).\n"
        ":- dynamic(zpm_source/2).\n"
        "parent(tom, bob).\n"
        "parent(bob, sue).\n"
        "ancestor(X, Y) :- parent(X, Y).\n"
        "ancestor(X, Y) :- parent(X, Z), ancestor(Z, Y).\n"
        "tms_justification(a, infra_healthy).\n"
    )


def test_clause_ending_in_a_symbol_char_gets_a_separated_period(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, "sym", 1, [("op_is", 1)], [["op_is(+)", "x :- y = +"]])
    assert path.read_text().endswith("op_is(+).\nx :- y = + .\n")
    assert [c.text for c in read_snapshot(path).clauses] == ["op_is(+)", "x :- y = +"]


def test_declarations_quote_names_that_need_it() -> None:
    assert indicator("parent", 2) == "parent/2"
    assert indicator("foo bar", 1) == "'foo bar'/1"
    assert indicator("-", 1) == "(-)/1"
    assert indicator("=..", 2) == "(=..)/2"
    assert indicator("Up", 0) == "'Up'/0"
    assert quote_atom("it's\n") == "'it\\'s\\n'"
    assert quote_atom("[]") == "'[]'"


def test_write_then_read_round_trips_tricky_clauses(tmp_path: Path) -> None:
    tricky = [
        "t('Tag-Triggered Release Workflows')",
        "t('it\\'s. done')",
        't("1.0")',
        't("say \\"hi\\". ok")',
        "t(f(g(h(1)), [a, 'b. c', [d]]))",
        "t(-1)",
        "t(1.5)",
        "t(0'.)",
        "t(a-b)",
        "t(X) :- X > 20, X =.. [_|_]",
        "t('%not a comment')",
        "t('/* nor this */')",
    ]
    path = write_snapshot(tmp_path, "snap", 42, [("t", 1)], [tricky])
    assert path == tmp_path / "snap.pl"
    content = read_snapshot(path)
    assert content.epoch == 42
    assert [c.text for c in content.clauses] == tricky
    assert content.declared == (("t", 1),)
    assert [d.text for d in content.directives] == [":- dynamic(t/1)"]
    assert [c.line for c in content.clauses] == list(range(3, 3 + len(tricky)))


def test_write_is_atomic_and_removes_the_tmp_file_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_snapshot(tmp_path, "keep", 1, [("a", 0)], [["a"]])
    old = (tmp_path / "keep.pl").read_bytes()

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("simulated rename failure")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="simulated"):
        write_snapshot(tmp_path, "keep", 2, [("b", 0)], [["b"]])
    assert (tmp_path / "keep.pl").read_bytes() == old
    assert not (tmp_path / "keep.pl.tmp").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.pl"]


def test_saving_an_existing_name_overwrites_it(tmp_path: Path) -> None:
    write_snapshot(tmp_path, "s", 1, [("a", 0)], [["a"]])
    write_snapshot(tmp_path, "s", 2, [("b", 0)], [["b"]])
    content = read_snapshot(tmp_path / "s.pl")
    assert content.epoch == 2 and [c.text for c in content.clauses] == ["b"]


@pytest.mark.parametrize("name", ["before_refactor", "test-snap", "daily backup", "x.pl", "a.b"])
def test_valid_snapshot_names(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", [None, "", 3, "a/b", "a\\b", "a\0b", ".hidden", "..", "../up"])
def test_invalid_snapshot_names_are_refused(name: object) -> None:
    with pytest.raises(SnapshotNameError):
        validate_name(name)


def test_knowledge_is_refused_as_a_snapshot_name_only_in_named_memories() -> None:
    assert validate_name("knowledge") == "knowledge"
    with pytest.raises(SnapshotNameError):
        validate_name("knowledge", named_memory=True)
    with pytest.raises(SnapshotNameError):
        restore_name("knowledge.pl", named_memory=True)


def test_trailing_pl_is_kept_on_save_and_stripped_on_restore(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, validate_name("x.pl"), 1, [], [])
    assert path.name == "x.pl.pl"
    assert restore_name("before.pl") == "before" and restore_name("before") == "before"
    with pytest.raises(SnapshotNameError):
        restore_name(".pl")


def test_only_headed_pl_files_directly_in_the_directory_are_snapshots(tmp_path: Path) -> None:
    write_snapshot(tmp_path, "b_snap", 5, [], [])
    write_snapshot(tmp_path, "a_snap", 6, [], [])
    (tmp_path / "seed.pl").write_text("fact(1).\n")
    (tmp_path / "knowledge.pl").write_text("%% zpm snapshot 9\n")
    (tmp_path / "notes.txt").write_text("%% zpm snapshot 9\n")
    (tmp_path / "dir.pl").mkdir()
    (tmp_path / "sub").mkdir()
    write_snapshot(tmp_path / "sub", "deep", 7, [], [])
    (tmp_path / "empty.pl").write_text("")
    snaps = list_snapshots(tmp_path)
    assert [s.name for s in snaps] == ["a_snap", "b_snap"]
    assert [s.epoch for s in snaps] == [6, 5]
    assert list_text(snaps) == "Snapshots: [a_snap, b_snap]"


def test_list_text_empty_and_missing_directory(tmp_path: Path) -> None:
    assert list_snapshots(tmp_path / "missing") == []
    assert list_text([]) == "Snapshots: []"


def test_wire_texts() -> None:
    assert saved_text("before_refactor") == "Snapshot 'before_refactor' saved successfully."
    assert restored_text("before_refactor") == "Snapshot 'before_refactor' restored successfully."


def info(name: str, epoch: int, mtime_ns: int) -> SnapshotInfo:
    return SnapshotInfo(name, Path(f"/x/{name}.pl"), epoch, mtime_ns)


def test_most_recent_is_by_header_epoch_not_name() -> None:
    # R-N4: saving zzz and later aaa must reload aaa
    assert most_recent([info("zzz", 100, 5), info("aaa", 200, 1)]) == info("aaa", 200, 1)


def test_most_recent_ties_broken_by_mtime_then_name() -> None:
    assert most_recent([info("b", 100, 9), info("a", 100, 10)]) == info("a", 100, 10)
    assert most_recent([info("a", 100, 10), info("b", 100, 10)]) == info("b", 100, 10)
    assert most_recent([]) is None


def test_latest_for_the_overview_is_lexicographic() -> None:
    assert latest_by_name([info("zzz", 100, 5), info("aaa", 200, 1)]) == info("zzz", 100, 5)
    assert latest_by_name([]) is None


def test_latest_at_is_utc_iso_seconds(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, "s", 1, [], [])
    os.utime(path, ns=(1779014531_000_000_000, 1779014531_500_000_000))
    (snap,) = list_snapshots(tmp_path)
    assert snap.mtime_utc == "2026-05-17T10:42:11Z"


def test_header_without_number_counts_as_oldest(tmp_path: Path) -> None:
    (tmp_path / "odd.pl").write_text("%% zpm snapshot\nodd.\n")
    write_snapshot(tmp_path, "new", 3, [], [])
    snaps = list_snapshots(tmp_path)
    assert [(s.name, s.epoch) for s in snaps] == [("new", 3), ("odd", 0)]
    assert most_recent(snaps) is not None and most_recent(snaps).name == "new"  # type: ignore[union-attr]


def test_reading_a_missing_or_non_snapshot_file_fails(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError):
        read_snapshot(tmp_path / "missing.pl")
    (tmp_path / "seed.pl").write_text("a(1).\n")
    with pytest.raises(SnapshotError, match="not a snapshot"):
        read_snapshot(tmp_path / "seed.pl")
    (tmp_path / "bin.pl").write_bytes(b"%% zpm snapshot 1\n\xff\xfe\n")
    with pytest.raises(SnapshotError):
        read_snapshot(tmp_path / "bin.pl")


def test_reading_an_unterminated_snapshot_fails_with_the_line(tmp_path: Path) -> None:
    (tmp_path / "cut.pl").write_text("%% zpm snapshot 1\n:- dynamic(a/1).\na(1).\na(2")
    with pytest.raises(SnapshotError, match=r"cut\.pl:4"):
        read_snapshot(tmp_path / "cut.pl")


@pytest.mark.parametrize(
    ("directive", "expected"),
    [
        (":- dynamic(parent/2)", [("parent", 2)]),
        (":- dynamic parent/2, child/1", [("parent", 2), ("child", 1)]),
        (":- dynamic([a/1, b/0])", [("a", 1), ("b", 0)]),
        (":- dynamic('foo bar'/1)", [("foo bar", 1)]),
        (":- dynamic('it\\'s'/1)", [("it's", 1)]),
        (":- dynamic((-)/1)", [("-", 1)]),
        (":- discontiguous(a/1)", []),
        (":- initialization(main)", []),
    ],
)
def test_dynamic_indicators(directive: str, expected: list[tuple[str, int]]) -> None:
    assert dynamic_indicators(directive) == expected


def test_most_general_heads() -> None:
    assert most_general_head("parent", 2) == "parent(_, _)"
    assert most_general_head("flag", 0) == "flag"
    assert most_general_head("foo bar", 1) == "'foo bar'(_)"
    assert most_general_head("+", 2) == "'+'(_, _)"


def test_restore_batch_retracts_everything_present_then_asserts_the_snapshot(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, "s", 1, DYNAMICS, PREDICATES)
    content = read_snapshot(path)
    present = [("parent", 2), ("seeded", 1), ("zpm_source", 2)]
    batch = restore_batch(present, [c.text for c in content.clauses], ts=99)
    assert batch == [
        Entry(99, "retractall", "parent(_, _)"),
        Entry(99, "retractall", "seeded(_)"),
        Entry(99, "retractall", "zpm_source(_, _)"),
        Entry(99, "assert", "parent(tom, bob)"),
        Entry(99, "assert", "parent(bob, sue)"),
        Entry(99, "assert", "ancestor(X, Y) :- parent(X, Y)"),
        Entry(99, "assert", "ancestor(X, Y) :- parent(X, Z), ancestor(Z, Y)"),
        Entry(99, "assert", "tms_justification(a, infra_healthy)"),
    ]


def test_restore_batch_of_an_empty_kb_and_empty_snapshot() -> None:
    assert restore_batch([], []) == []
    (entry,) = restore_batch([("a", 1)], [])
    assert entry.op == "retractall" and entry.clause == "a(_)" and entry.ts > 1_700_000_000
