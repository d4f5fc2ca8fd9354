"""The JSON Lines journal of one memory (spec §6.2, §6.3, §6.5, §6.7).

Each line is one compact entry ``{"ts":<unix s>,"op":"assert|retract|retractall","clause":"..."}``
(R-W1). A batch is written with one ``write`` call and then ``fsync``ed (R-W3).

Batch framing **[designed here]**: a fatal signal or a full disk can cut a multi-page write, so a
batch could otherwise survive as a prefix. Every line of a batch but the last ends with a space
before its newline (JSON allows trailing whitespace, so each line still parses alone); a line
ending in ``}`` closes its batch. Journals of the original (one entry per write, no marks) read
as one-entry batches. Replay keeps only closed batches: a torn last line (no newline) and an
unclosed batch at the end are ignored on replay and cut off when the journal is opened for
appending, so the next batch never glues onto garbage. A failed or short write is undone by
truncating back to the previous size.

A line in the middle that is not valid JSON, not an entry, or has an unknown ``op`` is skipped
and reported with the file and line number; replay goes on (R-B5).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from quipu.logic.durable import fsync_dir
from quipu.logic.errors import LogicError

JOURNAL_NAME = "journal.wal"
OPS = ("assert", "retract", "retractall")
Op = Literal["assert", "retract", "retractall"]
Status = Literal["active", "degraded"]

_CONTINUES = b" \n"  # line ending of every line of a batch except its last


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal entry; ``clause`` is Prolog text without the trailing period."""

    ts: int
    op: Op
    clause: str

    @classmethod
    def now(cls, op: Op, clause: str) -> Entry:
        return cls(int(time.time()), op, clause)

    def to_json(self) -> str:
        """The compact JSON object, keys in the order ts, op, clause (R-W1)."""
        fields = {"ts": self.ts, "op": self.op, "clause": self.clause}
        text = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: keep the line valid UTF-8
            text = json.dumps(fields, ensure_ascii=True, separators=(",", ":"))
        return text


def encode_batch(entries: Sequence[Entry]) -> bytes:
    """The bytes of one batch: one line per entry, framed as described in the module docstring."""
    lines = [entry.to_json().encode("utf-8") for entry in entries]
    return b"".join(line + (_CONTINUES if i < len(lines) - 1 else b"\n") for i, line in enumerate(lines))


@dataclass(frozen=True, slots=True)
class Record:
    """An entry read back, with its 1-based line number (for warnings about its clause)."""

    entry: Entry
    line: int


@dataclass(frozen=True, slots=True)
class Problem:
    """A journal line that replay skipped (R-B5)."""

    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}; entry skipped"


@dataclass(frozen=True, slots=True)
class Replay:
    """What a journal holds: the entries of complete batches in order, the skipped lines, and the
    byte length of the complete part (anything after it is a torn batch)."""

    records: tuple[Record, ...]
    problems: tuple[Problem, ...]
    complete_bytes: int
    torn_bytes: int

    @property
    def entries(self) -> list[Entry]:
        return [record.entry for record in self.records]


def read_journal(path: Path) -> Replay:
    """Read a journal for replay (R-W2, R-B5); a missing file is an empty journal. Never writes."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Replay((), (), 0, 0)
    return parse_journal(data, path)


def parse_journal(data: bytes, path: Path) -> Replay:
    records: list[Record] = []
    problems: list[Problem] = []
    pending: list[Record] = []
    complete = 0
    start = 0
    line_no = 0
    while True:
        newline = data.find(b"\n", start)
        if newline < 0:
            break  # a last line without newline is torn
        line_no += 1
        raw = data[start:newline]
        continues = raw.endswith(b" ")
        start = newline + 1
        if raw.strip():
            entry, reason = _decode_line(raw)
            if entry is not None:
                pending.append(Record(entry, line_no))
            else:
                problems.append(Problem(path, line_no, reason))
        if not continues:
            records.extend(pending)
            pending = []
            complete = start
    return Replay(tuple(records), tuple(problems), complete, len(data) - complete)


def _decode_line(raw: bytes) -> tuple[Entry | None, str]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "not valid JSON"
    if not isinstance(value, dict):
        return None, "not a journal entry (expected a JSON object)"
    op, clause, ts = value.get("op"), value.get("clause"), value.get("ts")
    if op not in OPS:
        return None, f"unknown op {op!r}"
    if not isinstance(clause, str):
        return None, "entry has no clause text"
    if isinstance(ts, bool) or not isinstance(ts, (int, float)):
        return None, "entry has no numeric ts"
    return Entry(int(ts), op, clause), ""


def complete_length(path: Path) -> int:
    """Byte length of the complete batches of a journal, cheaply when its end is clean."""
    try:
        size = path.stat().st_size
        if size == 0:
            return 0
        with path.open("rb") as handle:
            handle.seek(max(0, size - 2))
            end = handle.read()
        if end.endswith(b"\n") and not end.endswith(_CONTINUES):
            return size
        return parse_journal(path.read_bytes(), path).complete_bytes
    except FileNotFoundError:
        return 0


def journal_size(path: Path) -> int:
    """Byte size of a journal file, 0 when it is missing (R-PS1)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def newline_count(path: Path) -> int:
    """Newline characters in a journal, 0 when missing: ``wal_pending`` (R-O6)."""
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def status_text(status: str, data_dir: Path, last_snapshot: str | None, journal_bytes: int) -> str:
    """The text of ``get_persistence_status`` (§4.25)."""
    return (
        f"status: {status}\ndir: {data_dir.absolute()}\n"
        f"last_snapshot: {last_snapshot if last_snapshot is not None else 'none'}\n"
        f"journal_size: {journal_bytes} bytes"
    )


