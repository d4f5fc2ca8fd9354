"""find_predicate_references, rename_predicate and get_kb_overview (spec §4.8-§4.10) on a real
engine: the seed's examples, the R-FR / R-RN / R-O rules, the journal batches a rename hands
over and their replay, and the overview's persistence facts from real snapshot and journal files."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from quipu.logic.engine import Engine
from quipu.logic.journal import Entry, Journal, newline_count, read_journal
from quipu.logic.knowledge import KnowledgeService, StaticMemories, ToolResult
from quipu.logic.refactor import OVERVIEW_BUDGET, MountInfo, RefactorService
from quipu.logic.snapshots import SnapshotInfo, list_snapshots, write_snapshot

SEED = json.loads((Path(__file__).parent / "seed_examples.json").read_text(encoding="utf-8"))
EXAMPLES = {e["key"]: e for e in SEED["examples"]}
# `archive` names SWI's library(archive), which the engine refuses as a memory name.
ARCHIVE = "archived"


class RecordingJournal:
    def __init__(self) -> None:
        self.batches: list[tuple[str, list[tuple[str, str]]]] = []

    def append(self, memory: str, entries: Sequence[tuple[str, str]]) -> None:
        self.batches.append((memory, list(entries)))


class FileSource:
    """An OverviewSource over real files: snapshots in kb/, the journal in data/."""

    def __init__(self, root: Path, mounts: list[MountInfo] | None, healthy: bool = True) -> None:
        self.kb = root / "kb"
        self.data = root / "data"
        self.kb.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self._mounts = mounts
        self.healthy = healthy

    def mounts(self) -> list[MountInfo] | None:
        return self._mounts

    def snapshots(self, memory: str) -> list[SnapshotInfo]:
        return list_snapshots(self.kb)

    def journal_pending(self, memory: str) -> int:
        return newline_count(self.data / "journal.wal") if self.healthy else 0

    def persistence_healthy(self) -> bool:
        return self.healthy


MEMORIES = ("audit", "reporting", "monitoring", ARCHIVE)


@pytest.fixture
def memories(engine: Engine) -> StaticMemories:
    for name in MEMORIES:
        engine.ensure_memory(name)
    return StaticMemories(
        {"default": "rw", "audit": "rw", "reporting": "rw", "monitoring": "rw", ARCHIVE: "ro"}
    )


@pytest.fixture
def journal() -> RecordingJournal:
    return RecordingJournal()


@pytest.fixture
def kb(engine: Engine, memories: StaticMemories, journal: RecordingJournal) -> KnowledgeService:
    return KnowledgeService(engine, memories, journal)


@pytest.fixture
def rs(engine: Engine, memories: StaticMemories, journal: RecordingJournal) -> RefactorService:
    return RefactorService(engine, memories, journal)


def ok(result: ToolResult) -> str:
    assert not result.is_error, result.text
    return result.text


def err(result: ToolResult) -> str:
    assert result.is_error, result.text
    return result.text


def facts(kb: KnowledgeService, *texts: str, memory: str = "default") -> None:
    for text in texts:
        ok(kb.remember_fact({"fact": text, "memory": memory}))


def rule(kb: KnowledgeService, head: str, body: str, memory: str = "default") -> None:
    ok(kb.define_rule({"head": head, "body": body, "memory": memory}))


def justify(engine: Engine, fact: str, assumption: str, memory: str = "default") -> None:
    engine.assertz(memory, f"tms_justification({fact}, {assumption})")


def clauses(engine: Engine, memory: str) -> dict[str, tuple[str, ...]]:
    return {f"{p.name}/{p.arity}": p.clauses for p in engine.predicates(memory) if p.clauses}


def sprint_kb(kb: KnowledgeService, engine: Engine) -> None:
    facts(kb, "task_status(f024, done)", "task_status(f025, in_progress)")
    rule(kb, "active_work(X)", "task_status(X, in_progress)")
    justify(engine, "task_status(f024, done)", "sprint_planning")


# --------------------------------------------------------------------- find_predicate_references


def test_seed_find_references_found(kb: KnowledgeService, rs: RefactorService, engine: Engine) -> None:
    sprint_kb(kb, engine)
    example = EXAMPLES["find_predicate_references#1"]
    assert rs.find_predicate_references(example["arguments"]) == ToolResult(example["text"])


def test_seed_find_references_none(rs: RefactorService) -> None:
    example = EXAMPLES["find_predicate_references#2"]
    assert rs.find_predicate_references({"functor": "nonexistent_predicate"}) == ToolResult(example["text"])


def test_seed_find_references_cross_memory(kb: KnowledgeService, rs: RefactorService, engine: Engine) -> None:
    facts(kb, "task_status(f024, done)", "task_status(f025, in_progress)")
    rule(kb, "active_work(X)", "task_status(X, in_progress)")
    rule(kb, "critical_tasks(X)", "audit:task_status(X, critical)", "audit")
    facts(kb, "task_status(a1, critical)", memory="audit")
    rule(kb, "check_external(X)", "monitoring:task_status(X, blocked)", "reporting")
    example = EXAMPLES["find_predicate_references#3"]
    args = {"functor": "task_status", "arity": 2, "memory": "__all__", "include_cross_memory_refs": True}
    assert rs.find_predicate_references(args) == ToolResult(example["text"])


def test_seed_find_references_errors(rs: RefactorService) -> None:
    for args in ({}, {"functor": None}, {"functor": 3}, {"functor": ""}):
        assert rs.find_predicate_references(args) == ToolResult(
            EXAMPLES["find_predicate_references#4"]["text"], True
        )
    for bad in ("Task", "task-status", "task status", "a:b", "_x"):
        assert (
            err(rs.find_predicate_references({"functor": bad}))
            == EXAMPLES["find_predicate_references#5"]["text"]
        )
    assert rs.find_predicate_references({"functor": "t", "memory": "unknown_segment"}) == ToolResult(
        EXAMPLES["find_predicate_references#6"]["text"], True
    )
    for arity in (-1, "2", 2.5, True):
        assert (
            err(rs.find_predicate_references({"functor": "t", "arity": arity}))
            == (EXAMPLES["find_predicate_references#7"]["text"])
        )


def test_find_references_without_arity_matches_all_arities(kb: KnowledgeService, rs: RefactorService) -> None:
    facts(kb, "t(1)", "t(1, 2)", "t(3, 4)")
    rule(kb, "p(X)", "t(X)")
    rule(kb, "q(X)", "t(X, _)")
    out = json.loads(ok(rs.find_predicate_references({"functor": "t"})))
    assert out["target"] == "t"  # R-FR1
    assert out["direct_facts_count"] == 3  # R-FR4
    assert [r["head"] for r in out["rules"]] == ["p(X)", "q(X)"]
    out = json.loads(ok(rs.find_predicate_references({"functor": "t", "arity": 1})))
    assert (out["target"], out["direct_facts_count"], [r["head"] for r in out["rules"]]) == (
        "t/1",
        1,
        ["p(X)"],
    )


def test_find_references_walks_control_and_meta_calls(kb: KnowledgeService, rs: RefactorService) -> None:
    rule(kb, "a(X)", "( foo(X) -> true ; fail )")
    rule(kb, "b(L)", "findall(X, foo(X), L)")
    rule(kb, "c(X)", "\\+ foo(X)")
    rule(kb, "d(X)", "call(foo, X)")
    rule(kb, "e(X)", "setof(Y, Z^(foo(Y), bar(Z)), X)")
    rule(kb, "f(X)", "g(h(foo(X)))")
    rule(kb, "g(X)", "bar(X, foo)")  # an atom in a data position is not a reference to foo/1
    out = json.loads(ok(rs.find_predicate_references({"functor": "foo", "arity": 1})))
    assert [r["head"] for r in out["rules"]] == ["a(X)", "b(L)", "c(X)", "d(X)", "e(X)", "f(X)"]  # R-FR3


def test_find_references_scope_named_memory_and_qualifiers(kb: KnowledgeService, rs: RefactorService) -> None:
    rule(kb, "mine(X)", "audit:t(X)", "audit")  # own name: a local reference (R-FR3)
    rule(kb, "theirs(X)", "default:t(X)", "audit")  # another memory: cross (R-FR6)
    rule(kb, "both(X)", "t(X), default:t(X)", "audit")
    rule(kb, "local(X)", "t(X)")  # in default: not scanned for memory=audit (R-FR2)
    out = json.loads(ok(rs.find_predicate_references({"functor": "t", "arity": 1, "memory": "audit"})))
    assert out["memory"] == "audit"
    assert [(r["head"], r["memory"]) for r in out["rules"]] == [("both(X)", "audit"), ("mine(X)", "audit")]
    assert [(c["head"], c["qualifier"]) for c in out["cross_memory_refs"]] == [
        ("both(X)", "default"),
        ("theirs(X)", "default"),
    ]
    off = json.loads(
        ok(
            rs.find_predicate_references(
                {"functor": "t", "arity": 1, "memory": "audit", "include_cross_memory_refs": "false"}
            )
        )
    )
    assert off["cross_memory_refs"] == [] and len(off["rules"]) == 2  # R-FR6


def test_find_references_orders_and_reads_read_only(
    kb: KnowledgeService, rs: RefactorService, engine: Engine
) -> None:
    engine.assertz(ARCHIVE, "zz(X) :- t(X)")
    engine.assertz(ARCHIVE, "aa(X) :- t(X)")
    justify(engine, "t(b)", "beta", ARCHIVE)
    justify(engine, "t(a)", "alpha", ARCHIVE)
    rule(kb, "m(X)", "t(X)")
    out = json.loads(ok(rs.find_predicate_references({"functor": "t", "memory": "__all__"})))
    assert [(r["memory"], r["head"]) for r in out["rules"]] == [
        ("default", "m(X)"),
        (ARCHIVE, "aa(X)"),
        (ARCHIVE, "zz(X)"),
    ]
    assert [j["assumption"] for j in out["facts_referenced_in_assumptions"]] == ["alpha", "beta"]  # R-FR7


def test_find_references_is_read_only(
    kb: KnowledgeService, rs: RefactorService, engine: Engine, journal: RecordingJournal
) -> None:
    sprint_kb(kb, engine)
    before, batches = clauses(engine, "default"), len(journal.batches)
    ok(rs.find_predicate_references({"functor": "task_status", "memory": "__all__"}))
    assert clauses(engine, "default") == before and len(journal.batches) == batches  # R-W6


# --------------------------------------------------------------------- rename_predicate


def test_seed_rename_success(kb: KnowledgeService, rs: RefactorService, engine: Engine) -> None:
    sprint_kb(kb, engine)
    example = EXAMPLES["rename_predicate#1"]
    assert rs.rename_predicate(example["arguments"]) == ToolResult(example["text"])
    assert clauses(engine, "default")["feature_status/2"] == (
        "feature_status(f024, done)",
        "feature_status(f025, in_progress)",
    )
    assert clauses(engine, "default")["active_work/1"] == (
        "active_work(X) :- feature_status(X, in_progress)",
    )
    assert "task_status/2" not in clauses(engine, "default")
    assert clauses(engine, "default")["tms_justification/2"] == (
        "tms_justification(feature_status(f024, done), sprint_planning)",
    )  # R-RN2: same assumption name


def test_seed_rename_cross_memory_impact(kb: KnowledgeService, rs: RefactorService, engine: Engine) -> None:
    """The seed's example with memory `archive` spelled `archived` (see ARCHIVE)."""
    facts(kb, *(f"task_status(t{i}, open)" for i in range(5)))
    rule(kb, "process_work(X)", "task_status(X, open)")
    rule(kb, "process_work(X)", "task_status(X, urgent)")
    rule(kb, "check_status(Y)", "task_status(Y, _)")
    rule(kb, "audit_open(X)", "default:task_status(X, open)", "audit")
    rule(kb, "report_a(X)", "default:task_status(X, open)", "reporting")
    rule(kb, "report_b(X)", "default:task_status(X, done)", "reporting")
    engine.assertz(ARCHIVE, "old(X) :- default:task_status(X, a), default:task_status(X, b)")
    engine.assertz(ARCHIVE, "older(X) :- default:task_status(X, c)")
    args = {
        "old_functor": "task_status",
        "new_functor": "feature_status",
        "arity": 2,
        "propagate_cross_memory_refs": True,
    }
    expected = json.loads(EXAMPLES["rename_predicate#2"]["text"].replace('"archive"', f'"{ARCHIVE}"'))
    text = ok(rs.rename_predicate(args))
    assert json.loads(text) == expected
    assert clauses(engine, "reporting")["report_b/1"] == ("report_b(X) :- default:feature_status(X, done)",)
    assert clauses(engine, ARCHIVE)["older/1"] == ("older(X) :- default:task_status(X, c)",)  # never modified


