"""The memory tools (spec §4.26-§4.29, §7; quipu/logic/memory_tools.py) on real project folders and
a real engine: the seed document's examples, the R- rules of those sections, mounts carried across
a restart by the manifest, and the OverviewSource over the runtime."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quipu.logic import project
from quipu.logic.knowledge import KnowledgeService, ToolResult
from quipu.logic.memory_tools import TOOL_NAMES, MemoryService, RuntimeOverview
from quipu.logic.persistence_tools import PersistenceService
from quipu.logic.refactor import RefactorService
from quipu.logic.runtime import LogicRuntime
from tests.logic.runtime_support import Session, Warnings, journal_lines, root

__all__ = ["root"]  # fixtures

SEED = Path(__file__).parent / "seed_examples.json"


def seed_example(key: str) -> dict[str, Any]:
    examples = json.loads(SEED.read_text(encoding="utf-8"))["examples"]
    found = [e for e in examples if e["key"] == key]
    assert len(found) == 1, key
    example: dict[str, Any] = found[0]
    return example


class MemorySession(Session):
    """A Session with the memory tools, global memories under ``xdg``."""

    def __init__(self, root: Path, xdg: Path) -> None:
        self.root = root
        self.env = {"XDG_DATA_HOME": str(xdg), "HOME": str(xdg.parent)}
        self.warnings = Warnings()
        self.runtime = LogicRuntime.open(root, warn=self.warnings, env=self.env)
        self.kb = KnowledgeService(
            self.runtime.engine, self.runtime.memories, self.runtime.journal_sink, lock=self.runtime.lock
        )
        self.persistence = PersistenceService(self.runtime)
        self.memory = MemoryService(self.runtime)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        if self.memory.handles(tool):
            return self.memory.call(tool, arguments)
        return super().call(tool, arguments)

    def listing(self) -> list[dict[str, Any]]:
        value = json.loads(self.ok("list_memories"))
        assert isinstance(value, dict) and list(value) == ["memories"]
        memories: list[dict[str, Any]] = value["memories"]
        return memories


@pytest.fixture
def xdg(tmp_path: Path) -> Path:
    folder = tmp_path / "xdg"
    folder.mkdir()
    return folder


@pytest.fixture
def ms(root: Path, xdg: Path) -> Iterator[MemorySession]:
    s = MemorySession(root, xdg)
    try:
        yield s
    finally:
        s.close()


def reopen(s: MemorySession) -> MemorySession:
    s.close()
    return MemorySession(s.root, Path(s.env["XDG_DATA_HOME"]))


def manifest(root: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((root / ".zpm" / "mounts.json").read_text(encoding="utf-8"))
    return value


def entries(root: Path) -> list[dict[str, str]]:
    mounts: list[dict[str, str]] = manifest(root)["mounts"]
    return mounts


def check(result: ToolResult, text: str, is_error: bool) -> None:
    assert (result.text, result.is_error) == (text, is_error)


# ---------------------------------------------------------------------------- dispatch


def test_the_service_runs_exactly_the_four_memory_tools(ms: MemorySession) -> None:
    assert TOOL_NAMES == ("create_memory", "mount_memory", "unmount_memory", "list_memories")
    assert all(ms.memory.handles(name) for name in TOOL_NAMES)
    assert not ms.memory.handles("remember_fact")
    with pytest.raises(KeyError):
        ms.memory.call("remember_fact", {"fact": "a"})


def test_arguments_that_are_not_an_object_are_invalid(ms: MemorySession) -> None:
    for tool in TOOL_NAMES:
        check(ms.memory.call(tool, ["feature_auth"]), "InvalidArguments", True)


def test_named_methods_run_their_tool(ms: MemorySession) -> None:
    assert ms.memory.create_memory({"name": "a"}).text == "Created memory 'a' (project scope)"
    assert ms.memory.mount_memory({"name": "a"}).text == "Mounted memory 'a' (rw)"
    assert ms.memory.unmount_memory({"name": "a"}).text == "Unmounted memory 'a'"
    assert not ms.memory.list_memories().is_error


# ---------------------------------------------------------------------------- seed examples


def test_seed_create_memory(ms: MemorySession) -> None:
    example = seed_example("create_memory#1")
    check(ms.call("create_memory", example["arguments"]), example["text"], example["is_error"])


@pytest.mark.parametrize(
    "arguments",
    [{}, {"name": None}, {"name": ""}, {"name": 3}, {"name": "Feature"}, {"name": "feature-auth"},
     {"name": "1x"}, {"name": "feature auth"}, {"name": "_x"}, {"name": "project:feature_auth"}],
)  # fmt: skip
def test_seed_create_memory_invalid_arguments(ms: MemorySession, arguments: dict[str, Any]) -> None:
    example = seed_example("create_memory#2")
    check(ms.call("create_memory", arguments), example["text"], True)
    assert sorted(p.name for p in (ms.root / ".zpm" / "kb").iterdir()) == []


def test_seed_create_memory_already_exists(ms: MemorySession) -> None:
    example = seed_example("create_memory#3")
    ms.ok("create_memory", example["arguments"])
    before = (ms.root / ".zpm" / "mounts.json").read_bytes()
    check(ms.call("create_memory", example["arguments"]), example["text"], True)
    assert (ms.root / ".zpm" / "mounts.json").read_bytes() == before


def test_seed_mount_memory(ms: MemorySession) -> None:
    example = seed_example("mount_memory#1")
    ms.ok("create_memory", {"name": "feature_auth"})
    check(ms.call("mount_memory", example["arguments"]), example["text"], example["is_error"])


@pytest.mark.parametrize(
    "arguments",
    [{}, {"name": None}, {"name": ""}, {"name": ["feature_auth"]}, {"name": "Feature_auth"},
     {"name": "feature-auth"}, {"name": "project:"}, {"name": "global:Bad"}, {"name": "other:feature_auth"}],
)  # fmt: skip
def test_seed_mount_memory_invalid_arguments(ms: MemorySession, arguments: dict[str, Any]) -> None:
    example = seed_example("mount_memory#2")
    ms.ok("create_memory", {"name": "feature_auth"})
    check(ms.call("mount_memory", arguments), example["text"], True)
    assert ms.runtime.mounted("feature_auth") is None


def test_seed_mount_memory_already_mounted(ms: MemorySession) -> None:
    example = seed_example("mount_memory#3")
    ms.ok("create_memory", {"name": "feature_auth"})
    ms.ok("mount_memory", example["arguments"])
    check(ms.call("mount_memory", example["arguments"]), example["text"], True)
    check(ms.call("mount_memory", {"name": "feature_auth", "mode": "ro"}), example["text"], True)
    assert ms.runtime.memories.mode("feature_auth") == "rw"


def test_seed_unmount_memory(ms: MemorySession) -> None:
    example = seed_example("unmount_memory#1")
    ms.ok("create_memory", {"name": "feature_auth"})
    ms.ok("mount_memory", {"name": "feature_auth"})
    check(ms.call("unmount_memory", example["arguments"]), example["text"], example["is_error"])


@pytest.mark.parametrize(
    "arguments", [{}, {"name": None}, {"name": ""}, {"name": 1.5}, {"name": "Feature"}, {"name": "a.b"}]
)
def test_seed_unmount_memory_invalid_arguments(ms: MemorySession, arguments: dict[str, Any]) -> None:
    example = seed_example("unmount_memory#2")
    check(ms.call("unmount_memory", arguments), example["text"], True)


def test_seed_unmount_memory_default(ms: MemorySession) -> None:
    example = seed_example("unmount_memory#3")
    check(ms.call("unmount_memory", {"name": "default"}), example["text"], True)  # R-M1
    assert ms.runtime.mounted("default") is not None
    assert ms.ok("remember_fact", {"fact": "still(here)"}) == "Asserted: still(here)"


def test_seed_list_memories(ms: MemorySession) -> None:
    example = seed_example("list_memories#1")
    ms.ok("create_memory", {"name": "feature_auth", "scope": "project"})
    check(ms.call("list_memories", example["arguments"]), example["text"], example["is_error"])


def test_seed_list_memories_discovery_failure(ms: MemorySession, xdg: Path) -> None:
    # Discovery of the global memory directories fails: their directory is a symlink loop.
    example = seed_example("list_memories#2")
    (xdg / "zpm").mkdir()
    (xdg / "zpm" / "kb").symlink_to(xdg / "zpm" / "kb")
    check(ms.call("list_memories", example["arguments"]), example["text"], True)


def test_list_memories_after_the_runtime_closed_is_execution_failed(ms: MemorySession) -> None:
    ms.runtime.close()
    for tool, arguments in (("list_memories", {}), ("create_memory", {"name": "x"})):
        check(ms.call(tool, arguments), "ExecutionFailed", True)
    assert not (ms.root / ".zpm" / "kb" / "x").exists()


# ---------------------------------------------------------------------------- create_memory


def test_r_cm1_creates_the_directory_and_a_knowledge_file_with_only_the_module_header(
    ms: MemorySession,
) -> None:
    ms.ok("create_memory", {"name": "feature_auth"})
    directory = ms.root / ".zpm" / "kb" / "feature_auth"
    assert sorted(p.name for p in directory.iterdir()) == ["knowledge.pl"]
    assert (directory / "knowledge.pl").read_bytes() == b":- module(feature_auth, []).\n"


def test_r_cm2_create_does_not_mount_but_adds_an_rw_manifest_entry(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "feature_auth"})
    assert ms.runtime.mounted("feature_auth") is None
    check(
        ms.call("remember_fact", {"fact": "a(1)", "memory": "feature_auth"}),
        "Memory not mounted: feature_auth",
        True,
    )
    assert entries(ms.root) == [
        {"name": "feature_auth", "path": ".zpm/kb/feature_auth", "scope": "project", "mode": "rw"}
    ]
    assert {"name": "feature_auth", "scope": "project", "mounted": False, "mode": None} in ms.listing()
    again = reopen(ms)  # the next start mounts it
    try:
        assert again.runtime.memories.mode("feature_auth") == "rw"
        assert again.ok("remember_fact", {"fact": "a(1)", "memory": "feature_auth"}) == "Asserted: a(1)"
    finally:
        again.close()


def test_create_memory_default_already_exists(ms: MemorySession) -> None:
    for scope in ("project", "global"):
        check(
            ms.call("create_memory", {"name": "default", "scope": scope}),
            "Memory 'default' already exists",
            True,
        )
    assert not (ms.root / ".zpm" / "kb" / "default").exists()


@pytest.mark.parametrize("name", ["user", "system", "lists", "apply", "quipu_logic", "quipu_knowledge"])
def test_create_memory_refuses_engine_and_library_module_names(ms: MemorySession, name: str) -> None:
    check(ms.call("create_memory", {"name": name}), "InvalidArguments", True)  # §10.4
    assert not (ms.root / ".zpm" / "kb" / name).exists()
    assert not (ms.root / ".zpm" / "mounts.json").read_text(encoding="utf-8").count(name)


@pytest.mark.parametrize("scope", ["", "Project", "local", 1, True])
def test_create_memory_with_a_scope_other_than_project_or_global_is_invalid(
    ms: MemorySession, scope: Any
) -> None:
    check(ms.call("create_memory", {"name": "x", "scope": scope}), "InvalidArguments", True)
    assert not (ms.root / ".zpm" / "kb" / "x").exists()


def test_create_memory_null_scope_is_project_and_extra_arguments_are_ignored(ms: MemorySession) -> None:
    assert (
        ms.ok("create_memory", {"name": "x", "scope": None, "extra": 1})
        == "Created memory 'x' (project scope)"
    )


def test_create_memory_global_scope_under_xdg_data_home(ms: MemorySession, xdg: Path) -> None:
    # §7.2: $XDG_DATA_HOME/zpm/kb/<name>/, missing parents created.
    assert (
        ms.ok("create_memory", {"name": "shared", "scope": "global"})
        == "Created memory 'shared' (global scope)"
    )
    directory = xdg / "zpm" / "kb" / "shared"
    assert (directory / "knowledge.pl").read_text(encoding="utf-8") == ":- module(shared, []).\n"
    assert not (ms.root / ".zpm" / "kb" / "shared").exists()
    # R-M4: the path of a global memory is absolute.
    assert entries(ms.root) == [{"name": "shared", "path": str(directory), "scope": "global", "mode": "rw"}]
    check(
        ms.call("create_memory", {"name": "shared", "scope": "global"}),
        "Memory 'shared' already exists",
        True,
    )
    # The same name in the project scope is another memory.
    assert ms.ok("create_memory", {"name": "shared"}) == "Created memory 'shared' (project scope)"
    # ... and does not take over the manifest entry of the global one.
    assert entries(ms.root) == [{"name": "shared", "path": str(directory), "scope": "global", "mode": "rw"}]


def test_global_scope_from_the_process_environment(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "env-xdg"
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    with LogicRuntime.open(root, warn=lambda _m: None) as runtime:
        service = MemoryService(runtime)
        assert (
            service.call("create_memory", {"name": "g", "scope": "global"}).text
            == "Created memory 'g' (global scope)"
        )
        assert (xdg / "zpm" / "kb" / "g" / "knowledge.pl").is_file()
        assert service.call("mount_memory", {"name": "g"}).text == "Mounted memory 'g' (rw)"
        assert runtime.memories.get("g") is not None
        memories = json.loads(service.call("list_memories").text)["memories"]
        assert memories[-1] == {"name": "g", "scope": "global", "mounted": True, "mode": "rw"}


def test_create_memory_fails_cleanly_when_the_manifest_cannot_be_written(ms: MemorySession) -> None:
    manifest_path = ms.root / ".zpm" / "mounts.json"
    manifest_path.unlink()
    manifest_path.mkdir()  # the manifest's rename target is a directory: the write fails
    check(ms.call("create_memory", {"name": "x"}), "ExecutionFailed", True)
    assert not (ms.root / ".zpm" / "kb" / "x").exists()  # the directory is removed again
    assert ms.warnings.mention("cannot write")
    assert not (ms.root / ".zpm" / "mounts.json.tmp").exists()


# ---------------------------------------------------------------------------- mount_memory


def test_mount_memory_default_mode_is_rw_and_mode_ro_is_kept(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("create_memory", {"name": "b"})
    assert ms.ok("mount_memory", {"name": "a", "mode": None}) == "Mounted memory 'a' (rw)"
    assert ms.ok("mount_memory", {"name": "b", "mode": "ro"}) == "Mounted memory 'b' (ro)"
    assert ms.runtime.memories.mode("a") == "rw"
    assert ms.runtime.memories.mode("b") == "ro"


@pytest.mark.parametrize("mode", ["", "RW", "read-only", "w", 1, False])
def test_mount_memory_with_a_mode_other_than_rw_or_ro_is_invalid(ms: MemorySession, mode: Any) -> None:
    ms.ok("create_memory", {"name": "a"})
    check(ms.call("mount_memory", {"name": "a", "mode": mode}), "InvalidArguments", True)
    assert ms.runtime.mounted("a") is None


def test_mount_memory_default_is_always_already_mounted(ms: MemorySession) -> None:
    check(ms.call("mount_memory", {"name": "default"}), "Memory 'default' is already mounted", True)


def test_mount_memory_that_does_not_exist(ms: MemorySession) -> None:
    check(ms.call("mount_memory", {"name": "nope"}), "Memory 'nope' does not exist", True)
    check(ms.call("mount_memory", {"name": "global:nope"}), "Memory 'nope' does not exist", True)
    ms.ok("create_memory", {"name": "here"})
    check(ms.call("mount_memory", {"name": "global:here"}), "Memory 'here' does not exist", True)
    (ms.root / ".zpm" / "kb" / "afile").write_text("x", encoding="utf-8")
    check(ms.call("mount_memory", {"name": "afile"}), "Memory 'afile' does not exist", True)
    assert [e["name"] for e in entries(ms.root)] == ["here"]


def test_mount_memory_refuses_library_module_names(ms: MemorySession) -> None:
    (ms.root / ".zpm" / "kb" / "lists").mkdir()  # made by hand: create_memory refuses it
    check(ms.call("mount_memory", {"name": "lists"}), "InvalidArguments", True)
    assert ms.runtime.mounted("lists") is None


def test_r_mm1_unqualified_names_resolve_to_the_only_scope_they_exist_in(
    ms: MemorySession, xdg: Path
) -> None:
    ms.ok("create_memory", {"name": "g", "scope": "global"})
    ms.ok("remember_fact", {"fact": "marker(default)"})
    assert ms.ok("mount_memory", {"name": "g"}) == "Mounted memory 'g' (rw)"
    mounted = ms.runtime.mounted("g")
    assert mounted is not None and mounted.scope == "global"
    assert mounted.paths.directory == xdg / "zpm" / "kb" / "g"


def test_r_mm1_a_name_in_both_scopes_is_ambiguous_unless_qualified(ms: MemorySession, xdg: Path) -> None:
    ms.ok("create_memory", {"name": "both"})
    ms.ok("create_memory", {"name": "both", "scope": "global"})
    (ms.root / ".zpm" / "kb" / "both" / "knowledge.pl").write_text(":- module(both, []).\nwhere(project).\n")
    (xdg / "zpm" / "kb" / "both" / "knowledge.pl").write_text(":- module(both, []).\nwhere(global).\n")
    check(
        ms.call("mount_memory", {"name": "both"}),
        "Memory 'both' is ambiguous. Use 'project:both' or 'global:both'",
        True,
    )
    assert ms.ok("mount_memory", {"name": "global:both", "mode": "ro"}) == "Mounted memory 'both' (ro)"
    assert ms.rows("where(X)", "both") == [{"X": "global"}]
    check(ms.call("mount_memory", {"name": "project:both"}), "Memory 'both' is already mounted", True)
    assert entries(ms.root)[-1] == {
        "name": "both",
        "path": str(xdg / "zpm" / "kb" / "both"),
        "scope": "global",
        "mode": "ro",
    }
    ms.ok("unmount_memory", {"name": "both"})
    assert ms.ok("mount_memory", {"name": "project:both"}) == "Mounted memory 'both' (rw)"
    assert ms.rows("where(X)", "both") == [{"X": "project"}]
    listing = ms.listing()
    assert {"name": "both", "scope": "project", "mounted": True, "mode": "rw"} in listing
    assert {"name": "both", "scope": "global", "mounted": False, "mode": None} in listing


def test_r_mm2_mount_loads_knowledge_file_then_newest_snapshot_then_journal(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "notes"})
    knowledge = ms.root / ".zpm" / "kb" / "notes" / "knowledge.pl"
    knowledge.write_text(":- module(notes, []).\nseeded(1).\nlater(0).\n", encoding="utf-8")
    ms.ok("mount_memory", {"name": "notes"})
    assert ms.rows("seeded(X)", "notes") == [{"X": 1}]  # R-M3: the header is not executed
    ms.ok("remember_fact", {"fact": "later(1)", "memory": "notes"})
    ms.ok("save_snapshot", {"name": "snap", "memory": "notes"})  # later/1: 0, 1
    ms.ok("remember_fact", {"fact": "later(2)", "memory": "notes"})  # journal only
    ms.ok("unmount_memory", {"name": "notes"})
    assert ms.call("query_logic", {"goal": "later(X)", "memory": "notes"}).text == "Memory not mounted: notes"
    ms.ok("mount_memory", {"name": "notes"})
    # The snapshot's later/1 replaced the seed's (no later(0) twice), the journal added later(2).
    assert ms.rows("later(X)", "notes") == [{"X": 0}, {"X": 1}, {"X": 2}]
    assert ms.rows("seeded(X)", "notes") == [{"X": 1}]
    assert ms.rows("later(X)") == []  # R-M1: isolated from default


def test_r_mm2_mounting_an_empty_or_missing_knowledge_file_works(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "empty"})
    ms.ok("create_memory", {"name": "gone"})
    (ms.root / ".zpm" / "kb" / "empty" / "knowledge.pl").write_text("", encoding="utf-8")
    (ms.root / ".zpm" / "kb" / "gone" / "knowledge.pl").unlink()
    assert ms.ok("mount_memory", {"name": "empty"}) == "Mounted memory 'empty' (rw)"
    assert ms.ok("mount_memory", {"name": "gone"}) == "Mounted memory 'gone' (rw)"
    assert ms.ok("remember_fact", {"fact": "x(1)", "memory": "gone"}) == "Asserted: x(1)"


def test_r_m6_mount_adds_or_updates_the_manifest_entry(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("create_memory", {"name": "b"})
    ms.ok("mount_memory", {"name": "b", "mode": "ro"})  # updates b's rw entry from create
    assert entries(ms.root) == [
        {"name": "a", "path": ".zpm/kb/a", "scope": "project", "mode": "rw"},
        {"name": "b", "path": ".zpm/kb/b", "scope": "project", "mode": "ro"},
    ]
    ms.ok("unmount_memory", {"name": "b"})
    ms.ok("mount_memory", {"name": "b"})  # added again at the end
    assert [(e["name"], e["mode"]) for e in entries(ms.root)] == [("a", "rw"), ("b", "rw")]


def test_r_m4_manifest_text_is_pretty_printed_with_two_spaces(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("mount_memory", {"name": "a", "mode": "ro"})
    text = (ms.root / ".zpm" / "mounts.json").read_text(encoding="utf-8")
    assert text == (
        "{\n"
        '  "version": 1,\n'
        '  "mounts": [\n'
        "    {\n"
        '      "name": "a",\n'
        '      "path": ".zpm/kb/a",\n'
        '      "scope": "project",\n'
        '      "mode": "ro"\n'
        "    }\n"
        "  ]\n"
        "}\n"
    )
    assert not (ms.root / ".zpm" / "mounts.json.tmp").exists()


def test_r_m5_an_ignored_manifest_is_overwritten_at_the_next_mount_change(root: Path, xdg: Path) -> None:
    proj = project.Project(root)
    project.create_memory_dir(proj, "kept", "project")
    (root / ".zpm" / "mounts.json").write_text("{not json", encoding="utf-8")
    s = MemorySession(root, xdg)
    try:
        assert s.warnings.mention("ignoring")
        assert s.runtime.mounted("kept") is None  # nothing extra mounted
        assert (root / ".zpm" / "mounts.json").read_text(encoding="utf-8") == "{not json"
        s.ok("mount_memory", {"name": "kept", "mode": "ro"})
        assert manifest(root) == {
            "version": 1,
            "mounts": [{"name": "kept", "path": ".zpm/kb/kept", "scope": "project", "mode": "ro"}],
        }
    finally:
        s.close()


def test_mount_memory_fails_cleanly_when_the_manifest_cannot_be_written(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    manifest_path = ms.root / ".zpm" / "mounts.json"
    manifest_path.unlink()
    manifest_path.mkdir()
    check(ms.call("mount_memory", {"name": "a"}), "ExecutionFailed", True)
    assert ms.runtime.mounted("a") is None
    assert ms.call("query_logic", {"goal": "x", "memory": "a"}).text == "Memory not mounted: a"


# ---------------------------------------------------------------------------- read-only mounts (R-M8)


def test_r_m8_a_read_only_mount_refuses_every_write_and_writes_nothing(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "lib"})
    directory = ms.root / ".zpm" / "kb" / "lib"
    (directory / "knowledge.pl").write_text(":- module(lib, []).\nbook(sicp).\n", encoding="utf-8")
    ms.ok("mount_memory", {"name": "lib", "mode": "ro"})
    before = sorted((p.name, p.read_bytes()) for p in directory.iterdir())
    writes: list[tuple[str, dict[str, Any]]] = [
        ("remember_fact", {"fact": "book(taocp)"}),
        ("define_rule", {"head": "classic(X)", "body": "book(X)"}),
        ("forget_fact", {"fact": "book(sicp)"}),
        ("clear_context", {"category": "book(_)"}),
        ("update_fact", {"old_fact": "book(sicp)", "new_fact": "book(htdp)"}),
        ("upsert_fact", {"fact": "book(htdp)"}),
        ("save_snapshot", {"name": "s"}),
        ("restore_snapshot", {"name": "s"}),
    ]
    for tool, arguments in writes:
        check(ms.call(tool, {**arguments, "memory": "lib"}), "Memory is read-only", True)
    assert ms.rows("book(X)", "lib") == [{"X": "sicp"}]  # reads work
    assert sorted((p.name, p.read_bytes()) for p in directory.iterdir()) == before  # no journal.wal
    assert journal_lines(ms.runtime.project.journal_path) == []


def test_a_read_only_mount_loads_the_snapshot_and_journal_written_while_it_was_rw(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "lib"})
    ms.ok("mount_memory", {"name": "lib"})
    ms.ok("remember_fact", {"fact": "book(a)", "memory": "lib"})
    ms.ok("save_snapshot", {"name": "s1", "memory": "lib"})
    ms.ok("remember_fact", {"fact": "book(b)", "memory": "lib"})
    ms.ok("unmount_memory", {"name": "lib"})
    ms.ok("mount_memory", {"name": "lib", "mode": "ro"})
    assert ms.rows("book(X)", "lib") == [{"X": "a"}, {"X": "b"}]


# ---------------------------------------------------------------------------- unmount_memory


def test_unmount_memory_not_mounted(ms: MemorySession) -> None:
    check(ms.call("unmount_memory", {"name": "nope"}), "Memory not mounted: nope", True)
    ms.ok("create_memory", {"name": "made"})  # exists, in the manifest, but not mounted
    check(ms.call("unmount_memory", {"name": "made"}), "Memory not mounted: made", True)
    assert [e["name"] for e in entries(ms.root)] == ["made"]


def test_r_um1_unmount_drops_the_clauses_keeps_the_directory_and_removes_the_manifest_entry(
    ms: MemorySession,
) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("create_memory", {"name": "b"})
    ms.ok("mount_memory", {"name": "a"})
    ms.ok("remember_fact", {"fact": "fact_of(a)", "memory": "a"})
    ms.ok("define_rule", {"head": "from_a(X)", "body": "a:fact_of(X)"})
    assert ms.rows("from_a(X)") == [{"X": "a"}]
    journal = ms.root / ".zpm" / "kb" / "a" / "journal.wal"
    assert [e["clause"] for e in journal_lines(journal)] == ["fact_of(a)"]  # already durable
    assert ms.ok("unmount_memory", {"name": "a"}) == "Unmounted memory 'a'"
    assert "a" not in ms.runtime.engine.memories()
    check(ms.call("query_logic", {"goal": "fact_of(X)", "memory": "a"}), "Memory not mounted: a", True)
    assert ms.rows("from_a(X)") == []  # R-M2: a rule body's goal on an unmounted memory fails
    assert (ms.root / ".zpm" / "kb" / "a" / "knowledge.pl").is_file()
    assert [e["clause"] for e in journal_lines(journal)] == ["fact_of(a)"]
    assert [e["name"] for e in entries(ms.root)] == ["b"]
    assert {"name": "a", "scope": "project", "mounted": False, "mode": None} in ms.listing()
    # Mounting again brings the journaled state back.
    ms.ok("mount_memory", {"name": "a"})
    assert ms.rows("fact_of(X)", "a") == [{"X": "a"}]


def test_unmount_memory_fails_cleanly_when_the_manifest_cannot_be_written(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("mount_memory", {"name": "a"})
    manifest_path = ms.root / ".zpm" / "mounts.json"
    manifest_path.unlink()
    manifest_path.mkdir()
    check(ms.call("unmount_memory", {"name": "a"}), "ExecutionFailed", True)
    assert ms.runtime.memories.mode("a") == "rw"  # nothing changed
    assert ms.ok("remember_fact", {"fact": "x(1)", "memory": "a"}) == "Asserted: x(1)"


# ---------------------------------------------------------------------------- restarts (R-M6)


def test_r_m6_mounts_and_modes_survive_a_runtime_restart(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "rwmem"})
    ms.ok("create_memory", {"name": "romem"})
    ms.ok("create_memory", {"name": "gone"})
    ms.ok("create_memory", {"name": "shared", "scope": "global"})
    ms.ok("mount_memory", {"name": "rwmem"})
    ms.ok("mount_memory", {"name": "romem", "mode": "ro"})
    ms.ok("mount_memory", {"name": "shared"})
    ms.ok("mount_memory", {"name": "gone"})
    ms.ok("remember_fact", {"fact": "kept(1)", "memory": "rwmem"})
    ms.ok("remember_fact", {"fact": "global_fact(1)", "memory": "shared"})
    ms.ok("unmount_memory", {"name": "gone"})
    s = reopen(ms)
    try:
        assert s.runtime.memories.names() == ["default", "rwmem", "romem", "shared"]
        assert [s.runtime.memories.mode(n) for n in ("rwmem", "romem", "shared", "gone")] == [
            "rw",
            "ro",
            "rw",
            None,
        ]
        assert s.rows("kept(X)", "rwmem") == [{"X": 1}]
        assert s.rows("global_fact(X)", "shared") == [{"X": 1}]
        check(s.call("remember_fact", {"fact": "x(1)", "memory": "romem"}), "Memory is read-only", True)
        assert s.listing() == [
            {"name": "default", "scope": "project", "mounted": True, "mode": "rw"},
            {"name": "gone", "scope": "project", "mounted": False, "mode": None},
            {"name": "romem", "scope": "project", "mounted": True, "mode": "ro"},
            {"name": "rwmem", "scope": "project", "mounted": True, "mode": "rw"},
            {"name": "shared", "scope": "global", "mounted": True, "mode": "rw"},
        ]
    finally:
        s.close()


def test_an_engine_restart_keeps_a_memory_mounted_by_the_tool(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("mount_memory", {"name": "a"})
    ms.ok("remember_fact", {"fact": "survives(1)", "memory": "a"})
    ms.runtime.engine.restart()
    assert ms.rows("survives(X)", "a") == [{"X": 1}]


# ---------------------------------------------------------------------------- list_memories (R-LM1)


def test_r_lm1_default_first_then_project_then_global_each_sorted(ms: MemorySession, xdg: Path) -> None:
    for name in ("zeta", "alpha"):
        ms.ok("create_memory", {"name": name})
    for name in ("zeta", "beta", "alpha"):
        ms.ok("create_memory", {"name": name, "scope": "global"})
    ms.ok("mount_memory", {"name": "global:beta", "mode": "ro"})
    ms.ok("mount_memory", {"name": "project:zeta"})
    (ms.root / ".zpm" / "kb" / "default").mkdir()  # a stray default/ is ignored (§7.2)
    (ms.root / ".zpm" / "kb" / "NotAMemory").mkdir()
    (ms.root / ".zpm" / "kb" / "file.pl").write_text("x(1).\n", encoding="utf-8")
    text = ms.ok("list_memories", {"ignored": True})
    assert text == (
        '{"memories":['
        '{"name":"default","scope":"project","mounted":true,"mode":"rw"},'
        '{"name":"alpha","scope":"project","mounted":false,"mode":null},'
        '{"name":"zeta","scope":"project","mounted":true,"mode":"rw"},'
        '{"name":"alpha","scope":"global","mounted":false,"mode":null},'
        '{"name":"beta","scope":"global","mounted":true,"mode":"ro"},'
        '{"name":"zeta","scope":"global","mounted":false,"mode":null}'
        "]}"
    )


def test_list_memories_shows_default_read_only_when_the_manifest_says_so(root: Path, xdg: Path) -> None:
    proj = project.Project(root)
    project.write_manifest(proj, [project.mount_entry(proj, "default", "project", "ro")])
    s = MemorySession(root, xdg)
    try:
        assert s.listing() == [{"name": "default", "scope": "project", "mounted": True, "mode": "ro"}]
        s.ok("create_memory", {"name": "a"})
        assert [(e["name"], e["mode"]) for e in entries(root)] == [("default", "ro"), ("a", "rw")]
    finally:
        s.close()


def test_list_memories_lists_a_mounted_memory_whose_directory_is_gone(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("mount_memory", {"name": "a", "mode": "ro"})
    directory = ms.root / ".zpm" / "kb" / "a"
    (directory / "knowledge.pl").unlink()
    directory.rmdir()
    assert ms.listing()[1:] == [{"name": "a", "scope": "project", "mounted": True, "mode": "ro"}]


def test_list_memories_without_the_global_directory(ms: MemorySession, xdg: Path) -> None:
    assert not (xdg / "zpm").exists()
    assert ms.listing() == [{"name": "default", "scope": "project", "mounted": True, "mode": "rw"}]


# ---------------------------------------------------------------------------- OverviewSource


def test_runtime_overview_feeds_get_kb_overview(ms: MemorySession, xdg: Path) -> None:
    runtime = ms.runtime
    overview = RuntimeOverview(runtime)
    refactor = RefactorService(
        runtime.engine, runtime.memories, runtime.journal_sink, overview, lock=runtime.lock
    )
    ms.ok("create_memory", {"name": "notes"})
    ms.ok("create_memory", {"name": "shared", "scope": "global"})
    ms.ok("mount_memory", {"name": "shared", "mode": "ro"})
    ms.ok("mount_memory", {"name": "notes"})
    ms.ok("remember_fact", {"fact": "a(1)"})
    ms.ok("save_snapshot", {"name": "first"})
    ms.ok("remember_fact", {"fact": "a(2)"})
    ms.ok("remember_fact", {"fact": "a(3)"})
    ms.ok("remember_fact", {"fact": "n(1)", "memory": "notes"})
    ms.ok("save_snapshot", {"name": "zz_notes_only", "memory": "notes"})
    value = json.loads(refactor.call("get_kb_overview", {}).text)
    assert value["snapshots"]["count"] == 1 and value["snapshots"]["latest"] == "first"  # R-O5: default only
    assert value["persistence"] == {"wal_pending": 2, "healthy": True}  # R-O6
    assert value["mounts"] == {  # R-O7: sorted by name
        "available": True,
        "count": 3,
        "items": [
            {"name": "default", "scope": "project", "mode": "rw"},
            {"name": "notes", "scope": "project", "mode": "rw"},
            {"name": "shared", "scope": "global", "mode": "ro"},
        ],
    }
    infos = {m.name: m for m in overview.mounts() or ()}
    assert infos["shared"].path == xdg / "zpm" / "kb" / "shared"
    assert infos["default"].path == ms.root / ".zpm" / "kb"
    assert [s.name for s in overview.snapshots("notes")] == ["zz_notes_only"]  # not knowledge.pl
    assert overview.snapshots("missing") == []
    assert overview.journal_pending("notes") == 0  # rotated by the snapshot
    assert overview.journal_pending("missing") == 0


def test_runtime_overview_in_degraded_mode(root: Path, xdg: Path) -> None:
    data = root / ".zpm" / "data"
    data.rmdir()
    data.write_text("not a directory", encoding="utf-8")  # the journal cannot be opened: degraded
    s = MemorySession(root, xdg)
    try:
        overview = RuntimeOverview(s.runtime)
        assert not overview.persistence_healthy()
        assert overview.journal_pending("default") == 0
    finally:
        s.close()


def test_mount_memory_with_a_closed_engine_is_execution_failed(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.runtime.engine.close()
    check(ms.call("mount_memory", {"name": "a"}), "ExecutionFailed", True)
    assert ms.runtime.mounted("a") is None
    assert [e["name"] for e in entries(ms.root)] == ["a"]


def test_a_broken_clause_in_knowledge_pl_is_skipped_and_the_rest_loads(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "k"})
    knowledge = ms.root / ".zpm" / "kb" / "k" / "knowledge.pl"
    knowledge.write_text(":- module(k, []).\ngood(1).\nbad(( .\ngood(2).\n", encoding="utf-8")
    assert ms.ok("mount_memory", {"name": "k"}) == "Mounted memory 'k' (rw)"
    assert ms.rows("good(X)", "k") == [{"X": 1}, {"X": 2}]
    assert ms.warnings.mention(str(knowledge))


def test_a_memory_whose_journal_cannot_be_opened_mounts_degraded(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "d"})
    (ms.root / ".zpm" / "kb" / "d" / "journal.wal").mkdir()  # R-N7: cannot be opened for appending
    assert ms.ok("mount_memory", {"name": "d"}) == "Mounted memory 'd' (rw)"
    mounted = ms.runtime.mounted("d")
    assert mounted is not None and mounted.status == "degraded"
    assert ms.ok("remember_fact", {"fact": "x(1)", "memory": "d"}) == "Asserted: x(1)"
    check(ms.call("save_snapshot", {"name": "s", "memory": "d"}), "ExecutionFailed", True)


def test_a_manifest_deleted_while_running_is_rebuilt_from_the_mount_table(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("mount_memory", {"name": "a", "mode": "ro"})
    (ms.root / ".zpm" / "mounts.json").unlink()
    ms.ok("create_memory", {"name": "b"})
    assert entries(ms.root) == [
        {"name": "a", "path": ".zpm/kb/a", "scope": "project", "mode": "ro"},
        {"name": "b", "path": ".zpm/kb/b", "scope": "project", "mode": "rw"},
    ]


# ------------------------------------------------------------- R-M2 at the top of a query


def no_solutions() -> tuple[str, bool]:
    """The seed's answer for a query without solutions (query_logic, "Success with No Results")."""
    example = seed_example("query_logic#2")
    assert example["case"] == "Response (Success with No Results)"
    return example["text"], example["is_error"]


