"""The logic memory's runtime: one engine wired to the files of one project (spec §6, §7, §8).

``LogicRuntime.open(start)`` finds the project (R-B1), creates missing ``kb/`` and ``data/``
(R-W0), starts an ``Engine``, reads ``mounts.json`` (creating it on first boot, R-M5), mounts
``default`` and every listed memory as an engine module with its mode, and loads each memory
(§8.2): seed files, then the most recently saved snapshot, then the journal. The same loading
runs again from an engine restart hook, so an engine that died comes back with its state.

It also provides the two seams of the tool services (quipu/logic/tooling.py):

* ``memories`` (``MountTable``): the ``Memories`` protocol over the mount table;
* ``journal_sink`` (``RuntimeJournal``): the ``JournalSink`` protocol over one
  ``journal.Journal`` per read-write memory. Read-only memories have no journal writer at
  all, so nothing can write to their files (R-M8, R-W6).

Persistence of a read-write memory is ``active`` when its journal opens for appending,
else ``degraded`` (R-N7): then only seed files are loaded and nothing is written. A read-only
memory never opens a file for writing; its snapshot and journal are loaded when its directory
exists **[designed here]**.

Bulk loading is batched (§10.1): a snapshot is read by the engine from the file in one call
(prolog/runtime.pl), the journal is replayed in chunks of a few thousand entries per call.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quipu.logic.clause_split import split_clauses
from quipu.logic.engine import Engine, functor_parts
from quipu.logic.errors import LogicError
from quipu.logic.graph_bridge import GraphBridge, GraphSource, NoGraph
from quipu.logic.journal import OPS, Entry, Journal, Op, Record, read_journal
from quipu.logic.knowledge import HELPER as KNOWLEDGE_HELPER
from quipu.logic.project import (
    DEFAULT_MEMORY,
    MemoryPaths,
    Mount,
    Project,
    Scope,
    discover,
    ensure_layout,
    first_boot_mounts,
    mount_dir,
    read_manifest,
    write_manifest,
)
from quipu.logic.snapshots import KNOWLEDGE_FILE, SUFFIX, is_snapshot, list_snapshots, most_recent
from quipu.logic.terms import prolog_string
from quipu.logic.tooling import Mode, ToolHandler, ToolResult, ToolService, run_tool

HELPER = Path(__file__).parent / "prolog" / "runtime.pl"
GRAPH_HELPER = Path(__file__).parent / "prolog" / "graph.pl"
RECORD_PREDICATES = (("tms_justification", 2), ("zpm_source", 2))

_REPLAY_ENTRIES = 5000  # journal entries per engine call
_REPLAY_BYTES = 1 << 20  # ... and at most about this much clause text per call


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class LoadStats:
    """What loading one memory did (§8.2), for logs, tests and the benchmark."""

    seed_files: int = 0
    seed_clauses: int = 0
    snapshot: str | None = None  # the snapshot loaded, without .pl
    snapshot_clauses: int = 0
    journal_entries: int = 0  # entries applied
    problems: int = 0  # warnings printed (skipped clauses, lines, files)


@dataclass(slots=True)
class MountedMemory:
    """One mounted memory: where its files are, its mode and, when read-write, its journal."""

    name: str
    scope: Scope
    mode: Mode
    paths: MemoryPaths
    journal: Journal | None  # None for a read-only memory: it never writes
    readable: bool = True  # ro only: its persistence files may be loaded
    stats: LoadStats = field(default_factory=LoadStats)

    @property
    def persistence_active(self) -> bool:
        if self.journal is not None:
            return self.journal.active
        return self.mode == "ro" and self.readable

    @property
    def status(self) -> str:
        """``active`` or ``degraded`` (R-N7, §4.25)."""
        return "active" if self.persistence_active else "degraded"


class MountTable:
    """The ``Memories`` protocol (tooling.py) over the runtime's mounts (§7.5)."""

    def __init__(self) -> None:
        self._mounts: dict[str, MountedMemory] = {}

    def mode(self, name: str) -> Mode | None:
        mounted = self._mounts.get(name)
        return None if mounted is None else mounted.mode

    def get(self, name: str) -> MountedMemory | None:
        return self._mounts.get(name)

    def names(self) -> list[str]:
        """The mounted memories, ``default`` first, then in mount order."""
        return list(self._mounts)

    def all(self) -> list[MountedMemory]:
        return list(self._mounts.values())

    def add(self, mounted: MountedMemory) -> None:
        self._mounts[mounted.name] = mounted

    def remove(self, name: str) -> MountedMemory | None:
        return self._mounts.pop(name, None)