def test_seed_rename_errors(
    kb: KnowledgeService, rs: RefactorService, engine: Engine, memories: StaticMemories
) -> None:
    facts(kb, "task_status(a)", "task_status(a, b)")
    assert rs.rename_predicate({"old_functor": "task_status", "new_functor": "feature_status"}) == ToolResult(
        EXAMPLES["rename_predicate#3"]["text"], True
    )
    facts(kb, "feature_status(x, y)")
    assert rs.rename_predicate(EXAMPLES["rename_predicate#4"]["arguments"]) == ToolResult(
        EXAMPLES["rename_predicate#4"]["text"], True
    )
    read_only = rs.rename_predicate({"old_functor": "task_status", "new_functor": "x", "memory": ARCHIVE})
    assert read_only == ToolResult(EXAMPLES["rename_predicate#5"]["text"].replace("archive", ARCHIVE), True)
    assert rs.rename_predicate({"old_functor": "=", "new_functor": "eq", "arity": 2}) == ToolResult(
        EXAMPLES["rename_predicate#6"]["text"], True
    )
    for args in (
        {},
        {"old_functor": "a"},
        {"new_functor": "b"},
        {"old_functor": "", "new_functor": "b"},
        {"old_functor": "a", "new_functor": "b", "arity": -1},
        {"old_functor": "a", "new_functor": "b", "arity": "2"},
        {"old_functor": "a", "new_functor": "b", "dry_run": "yes"},
        {"old_functor": "Bad", "new_functor": "b"},
        {"old_functor": "a", "new_functor": "b c"},
    ):
        assert rs.rename_predicate(args) == ToolResult(EXAMPLES["rename_predicate#7"]["text"], True), args


