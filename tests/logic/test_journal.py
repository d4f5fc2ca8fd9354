"""The JSON Lines journal (spec §6.2, §6.3, §6.5, §6.7; quipu/logic/journal.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from quipu.logic.journal import (
    Entry,
    Journal,
    JournalError,
    encode_batch,
    journal_size,
    newline_count,
    read_journal,
    status_text,
)


def as_root() -> bool:
    return os.geteuid() == 0


class Warnings(list[str]):
    def __call__(self, message: str) -> None:
        self.append(message)


def opened(path: Path) -> tuple[Journal, Warnings]:
    warnings = Warnings()
    journal = Journal(path, warn=warnings)
    assert journal.open()
    return journal, warnings


def test_entry_line_is_compact_with_keys_ts_op_clause() -> None:
    line = Entry(1714000000, "assert", "parent(alice, bob)").to_json()
    assert line == '{"ts":1714000000,"op":"assert","clause":"parent(alice, bob)"}'
    assert list(json.loads(line)) == ["ts", "op", "clause"]


def test_newlines_in_a_clause_are_escaped_so_an_entry_is_one_line() -> None:
    data = encode_batch([Entry(1, "assert", 'note("a\nb")')])
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
    assert json.loads(data)["clause"] == 'note("a\nb")'


def test_non_ascii_is_written_as_utf8_and_lone_surrogates_stay_valid() -> None:
    assert "ñ" in Entry(1, "assert", "name('ñ')").to_json()
    line = Entry(1, "assert", "x('\ud800')").to_json()
    line.encode("utf-8")
    assert json.loads(line)["clause"] == "x('\ud800')"


def test_single_entry_batch_is_exactly_the_compact_line(tmp_path: Path) -> None:
    journal, _ = opened(tmp_path / "journal.wal")
    assert journal.append_batch([Entry(1714000000, "assert", "parent(alice, bob)")])
    expected = b'{"ts":1714000000,"op":"assert","clause":"parent(alice, bob)"}\n'
    assert (tmp_path / "journal.wal").read_bytes() == expected


def test_batch_is_one_write_call_then_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal, _ = opened(tmp_path / "journal.wal")
    calls: list[str] = []
    real_write, real_fsync = os.write, os.fsync

    def counting_write(fd: int, data: bytes) -> int:
        calls.append("write")
        return real_write(fd, data)

    def counting_fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(os, "write", counting_write)
    monkeypatch.setattr(os, "fsync", counting_fsync)
    batch = [Entry(1, "retractall", "p(_)"), Entry(1, "assert", "p(1)"), Entry(1, "assert", "p(2)")]
    assert journal.append_batch(batch)
    assert calls == ["write", "fsync"]
    assert read_journal(tmp_path / "journal.wal").entries == batch


def test_replay_yields_entries_in_order_across_batches(tmp_path: Path) -> None:
    journal, _ = opened(tmp_path / "journal.wal")
    first = [Entry(1, "assert", "a(1)"), Entry(1, "assert", "a(2)")]
    second = [Entry(2, "retract", "a(1)")]
    third = [Entry(3, "retractall", "a(_)"), Entry(3, "assert", "b")]
    for batch in (first, second, third):
        assert journal.append_batch(batch)
    replay = read_journal(tmp_path / "journal.wal")
    assert replay.entries == first + second + third
    assert [r.line for r in replay.records] == [1, 2, 3, 4, 5]
    assert replay.problems == () and replay.torn_bytes == 0


def test_lines_of_a_batch_parse_alone_as_json(tmp_path: Path) -> None:
    data = encode_batch([Entry(1, "assert", "a(1)"), Entry(1, "assert", "a(2)")])
    lines = data.split(b"\n")[:-1]
    assert [json.loads(line)["clause"] for line in lines] == ["a(1)", "a(2)"]
    assert lines[0].endswith(b" ") and lines[1].endswith(b"}")


def test_original_journal_replays_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    path.write_bytes(
        b'{"ts":1714000000,"op":"assert","clause":"parent(alice, bob)"}\n'
        b'{"ts":1714000001,"op":"retract","clause":"parent(alice, bob)"}\n'
        b'{"ts":1714000002,"op":"retractall","clause":"parent(_, _)"}\n'
    )
    assert read_journal(path).entries == [
        Entry(1714000000, "assert", "parent(alice, bob)"),
        Entry(1714000001, "retract", "parent(alice, bob)"),
        Entry(1714000002, "retractall", "parent(_, _)"),
    ]


def test_missing_journal_replays_as_empty(tmp_path: Path) -> None:
    replay = read_journal(tmp_path / "nope.wal")
    assert replay.entries == [] and replay.problems == ()


def test_crash_mid_append_replays_only_complete_batches(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    journal, _ = opened(path)
    done = [Entry(1, "assert", "a(1)"), Entry(1, "assert", "a(2)")]
    assert journal.append_batch(done)
    journal.close()
    # A killed process left the first line and a half of a three-entry batch.
    torn = encode_batch([Entry(2, "assert", "b(1)"), Entry(2, "assert", "b(2)"), Entry(2, "assert", "b(3)")])
    cut = torn.index(b"\n") + 10
    with path.open("ab") as handle:
        handle.write(torn[:cut])
    replay = read_journal(path)
    assert replay.entries == done
    assert replay.problems == ()
    assert replay.torn_bytes == cut


def test_crash_at_a_line_boundary_inside_a_batch_drops_the_batch(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    batch = encode_batch(
        [Entry(2, "retractall", "b(_)"), Entry(2, "assert", "b(1)"), Entry(2, "assert", "b(2)")]
    )
    cut = batch.index(b"\n", batch.index(b"\n") + 1) + 1  # two complete lines of three
    path.write_bytes(encode_batch([Entry(1, "assert", "a")]) + batch[:cut])
    assert read_journal(path).entries == [Entry(1, "assert", "a")]


def test_open_cuts_off_a_torn_tail_so_the_next_batch_is_clean(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    good = encode_batch([Entry(1, "assert", "a(1)")])
    path.write_bytes(good + b'{"ts":2,"op":"assert","cla')
    journal, warnings = opened(path)
    assert path.read_bytes() == good
    assert warnings and "unfinished batch" in warnings[0]
    assert journal.append_batch([Entry(3, "assert", "c(1)")])
    assert read_journal(path).entries == [Entry(1, "assert", "a(1)"), Entry(3, "assert", "c(1)")]


def test_open_cuts_off_an_unclosed_batch(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    good = encode_batch([Entry(1, "assert", "a(1)")])
    unclosed = encode_batch([Entry(2, "assert", "b(1)"), Entry(2, "assert", "b(2)")])
    path.write_bytes(good + unclosed[: unclosed.index(b"\n") + 1])
    journal, _ = opened(path)
    assert path.read_bytes() == good
    assert journal.append_batch([Entry(3, "assert", "c")])
    assert read_journal(path).entries == [Entry(1, "assert", "a(1)"), Entry(3, "assert", "c")]


def test_clean_journal_is_not_touched_by_open(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    data = encode_batch([Entry(1, "assert", "a"), Entry(1, "assert", "b")])
    path.write_bytes(data)
    _, warnings = opened(path)
    assert path.read_bytes() == data and warnings == []


def test_corrupt_line_in_the_middle_is_skipped_and_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    path.write_bytes(
        b'{"ts":1,"op":"assert","clause":"a(1)"}\n'
        b"this is not json\n"
        b'{"ts":1,"op":"frobnicate","clause":"a(2)"}\n'
        b'{"ts":1,"op":"assert"}\n'
        b"[1, 2]\n"
        b'{"ts":"x","op":"assert","clause":"a(3)"}\n'
        b'{"ts":1,"op":"assert","clause":"a(4)"}\n'
    )
    replay = read_journal(path)
    assert replay.entries == [Entry(1, "assert", "a(1)"), Entry(1, "assert", "a(4)")]
    assert [p.line for p in replay.problems] == [2, 3, 4, 5, 6]
    assert str(replay.problems[0]) == f"{path}:2: not valid JSON; entry skipped"
    assert "unknown op 'frobnicate'" in str(replay.problems[1])
    assert [r.line for r in replay.records] == [1, 7]


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    path.write_bytes(b'\n{"ts":1,"op":"assert","clause":"a"}\n\n')
    replay = read_journal(path)
    assert replay.entries == [Entry(1, "assert", "a")] and replay.problems == ()


def test_invalid_utf8_line_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    path.write_bytes(b'{"ts":1,"op":"assert","clause":"\xff"}\n{"ts":1,"op":"assert","clause":"b"}\n')
    replay = read_journal(path)
    assert replay.entries == [Entry(1, "assert", "b")] and replay.problems[0].line == 1


def test_size_and_pending_count(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    assert journal_size(path) == 0 and newline_count(path) == 0
    journal, _ = opened(path)
    journal.append_batch([Entry(1, "assert", "a"), Entry(1, "assert", "b")])
    journal.append_batch([Entry(1, "assert", "c")])
    assert journal_size(path) == len(path.read_bytes()) > 0
    assert newline_count(path) == 3


def test_open_creates_the_data_directory(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "data" / "journal.wal"
    journal, _ = opened(path)
    assert journal.status == "active" and path.is_file() and path.read_bytes() == b""


def test_empty_batch_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    journal, _ = opened(path)
    assert journal.append_batch([])
    assert path.read_bytes() == b""


def test_rotation_archives_the_journal_and_starts_an_empty_one(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    journal, _ = opened(path)
    journal.append_batch([Entry(1, "assert", "a")])
    before = path.read_bytes()
    archive = journal.rotate(1714000000)
    assert archive == tmp_path / "journal-1714000000.wal"
    assert archive.read_bytes() == before
    assert path.read_bytes() == b"" and journal_size(path) == 0
    assert journal.append_batch([Entry(2, "assert", "b")])
    assert read_journal(path).entries == [Entry(2, "assert", "b")]


def test_rotation_twice_in_one_second_keeps_both_archives(tmp_path: Path) -> None:
    path = tmp_path / "journal.wal"
    journal, _ = opened(path)
    journal.append_batch([Entry(1, "assert", "a")])
    first = journal.rotate(100)
    journal.append_batch([Entry(1, "assert", "b")])
    second = journal.rotate(100)
    assert first == tmp_path / "journal-100.wal" and second == tmp_path / "journal-100-1.wal"
    assert read_journal(first).entries == [Entry(1, "assert", "a")]
    assert read_journal(second).entries == [Entry(1, "assert", "b")]


def test_rotation_undoes_the_rename_when_the_new_journal_cannot_be_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.wal"
    journal, _ = opened(path)
    journal.append_batch([Entry(1, "assert", "a")])
    real_open = os.open
    failures = {"left": 1}

    def failing_open(target: object, flags: int, mode: int = 0o777) -> int:
        if Path(str(target)) == path and failures["left"]:
            failures["left"] -= 1
            raise PermissionError("simulated: cannot create journal.wal")
        return real_open(target, flags, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", failing_open)
    assert journal.rotate(7) is None
    # the archive was renamed back, then emptied in place: its entries are in the snapshot
    assert not (tmp_path / "journal-7.wal").exists()
    assert path.exists() and path.read_bytes() == b""
    assert journal.active
    assert journal.append_batch([Entry(2, "assert", "b")])


def test_rotation_that_cannot_empty_the_journal_raises_and_degrades(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.wal"
    journal, warnings = opened(path)
    journal.append_batch([Entry(1, "assert", "a")])

    def refuse(target: object, flags: int, mode: int = 0o777) -> int:
        raise PermissionError("simulated")

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(JournalError):
        journal.rotate(7)
    assert journal.status == "degraded" and warnings
    assert read_journal(path).entries == [Entry(1, "assert", "a")]


def test_rotation_needs_active_persistence(tmp_path: Path) -> None:
    with pytest.raises(JournalError):
        Journal(tmp_path / "journal.wal", warn=Warnings()).rotate(1)


def test_unopenable_journal_is_degraded(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data directory should be")
    warnings = Warnings()
    journal = Journal(blocker / "journal.wal", warn=warnings)
    assert not journal.open()
    assert journal.status == "degraded"
    assert warnings and "persistence degraded" in warnings[0]
    assert not journal.append_batch([Entry(1, "assert", "a")])


@pytest.mark.skipif(as_root(), reason="root can write to a directory without write permission")
def test_unwritable_data_directory_is_degraded(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o500)
    try:
        journal = Journal(data / "journal.wal", warn=Warnings())
        assert not journal.open() and journal.status == "degraded"
    finally:
        data.chmod(0o700)


def test_failing_write_degrades_reports_and_leaves_no_partial_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.wal"
    journal, warnings = opened(path)
    journal.append_batch([Entry(1, "assert", "a")])
    before = path.read_bytes()
    real_write = os.write

    def short_write(fd: int, data: bytes) -> int:
        return real_write(fd, data[: len(data) // 2])  # a full disk: only half gets written

    monkeypatch.setattr(os, "write", short_write)
    assert not journal.append_batch([Entry(2, "assert", "b(1)"), Entry(2, "assert", "b(2)")])
    monkeypatch.undo()
    assert journal.status == "degraded"
    assert len(warnings) == 1 and "journal write" in warnings[0] and "degraded" in warnings[0]
    assert path.read_bytes() == before
    # degraded: later batches write nothing
    assert not journal.append_batch([Entry(3, "assert", "c")])
    assert path.read_bytes() == before


def test_failing_write_reports_on_stderr_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(tmp_path / "journal.wal")
    assert journal.open()

    def broken(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", broken)
    assert not journal.append_batch([Entry(1, "assert", "a")])
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "No space left on device" in captured.err and "degraded" in captured.err


def test_status_text_has_four_lines(tmp_path: Path) -> None:
    text = status_text("active", tmp_path / "data", "before_refactor", 1024)
    assert (
        text
        == f"status: active\ndir: {tmp_path / 'data'}\nlast_snapshot: before_refactor\njournal_size: 1024 bytes"
    )
    assert status_text("degraded", tmp_path, None, 0).split("\n")[2] == "last_snapshot: none"