def answer(ms: MemorySession, goal: str) -> tuple[str, bool]:
    result = ms.call("query_logic", {"goal": goal})
    return result.text, result.is_error


def test_r_m2_a_top_level_goal_on_a_created_but_unmounted_memory_has_no_solutions(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "made"})
    assert no_solutions() == ("[]", False)
    assert answer(ms, "made:fact_of(X)") == no_solutions()
    assert answer(ms, "made:true") == no_solutions()  # never run: not even a builtin succeeds
    assert answer(ms, "(made:fact_of(X) ; X = 1)") == ('[{"X":1}]', False)
    assert answer(ms, "\\+ made:fact_of(_)") == ("[{}]", False)
    assert answer(ms, "findall(_X, made:fact_of(_X), L)") == ('[{"L":[]}]', False)
    assert answer(ms, "maplist(made:fact_of, [a])") == no_solutions()  # a closure too
    ms.ok("mount_memory", {"name": "made"})
    ms.ok("remember_fact", {"fact": "fact_of(a)", "memory": "made"})
    assert ms.rows("made:fact_of(X)") == [{"X": "a"}]
    assert ms.rows("maplist(made:fact_of, [a])") == [{}]


def test_r_m2_a_top_level_goal_on_an_unmounted_memory_that_held_facts_has_no_solutions(
    ms: MemorySession,
) -> None:
    ms.ok("create_memory", {"name": "a"})
    ms.ok("mount_memory", {"name": "a"})
    ms.ok("remember_fact", {"fact": "fact_of(a)", "memory": "a"})
    assert ms.rows("a:fact_of(X)") == [{"X": "a"}]
    ms.ok("unmount_memory", {"name": "a"})
    assert answer(ms, "a:fact_of(X)") == no_solutions()
    assert answer(ms, "fact_of(X), a:fact_of(X)") == no_solutions()
    ms.ok("mount_memory", {"name": "a"})  # its journal replayed: the same goal answers again
    assert ms.rows("a:fact_of(X)") == [{"X": "a"}]