def test_rename_error_order_and_texts(kb: KnowledgeService, rs: RefactorService) -> None:
    facts(kb, "p(1)")
    # 2 before 3 and 4: a protected operator wins over a bad name and an unknown memory.
    assert err(rs.rename_predicate({"old_functor": "p", "new_functor": ":-", "memory": "nowhere"})) == (
        "Cannot rename ISO operator: :-/2"  # arity omitted: the highest protected arity
    )
    assert (
        err(rs.rename_predicate({"old_functor": "!", "new_functor": "p"}))
        == "Cannot rename ISO operator: !/0"
    )
    assert (
        err(rs.rename_predicate({"old_functor": "-", "new_functor": "minus", "arity": 1}))
        == "InvalidArguments"
    )
    assert err(rs.rename_predicate({"old_functor": "p", "new_functor": "q", "memory": "nowhere"})) == (
        "Memory not mounted: nowhere"
    )
    assert (
        err(rs.rename_predicate({"old_functor": "p", "new_functor": "p"}))
        == "old_functor and new_functor are identical"
    )
    assert err(rs.rename_predicate({"old_functor": "p", "new_functor": "tms_justification", "arity": 1})) == (
        "InvalidArguments"
    )


def test_rename_nothing_to_rename(rs: RefactorService, engine: Engine, journal: RecordingJournal) -> None:
    out = json.loads(ok(rs.rename_predicate({"old_functor": "ghost", "new_functor": "spirit"})))
    assert out == {
        "renamed_facts": 0,
        "rewritten_rule_bodies": 0,
        "affected_rule_ids": [],
        "cross_memory_impact": {"rewritten": [], "warnings": [], "skipped_readonly": []},
        "is_error": False,
    }  # R-RN1, R-RN7
    assert journal.batches == []
    engine.assertz("default", "ghost(1) :- fail")
    engine.retractall("default", "ghost(_)")  # declared, no clauses: still nothing to do
    ok(rs.rename_predicate({"old_functor": "ghost", "new_functor": "spirit", "arity": 1}))
    assert journal.batches == []  # R-W4: no effective change, no entry


