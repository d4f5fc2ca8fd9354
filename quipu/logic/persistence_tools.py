"""The persistence tools of the logic memory as a service (spec §4.22-§4.25, §6.4-§6.7).

``PersistenceService`` runs ``save_snapshot``, ``restore_snapshot``, ``list_snapshots`` and
``get_persistence_status`` over a ``LogicRuntime`` (quipu/logic/runtime.py), in the style of
``KnowledgeService``: each takes the ``arguments`` object of a ``tools/call`` and returns a
``ToolResult``.

* ``save_snapshot`` renders the memory from ``Engine.predicates`` (R-N2: every predicate gets
  a ``:- dynamic`` line, ``tms_justification/2`` and ``zpm_source/2`` always), writes it
  through a temporary file (R-N1) and then rotates the journal (R-N5). Without an active
  journal it fails with ``ExecutionFailed`` (§4.22 [changed]). If the rotation fails the new
  snapshot file is removed again **[designed here]**: a snapshot newer than a journal that
  still holds its entries would apply them twice on the next start.
* ``restore_snapshot`` checks the file first, then replaces the memory's content with it
  (R-RS2) and appends the one batch of R-N6 to the journal (R-RS3). The batch's ``assert``
  entries are the restored clauses as the engine holds them, without the ``zpm_source``
  records, which loading regenerates (R-TM9) **[designed here]**. In degraded mode the
  restore still happens in memory, like every other mutation (R-N7).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from quipu.logic.errors import LogicError
from quipu.logic.journal import journal_size, status_text
from quipu.logic.runtime import RECORD_PREDICATES, MountedMemory, RuntimeTools
from quipu.logic.snapshots import (
    SnapshotError,
    SnapshotNameError,
    is_snapshot,
    list_snapshots,
    list_text,
    most_recent,
    read_snapshot,
    restore_batch,
    restore_name,
    restored_text,
    saved_text,
    snapshot_path,
    validate_name,
    write_snapshot,
)
from quipu.logic.tooling import (
    DEFAULT_MEMORY,
    EXECUTION_FAILED,
    INVALID_ARGUMENTS,
    READ_ONLY,
    ToolFailure,
    ToolResult,
    not_mounted_text,
    optional_str,
    required_str,
)

TOOL_NAMES = ("save_snapshot", "restore_snapshot", "list_snapshots", "get_persistence_status")


class PersistenceService(RuntimeTools):
    """The persistence tools over one runtime. ``call(name, arguments)`` runs a tool by name;
    each tool also has a method of its own name. ``lock`` defaults to the runtime's; pass the
    lock the other services use so that all calls on the engine are serialised (R-T3)."""

    tool_names = TOOL_NAMES

    def save_snapshot(self, arguments: Any = None) -> ToolResult:
        return self.call("save_snapshot", arguments)

    def restore_snapshot(self, arguments: Any = None) -> ToolResult:
        return self.call("restore_snapshot", arguments)

    def list_snapshots(self, arguments: Any = None) -> ToolResult:
        return self.call("list_snapshots", arguments)

    def get_persistence_status(self, arguments: Any = None) -> ToolResult:
        return self.call("get_persistence_status", arguments)

    # ------------------------------------------------------------------ memories (§7.5)

    def _memory(self, arguments: Mapping[str, Any], *, write: bool) -> MountedMemory:
        """Absent, null or "" is default (R-M7); not mounted fails; a mutation of a read-only
        memory fails (R-M8)."""
        name = optional_str(arguments, "memory") or DEFAULT_MEMORY
        mounted = self.runtime.mounted(name)
        if mounted is None:
            raise ToolFailure(not_mounted_text(name))
        if write and mounted.mode != "rw":
            raise ToolFailure(READ_ONLY)
        return mounted

    # ------------------------------------------------------------------ tools

    def _save_snapshot(self, arguments: Mapping[str, Any]) -> ToolResult:
        raw = required_str(arguments, "name")
        mounted = self._memory(arguments, write=True)
        try:
            name = validate_name(raw, named_memory=mounted.name != DEFAULT_MEMORY)
        except SnapshotNameError:
            raise ToolFailure(INVALID_ARGUMENTS) from None
        journal = mounted.journal
        if journal is None or not journal.active:
            raise ToolFailure(EXECUTION_FAILED)  # R-N7: nothing is written in degraded mode
        engine = self.runtime.engine
        predicates = {(p.name, p.arity): p.clauses for p in engine.predicates(mounted.name)}
        for record in RECORD_PREDICATES:  # R-N2: the TMS records are always declared
            predicates.setdefault(record, ())
        order = sorted(predicates)
        epoch = _now()
        directory = mounted.paths.snapshot_dir
        try:
            written = write_snapshot(directory, name, epoch, order, [predicates[key] for key in order])
        except OSError:
            raise ToolFailure(EXECUTION_FAILED) from None
        try:
            journal.rotate(epoch)  # R-N5, only once the snapshot is durable
        except LogicError:
            with contextlib.suppress(OSError):
                written.unlink()
            raise ToolFailure(EXECUTION_FAILED) from None
        return ToolResult(saved_text(name))

    def _restore_snapshot(self, arguments: Mapping[str, Any]) -> ToolResult:
        raw = required_str(arguments, "name")
        mounted = self._memory(arguments, write=True)
        try:
            name = restore_name(raw, named_memory=mounted.name != DEFAULT_MEMORY)  # R-RS1
        except SnapshotNameError:
            raise ToolFailure(INVALID_ARGUMENTS) from None
        path = snapshot_path(mounted.paths.snapshot_dir, name)
        if not is_snapshot(path):
            raise ToolFailure(EXECUTION_FAILED)  # missing, unreadable or not a snapshot (R-N3)
        try:
            read_snapshot(path)  # the whole file is usable before anything changes
        except SnapshotError:
            raise ToolFailure(EXECUTION_FAILED) from None
        engine = self.runtime.engine
        present = [(p.name, p.arity) for p in engine.predicates(mounted.name)]
        self.runtime.load_snapshot(mounted.name, path, "restore")
        restored = [
            clause
            for p in engine.predicates(mounted.name)
            if (p.name, p.arity) != ("zpm_source", 2)
            for clause in p.clauses
        ]
        # R-N6: one batch that turns any state into the restored one on replay.
        self.runtime.journal_sink.append_entries(mounted.name, restore_batch(present, restored, ts=_now()))
        return ToolResult(restored_text(raw))

    def _list_snapshots(self, arguments: Mapping[str, Any]) -> ToolResult:
        mounted = self._memory(arguments, write=False)
        return ToolResult(list_text(list_snapshots(mounted.paths.snapshot_dir)))  # R-LS1

    def _get_persistence_status(self, arguments: Mapping[str, Any]) -> ToolResult:
        mounted = self.runtime.mounted(DEFAULT_MEMORY)  # R-PS1: always the default memory
        if mounted is None:
            raise ToolFailure(EXECUTION_FAILED)
        latest = most_recent(list_snapshots(mounted.paths.snapshot_dir))
        text = status_text(
            mounted.status,
            self.runtime.project.data_dir,
            None if latest is None else latest.name,
            _size(mounted.paths.journal),
        )
        return ToolResult(text)


def _size(path: Path) -> int:
    try:
        return journal_size(path)
    except OSError:  # e.g. the data "directory" is a file: degraded, nothing there
        return 0


def _now() -> int:
    return int(time.time())


__all__ = ["TOOL_NAMES", "PersistenceService"]