def test_r_m2_a_top_level_goal_on_a_memory_that_never_existed_has_no_solutions(ms: MemorySession) -> None:
    assert answer(ms, "nowhere:fact_of(X)") == no_solutions()
    assert answer(ms, "nowhere:fact_of(X)") == no_solutions()  # the first query made no module
    assert answer(ms, "'__all__':fact_of(X)") == no_solutions()
    ms.ok("create_memory", {"name": "nowhere"})  # the name is still free
    ms.ok("mount_memory", {"name": "nowhere"})
    ms.ok("remember_fact", {"fact": "fact_of(b)", "memory": "nowhere"})
    assert ms.rows("nowhere:fact_of(X)") == [{"X": "b"}]


def test_r_m2_a_rule_naming_a_memory_before_it_exists_has_no_solutions_until_it_is_mounted(
    ms: MemorySession,
) -> None:
    ms.ok("define_rule", {"head": "from_x(X)", "body": "x:fact_of(X)"})
    assert answer(ms, "from_x(X)") == no_solutions()
    assert answer(ms, "x:fact_of(X)") == no_solutions()
    ms.ok("create_memory", {"name": "x"})  # the rule's reference does not reserve the name
    ms.ok("mount_memory", {"name": "x"})
    ms.ok("remember_fact", {"fact": "fact_of(1)", "memory": "x"})
    assert ms.rows("from_x(X)") == [{"X": 1}]