def test_rename_single_arity_is_used_and_order_kept(
    kb: KnowledgeService, rs: RefactorService, engine: Engine
) -> None:
    facts(kb, "s(1)")
    rule(kb, "s(X)", "s0(X), X > 1")
    facts(kb, "s(2)")
    rule(kb, "user(X)", "before(X)")
    rule(kb, "user(X)", "s(X)")
    rule(kb, "user(X)", "after(X)")
    out = json.loads(ok(rs.rename_predicate({"old_functor": "s", "new_functor": "n"})))
    assert (out["renamed_facts"], out["rewritten_rule_bodies"], out["affected_rule_ids"]) == (
        2,
        1,
        ["user(X)"],
    )
    now = clauses(engine, "default")
    assert now["n/1"] == ("n(1)", "n(X) :- s0(X), X>1", "n(2)")  # R-RN2: clause order kept
    assert now["user/1"] == ("user(X) :- before(X)", "user(X) :- n(X)", "user(X) :- after(X)")


def test_rename_recursive_rule_and_self_qualified(
    kb: KnowledgeService, rs: RefactorService, engine: Engine
) -> None:
    rule(kb, "anc(X, Y)", "par(X, Y)")
    rule(kb, "anc(X, Z)", "par(X, Y), default:anc(Y, Z)")
    out = json.loads(ok(rs.rename_predicate({"old_functor": "anc", "new_functor": "ancestor", "arity": 2})))
    assert (out["renamed_facts"], out["rewritten_rule_bodies"], out["affected_rule_ids"]) == (
        0,
        1,
        ["ancestor(X, Z)"],
    )
    assert clauses(engine, "default")["ancestor/2"] == (
        "ancestor(X, Y) :- par(X, Y)",
        "ancestor(X, Z) :- par(X, Y), default:ancestor(Y, Z)",
    )


