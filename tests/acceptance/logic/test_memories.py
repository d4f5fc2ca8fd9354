"""The seven 0.4.0 tools over stdio (spec logic-memory.md §4.8–§4.10, §4.26–§4.29, §7, §11.3):
memories in project and global scope, read-only refusal, ``__all__`` scans and module-qualified
cross-memory references, rename with a byte-identical dry run, and overview truncation. The global
scope is pointed into the test's folder with ``XDG_DATA_HOME`` (§7.2)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.acceptance.logic.harness import session
from tests.acceptance.logic.steps import Step, fails, ok, ok_json, play, play_live, seed, seeded

BAD = "InvalidArguments"
READ_ONLY = "Memory is read-only"


@pytest.fixture
def xdg(tmp_path: Path) -> dict[str, str]:
    return {"XDG_DATA_HOME": str(tmp_path / "xdg")}


def tree_digest(*roots: Path) -> dict[str, str]:
    """Every file under ``roots``, by path, with the SHA-256 of its bytes."""
    return {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def listing(*items: tuple[str, str, bool, str | None]) -> dict[str, object]:
    return {
        "memories": [
            {"name": name, "scope": scope, "mounted": mounted, "mode": mode}
            for name, scope, mounted, mode in items
        ]
    }


# ---------------------------------------------------------------------------- create, mount, unmount, list


def test_create_mount_unmount_and_list_in_project_and_global_scope(
    project: Path, xdg: dict[str, str]
) -> None:
    global_kb = Path(xdg["XDG_DATA_HOME"]) / "zpm" / "kb"
    play(
        project,
        [
            seeded("create_memory#1"),
            seeded("list_memories#1"),  # created, not mounted (R-CM2)
            seeded("create_memory#3"),
            fails("create_memory", {"name": "default"}, "Memory 'default' already exists"),
            fails("create_memory", {}, seed("create_memory#2")["text"]),
            fails("create_memory", {"name": ""}, BAD),
            fails("create_memory", {"name": "Feature"}, BAD),
            fails("create_memory", {"name": "a/b"}, BAD),
            fails("create_memory", {"name": "lists"}, BAD),  # a library module name (§10.4)
            fails("create_memory", {"name": "x", "scope": "galaxy"}, BAD),
            ok(
                "create_memory",
                {"name": "shared", "scope": "global"},
                "Created memory 'shared' (global scope)",
            ),
            ok("create_memory", {"name": "solo", "scope": "global"}, "Created memory 'solo' (global scope)"),
            ok("create_memory", {"name": "both"}, "Created memory 'both' (project scope)"),
            ok("create_memory", {"name": "both", "scope": "global"}, "Created memory 'both' (global scope)"),
            fails("create_memory", {"name": "shared", "scope": "global"}, "Memory 'shared' already exists"),
            fails(
                "remember_fact",
                {"fact": "task_done(login)", "memory": "feature_auth"},
                "Memory not mounted: feature_auth",
            ),
            seeded("mount_memory#1"),
            seeded("mount_memory#3"),
            fails("mount_memory", {}, seed("mount_memory#2")["text"]),
            fails("mount_memory", {"name": "Bad"}, BAD),
            fails("mount_memory", {"name": "shared", "mode": "rx"}, BAD),
            fails("mount_memory", {"name": "ghost"}, "Memory 'ghost' does not exist"),
            fails(
                "mount_memory",
                {"name": "both"},
                "Memory 'both' is ambiguous. Use 'project:both' or 'global:both'",
            ),
            ok("mount_memory", {"name": "global:both", "mode": "ro"}, "Mounted memory 'both' (ro)"),
            ok("mount_memory", {"name": "shared"}, "Mounted memory 'shared' (rw)"),  # found in global scope
            # The seed's memory-parameter request; then isolation between memories (R-M1).
            ok(
                "remember_fact",
                {"fact": "task_done(login)", "memory": "feature_auth"},
                "Asserted: task_done(login)",
            ),
            ok("remember_fact", {"fact": "task_done(global)", "memory": "shared"}),
            ok_json("query_logic", {"goal": "task_done(X)", "memory": "feature_auth"}, [{"X": "login"}]),
            ok_json("query_logic", {"goal": "task_done(X)"}, []),
            ok_json("query_logic", {"goal": "feature_auth:task_done(X)"}, [{"X": "login"}]),  # R-Q7
            ok_json(
                "list_memories",
                {},
                listing(
                    ("default", "project", True, "rw"),
                    ("both", "project", False, None),
                    ("feature_auth", "project", True, "rw"),
                    ("both", "global", True, "ro"),
                    ("shared", "global", True, "rw"),
                    ("solo", "global", False, None),
                ),
            ),
            seeded("unmount_memory#1"),
            seeded("unmount_memory#3", {"name": "default"}),
            fails("unmount_memory", {"name": "feature_auth"}, "Memory not mounted: feature_auth"),
            fails("unmount_memory", {}, seed("unmount_memory#2")["text"]),
            fails("unmount_memory", {"name": ""}, BAD),
            fails(
                "query_logic", {"goal": "true", "memory": "feature_auth"}, "Memory not mounted: feature_auth"
            ),
        ],
        env=xdg,
    )
    knowledge = project / ".zpm" / "kb" / "feature_auth" / "knowledge.pl"
    assert knowledge.read_text(encoding="utf-8") == ":- module(feature_auth, []).\n"  # R-CM1
    assert (global_kb / "shared" / "knowledge.pl").read_text(encoding="utf-8") == ":- module(shared, []).\n"
    assert (project / ".zpm" / "kb" / "feature_auth" / "journal.wal").read_text().count("\n") == 1
    manifest_text = (project / ".zpm" / "mounts.json").read_text(encoding="utf-8")
    manifest = json.loads(manifest_text)
    assert manifest["version"] == 1 and '\n  "version": 1' in manifest_text  # R-M4: two-space indent
    by_name = {(m["name"], m["scope"]): m for m in manifest["mounts"]}
    assert ("feature_auth", "project") not in by_name  # removed by unmount (R-UM1)
    assert by_name[("shared", "global")]["path"] == str(global_kb / "shared")
    assert by_name[("both", "global")]["mode"] == "ro"
    assert ("both", "project") not in by_name  # one module per name: mounting global:both replaced it
    assert by_name[("solo", "global")] == {
        "name": "solo",
        "path": str(global_kb / "solo"),
        "scope": "global",
        "mode": "rw",
    }
    # The next process mounts what the manifest lists (R-M5), with the recorded modes.
    play(
        project,
        [
            ok_json("query_logic", {"goal": "task_done(X)", "memory": "shared"}, [{"X": "global"}]),
            ok_json(
                "query_logic", {"goal": "true", "memory": "solo"}, [{}]
            ),  # created last time, mounted now
            fails("remember_fact", {"fact": "x(1)", "memory": "both"}, READ_ONLY),
            fails(
                "query_logic", {"goal": "true", "memory": "feature_auth"}, "Memory not mounted: feature_auth"
            ),
            ok("mount_memory", {"name": "feature_auth"}, "Mounted memory 'feature_auth' (rw)"),
            ok_json(
                "query_logic", {"goal": "task_done(X)", "memory": "feature_auth"}, [{"X": "login"}]
            ),  # R-MM2
        ],
        env=xdg,
    )


def test_a_read_only_memory_refuses_every_mutation_and_nothing_is_written(
    project: Path, xdg: dict[str, str]
) -> None:
    with session(project, env=xdg) as served:
        play_live(served, [ok("create_memory", {"name": "archived"})])
        memory = project / ".zpm" / "kb" / "archived"
        (memory / "knowledge.pl").write_text(
            ":- module(archived, []).\nold(a).\nold(b).\nolder(X) :- old(X).\n", encoding="utf-8"
        )
        mounted = ok("mount_memory", {"name": "archived", "mode": "ro"}, "Mounted memory 'archived' (ro)")
        play_live(served, [mounted])
    before = tree_digest(project / ".zpm")
    target = {"memory": "archived"}
    play(
        project,
        [
            fails("remember_fact", {"fact": "old(c)", **target}, READ_ONLY),
            fails("define_rule", {"head": "n(X)", "body": "old(X)", **target}, READ_ONLY),
            fails("forget_fact", {"fact": "old(a)", **target}, READ_ONLY),
            fails("clear_context", {"category": "old(_)", **target}, READ_ONLY),
            fails("update_fact", {"old_fact": "old(a)", "new_fact": "old(z)", **target}, READ_ONLY),
            fails("upsert_fact", {"fact": "old(a)", **target}, READ_ONLY),
            fails("assume_fact", {"fact": "old(q)", "assumption": "maybe", **target}, READ_ONLY),
            fails("retract_assumption", {"assumption": "maybe", **target}, READ_ONLY),
            fails("retract_assumptions", {"pattern": "*", **target}, READ_ONLY),
            fails("save_snapshot", {"name": "s", **target}, READ_ONLY),
            fails("restore_snapshot", {"name": "s", **target}, READ_ONLY),
            fails(
                "rename_predicate",
                {"old_functor": "old", "new_functor": "ancient", **target},
                seed("rename_predicate#5")["text"].replace("archive", "archived"),
            ),
            fails(
                "rename_predicate",
                {"old_functor": "old", "new_functor": "ancient", "dry_run": True, **target},
                "Cannot rename in read-only memory: archived",
            ),
            # Reads work on a read-only memory (R-M8), including its knowledge.pl clauses (R-M3).
            ok_json("query_logic", {"goal": "older(X)", **target}, [{"X": "a"}, {"X": "b"}]),
            ok_json(
                "get_knowledge_schema",
                target,
                {
                    "predicates": [
                        {"name": "old", "arity": 1, "type": "fact", "count": 2},
                        {"name": "older", "arity": 1, "type": "rule", "count": 1},
                    ],
                    "total": 2,
                },
            ),
            ok_json("list_assumptions", target, {"assumptions": []}),
            ok("list_snapshots", target, "Snapshots: []"),
            ok_json("verify_consistency", target, {"violations": []}),
        ],
        env=xdg,
    )
    assert tree_digest(project / ".zpm") == before  # the next process mounted it read-only too


def test_the_manifest_can_mount_the_default_memory_read_only(project: Path, xdg: dict[str, str]) -> None:
    play(project, [ok("remember_fact", {"fact": "kept(yes)"})], env=xdg)
    manifest = {
        "version": 1,
        "mounts": [{"name": "default", "path": ".zpm/kb", "scope": "project", "mode": "ro"}],
    }
    (project / ".zpm" / "mounts.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    play(
        project,
        [
            fails("remember_fact", {"fact": "more(no)"}, READ_ONLY),  # R-M8, default included
            fails("clear_context", {"category": "kept(_)"}, READ_ONLY),
            ok_json("query_logic", {"goal": "kept(X)"}, [{"X": "yes"}]),
            fails("unmount_memory", {"name": "default"}, "Cannot unmount the default memory"),
        ],
        env=xdg,
    )


# ---------------------------------------------------------------------------- __all__ and cross-memory refs


def test_all_scans_and_module_qualified_cross_memory_references(project: Path, xdg: dict[str, str]) -> None:
    play(
        project,
        [ok("create_memory", {"name": name}) for name in ("audit", "reporting", "monitoring")],
        env=xdg,
    )
    play(
        project,
        [
            ok("remember_fact", {"fact": "task_status(f017, done)"}),
            ok("remember_fact", {"fact": "task_status(f025, in_progress)"}),
            ok("define_rule", {"head": "active_work(X)", "body": "task_status(X, in_progress)"}),
            ok("remember_fact", {"fact": "task_status(a1, critical)", "memory": "audit"}),
            ok(
                "define_rule",
                {"head": "critical_tasks(X)", "body": "audit:task_status(X, critical)", "memory": "audit"},
            ),
            ok(
                "define_rule",
                {
                    "head": "check_external(X)",
                    "body": "monitoring:task_status(X, blocked)",
                    "memory": "reporting",
                },
            ),
            ok("define_rule", {"head": "audited(X)", "body": "audit:critical_tasks(X)"}),
            seeded(
                "find_predicate_references#3",
                {
                    "functor": "task_status",
                    "arity": 2,
                    "memory": "__all__",
                    "include_cross_memory_refs": True,
                },
            ),
            ok_json(
                "find_predicate_references",
                {
                    "functor": "task_status",
                    "arity": 2,
                    "memory": "__all__",
                    "include_cross_memory_refs": "false",
                },
                {**json.loads(seed("find_predicate_references#3")["text"]), "cross_memory_refs": []},
            ),
            ok_json(
                "find_predicate_references",
                {"functor": "task_status", "memory": "reporting"},
                {
                    "target": "task_status",
                    "memory": "reporting",
                    "rules": [],
                    "direct_facts_count": 0,
                    "facts_referenced_in_assumptions": [],
                    "cross_memory_refs": [
                        {
                            "head": "check_external(X)",
                            "body": "monitoring:task_status(X, blocked)",
                            "memory": "reporting",
                            "qualifier": "monitoring",
                        }
                    ],
                },
            ),
            fails(
                "find_predicate_references",
                {"functor": "task_status", "memory": "unknown_segment"},
                "Memory not mounted: unknown_segment",
            ),
            # Solve-time resolution of qualified goals, at top level and in rule bodies (R-M2, R-Q7).
            ok_json("query_logic", {"goal": "audited(X)"}, [{"X": "a1"}]),
            ok_json("query_logic", {"goal": "audit:task_status(X, critical)"}, [{"X": "a1"}]),
            ok_json("query_logic", {"goal": "check_external(X)", "memory": "reporting"}, []),
            ok("remember_fact", {"fact": "task_status(m1, blocked)", "memory": "monitoring"}),
            ok_json("query_logic", {"goal": "check_external(X)", "memory": "reporting"}, [{"X": "m1"}]),
            ok("unmount_memory", {"name": "audit"}),
            ok_json("query_logic", {"goal": "audited(X)"}, []),
            Step("find_predicate_references", {"functor": "critical_tasks", "memory": "__all__"}),
        ],
        env=xdg,
    )


def test_a_rule_body_qualified_with_a_name_that_was_never_a_memory_has_no_solutions(project: Path) -> None:
    """Asserting the rule makes the engine create an empty module of that name; it must not count
    as an engine module (which would refuse the goal): R-M2 wants no solutions."""
    play(
        project,
        [
            ok("define_rule", {"head": "ghostly(X)", "body": "never_a_memory:anything(X)"}),
            ok_json("query_logic", {"goal": "ghostly(X)"}, []),
        ],
    )


# ---------------------------------------------------------------------------- rename_predicate


def test_rename_dry_run_leaves_every_file_byte_identical_then_the_real_rename(
    project: Path, xdg: dict[str, str]
) -> None:
    archived = project / ".zpm" / "kb" / "archived" / "knowledge.pl"
    knowledge = (
        ":- module(archived, []).\n"
        "old(X) :- default:task_status(X, a), default:task_status(X, b).\n"
        "older(X) :- default:task_status(X, c).\n"
    )
    rename = {
        "old_functor": "task_status",
        "new_functor": "feature_status",
        "arity": 2,
        "propagate_cross_memory_refs": True,
    }
    # The seed's example, with memory `archive` spelled `archived` (`archive` is a library module, §10.4).
    expected = json.loads(seed("rename_predicate#2")["text"].replace('"archive"', '"archived"'))
    roots = (project / ".zpm", Path(xdg["XDG_DATA_HOME"]))
    dry = {**rename, "dry_run": True}
    # One live process from set-up to the real rename: a restart would reload the rules from the
    # snapshot, whose predicate order (by name) is not their creation order (affected_rule_ids).
    with session(project, env=xdg) as served:
        play_live(served, [ok("create_memory", {"name": n}) for n in ("audit", "reporting", "archived")])
        archived.write_text(knowledge, encoding="utf-8")  # before the mount loads it (R-MM2)
        play_live(
            served,
            [
                ok("mount_memory", {"name": "audit"}),
                ok("mount_memory", {"name": "reporting"}),
                ok("mount_memory", {"name": "archived", "mode": "ro"}),
                *(ok("remember_fact", {"fact": f"task_status(t{i}, open)"}) for i in range(5)),
                ok("define_rule", {"head": "process_work(X)", "body": "task_status(X, open)"}),
                ok("define_rule", {"head": "process_work(X)", "body": "task_status(X, urgent)"}),
                ok("define_rule", {"head": "check_status(Y)", "body": "task_status(Y, _)"}),
                ok(
                    "define_rule",
                    {"head": "audit_open(X)", "body": "default:task_status(X, open)", "memory": "audit"},
                ),
                ok(
                    "define_rule",
                    {"head": "report_a(X)", "body": "default:task_status(X, open)", "memory": "reporting"},
                ),
                ok(
                    "define_rule",
                    {"head": "report_b(X)", "body": "default:task_status(X, done)", "memory": "reporting"},
                ),
                ok("assume_fact", {"fact": "task_status(t0, open)", "assumption": "sprint"}),
                ok("save_snapshot", {"name": "before_rename"}),
                ok("save_snapshot", {"name": "audit_snap", "memory": "audit"}),
                ok("remember_fact", {"fact": "after_snapshot(yes)"}),  # a non-empty journal too
            ],
        )
        before = tree_digest(*roots)
        assert len(before) >= 10
        texts = play_live(
            served,
            [
                ok_json("rename_predicate", dry, expected),
                ok_json(
                    "rename_predicate", {**rename, "dry_run": "true"}, expected
                ),  # CLI-style boolean (R-A2)
                ok_json("query_logic", {"goal": "task_status(X, open)"}, [{"X": f"t{i}"} for i in range(5)]),
                ok_json("query_logic", {"goal": "feature_status(X, _)"}, []),
            ],
        )
        assert tree_digest(*roots) == before  # KB, journals, snapshots, manifest: byte-identical (R-RN5)
        assert texts[0].startswith('{"renamed_facts": 5, ')  # this tool's ", " / ": " separators
        play_live(
            served,
            [
                ok_json("rename_predicate", rename, expected),  # the real run answers what the dry run did
                ok_json("query_logic", {"goal": "process_work(X)"}, [{"X": f"t{i}"} for i in range(5)]),
                ok_json("query_logic", {"goal": "task_status(X, Y)"}, []),
                ok_json(
                    "get_justification", {"assumption": "sprint"}, {"facts": ["feature_status(t0, open)"]}
                ),
                ok_json(
                    "query_logic",
                    {"goal": "report_a(X)", "memory": "reporting"},
                    [{"X": f"t{i}"} for i in range(5)],
                ),
                ok_json(
                    "query_logic", {"goal": "older(X)", "memory": "archived"}, []
                ),  # skipped, never modified
            ],
        )
        assert tree_digest(*roots) != before
    assert archived.read_text(encoding="utf-8").count("default:task_status") == 3
    # The rename is durable in every memory it touched.
    play(
        project,
        [
            ok_json("query_logic", {"goal": "check_status(Y)"}, [{"Y": f"t{i}"} for i in range(5)]),
            ok_json(
                "query_logic",
                {"goal": "audit_open(X)", "memory": "audit"},
                [{"X": f"t{i}"} for i in range(5)],
            ),
            ok(
                "find_predicate_references",
                {"functor": "task_status", "arity": 2},
                '{"target":"task_status/2","memory":"default","rules":[],"direct_facts_count":0,'
                '"facts_referenced_in_assumptions":[],"cross_memory_refs":[]}',
            ),
        ],
        env=xdg,
    )


# ---------------------------------------------------------------------------- get_kb_overview truncation


def test_get_kb_overview_halves_the_sample_size_until_the_text_fits_64_kib(project: Path) -> None:
    padding = "x" * 40
    lines = [f"p{n:02d}(item_{i:02d}, '{padding}')." for n in range(40) for i in range(50)]
    (project / ".zpm" / "kb" / "bulk.pl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts = play(
        project,
        [
            Step("get_kb_overview", {"sample_size": 50}),
            Step("get_kb_overview", {"sample_size": 2}),
            Step("get_kb_overview", {"sample_size": 0}),
        ],
    )
    full, small, none = (json.loads(text) for text in texts)
    assert full["truncated"] is True
    sizes = {len(p["samples"]) for p in full["predicates"]}
    assert len(sizes) == 1 and sizes.pop() in (25, 12, 6, 3, 1)  # 50 halved (integer division), R-O8
    assert len(texts[0].encode("utf-8")) <= 64 * 1024
    assert len(full["predicates"]) == 40 and all(p["count"] == 50 for p in full["predicates"])
    assert full["predicates"][0]["samples"][0] == f"p00(item_00, {padding})"
    assert small["truncated"] is False and all(len(p["samples"]) == 2 for p in small["predicates"])
    assert none["truncated"] is False and all(p["samples"] == [] for p in none["predicates"])
    assert full["mounts"] == small["mounts"] and full["persistence"] == small["persistence"]  # never cut
