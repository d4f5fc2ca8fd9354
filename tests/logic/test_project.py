"""The .zpm/ project folder: layout, discovery, memory directories, mount manifest
(spec §6.1, §7.2–§7.4, §8.1, §9.1; quipu/logic/project.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from quipu.logic.project import (
    ALREADY_INITIALIZED,
    INITIALIZED,
    SERVE_NOT_FOUND,
    Mount,
    Project,
    ProjectNotFound,
    command_not_found,
    create_memory_dir,
    discover,
    ensure_layout,
    first_boot_mounts,
    global_kb_dir,
    init,
    knowledge_header,
    memory_names,
    memory_paths,
    mount_dir,
    mount_entry,
    read_manifest,
    render_manifest,
    with_mount,
    without_mount,
    write_manifest,
)


def test_init_creates_the_layout(tmp_path: Path) -> None:
    assert init(tmp_path) is True
    zpm = tmp_path / ".zpm"
    assert (zpm / "kb").is_dir() and (zpm / "data").is_dir()
    assert (zpm / ".gitignore").read_text() == "data/\n"
    assert sorted(p.name for p in zpm.iterdir()) == [".gitignore", "data", "kb"]


def test_init_twice_changes_nothing(tmp_path: Path) -> None:
    init(tmp_path)
    (tmp_path / ".zpm" / ".gitignore").write_text("custom\n")
    (tmp_path / ".zpm" / "data").rmdir()
    assert init(tmp_path) is False
    assert (tmp_path / ".zpm" / ".gitignore").read_text() == "custom\n"
    assert not (tmp_path / ".zpm" / "data").exists()


def test_init_messages() -> None:
    assert INITIALIZED == "Initialized .zpm/ project directory"
    assert ALREADY_INITIALIZED == ".zpm/ project directory already initialized"


def test_init_fails_with_a_filesystem_error(tmp_path: Path) -> None:
    (tmp_path / ".zpm").write_text("a file, not a directory")
    with pytest.raises(OSError):
        init(tmp_path)


def test_ensure_layout_creates_missing_kb_and_data(tmp_path: Path) -> None:
    (tmp_path / ".zpm").mkdir()
    assert ensure_layout(Project(tmp_path)) == []
    assert (tmp_path / ".zpm" / "kb").is_dir() and (tmp_path / ".zpm" / "data").is_dir()


def test_ensure_layout_reports_what_it_cannot_create(tmp_path: Path) -> None:
    (tmp_path / ".zpm").mkdir()
    (tmp_path / ".zpm" / "data").write_text("in the way")
    problems = ensure_layout(Project(tmp_path))
    assert len(problems) == 1 and "data" in problems[0]
    assert (tmp_path / ".zpm" / "kb").is_dir()


def test_discover_from_the_project_folder_and_nested_subdirectories(tmp_path: Path) -> None:
    init(tmp_path)
    nested = tmp_path / "a" / "b" / "c"
    nested.mkdir(parents=True)
    assert discover(tmp_path) == Project(tmp_path)
    assert discover(nested) == Project(tmp_path)


def test_discover_takes_the_nearest_project(tmp_path: Path) -> None:
    init(tmp_path)
    inner = tmp_path / "inner"
    inner.mkdir()
    init(inner)
    (inner / "deeper").mkdir()
    assert discover(inner / "deeper").root == inner


def test_discover_uses_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    init(tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert discover().root == tmp_path


def test_discover_ignores_a_zpm_file(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / ".zpm").write_text("not a directory")
    with pytest.raises(ProjectNotFound):
        discover(
            tmp_path / "p",
        )


def test_not_found_texts(tmp_path: Path) -> None:
    with pytest.raises(ProjectNotFound) as caught:
        discover(tmp_path)
    assert str(caught.value) == "No .zpm/ directory found. Run `zpm init` to initialize a project."
    assert "zpm init" in SERVE_NOT_FOUND
    assert command_not_found("query-logic") == "zpm query-logic: NotFound. Run 'zpm init' first."


def test_discover_stops_at_a_filesystem_boundary(tmp_path: Path) -> None:
    # /dev/shm (tmpfs) or /proc is normally another device than /; a .zpm above it is not seen.
    for mount_point in (Path("/dev/shm"), Path("/proc")):
        if mount_point.is_dir() and mount_point.stat().st_dev != Path("/").stat().st_dev:
            break
    else:
        pytest.skip("no second filesystem below / to test with")
    if (Path("/") / ".zpm").is_dir():
        pytest.skip("/ has a .zpm directory")
    with pytest.raises(ProjectNotFound):
        discover(mount_point)


def test_global_scope_directory(tmp_path: Path) -> None:
    assert global_kb_dir({"XDG_DATA_HOME": str(tmp_path), "HOME": "/home/u"}) == tmp_path / "zpm" / "kb"
    assert global_kb_dir({"XDG_DATA_HOME": "", "HOME": "/home/u"}) == Path("/home/u/.local/share/zpm/kb")
    assert global_kb_dir({"HOME": "/home/u"}) == Path("/home/u/.local/share/zpm/kb")


def test_default_memory_paths(tmp_path: Path) -> None:
    project = Project(tmp_path)
    paths = memory_paths(project, "default")
    assert paths.journal == tmp_path / ".zpm" / "data" / "journal.wal"
    assert paths.snapshot_dir == tmp_path / ".zpm" / "kb"
    assert paths.knowledge is None


def test_named_memory_paths_per_scope(tmp_path: Path) -> None:
    project = Project(tmp_path / "proj")
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    local = memory_paths(project, "feature_auth", "project", env)
    assert local.directory == tmp_path / "proj" / ".zpm" / "kb" / "feature_auth"
    assert local.journal == local.directory / "journal.wal"
    assert local.knowledge == local.directory / "knowledge.pl"
    assert local.snapshot_dir == local.directory
    shared = memory_paths(project, "notes", "global", env)
    assert shared.directory == tmp_path / "xdg" / "zpm" / "kb" / "notes"


def test_create_memory_writes_the_module_header(tmp_path: Path) -> None:
    project = Project(tmp_path)
    init(tmp_path)
    directory = create_memory_dir(project, "feature_auth", "project")
    assert (directory / "knowledge.pl").read_text() == ":- module(feature_auth, []).\n"
    assert knowledge_header("x") == ":- module(x, []).\n"


def test_create_global_memory_creates_missing_parents(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "nowhere" / "yet")}
    directory = create_memory_dir(Project(tmp_path), "notes", "global", env)
    assert directory == tmp_path / "nowhere" / "yet" / "zpm" / "kb" / "notes"
    assert (directory / "knowledge.pl").is_file()


def test_create_existing_or_default_memory_fails(tmp_path: Path) -> None:
    init(tmp_path)
    create_memory_dir(Project(tmp_path), "m", "project")
    with pytest.raises(FileExistsError):
        create_memory_dir(Project(tmp_path), "m", "project")
    with pytest.raises(FileExistsError):
        create_memory_dir(Project(tmp_path), "default", "project")
    with pytest.raises(ValueError):
        create_memory_dir(Project(tmp_path), "Bad-Name", "project")


def test_memory_names_are_sorted_plain_atom_directories(tmp_path: Path) -> None:
    init(tmp_path)
    kb = tmp_path / ".zpm" / "kb"
    for name in ("zeta", "alpha", "default", "Not_atom", "with-dash"):
        (kb / name).mkdir()
    (kb / "seed.pl").write_text("a.\n")
    assert memory_names(Project(tmp_path), "project") == ["alpha", "zeta"]
    assert memory_names(Project(tmp_path), "global", {"XDG_DATA_HOME": str(tmp_path / "none")}) == []


def test_manifest_format_is_pretty_two_space_json(tmp_path: Path) -> None:
    init(tmp_path)
    project = Project(tmp_path)
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    mounts = [
        mount_entry(project, "feature_auth", "project", "rw"),
        mount_entry(project, "notes", "global", "ro", env),
    ]
    write_manifest(project, mounts)
    text = project.manifest_path.read_text()
    assert text == (
        "{\n"
        '  "version": 1,\n'
        '  "mounts": [\n'
        "    {\n"
        '      "name": "feature_auth",\n'
        '      "path": ".zpm/kb/feature_auth",\n'
        '      "scope": "project",\n'
        '      "mode": "rw"\n'
        "    },\n"
        "    {\n"
        '      "name": "notes",\n'
        f'      "path": "{tmp_path / "xdg" / "zpm" / "kb" / "notes"}",\n'
        '      "scope": "global",\n'
        '      "mode": "ro"\n'
        "    }\n"
        "  ]\n"
        "}\n"
    )
    assert text == render_manifest(mounts)
    manifest = read_manifest(project)
    assert manifest.mounts == tuple(mounts) and manifest.problems == ()
    assert not (tmp_path / ".zpm" / "mounts.json.tmp").exists()


def test_manifest_paths_resolve_to_memory_directories(tmp_path: Path) -> None:
    project = Project(tmp_path)
    assert mount_dir(project, mount_entry(project, "m", "project", "rw")) == tmp_path / ".zpm" / "kb" / "m"
    env = {"XDG_DATA_HOME": str(tmp_path / "x")}
    entry = mount_entry(project, "g", "global", "rw", env)
    assert Path(entry.path).is_absolute() and mount_dir(project, entry) == tmp_path / "x" / "zpm" / "kb" / "g"


def test_manifest_write_failure_removes_the_tmp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    init(tmp_path)
    project = Project(tmp_path)
    write_manifest(project, [])
    before = project.manifest_path.read_text()

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("simulated")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_manifest(project, [mount_entry(project, "m", "project", "rw")])
    assert project.manifest_path.read_text() == before
    assert not (tmp_path / ".zpm" / "mounts.json.tmp").exists()


def test_missing_manifest_reads_as_absent(tmp_path: Path) -> None:
    init(tmp_path)
    manifest = read_manifest(Project(tmp_path))
    assert manifest.mounts is None and not manifest.usable and manifest.problems == ()


@pytest.mark.parametrize(
    "text",
    ["{not json", '{"version": 2, "mounts": []}', "[]", '{"mounts": []}', '{"version": 1, "mounts": {}}'],
)
def test_unusable_manifest_is_ignored_with_a_warning_and_not_rewritten(tmp_path: Path, text: str) -> None:
    init(tmp_path)
    project = Project(tmp_path)
    project.manifest_path.write_text(text)
    manifest = read_manifest(project)
    assert manifest.mounts is None and len(manifest.problems) == 1 and "ignoring" in manifest.problems[0]
    assert project.manifest_path.read_text() == text


def test_malformed_entries_are_skipped_with_a_warning(tmp_path: Path) -> None:
    init(tmp_path)
    project = Project(tmp_path)
    entries = [
        {"name": "good", "path": ".zpm/kb/good", "scope": "project", "mode": "ro"},
        {"name": "bad mode", "path": "x", "scope": "project", "mode": "rw"},
        {"name": "m", "path": "x", "scope": "galaxy", "mode": "rw"},
        {"name": "n", "path": "x", "scope": "project", "mode": "rwx"},
        "not an object",
    ]
    project.manifest_path.write_text(json.dumps({"version": 1, "mounts": entries}))
    manifest = read_manifest(project)
    assert manifest.mounts == (Mount("good", ".zpm/kb/good", "project", "ro"),)
    assert len(manifest.problems) == 4


def test_default_entry_only_carries_a_mode(tmp_path: Path) -> None:
    project = Project(tmp_path)
    assert mount_entry(project, "default", "global", "ro") == Mount("default", ".zpm/kb", "project", "ro")


def test_with_and_without_mount() -> None:
    a = Mount("a", ".zpm/kb/a", "project", "rw")
    b = Mount("b", ".zpm/kb/b", "project", "rw")
    a_ro = Mount("a", ".zpm/kb/a", "project", "ro")
    assert with_mount([a, b], a_ro) == [a_ro, b]
    assert with_mount([a], b) == [a, b]
    assert without_mount([a, b], "a") == [b]
    assert without_mount([b], "a") == [b]


def test_first_boot_manifest_lists_every_project_memory_rw(tmp_path: Path) -> None:
    init(tmp_path)
    project = Project(tmp_path)
    create_memory_dir(project, "beta", "project")
    create_memory_dir(project, "alpha", "project")
    assert first_boot_mounts(project) == [
        Mount("alpha", ".zpm/kb/alpha", "project", "rw"),
        Mount("beta", ".zpm/kb/beta", "project", "rw"),
    ]