def test_rename_dry_run_changes_nothing(
    kb: KnowledgeService, rs: RefactorService, engine: Engine, journal: RecordingJournal
) -> None:
    sprint_kb(kb, engine)
    rule(kb, "watch(X)", "default:task_status(X, done)", "reporting")
    before = {m: clauses(engine, m) for m in ("default", "reporting")}
    batches = len(journal.batches)
    args = {
        "old_functor": "task_status",
        "new_functor": "feature_status",
        "arity": 2,
        "propagate_cross_memory_refs": True,
    }
    dry = ok(rs.rename_predicate({**args, "dry_run": "true"}))
    assert {m: clauses(engine, m) for m in ("default", "reporting")} == before  # R-RN5
    assert len(journal.batches) == batches  # R-W6
    assert json.loads(ok(kb.query_logic({"goal": "task_status(X, done)"}))) == [{"X": "f024"}]
    assert ok(rs.rename_predicate(args)) == dry  # exactly the response a real run gives
    assert json.loads(dry)["cross_memory_impact"]["rewritten"] == [
        {"memory": "reporting", "rules_updated": 1}
    ]


def test_rename_cross_memory_warnings_and_skips(
    kb: KnowledgeService, rs: RefactorService, engine: Engine, journal: RecordingJournal
) -> None:
    facts(kb, "t(1)")
    rule(kb, "w(X)", "default:t(X), default:t(X)", "reporting")
    rule(kb, "other(X)", "audit:t(X)", "reporting")  # qualified with another memory: not counted
    engine.assertz(ARCHIVE, "r(X) :- default:t(X)")
    out = json.loads(ok(rs.rename_predicate({"old_functor": "t", "new_functor": "u"})))
    assert out["cross_memory_impact"] == {
        "rewritten": [],
        "warnings": [{"memory": "reporting", "refs": 2, "reason": "propagate_cross_memory_refs=false"}],
        "skipped_readonly": [{"memory": ARCHIVE, "refs": 1, "reason": "read-only"}],
    }  # R-RN4
    assert clauses(engine, "reporting")["w/1"] == ("w(X) :- default:t(X), default:t(X)",)
    assert [memory for memory, _ in journal.batches[-1:]] == ["default"]