class RuntimeJournal:
    """The ``JournalSink`` protocol (tooling.py): one batch per mutation, stamped with the
    current Unix second, written with one write and fsync (R-W3). A memory that is read-only,
    not mounted or degraded gets nothing written; a failing write degrades the memory's journal
    and is reported on stderr by ``Journal`` (R-N7), and the tool still answers."""

    def __init__(self, table: MountTable) -> None:
        self._table = table

    def append(self, memory: str, entries: Sequence[tuple[str, str]]) -> None:
        stamp = int(time.time())
        batch = [Entry(stamp, _op(op), clause) for op, clause in entries]
        self.append_entries(memory, batch)

    def append_entries(self, memory: str, entries: Sequence[Entry]) -> bool:
        """Write prepared entries as one batch; True when they are durable."""
        mounted = self._table.get(memory)
        if mounted is None or mounted.journal is None:
            return False
        return mounted.journal.append_batch(entries)


def _op(op: str) -> Op:
    if op == "assert":
        return "assert"
    if op == "retract":
        return "retract"
    if op == "retractall":
        return "retractall"
    raise ValueError(f"unknown journal op {op!r}; expected one of {OPS}")


class LogicRuntime:
    """One project's logic memory: the engine, the mount table and the journals.

    Not thread-safe by itself: ``lock`` is the lock that serialises engine calls (R-T3); the
    tool services built on this runtime should hold it for each call."""

    def __init__(
        self,
        project: Project,
        engine: Engine,
        *,
        warn: Callable[[str], None] = _stderr,
        env: Mapping[str, str] | None = None,
        owns_engine: bool = True,
        graph: GraphSource | None = None,
    ) -> None:
        self.project = project
        self.engine = engine
        # rdf/3 and friends read the knowledge graph through this bridge; without a store its
        # every answer names the setting that would give one (quipu/logic/graph_bridge.py).
        self.graph = GraphBridge(NoGraph() if graph is None else graph)
        self.warn = warn
        self.env = env
        self.lock = threading.RLock()
        self.memories = MountTable()
        self.journal_sink = RuntimeJournal(self.memories)
        self._owns_engine = owns_engine
        self.closed = False

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def open(
        cls,
        start: Path | None = None,
        *,
        engine: Engine | None = None,
        warn: Callable[[str], None] = _stderr,
        env: Mapping[str, str] | None = None,
        graph: GraphSource | None = None,
    ) -> LogicRuntime:
        """Discover the project from ``start`` (default: the working directory; raises
        ``ProjectNotFound``), start the engine (or use ``engine``, which is then not closed by
        ``close``) and mount and load every memory (§8)."""
        project = discover(start)
        for problem in ensure_layout(project):
            warn(problem)
        own = engine is None
        eng = Engine() if engine is None else engine
        runtime = cls(project, eng, warn=warn, env=env, owns_engine=own, graph=graph)
        try:
            runtime._boot()
        except BaseException:
            runtime.close()
            raise
        return runtime

    def _boot(self) -> None:
        self.engine.start()
        self.engine.load_helper(GRAPH_HELPER)  # before any memory: each imports it
        self.engine.set_prelude("quipu_graph", "qg_new_call")  # no cached row outlives a call
        self._connect_graph(self.engine)
        self.engine.add_restart_hook(self._connect_graph)
        self.engine.load_helper(KNOWLEDGE_HELPER)
        self.engine.load_helper(HELPER)
        mounts = self._manifest_mounts()
        default_mode: Mode = "rw"
        for mount in mounts:
            if mount.name == DEFAULT_MEMORY:
                default_mode = mount.mode  # R-M5: the entry only sets default's mode
        self.mount(Mount(DEFAULT_MEMORY, ".zpm/kb", "project", default_mode))
        for mount in mounts:
            if mount.name == DEFAULT_MEMORY:
                continue
            directory = mount_dir(self.project, mount)
            if not directory.is_dir():
                self.warn(f"zpm: memory '{mount.name}' not mounted: {directory} does not exist")
                continue
            try:
                self.mount(mount)
            except (ValueError, LogicError) as exc:
                self.warn(f"zpm: memory '{mount.name}' not mounted: {exc}")
        self.engine.add_restart_hook(self._reload_all)

    def _connect_graph(self, engine: Engine) -> None:
        """Tell the engine where the graph bridge listens (at start and after a restart)."""
        engine.call_helper(f"quipu_graph:qg_set_endpoint({prolog_string(str(self.graph.path))}), R = ok")

    def _manifest_mounts(self) -> list[Mount]:
        """The manifest's entries; on first boot the manifest is created (R-M5)."""
        manifest = read_manifest(self.project)
        for problem in manifest.problems:
            self.warn(problem)
        if manifest.mounts is not None:
            return list(manifest.mounts)
        if manifest.problems:
            return []  # ignored, and not overwritten until the next mount change
        mounts = first_boot_mounts(self.project)
        try:
            write_manifest(self.project, mounts)
        except OSError as exc:
            self.warn(f"zpm: cannot write {self.project.manifest_path}: {exc}")
        return mounts

    def close(self) -> None:
        """Close every journal and, when the runtime started it, the engine."""
        if self.closed:
            return
        self.closed = True
        for mounted in self.memories.all():
            if mounted.journal is not None:
                mounted.journal.close()
        if self._owns_engine:
            self.engine.close()
        self.graph.close()

    def __enter__(self) -> LogicRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ mounts

    def mounted(self, name: str) -> MountedMemory | None:
        return self.memories.get(name)

    def paths_of(self, mount: Mount) -> MemoryPaths:
        """Where a manifest entry's memory keeps its files (§7.2)."""
        if mount.name == DEFAULT_MEMORY:
            p = self.project
            return MemoryPaths(DEFAULT_MEMORY, "project", p.kb_dir, p.kb_dir, p.journal_path, None)
        directory = mount_dir(self.project, mount)
        return MemoryPaths(
            mount.name,
            mount.scope,
            directory,
            directory,
            directory / "journal.wal",
            directory / KNOWLEDGE_FILE,
        )

    def mount(self, mount: Mount) -> MountedMemory:
        """Mount a memory with its mode and load it (§8.2). Raises ValueError when it is
        mounted already or its name is an engine or library module (§10.4). Does not write the
        manifest (the memory tools do, R-M6)."""
        if self.memories.get(mount.name) is not None:
            raise ValueError(f"memory {mount.name!r} is already mounted")
        paths = self.paths_of(mount)
        self.engine.ensure_memory(mount.name)
        journal: Journal | None = None
        readable = True
        if mount.mode == "rw":
            journal = Journal(paths.journal, warn=self.warn)
            journal.open()  # degraded when it cannot be opened (R-N7); it says why on stderr
        else:
            readable = paths.directory.is_dir() and paths.journal.parent.is_dir()
        mounted = MountedMemory(mount.name, mount.scope, mount.mode, paths, journal, readable)
        self.memories.add(mounted)
        try:
            self._load(mounted)
        except BaseException:
            self.memories.remove(mount.name)
            if journal is not None:
                journal.close()
            raise
        return mounted

    def unmount(self, name: str) -> None:
        """Drop a memory's clauses from the engine and close its journal. ``default`` is
        never unmounted (R-M1). Does not write the manifest."""
        if name == DEFAULT_MEMORY:
            raise ValueError("the default memory cannot be unmounted")
        mounted = self.memories.remove(name)
        if mounted is None:
            raise ValueError(f"memory {name!r} is not mounted")
        if mounted.journal is not None:
            mounted.journal.close()
        self.engine.drop_memory(name)

    # ------------------------------------------------------------------ loading (§8.2)

    def _reload_all(self, engine: Engine) -> None:
        """The engine restart hook: the memories came back empty; load each again."""
        for mounted in self.memories.all():
            self._load(mounted)

    def _load(self, mounted: MountedMemory) -> None:
        problems = 0
        files, seed_clauses, seed_problems = self._load_seeds(mounted)
        problems += seed_problems
        snapshot_name: str | None = None
        snapshot_clauses = 0
        applied = 0
        if mounted.persistence_active:
            snapshot = most_recent(list_snapshots(mounted.paths.snapshot_dir))
            if snapshot is not None:
                snapshot_name = snapshot.name
                snapshot_clauses, snap_problems = self.load_snapshot(mounted.name, snapshot.path, "startup")
                problems += snap_problems
            applied, journal_problems = self._replay(mounted)
            problems += journal_problems
        mounted.stats = LoadStats(files, seed_clauses, snapshot_name, snapshot_clauses, applied, problems)

    def _seed_files(self, mounted: MountedMemory) -> list[Path]:
        """default: the regular top-level ``*.pl`` files of ``.zpm/kb`` that are not snapshots,
        by name (R-N3, R-B3); a named memory: its ``knowledge.pl`` (R-M3)."""
        if mounted.paths.knowledge is not None:
            return [mounted.paths.knowledge] if mounted.paths.knowledge.is_file() else []
        try:
            children = sorted(mounted.paths.snapshot_dir.iterdir())
        except OSError:
            return []
        return [
            child
            for child in children
            if child.name.endswith(SUFFIX) and child.is_file() and not is_snapshot(child)
        ]

    def _load_seeds(self, mounted: MountedMemory) -> tuple[int, int, int]:
        files = loaded = problems = 0
        for path in self._seed_files(mounted):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                self.warn(f"zpm: {path}: cannot read seed file: {exc}; skipped")
                problems += 1
                continue
            files += 1
            split = split_clauses(text)
            if split.tail is not None:
                self.warn(f"zpm: {path}:{split.tail.line}: unterminated clause; skipped")
                problems += 1
            clauses = split.clauses
            if not clauses:
                continue
            # R-B6: load_clauses refuses directives other than dynamic/discontiguous/module.
            report = self.engine.load_clauses(mounted.name, [c.text for c in clauses])
            loaded += report.loaded
            for failure in report.failures:
                line = clauses[failure.index].line
                self.warn(f"zpm: {path}:{line}: {failure.message}; skipped")
                problems += 1
        return files, loaded, problems

    def load_snapshot(self, memory: str, path: Path, mode: str) -> tuple[int, int]:
        """Load a snapshot file into a memory in one engine call. ``mode`` ``startup``: each
        predicate it declares replaces its seed clauses (§8.2); ``restore``: the memory is
        cleared first (R-RS2). Every fact gets the source ``snapshot`` (R-TM9). Returns the
        number of terms loaded and of problems reported. Raises LogicError when the engine
        cannot read the file."""
        if mode not in ("startup", "restore"):
            raise ValueError(f"unknown snapshot load mode {mode!r}")
        goal = f"quipu_runtime:qr_load_snapshot({memory}, {prolog_string(str(path))}, {mode}, R)"
        result = self.engine.call_helper(goal, timeout=self.engine.load_timeout)
        kind, args = functor_parts(result)
        if kind != "ok":
            raise LogicError(f"cannot load snapshot {path}: {args[1] if len(args) == 2 else result!r}")
        loaded, failures = args
        for item in failures:
            _, (line, message) = functor_parts(item)
            self.warn(f"zpm: {path}:{line}: {message}; skipped")
        return int(loaded), len(failures)

    def _replay(self, mounted: MountedMemory) -> tuple[int, int]:
        """Replay the memory's journal (R-W2); bad lines and entries are skipped with a
        warning naming the file and line (R-B5)."""
        path = mounted.paths.journal
        try:
            replay = read_journal(path)
        except OSError as exc:
            self.warn(f"zpm: cannot read journal {path}: {exc}")
            return 0, 1
        for problem in replay.problems:
            self.warn(f"zpm: {problem}")
        applied = 0
        problems = len(replay.problems)
        for chunk in _chunks(replay.records):
            items = ", ".join(f"e({r.entry.op}, {prolog_string(r.entry.clause)})" for r in chunk)
            goal = f"quipu_runtime:qr_replay({mounted.name}, [{items}], R)"
            result = self.engine.call_helper(goal, timeout=self.engine.load_timeout)
            _, (count, failures) = functor_parts(result)
            applied += int(count)
            for item in failures:
                _, (index, message) = functor_parts(item)
                self.warn(f"zpm: {path}:{chunk[int(index)].line}: {message}; entry skipped")
                problems += 1
        return applied, problems


