"""The ``.zpm/`` project folder: layout, discovery, memory directories and the mount manifest
(spec §6.1, §7.2–§7.4, §8.1, §9.1).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from quipu.logic.durable import replace_file
from quipu.logic.errors import LogicError
from quipu.logic.journal import JOURNAL_NAME

ZPM_DIR = ".zpm"
GITIGNORE_TEXT = "data/\n"  # R-W0: one line
DEFAULT_MEMORY = "default"
MANIFEST_VERSION = 1

INITIALIZED = "Initialized .zpm/ project directory"
ALREADY_INITIALIZED = ".zpm/ project directory already initialized"
SERVE_NOT_FOUND = "No .zpm/ directory found. Run `zpm init` to initialize a project."

Scope = Literal["project", "global"]
Mode = Literal["rw", "ro"]
SCOPES: tuple[Scope, ...] = ("project", "global")
MODES: tuple[Mode, ...] = ("rw", "ro")

_PLAIN_ATOM = re.compile(r"[a-z][A-Za-z0-9_]*\Z")


def command_not_found(command: str) -> str:
    """What a tool command prints when no project is found (R-B2)."""
    return f"zpm {command}: NotFound. Run 'zpm init' first."


class ProjectNotFound(LogicError):
    """No ``.zpm/`` directory between the start directory and the filesystem boundary (R-B1)."""

    reason = "project_not_found"


@dataclass(frozen=True, slots=True)
class Project:
    """A project folder: the directory that holds ``.zpm/``."""

    root: Path

    @property
    def zpm_dir(self) -> Path:
        return self.root / ZPM_DIR

    @property
    def kb_dir(self) -> Path:
        return self.zpm_dir / "kb"

    @property
    def data_dir(self) -> Path:
        return self.zpm_dir / "data"

    @property
    def journal_path(self) -> Path:
        """The default memory's journal."""
        return self.data_dir / JOURNAL_NAME

    @property
    def manifest_path(self) -> Path:
        return self.zpm_dir / "mounts.json"


# ---------------------------------------------------------------------------- layout


def init(path: Path) -> bool:
    """``zpm init`` in ``path`` (R-W0, §9.1): create ``.zpm/``, ``kb/``, ``data/`` and ``.gitignore``.
    Returns False, changing nothing, when ``.zpm/`` already exists. OSError on failure."""
    project = Project(path.absolute())
    if project.zpm_dir.is_dir():
        return False
    project.zpm_dir.mkdir()
    project.kb_dir.mkdir()
    project.data_dir.mkdir()
    (project.zpm_dir / ".gitignore").write_text(GITIGNORE_TEXT, encoding="utf-8")
    return True


def ensure_layout(project: Project) -> list[str]:
    """Create missing ``kb/`` and ``data/`` under an existing ``.zpm/`` (R-W0). A directory that
    cannot be created is reported, not raised: without ``data/`` persistence is degraded (R-N7)."""
    problems: list[str] = []
    for directory in (project.kb_dir, project.data_dir):
        try:
            directory.mkdir(exist_ok=True)
        except OSError as exc:
            problems.append(f"zpm: cannot create {directory}: {exc}")
    return problems


def discover(start: Path | None = None) -> Project:
    """The nearest directory from ``start`` (default: the working directory) upwards that has a
    ``.zpm/`` directory, not crossing into another filesystem (R-B1). Raises ``ProjectNotFound``
    with the ``zpm serve`` text of R-B2."""
    here = (start if start is not None else Path.cwd()).absolute()
    try:
        device = here.stat().st_dev
    except OSError as exc:
        raise ProjectNotFound(SERVE_NOT_FOUND) from exc
    while True:
        if (here / ZPM_DIR).is_dir():
            return Project(here)
        parent = here.parent
        if parent == here:
            break
        try:
            if parent.stat().st_dev != device:
                break  # a mount point: the project cannot lie beyond it
        except OSError:
            break
        here = parent
    raise ProjectNotFound(SERVE_NOT_FOUND)


# ---------------------------------------------------------------------------- memory directories