def test_rename_journal_batch_exact(
    kb: KnowledgeService, rs: RefactorService, engine: Engine, journal: RecordingJournal
) -> None:
    sprint_kb(kb, engine)
    rule(kb, "watch(X)", "default:task_status(X, done)", "reporting")
    journal.batches.clear()
    args = {
        "old_functor": "task_status",
        "new_functor": "feature_status",
        "arity": 2,
        "propagate_cross_memory_refs": True,
    }
    ok(rs.rename_predicate(args))
    assert journal.batches == [
        (
            "default",
            [
                ("retractall", "task_status(_, _)"),
                ("assert", "feature_status(f024, done)"),
                ("assert", "feature_status(f025, in_progress)"),
                ("retractall", "active_work(_)"),
                ("assert", "active_work(X) :- feature_status(X, in_progress)"),
                ("retractall", "tms_justification(_, _)"),
                ("assert", "tms_justification(feature_status(f024, done), sprint_planning)"),
                ("retractall", "zpm_source(task_status(_, _), _)"),
            ],
        ),
        (
            "reporting",
            [("retractall", "watch(_)"), ("assert", "watch(X) :- default:feature_status(X, done)")],
        ),
    ]  # R-RN6: one batch per memory


def _replay(engine: Engine, memory: str, entries: Sequence[tuple[str, str]]) -> None:
    for op, text in entries:
        if op == "assert":
            engine.assertz(memory, text)
        elif op == "retract":
            engine.retract_first_fact(memory, text)
        else:
            engine.retractall(memory, text)


def test_rename_replay_reproduces_state(
    rs: RefactorService, engine: Engine, journal: RecordingJournal
) -> None:
    setup = [
        ("assert", "p(1)"),
        ("assert", "q(X) :- p(X), r(X)"),
        ("assert", "p(2)"),
        ("assert", "q(X) :- s(X)"),
        ("assert", "z(X, Y) :- findall(A, p(A), Y), \\+ p(X)"),
        ("assert", "tms_justification(p(1), a1)"),
        ("assert", "tms_justification(other(1), a2)"),
    ]
    _replay(engine, "default", setup)
    ok(rs.rename_predicate({"old_functor": "p", "new_functor": "pp", "arity": 1}))
    ((memory, batch),) = journal.batches
    assert memory == "default"
    engine.ensure_memory("replayed")
    _replay(engine, "replayed", [*setup, *batch])
    live = {k: v for k, v in clauses(engine, "default").items() if not k.startswith("zpm_source")}
    assert clauses(engine, "replayed") == live
    assert live["tms_justification/2"] == ("tms_justification(pp(1), a1)", "tms_justification(other(1), a2)")
    assert live["z/2"] == ("z(X, Y) :- findall(A, pp(A), Y), \\+pp(X)",)


