"""The memory-management tools of the logic memory as a service (spec §4.26-§4.29, §7).

``MemoryService`` runs ``create_memory``, ``mount_memory``, ``unmount_memory`` and
``list_memories`` over a ``LogicRuntime`` (quipu/logic/runtime.py), in the style of
``PersistenceService``: each takes the ``arguments`` object of a ``tools/call`` and returns a
``ToolResult``. ``RuntimeOverview`` is the ``OverviewSource`` of ``get_kb_overview``
(quipu/logic/refactor.py) over the same runtime.

Every change of the mount set also writes ``.zpm/mounts.json`` (R-M6), and a tool succeeds only
when both happened **[designed here]**: ``create_memory`` removes the directory it just created
when the manifest cannot be written, ``mount_memory`` unmounts again, ``unmount_memory`` writes
the manifest before it unmounts. The entries a change starts from are the manifest's; when the
manifest is missing or was ignored at start-up (R-M5), the current mount table's.

Names **[designed here]** where the spec leaves them open:

* texts quote the bare memory name, also when ``mount_memory`` got ``project:x``;
* ``create_memory`` keeps an existing manifest entry of the same name (a memory of that name
  in the other scope), so that it does not switch which memory the next start mounts;
* ``unmount_memory`` takes a plain atom only (no scope prefix: one name is mounted once);
* ``list_memories`` also lists a mounted memory whose directory has gone, in its scope group.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from quipu.logic.journal import newline_count
from quipu.logic.project import (
    MODES,
    SCOPES,
    Mount,
    Scope,
    create_memory_dir,
    memory_names,
    memory_paths,
    mount_entry,
    read_manifest,
    with_mount,
    without_mount,
    write_manifest,
)
from quipu.logic.refactor import MountInfo
from quipu.logic.runtime import LogicRuntime, RuntimeTools
from quipu.logic.snapshots import SnapshotInfo, list_snapshots
from quipu.logic.tooling import (
    DEFAULT_MEMORY,
    EXECUTION_FAILED,
    INVALID_ARGUMENTS,
    Mode,
    ToolFailure,
    ToolResult,
    compact_json,
    not_mounted_text,
    optional_str,
    plain_atom,
    required_atom,
    required_str,
)

TOOL_NAMES = ("create_memory", "mount_memory", "unmount_memory", "list_memories")
CANNOT_UNMOUNT_DEFAULT = "Cannot unmount the default memory"


def created_text(name: str, scope: Scope) -> str:
    return f"Created memory '{name}' ({scope} scope)"


def already_exists_text(name: str) -> str:
    return f"Memory '{name}' already exists"


def mounted_text(name: str, mode: Mode) -> str:
    return f"Mounted memory '{name}' ({mode})"


def already_mounted_text(name: str) -> str:
    return f"Memory '{name}' is already mounted"


def does_not_exist_text(name: str) -> str:
    return f"Memory '{name}' does not exist"


def ambiguous_text(name: str) -> str:
    return f"Memory '{name}' is ambiguous. Use 'project:{name}' or 'global:{name}'"


def unmounted_text(name: str) -> str:
    return f"Unmounted memory '{name}'"


class MemoryService(RuntimeTools):
    """The four memory tools over one runtime. ``call(name, arguments)`` runs a tool by name; each
    tool also has a method of its own name. ``lock`` defaults to the runtime's; pass the lock the
    other services use so that all calls on the engine are serialised (R-T3)."""

    tool_names = TOOL_NAMES

    def create_memory(self, arguments: Any = None) -> ToolResult:
        return self.call("create_memory", arguments)

    def mount_memory(self, arguments: Any = None) -> ToolResult:
        return self.call("mount_memory", arguments)

    def unmount_memory(self, arguments: Any = None) -> ToolResult:
        return self.call("unmount_memory", arguments)

    def list_memories(self, arguments: Any = None) -> ToolResult:
        return self.call("list_memories", arguments)

    # ------------------------------------------------------------------ names

    def _refuse_reserved(self, name: str) -> None:
        if self.runtime.engine.is_reserved_name(name):
            raise ToolFailure(INVALID_ARGUMENTS)

    # ------------------------------------------------------------------ manifest (R-M6)

    def _base_mounts(self) -> list[Mount]:
        """The entries a change starts from: the manifest's, or the mount table's when the
        manifest is missing or unusable (R-M5: it is overwritten at the next mount change)."""
        manifest = read_manifest(self.runtime.project)
        if manifest.mounts is not None:
            return list(manifest.mounts)
        out: list[Mount] = []
        for mounted in self.runtime.memories.all():
            if mounted.name == DEFAULT_MEMORY and mounted.mode == "rw":
                continue  # default is always mounted; an entry only matters for ro
            out.append(
                mount_entry(self.runtime.project, mounted.name, mounted.scope, mounted.mode, self._env)
            )
        return out

    @property
    def _env(self) -> Mapping[str, str] | None:
        return self.runtime.env

    def _write(self, mounts: Sequence[Mount]) -> bool:
        try:
            write_manifest(self.runtime.project, mounts)
        except OSError as exc:
            self.runtime.warn(f"zpm: cannot write {self.runtime.project.manifest_path}: {exc}")
            return False
        return True

    # ------------------------------------------------------------------ tools

    def _create_memory(self, arguments: Mapping[str, Any]) -> ToolResult:
        name = required_atom(arguments, "name")
        scope = _one_of(optional_str(arguments, "scope"), SCOPES)  # §4.26
        if name == DEFAULT_MEMORY:
            raise ToolFailure(already_exists_text(name))
        self._refuse_reserved(name)
        project = self.runtime.project
        try:
            directory = create_memory_dir(project, name, scope, self._env)  # R-CM1
        except FileExistsError:
            raise ToolFailure(already_exists_text(name)) from None
        except OSError:
            raise ToolFailure(EXECUTION_FAILED) from None
        base = self._base_mounts()
        if any(mount.name == name for mount in base):
            return ToolResult(created_text(name, scope))
        # R-CM2: in the manifest with rw for the next start, not mounted now.
        if not self._write(with_mount(base, mount_entry(project, name, scope, "rw", self._env))):
            with contextlib.suppress(OSError):
                (directory / "knowledge.pl").unlink()
                directory.rmdir()
            raise ToolFailure(EXECUTION_FAILED)
        return ToolResult(created_text(name, scope))

    def _mount_memory(self, arguments: Mapping[str, Any]) -> ToolResult:
        raw = required_str(arguments, "name")
        wanted, bare = _qualified(raw)
        name = plain_atom(bare)
        mode = _one_of(optional_str(arguments, "mode"), MODES)  # §4.27
        if self.runtime.mounted(name) is not None:  # default is always mounted
            raise ToolFailure(already_mounted_text(name))
        self._refuse_reserved(name)
        scope = self._resolve(name, wanted)  # R-MM1
        project = self.runtime.project
        entry = mount_entry(project, name, scope, mode, self._env)
        try:
            self.runtime.mount(entry)  # R-MM2: knowledge.pl, newest snapshot, journal (§8.2)
        except ValueError:
            raise ToolFailure(INVALID_ARGUMENTS) from None
        if not self._write(with_mount(self._base_mounts(), entry)):
            self.runtime.unmount(name)
            raise ToolFailure(EXECUTION_FAILED)
        return ToolResult(mounted_text(name, mode))

    def _resolve(self, name: str, wanted: Scope | None) -> Scope:
        project = self.runtime.project
        scopes = (wanted,) if wanted is not None else SCOPES
        found = [s for s in scopes if memory_paths(project, name, s, self._env).directory.is_dir()]
        if not found:
            raise ToolFailure(does_not_exist_text(name))
        if len(found) > 1:
            raise ToolFailure(ambiguous_text(name))
        return found[0]

    def _unmount_memory(self, arguments: Mapping[str, Any]) -> ToolResult:
        name = required_atom(arguments, "name")
        if name == DEFAULT_MEMORY:
            raise ToolFailure(CANNOT_UNMOUNT_DEFAULT)  # R-M1
        if self.runtime.mounted(name) is None:
            raise ToolFailure(not_mounted_text(name))
        # R-UM1: the manifest first, so that a failure changes nothing; the journal is durable.
        if not self._write(without_mount(self._base_mounts(), name)):
            raise ToolFailure(EXECUTION_FAILED)
        self.runtime.unmount(name)
        return ToolResult(unmounted_text(name))

    def _list_memories(self, arguments: Mapping[str, Any]) -> ToolResult:
        table = self.runtime.memories
        default = table.get(DEFAULT_MEMORY)
        if default is None:
            raise ToolFailure(EXECUTION_FAILED)
        items: list[dict[str, Any]] = [_item(DEFAULT_MEMORY, "project", default.mode)]
        for scope in SCOPES:  # R-LM1: project, then global, each sorted by name
            names = set(memory_names(self.runtime.project, scope, self._env))
            names.update(m.name for m in table.all() if m.scope == scope and m.name != DEFAULT_MEMORY)
            for name in sorted(names):
                mounted = table.get(name)
                mode = mounted.mode if mounted is not None and mounted.scope == scope else None
                items.append(_item(name, scope, mode))
        return ToolResult(compact_json({"memories": items}))


class RuntimeOverview:
    """The ``OverviewSource`` of ``get_kb_overview`` (R-O5..R-O7) over a runtime's mounts and
    files."""

    def __init__(self, runtime: LogicRuntime) -> None:
        self.runtime = runtime

    def mounts(self) -> Sequence[MountInfo] | None:
        return [MountInfo(m.name, m.scope, m.mode, m.paths.directory) for m in self.runtime.memories.all()]

    def snapshots(self, memory: str) -> Sequence[SnapshotInfo]:
        mounted = self.runtime.mounted(memory)
        return [] if mounted is None else list_snapshots(mounted.paths.snapshot_dir)

    def journal_pending(self, memory: str) -> int:
        mounted = self.runtime.mounted(memory)
        if mounted is None or not mounted.persistence_active:
            return 0
        try:
            return newline_count(mounted.paths.journal)
        except OSError:
            return 0

    def persistence_healthy(self) -> bool:
        mounted = self.runtime.mounted(DEFAULT_MEMORY)
        return mounted is not None and mounted.status == "active"


def _item(name: str, scope: Scope, mode: Mode | None) -> dict[str, Any]:
    return {"name": name, "scope": scope, "mounted": mode is not None, "mode": mode}


_Choice = TypeVar("_Choice", bound=str)


def _one_of(value: str | None, choices: tuple[_Choice, ...]) -> _Choice:
    """Absent or null is the first choice (``project``, ``rw``); a value that is none of the
    choices is InvalidArguments."""
    if value is None:
        return choices[0]
    for choice in choices:
        if value == choice:
            return choice
    raise ToolFailure(INVALID_ARGUMENTS)


def _qualified(raw: str) -> tuple[Scope | None, str]:
    """``project:x`` / ``global:x`` select a scope (R-MM1); anything else is unqualified."""
    for scope in SCOPES:
        prefix = f"{scope}:"
        if raw.startswith(prefix):
            return scope, raw[len(prefix) :]
    return None, raw


__all__ = [
    "CANNOT_UNMOUNT_DEFAULT",
    "TOOL_NAMES",
    "MemoryService",
    "RuntimeOverview",
]
