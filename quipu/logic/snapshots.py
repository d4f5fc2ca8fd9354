"""Snapshot files of a memory (spec §4.22–§4.24, §6.4, §6.6), on clause text.

A snapshot ``<name>.pl`` is Prolog source: the header ``%% zpm snapshot <epoch>``, one
``:- dynamic(<name>/<arity>).`` line per predicate, then every clause grouped by predicate, one
per line, terminated by ``.`` (R-N2). Only files directly in the snapshot directory whose first
line starts with ``%% zpm snapshot`` are snapshots (R-N3).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from quipu.logic.clause_split import SYMBOL_CHARS, SourceClause, split_clauses
from quipu.logic.durable import replace_file
from quipu.logic.errors import LogicError
from quipu.logic.journal import Entry

HEADER_PREFIX = "%% zpm snapshot"
SUFFIX = ".pl"
KNOWLEDGE_FILE = "knowledge.pl"
INVALID_ARGUMENTS = "InvalidArguments"

_PLAIN_ATOM = re.compile(r"[a-z][A-Za-z0-9_]*\Z")
_HEADER = re.compile(r"%% zpm snapshot[ \t]+(\d+)")
_INDICATOR = re.compile(
    r"\s*(?:(?P<plain>[a-z][A-Za-z0-9_]*)|'(?P<quoted>(?:[^'\\]|''|\\.)*)'|\(\s*(?P<sym>[^()\s]+)\s*\))"
    r"\s*/\s*(?P<arity>\d+)\s*"
)


class SnapshotNameError(LogicError):
    """A snapshot name the tools refuse with ``InvalidArguments`` (§4.22)."""

    reason = "invalid_snapshot_name"


class SnapshotError(LogicError):
    """A snapshot file that cannot be used (missing, unreadable, not a snapshot, unterminated)."""

    reason = "snapshot_unusable"


# ---------------------------------------------------------------------------- names


def validate_name(name: object, *, named_memory: bool = False) -> str:
    """The snapshot name as the tools accept it for saving: a non-empty string without ``/``,
    ``\\`` or NUL that does not start with ``.`` (§4.22). In a named memory the name
    ``knowledge`` is refused too **[designed here]**: it would overwrite ``knowledge.pl``."""
    if not isinstance(name, str) or not name:
        raise SnapshotNameError("the snapshot name is missing or empty")
    if "/" in name or "\\" in name or "\0" in name:
        raise SnapshotNameError("a snapshot name must not contain '/', '\\' or a NUL byte")
    if name.startswith("."):
        raise SnapshotNameError("a snapshot name must not start with '.'")
    if named_memory and name + SUFFIX == KNOWLEDGE_FILE:
        raise SnapshotNameError("'knowledge' is the memory's knowledge.pl, not a snapshot name")
    return name


def restore_name(name: object, *, named_memory: bool = False) -> str:
    """The name of the file to restore: ``<name>`` and ``<name>.pl`` are the same (R-RS1)."""
    text = validate_name(name, named_memory=False)
    if text.endswith(SUFFIX) and len(text) > len(SUFFIX):
        text = text[: -len(SUFFIX)]
    return validate_name(text, named_memory=named_memory)


def snapshot_path(directory: Path, name: str) -> Path:
    """``<directory>/<name>.pl``; the name is not stripped of ``.pl`` (R-SS1)."""
    return directory / f"{name}{SUFFIX}"


# ---------------------------------------------------------------------------- rendering


def quote_atom(name: str) -> str:
    """An atom as Prolog source: bare when plain, else single-quoted with escapes."""
    if _PLAIN_ATOM.match(name):
        return name
    return "'" + "".join(_escape(ch) for ch in name) + "'"


def _escape(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch < " " or ch == "\x7f":
        return f"\\x{ord(ch):x}\\"
    return ch


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t"}


# The engine's prefix operators with alphanumeric names (SWI-Prolog's declarations). A user may
# name a predicate so (volatile/1, table/1); unquoted, ``table/1`` would not read back.
DECLARATION_OPERATORS: Final = frozenset(
    {"dynamic", "discontiguous", "initialization", "meta_predicate", "module_transparent", "multifile",
     "public", "table", "thread_initialization", "thread_local", "volatile"}
)  # fmt: skip


def indicator(name: str, arity: int) -> str:
    """``name/arity`` as source; a symbol-char name is parenthesised like ``writeq`` does, and a
    declaration operator's name is quoted (a quoted atom is never an operator)."""
    if name and all(ch in SYMBOL_CHARS for ch in name):
        return f"({name})/{arity}"
    if name in DECLARATION_OPERATORS:
        return f"'{name}'/{arity}"
    return f"{quote_atom(name)}/{arity}"