def test_rename_journal_through_real_file(
    tmp_path: Path, kb: KnowledgeService, engine: Engine, memories: StaticMemories
) -> None:
    """The batch written by a Journal re-reads as the same entries (R-W1, R-W3)."""
    wal = Journal(tmp_path / "journal.wal")
    assert wal.open()

    class Sink:
        def append(self, memory: str, entries: Sequence[tuple[str, str]]) -> None:
            wal.append_batch([Entry.now(op, text) for op, text in entries])  # type: ignore[arg-type]

    facts(kb, "p(1)", "p(2)")
    service = RefactorService(engine, memories, Sink())
    ok(service.rename_predicate({"old_functor": "p", "new_functor": "pp"}))
    wal.close()
    assert [(e.op, e.clause) for e in read_journal(tmp_path / "journal.wal").entries] == [
        ("retractall", "p(_)"),
        ("assert", "pp(1)"),
        ("assert", "pp(2)"),
        ("retractall", "zpm_source(p(_), _)"),
    ]


def test_rename_refuses_builtin_target(kb: KnowledgeService, rs: RefactorService, engine: Engine) -> None:
    facts(kb, "p(1)")
    assert err(rs.rename_predicate({"old_functor": "p", "new_functor": "atom"})) == "InvalidArguments"
    assert clauses(engine, "default")["p/1"] == ("p(1)",)


# --------------------------------------------------------------------- get_kb_overview


def test_seed_overview_populated(
    tmp_path: Path, kb: KnowledgeService, engine: Engine, memories: StaticMemories
) -> None:
    source = FileSource(tmp_path, [MountInfo("default", "project", "rw", tmp_path / "kb")])
    snap = write_snapshot(source.kb, "before_refactor", 1779014531, [("parent", 2)], [["parent(tom, bob)"]])
    moment = 1779014531  # 2026-05-17T10:42:11Z
    os.utime(snap, (moment, moment))
    (source.kb / "seed.pl").write_text("parent(a, b).\n")  # a seed file is not a snapshot (R-N3)
    (source.data / "journal.wal").write_bytes(
        b'{"ts":1,"op":"assert","clause":"x"}\n{"ts":1,"op":"assert","clause":"y"}\n'
    )
    facts(kb, "parent(tom, bob)", "parent(bob, sue)")
    rule(kb, "ancestor(X, Y)", "parent(X, Y)")
    justify(engine, "parent(bob, sue)", "infra_healthy")
    service = RefactorService(engine, memories, RecordingJournal(), source)
    example = EXAMPLES["get_kb_overview#1"]
    assert service.get_kb_overview(example["arguments"]) == ToolResult(example["text"])


def test_seed_overview_empty(rs: RefactorService) -> None:
    assert rs.get_kb_overview({"sample_size": 2}) == ToolResult(EXAMPLES["get_kb_overview#2"]["text"])


def test_seed_overview_engine_not_initialized(memories: StaticMemories) -> None:
    engine = Engine(query_timeout=1.0)
    service = RefactorService(engine, memories, RecordingJournal())
    assert service.get_kb_overview({"sample_size": 2}) == ToolResult(
        EXAMPLES["get_kb_overview#3"]["text"], True
    )
    assert err(service.find_predicate_references({"functor": "t"})) == "Prolog engine is not initialized"


def test_overview_sample_size_rules(kb: KnowledgeService, rs: RefactorService) -> None:
    facts(kb, *(f"n({i})" for i in range(60)))
    rule(kb, "m(X)", "n(X)")
    facts(kb, "m(0)")

    def samples(args: Any) -> list[int]:
        return [len(p["samples"]) for p in json.loads(ok(rs.get_kb_overview(args)))["predicates"]]

    assert samples({}) == [2, 2]  # R-O2 (n first: facts before mixed)
    assert samples({"sample_size": "5"}) == [2, 2]
    assert samples({"sample_size": -3}) == [0, 0]
    assert samples({"sample_size": 500}) == [50, 2]
    assert samples("not an object") == [2, 2]  # nothing is an error (§4.10)
    out = json.loads(ok(rs.get_kb_overview({"sample_size": 3})))
    assert out["predicates"][1] == {
        "functor": "m",
        "arity": 1,
        "kind": "both",
        "count": 2,
        "samples": ["m(X) :- n(X)", "m(0)"],
    }  # R-O3: database order