class JournalError(LogicError):
    """The journal cannot do what was asked (not active, rotation failed)."""

    status = 500
    reason = "journal_error"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Journal:
    """The writer of one memory's journal. ``open()`` decides active or degraded (R-N7); a failed
    write turns it degraded, is reported through ``warn`` (stderr by default) and writes nothing
    more; the in-memory mutation stands (the caller keeps going)."""

    def __init__(self, path: Path, *, warn: Callable[[str], None] = _stderr) -> None:
        self.path = path
        self._warn = warn
        self._fd: int | None = None
        self._size = 0
        self.reason: str | None = None  # why persistence is degraded

    @property
    def status(self) -> Status:
        return "active" if self._fd is not None else "degraded"

    @property
    def active(self) -> bool:
        return self._fd is not None

    def open(self) -> bool:
        """Create the directory if needed and open the journal for appending, cutting off a torn
        tail (see the module docstring). Returns whether persistence is active."""
        if self._fd is not None:
            return True
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.exists()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                size = os.fstat(fd).st_size
                complete = complete_length(self.path) if size else 0
                if complete < size:
                    os.ftruncate(fd, complete)
                    os.fsync(fd)
                    self._warn(f"zpm: {self.path}: cut off {size - complete} bytes of an unfinished batch")
                    size = complete
                if not existed:
                    fsync_dir(self.path.parent)
            except OSError:
                os.close(fd)
                raise
        except OSError as exc:
            self._degrade(f"zpm: persistence degraded: cannot open {self.path}: {exc}")
            return False
        self._fd, self._size, self.reason = fd, size, None
        return True

    def append_batch(self, entries: Sequence[Entry]) -> bool:
        """Write the entries as one batch: one write call, then fsync (R-W3). Returns False, and
        writes nothing, when persistence is degraded or the write fails (which degrades it)."""
        if self._fd is None:
            return False
        if not entries:
            return True
        data = encode_batch(entries)
        before = self._size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            os.fsync(self._fd)
        except OSError as exc:
            self._undo(before)
            self._degrade(f"zpm: journal write to {self.path} failed: {exc}; persistence is now degraded")
            return False
        self._size = before + written
        return True

    def rotate(self, epoch: int) -> Path | None:
        """After a snapshot is durable: rename the journal to ``journal-<epoch>.wal`` (or
        ``journal-<epoch>-<n>.wal`` if that exists) and start an empty one (R-N5). If the empty one
        cannot be created the rename is undone and the journal is emptied in place instead, since
        replaying it on top of the new snapshot would apply its entries twice. Returns the archive
        path (None when emptied in place). Raises ``JournalError`` (and degrades) if neither works."""
        if self._fd is None:
            raise JournalError("persistence is not active")
        self.close()
        target = _archive_path(self.path, epoch)
        archive: Path | None = target
        try:
            os.rename(self.path, target)
        except FileNotFoundError:
            archive = None  # no journal yet: only the empty one is created
        except OSError:
            self._empty_in_place()
            return None
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            if archive is not None:
                try:
                    os.rename(archive, self.path)
                except OSError as exc:
                    self._degrade(f"zpm: journal rotation of {self.path} failed: {exc}")
                    raise JournalError(f"journal rotation failed: {exc}") from exc
            self._empty_in_place()
            return None
        fsync_dir(self.path.parent)
        self._fd, self._size = fd, 0
        return archive

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _empty_in_place(self) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                os.ftruncate(fd, 0)
                os.fsync(fd)
            except OSError:
                os.close(fd)
                raise
        except OSError as exc:
            self._degrade(f"zpm: journal rotation of {self.path} failed: {exc}")
            raise JournalError(f"journal rotation failed: {exc}") from exc
        self._fd, self._size = fd, 0

    def _undo(self, size: int) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):  # if this fails too, the next open() cuts the tail
            os.ftruncate(self._fd, size)

    def _degrade(self, message: str) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None
        self.reason = message
        self._warn(message)


def _archive_path(path: Path, epoch: int) -> Path:
    candidate = path.with_name(f"journal-{epoch}.wal")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"journal-{epoch}-{n}.wal")
        n += 1
    return candidate