def global_kb_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where global memories live (§7.2): ``$XDG_DATA_HOME/zpm/kb`` when set and non-empty, else
    ``$HOME/.local/share/zpm/kb``."""
    environ = os.environ if env is None else env
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg:
        return Path(xdg) / "zpm" / "kb"
    home = environ.get("HOME", "")
    return (Path(home) if home else Path.home()) / ".local" / "share" / "zpm" / "kb"


def scope_dir(project: Project, scope: Scope, env: Mapping[str, str] | None = None) -> Path:
    return project.kb_dir if scope == "project" else global_kb_dir(env)


@dataclass(frozen=True, slots=True)
class MemoryPaths:
    """Where one memory keeps its files. The default memory uses ``.zpm/kb`` and ``.zpm/data``
    and has no ``knowledge.pl`` (§7.2)."""

    name: str
    scope: Scope
    directory: Path  # the memory's own directory (``.zpm/kb`` for default)
    snapshot_dir: Path
    journal: Path
    knowledge: Path | None


def memory_paths(
    project: Project, name: str, scope: Scope = "project", env: Mapping[str, str] | None = None
) -> MemoryPaths:
    if name == DEFAULT_MEMORY:
        return MemoryPaths(name, "project", project.kb_dir, project.kb_dir, project.journal_path, None)
    directory = scope_dir(project, scope, env) / name
    return MemoryPaths(
        name, scope, directory, directory, directory / JOURNAL_NAME, directory / "knowledge.pl"
    )


def memory_names(project: Project, scope: Scope, env: Mapping[str, str] | None = None) -> list[str]:
    """The memory directories of a scope, sorted (R-LM1): subdirectories whose name is a plain
    atom **[designed here]**; ``default`` is never a named memory (a stray one is ignored)."""
    try:
        children = list(os.scandir(scope_dir(project, scope, env)))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        child.name
        for child in children
        if child.is_dir() and _PLAIN_ATOM.match(child.name) and child.name != DEFAULT_MEMORY
    )


def knowledge_header(name: str) -> str:
    """The whole content ``create_memory`` writes to ``knowledge.pl`` (R-M3, R-CM1)."""
    return f":- module({name}, []).\n"


def create_memory_dir(
    project: Project, name: str, scope: Scope, env: Mapping[str, str] | None = None
) -> Path:
    """Create a memory's directory (and missing parents) with its ``knowledge.pl`` (R-CM1).
    Raises FileExistsError when it exists (or the name is ``default``), ValueError for a name that
    is not a plain atom; other OSErrors pass through."""
    if not _PLAIN_ATOM.match(name):
        raise ValueError(f"{name!r} is not a plain atom")
    if name == DEFAULT_MEMORY:
        raise FileExistsError(name)
    paths = memory_paths(project, name, scope, env)
    paths.directory.parent.mkdir(parents=True, exist_ok=True)
    paths.directory.mkdir()  # FileExistsError when the memory exists
    (paths.directory / "knowledge.pl").write_text(knowledge_header(name), encoding="utf-8")
    return paths.directory


# ---------------------------------------------------------------------------- mount manifest


@dataclass(frozen=True, slots=True)
class Mount:
    name: str
    path: str  # ".zpm/kb/<name>" for project memories, absolute for global ones (R-M4)
    scope: Scope
    mode: Mode

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "path": self.path, "scope": self.scope, "mode": self.mode}


def mount_entry(
    project: Project, name: str, scope: Scope, mode: Mode, env: Mapping[str, str] | None = None
) -> Mount:
    """The manifest entry of a memory (R-M4)."""
    if name == DEFAULT_MEMORY:
        return Mount(name, f"{ZPM_DIR}/kb", "project", mode)
    if scope == "project":
        return Mount(name, f"{ZPM_DIR}/kb/{name}", scope, mode)
    return Mount(name, str(global_kb_dir(env).absolute() / name), scope, mode)


def mount_dir(project: Project, mount: Mount) -> Path:
    """The directory a manifest entry points at (a relative path is relative to the project)."""
    path = Path(mount.path)
    return path if path.is_absolute() else project.root / path


@dataclass(frozen=True, slots=True)
class Manifest:
    """The manifest as read: ``mounts`` is None when the file is missing or ignored; ``problems``
    holds the warnings to print (an ignored file, skipped entries)."""

    mounts: tuple[Mount, ...] | None
    problems: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        return self.mounts is not None


def read_manifest(project: Project) -> Manifest:
    """Read ``.zpm/mounts.json`` (R-M5). A file that does not parse or has a version other than 1
    is ignored with a warning; an entry with a bad field is skipped with a warning
    **[designed here]**; a later entry of the same name replaces an earlier one."""
    path = project.manifest_path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Manifest(None)
    except (OSError, UnicodeDecodeError) as exc:
        return Manifest(None, (f"zpm: ignoring {path}: {exc}",))
    try:
        value = json.loads(text)
    except ValueError as exc:
        return Manifest(None, (f"zpm: ignoring {path}: not valid JSON ({exc})",))
    if not isinstance(value, dict) or value.get("version") != MANIFEST_VERSION:
        return Manifest(None, (f"zpm: ignoring {path}: not a version {MANIFEST_VERSION} mount manifest",))
    items = value.get("mounts", [])
    if not isinstance(items, list):
        return Manifest(None, (f"zpm: ignoring {path}: 'mounts' is not a list",))
    mounts: dict[str, Mount] = {}
    problems: list[str] = []
    for index, item in enumerate(items):
        mount = _mount_from_json(item)
        if mount is None:
            problems.append(f"zpm: {path}: skipping malformed mount entry {index}")
            continue
        mounts[mount.name] = mount
    return Manifest(tuple(mounts.values()), tuple(problems))


def _mount_from_json(item: object) -> Mount | None:
    if not isinstance(item, dict):
        return None
    name, path, scope, mode = (item.get(key) for key in ("name", "path", "scope", "mode"))
    if not isinstance(name, str) or not _PLAIN_ATOM.match(name) or not isinstance(path, str):
        return None
    if scope not in SCOPES or mode not in MODES:
        return None
    return Mount(name, path, "project" if scope == "project" else "global", "ro" if mode == "ro" else "rw")


def render_manifest(mounts: Sequence[Mount]) -> str:
    """The manifest text: pretty-printed with two-space indentation (R-M4)."""
    document = {"version": MANIFEST_VERSION, "mounts": [mount.to_json() for mount in mounts]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_manifest(project: Project, mounts: Sequence[Mount]) -> None:
    """Write the manifest through ``mounts.json.tmp`` and a rename; the tmp file is removed on
    failure (R-M4)."""
    replace_file(project.manifest_path, render_manifest(mounts).encode("utf-8"))


def with_mount(mounts: Sequence[Mount], mount: Mount) -> list[Mount]:
    """Add or update the entry of ``mount.name`` (R-M6), keeping the order of the others."""
    out = list(mounts)
    for i, existing in enumerate(out):
        if existing.name == mount.name:
            out[i] = mount
            return out
    out.append(mount)
    return out


def without_mount(mounts: Sequence[Mount], name: str) -> list[Mount]:
    """Remove the entry of ``name`` (R-M6)."""
    return [m for m in mounts if m.name != name]


def first_boot_mounts(project: Project) -> list[Mount]:
    """The manifest created when none exists: every project memory directory, mode ``rw`` (R-M5)."""
    return [mount_entry(project, name, "project", "rw") for name in memory_names(project, "project")]