def _chunks(records: Sequence[Record]) -> Iterable[Sequence[Record]]:
    start = 0
    while start < len(records):
        end, size = start, 0
        while end < len(records) and end - start < _REPLAY_ENTRIES and (size < _REPLAY_BYTES or end == start):
            size += len(records[end].entry.clause) + 16
            end += 1
        yield records[start:end]
        start = end


class RuntimeTools(ToolService):
    """The base of the tool services that work on a whole runtime (persistence, memories).
    ``lock`` defaults to the runtime's; pass the lock the other services use so that all calls
    on the engine are serialised (R-T3)."""

    def __init__(self, runtime: LogicRuntime, *, lock: threading.RLock | None = None) -> None:
        self.runtime = runtime
        super().__init__(lock if lock is not None else runtime.lock)

    def _run(self, handler: ToolHandler, arguments: Any) -> ToolResult:
        # A closed runtime fails every call; these tools also touch files, hence OSError.
        return run_tool(
            handler,
            arguments,
            restart=self.runtime.engine.restart,  # the restart hook reloads every memory
            closed=self.runtime.closed,
            failures=(LogicError, OSError, ValueError),
        )


__all__ = [
    "HELPER",
    "RECORD_PREDICATES",
    "LoadStats",
    "LogicRuntime",
    "MountTable",
    "MountedMemory",
    "RuntimeJournal",
    "RuntimeTools",
]