def test_overview_hides_records_and_other_memories(
    kb: KnowledgeService, rs: RefactorService, engine: Engine
) -> None:
    facts(kb, "p(1)")
    facts(kb, "q(1)", memory="audit")
    justify(engine, "p(1)", "b")
    justify(engine, "p(1)", "a")
    justify(engine, "p(1)", "a")
    out = json.loads(ok(rs.get_kb_overview({})))
    assert [p["functor"] for p in out["predicates"]] == ["p"]  # R-I1, R-O1
    assert out["assumptions"] == {"count": 2, "names": ["a", "b"]}  # R-O4


def test_overview_snapshots_latest_by_name_and_mounts(
    tmp_path: Path, engine: Engine, memories: StaticMemories
) -> None:
    mounts = [
        MountInfo("zeta", "global", "ro"),
        MountInfo("default", "project", "rw"),
        MountInfo("audit", "project", "rw"),
    ]
    source = FileSource(tmp_path, mounts, healthy=False)
    write_snapshot(source.kb, "zzz", 100, [], [])
    write_snapshot(source.kb, "aaa", 200, [], [])  # newer, but `latest` is by name (R-O5)
    (source.data / "journal.wal").write_text("a\nb\n")
    out = json.loads(ok(RefactorService(engine, memories, RecordingJournal(), source).get_kb_overview({})))
    assert (out["snapshots"]["count"], out["snapshots"]["latest"]) == (2, "zzz")
    assert out["persistence"] == {"wal_pending": 0, "healthy": False}  # R-O6: persistence off
    assert [m["name"] for m in out["mounts"]["items"]] == ["audit", "default", "zeta"]  # R-O7
    assert out["mounts"]["count"] == 3 and out["mounts"]["available"] is True


def test_overview_truncates_samples_to_budget(
    kb: KnowledgeService, rs: RefactorService, engine: Engine
) -> None:
    long = "x" * 400
    engine.load_clauses("default", [f"big{i}(n{j}, '{long}')" for i in range(8) for j in range(50)])
    out_text = ok(rs.get_kb_overview({"sample_size": 50}))
    out = json.loads(out_text)
    assert len(out_text.encode()) <= OVERVIEW_BUDGET and out["truncated"] is True  # R-O8
    sizes = {len(p["samples"]) for p in out["predicates"]}
    assert sizes == {12}  # 50 -> 25 -> 12 fits (8 x 12 x ~415 bytes); 25 does not
    assert json.loads(ok(rs.get_kb_overview({"sample_size": 2})))["truncated"] is False


def test_overview_at_zero_returns_even_if_large(
    kb: KnowledgeService, rs: RefactorService, engine: Engine
) -> None:
    engine.load_clauses("default", [f"p{i}_{'y' * 40}(1)" for i in range(1700)])
    text = ok(rs.get_kb_overview({"sample_size": 1}))
    out = json.loads(text)
    assert len(text.encode()) > OVERVIEW_BUDGET and out["truncated"] is True
    assert all(p["samples"] == [] for p in out["predicates"])


def test_dead_engine_answers_not_initialized_then_recovers(rs: RefactorService, engine: Engine) -> None:
    pid = engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert rs.get_kb_overview({}) == ToolResult("Prolog engine is not initialized", True)
    assert engine.alive  # restarted: the next call works
    assert not rs.get_kb_overview({}).is_error


def test_rename_is_atomic_per_memory(
    kb: KnowledgeService, rs: RefactorService, engine: Engine, journal: RecordingJournal
) -> None:
    sprint_kb(kb, engine)
    # A predicate whose clauses cannot be erased makes the rename fail half-way (R-RN6).
    engine.call_helper("compile_predicates([default:active_work/1]), R = ok")
    before, batches = clauses(engine, "default"), len(journal.batches)
    args = {"old_functor": "task_status", "new_functor": "feature_status", "arity": 2}
    assert err(rs.rename_predicate(args)) == "ExecutionFailed"
    assert clauses(engine, "default") == before
    assert len(journal.batches) == batches
    assert json.loads(ok(kb.query_logic({"goal": "task_status(X, done)"}))) == [{"X": "f024"}]