def test_r_q4_a_refused_goal_stays_refused_under_an_unmounted_memory(ms: MemorySession) -> None:
    engine = ms.runtime.engine
    ms.ok("create_memory", {"name": "a"})
    ms.ok("mount_memory", {"name": "a"})
    ms.ok("unmount_memory", {"name": "a"})
    ms.ok("define_rule", {"head": "boom", "body": "a:halt"})
    process = engine._process  # the engine child must survive
    assert process is not None
    for goal in ("a:halt", "nowhere:halt", "boom", "nowhere:shell(ls)", "a:assertz(x(1))"):
        assert answer(ms, goal) == ("Query execution failed", True), goal
    assert engine._process is process
    assert process.poll() is None
    assert ms.rows("true") == [{}]


def test_r_q4_qualifiers_naming_engine_or_library_modules_are_still_refused(ms: MemorySession) -> None:
    for goal in ("system:true", "user:foo(X)", "lists:append(X, Y, [1])", "quipu_logic:ql_memory(M)"):
        assert answer(ms, goal) == ("Query execution failed", True), goal
    assert answer(ms, "M:fact_of(X)") == ("Query execution failed", True)  # an unbound qualifier
    assert answer(ms, "__all__:fact_of(X)") == ("Query execution failed", True)  # a variable, too


def test_the_memory_argument_still_names_only_mounted_memories(ms: MemorySession) -> None:
    ms.ok("create_memory", {"name": "made"})
    for name in ("made", "nowhere", "__all__"):
        check(
            ms.call("query_logic", {"goal": "fact_of(X)", "memory": name}),
            f"Memory not mounted: {name}",
            True,
        )