def most_general_head(name: str, arity: int) -> str:
    """``name(_, _, ...)`` (``name`` for arity 0), the head that unifies with every clause."""
    atom = quote_atom(name)
    if name and all(ch in SYMBOL_CHARS for ch in name):
        atom = f"'{name}'"  # quoted so that it reads as a plain functor, not an operator
    if arity == 0:
        return atom
    return f"{atom}({', '.join(['_'] * arity)})"


def header_line(epoch: int) -> str:
    return f"{HEADER_PREFIX} {epoch}"


def _terminated(clause: str) -> str:
    # A period right after a symbol char would fuse into one token ("+." is an atom).
    return f"{clause} .\n" if clause and clause[-1] in SYMBOL_CHARS else f"{clause}.\n"


def render_snapshot(
    epoch: int, dynamics: Iterable[tuple[str, int]], predicates: Iterable[Sequence[str]]
) -> str:
    """The text of a snapshot (R-N2): header, one dynamic declaration per predicate, then the
    clauses (already rendered per §3.4, no trailing period) grouped by predicate."""
    lines = [header_line(epoch) + "\n"]
    lines.extend(f":- dynamic({indicator(name, arity)}).\n" for name, arity in dynamics)
    for clauses in predicates:
        lines.extend(_terminated(clause) for clause in clauses)
    return "".join(lines)


def write_snapshot(
    directory: Path,
    name: str,
    epoch: int,
    dynamics: Iterable[tuple[str, int]],
    predicates: Iterable[Sequence[str]],
) -> Path:
    """Write ``<name>.pl`` through ``<name>.pl.tmp`` (fsynced) and a rename, so a reader never
    sees half a file; on failure the ``.tmp`` file is removed and the old snapshot stays (R-N1).
    Call ``Journal.rotate`` only after this returned (R-N5)."""
    final = snapshot_path(directory, name)
    replace_file(final, render_snapshot(epoch, dynamics, predicates).encode("utf-8"))
    return final


# ---------------------------------------------------------------------------- finding


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    name: str  # without .pl
    path: Path
    epoch: int  # from the header; 0 when the header has no number
    mtime_ns: int

    @property
    def mtime_utc(self) -> str:
        """The modification time as ``YYYY-MM-DDTHH:MM:SSZ`` (R-O5)."""
        moment = datetime.fromtimestamp(self.mtime_ns / 1e9, tz=UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def read_header(path: Path) -> int | None:
    """The header epoch of a snapshot file (0 if the header has no number), None if the file is
    not a snapshot (R-N3)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return None
    text = first.decode("utf-8", errors="replace")
    if not text.startswith(HEADER_PREFIX):
        return None
    match = _HEADER.match(text)
    return int(match.group(1)) if match else 0


def list_snapshots(directory: Path) -> list[SnapshotInfo]:
    """The snapshots directly in ``directory``, sorted by name (R-LS1); seed files and
    ``knowledge.pl`` are not snapshots (R-N3)."""
    found: list[SnapshotInfo] = []
    try:
        children = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for child in children:
        if not child.name.endswith(SUFFIX) or child.name == KNOWLEDGE_FILE or not child.is_file():
            continue
        path = Path(child.path)
        epoch = read_header(path)
        if epoch is None:
            continue
        try:
            mtime_ns = child.stat().st_mtime_ns
        except OSError:
            continue
        found.append(SnapshotInfo(child.name[: -len(SUFFIX)], path, epoch, mtime_ns))
    found.sort(key=lambda info: info.name)
    return found


def is_snapshot(path: Path) -> bool:
    return path.name != KNOWLEDGE_FILE and read_header(path) is not None


def most_recent(snapshots: Sequence[SnapshotInfo]) -> SnapshotInfo | None:
    """The most recently saved snapshot: greatest header epoch, then mtime, then name (R-N4)."""
    return max(snapshots, key=lambda s: (s.epoch, s.mtime_ns, s.name), default=None)


def latest_by_name(snapshots: Sequence[SnapshotInfo]) -> SnapshotInfo | None:
    """``get_kb_overview``'s ``latest``: the lexicographically greatest name (R-O5)."""
    return max(snapshots, key=lambda s: s.name, default=None)


def list_text(snapshots: Sequence[SnapshotInfo]) -> str:
    """``Snapshots: [a, b]`` / ``Snapshots: []`` (§4.24)."""
    return f"Snapshots: [{', '.join(s.name for s in snapshots)}]"


def saved_text(name: str) -> str:
    return f"Snapshot '{name}' saved successfully."


def restored_text(name: str) -> str:
    return f"Snapshot '{name}' restored successfully."


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class SnapshotContent:
    epoch: int
    declared: tuple[tuple[str, int], ...]  # predicates of the dynamic declarations
    directives: tuple[SourceClause, ...]  # the directive texts (":- ..."), in file order
    clauses: tuple[SourceClause, ...]  # everything else, in file order


def read_snapshot(path: Path) -> SnapshotContent:
    """Read a snapshot for loading or restoring. Raises ``SnapshotError`` when the file is
    missing, unreadable, not UTF-8, not a snapshot, or ends in an unterminated clause."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"cannot read snapshot {path}: {exc}") from exc
    first = text.split("\n", 1)[0]
    if not first.startswith(HEADER_PREFIX):
        raise SnapshotError(f"{path} is not a snapshot (no '{HEADER_PREFIX}' header)")
    header = _HEADER.match(first)
    split = split_clauses(text)
    if split.tail is not None:
        raise SnapshotError(f"{path}:{split.tail.line}: unterminated clause")
    directives = tuple(c for c in split.clauses if c.text.startswith(":-"))
    clauses = tuple(c for c in split.clauses if not c.text.startswith(":-"))
    declared: list[tuple[str, int]] = []
    for directive in directives:
        declared.extend(dynamic_indicators(directive.text))
    return SnapshotContent(int(header.group(1)) if header else 0, tuple(declared), directives, clauses)


def dynamic_indicators(directive: str) -> list[tuple[str, int]]:
    """The ``name/arity`` pairs of a ``:- dynamic`` directive in the forms ``dynamic(a/1)``,
    ``dynamic a/1, b/2`` and ``dynamic([a/1, b/2])``; [] for other directives."""
    body = directive[2:].strip() if directive.startswith(":-") else directive.strip()
    if not body.startswith("dynamic"):
        return []
    rest = body[len("dynamic") :].strip()
    while (rest.startswith("(") and rest.endswith(")")) or (rest.startswith("[") and rest.endswith("]")):
        rest = rest[1:-1].strip()
    out: list[tuple[str, int]] = []
    pos = 0
    while pos < len(rest):
        match = _INDICATOR.match(rest, pos)
        if match is None:
            return out
        if match.group("plain"):
            name = match.group("plain")
        elif match.group("sym"):
            name = match.group("sym").strip("'")
        else:
            name = _unquote(match.group("quoted"))
        out.append((name, int(match.group("arity"))))
        pos = match.end()
        if pos < len(rest):
            if rest[pos] != ",":
                return out
            pos += 1
    return out


def _unquote(body: str) -> str:
    simple = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "`": "`", "a": "\a", "b": "\b"}
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "'" and body[i : i + 2] == "''":
            out.append("'")
            i += 2
            continue
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "x":
                end = body.find("\\", i + 2)
                if end > i + 2:
                    out.append(chr(int(body[i + 2 : end], 16)))
                    i = end + 1
                    continue
            out.append(simple.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------------- restore


def restore_batch(
    present: Iterable[tuple[str, int]], restored: Sequence[str], *, ts: int | None = None
) -> list[Entry]:
    """The one journal batch that makes ``restore_snapshot`` durable (R-N6): a ``retractall`` of
    the most general head of every predicate present before the restore, then an ``assert`` of
    every restored clause (texts without directives, in snapshot order)."""
    moment = Entry.now("assert", "").ts if ts is None else ts
    batch = [Entry(moment, "retractall", most_general_head(name, arity)) for name, arity in present]
    batch.extend(Entry(moment, "assert", clause) for clause in restored)
    return batch
