"""The truth maintenance tools (spec §4.16-§4.21, §5) on a real engine: the seed's examples,
the R- rules of those sections, the journal batches they hand over (§6.3, R-TM2, R-TM6) and a
replay of those batches from a real journal file into a fresh memory."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from quipu.logic.engine import Engine
from quipu.logic.journal import Entry, Journal, Op, read_journal
from quipu.logic.knowledge import KnowledgeService, StaticMemories, ToolResult
from quipu.logic.snapshots import read_snapshot, write_snapshot
from quipu.logic.tms import TOOL_NAMES, TmsService, glob_regex

SEED_FILE = Path(__file__).parent / "seed_examples.json"
SEED: dict[str, dict[str, Any]] = {
    e["key"]: e
    for e in json.loads(SEED_FILE.read_text(encoding="utf-8"))["examples"]
    if e["tool"] in TOOL_NAMES
}
RECORDS = ("tms_justification", "zpm_source")


class RecordingJournal:
    """A journal sink that keeps the batches and, optionally, writes them to real journal
    files (one per memory, as the persistence layer does) and runs a probe at append time."""

    def __init__(self, directory: Path | None = None) -> None:
        self.batches: list[tuple[str, list[tuple[str, str]]]] = []
        self.directory = directory
        self.files: dict[str, Journal] = {}
        self.probe: Any = None

    def append(self, memory: str, entries: Sequence[tuple[str, str]]) -> None:
        if self.probe is not None:
            self.probe(memory, list(entries))
        self.batches.append((memory, list(entries)))
        if self.directory is not None:
            journal = self.files.get(memory)
            if journal is None:
                journal = self.files[memory] = Journal(self.directory / memory / "journal.wal")
                assert journal.open()
            assert journal.append_batch([Entry.now(cast(Op, op), clause) for op, clause in entries])


@pytest.fixture
def journal(tmp_path: Path) -> RecordingJournal:
    return RecordingJournal(tmp_path / "data")


@pytest.fixture
def memories(engine: Engine) -> StaticMemories:
    for name in ("feature_auth", "frozen", "replayed"):
        engine.ensure_memory(name)
    return StaticMemories({"default": "rw", "feature_auth": "rw", "frozen": "ro", "replayed": "rw"})


@pytest.fixture
def kb(engine: Engine, memories: StaticMemories, journal: RecordingJournal) -> KnowledgeService:
    return KnowledgeService(engine, memories, journal)


@pytest.fixture
def tms(
    engine: Engine, memories: StaticMemories, journal: RecordingJournal, kb: KnowledgeService
) -> TmsService:
    return TmsService(engine, memories, journal)


def ok(result: ToolResult) -> str:
    assert not result.is_error, result.text
    return result.text


def err(result: ToolResult) -> str:
    assert result.is_error, result.text
    return result.text


def q(kb: KnowledgeService, goal: str, memory: str = "default") -> Any:
    return json.loads(ok(kb.query_logic({"goal": goal, "memory": memory})))


def assume(tms: TmsService, fact: str, assumption: str, memory: str = "default") -> str:
    return ok(tms.assume_fact({"fact": fact, "assumption": assumption, "memory": memory}))


def status(tms: TmsService, fact: str, memory: str = "default") -> Any:
    return json.loads(ok(tms.get_belief_status({"fact": fact, "memory": memory})))


def justified(tms: TmsService, assumption: str, memory: str = "default") -> list[str]:
    facts: list[str] = json.loads(ok(tms.get_justification({"assumption": assumption, "memory": memory})))[
        "facts"
    ]
    return facts


def assumptions(tms: TmsService, memory: str = "default") -> list[str]:
    names: list[str] = json.loads(ok(tms.list_assumptions({"memory": memory})))["assumptions"]
    return names


def retract(tms: TmsService, assumption: str, memory: str = "default") -> str:
    return ok(tms.retract_assumption({"assumption": assumption, "memory": memory}))


def clauses(engine: Engine, memory: str, *, sources: bool = False) -> list[tuple[str, int, tuple[str, ...]]]:
    return [
        (p.name, p.arity, p.clauses)
        for p in engine.predicates(memory)
        if p.clauses and (sources or p.name != "zpm_source")
    ]


def seed_text(key: str) -> str:
    text: str = SEED[key]["text"]
    return text


def same_text(result: ToolResult, key: str) -> None:
    """The seed's response: the same isError and the same text (equal as JSON for JSON texts)."""
    example = SEED[key]
    assert result.is_error is example["is_error"], result
    if example["json_text"]:
        assert json.loads(result.text) == json.loads(example["text"])
        assert result.text == json.dumps(json.loads(example["text"]), separators=(",", ":"))
    else:
        assert result.text == example["text"]


# --------------------------------------------------------------------- the seed's examples


def test_the_seed_has_an_example_for_every_case_of_these_tools() -> None:
    assert sorted(SEED) == sorted(
        [
            "assume_fact#1",
            "assume_fact#2",
            "get_belief_status#1",
            "get_belief_status#2",
            "get_justification#1",
            "get_justification#2",
            "list_assumptions#1",
            "list_assumptions#2",
            "retract_assumption#1",
            "retract_assumption#2",
            "retract_assumption#3",
            "retract_assumptions#1",
            "retract_assumptions#2",
        ]
    )


def test_seed_assume_fact(tms: TmsService) -> None:
    same_text(tms.assume_fact(SEED["assume_fact#1"]["arguments"]), "assume_fact#1")
    for args in (
        {"assumption": "infra_healthy"},
        {"fact": "available(server_a)"},
        {"fact": None, "assumption": "infra_healthy"},
        {"fact": "available(server_a)", "assumption": None},
        {"fact": "", "assumption": "infra_healthy"},
        {"fact": "available(server_a)", "assumption": ""},
        {},
    ):
        same_text(tms.assume_fact(args), "assume_fact#2")


def test_seed_get_belief_status(tms: TmsService) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    same_text(tms.get_belief_status(SEED["get_belief_status#1"]["arguments"]), "get_belief_status#1")
    for args in ({}, {"fact": None}, {"fact": ""}):
        same_text(tms.get_belief_status(args), "get_belief_status#2")


def test_seed_get_justification(tms: TmsService) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    same_text(tms.get_justification(SEED["get_justification#1"]["arguments"]), "get_justification#1")
    for args in ({}, {"assumption": None}, {"assumption": ""}):
        same_text(tms.get_justification(args), "get_justification#2")


def test_seed_list_assumptions(tms: TmsService) -> None:
    same_text(tms.list_assumptions(SEED["list_assumptions#2"]["arguments"]), "list_assumptions#2")
    same_text(tms.list_assumptions(None), "list_assumptions#2")
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "funded(q3)", "budget_approved")
    assume(tms, "available(server_b)", "infra_healthy")
    same_text(tms.list_assumptions(SEED["list_assumptions#1"]["arguments"]), "list_assumptions#1")


def test_seed_retract_assumption(tms: TmsService, journal: RecordingJournal) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "available(server_b)", "infra_healthy")
    same_text(tms.retract_assumption(SEED["retract_assumption#1"]["arguments"]), "retract_assumption#1")
    for args in ({}, {"assumption": None}, {"assumption": ""}):
        same_text(tms.retract_assumption(args), "retract_assumption#2")
    journal.batches.clear()
    same_text(tms.retract_assumption({"assumption": "nonexistent"}), "retract_assumption#3")
    assert "fact(s) removed" not in seed_text("retract_assumption#3")
    assert journal.batches == []


def test_seed_retract_assumptions(tms: TmsService) -> None:
    for name in ("infra_healthy", "infra_network", "infra_storage", "budget_approved"):
        assume(tms, f"ready({name})", name)
    same_text(tms.retract_assumptions(SEED["retract_assumptions#1"]["arguments"]), "retract_assumptions#1")
    assert assumptions(tms) == ["budget_approved"]
    for args in ({}, {"pattern": None}, {"pattern": ""}):
        same_text(tms.retract_assumptions(args), "retract_assumptions#2")


# --------------------------------------------------------------------- §2.4 arguments


def test_r_a1_required_strings_of_every_tool(tms: TmsService, journal: RecordingJournal) -> None:
    required = {
        "assume_fact": {"fact": "p(1)", "assumption": "a"},
        "get_belief_status": {"fact": "p(1)"},
        "get_justification": {"assumption": "a"},
        "retract_assumption": {"assumption": "a"},
        "retract_assumptions": {"pattern": "a*"},
    }
    for tool, args in required.items():
        for key in args:
            for bad in (None, "", 7, True, ["x"], {"x": 1}):
                result = tms.call(tool, {**args, key: bad})
                assert result == ToolResult("InvalidArguments", True), (tool, key, bad)
            missing = {k: v for k, v in args.items() if k != key}
            assert tms.call(tool, missing) == ToolResult("InvalidArguments", True)
    assert journal.batches == []
    assert assumptions(tms) == []


def test_arguments_that_are_not_an_object(tms: TmsService) -> None:
    for tool in TOOL_NAMES:
        assert tms.call(tool, ["p(1)"]) == ToolResult("InvalidArguments", True)


def test_r_a2_a_memory_of_the_wrong_type(tms: TmsService) -> None:
    assert tms.list_assumptions({"memory": 3}) == ToolResult("InvalidArguments", True)
    assert tms.assume_fact({"fact": "p(1)", "assumption": "a", "memory": ["x"]}) == ToolResult(
        "InvalidArguments", True
    )


def test_r_a3_unknown_extra_arguments_are_ignored(tms: TmsService) -> None:
    assert ok(tms.assume_fact({"fact": "p(1)", "assumption": "a", "extra": 1})) == (
        "Assumed: p(1) under assumption 'a'"
    )
    assert ok(tms.list_assumptions({"verbose": True})) == '{"assumptions":["a"]}'


def test_r_a4_memory_absent_null_or_empty_means_default(tms: TmsService) -> None:
    assume(tms, "p(1)", "a", memory="")
    ok(tms.assume_fact({"fact": "p(2)", "assumption": "b", "memory": None}))
    assert assumptions(tms) == ["a", "b"]
    assert ok(tms.list_assumptions({"memory": None})) == '{"assumptions":["a","b"]}'


def test_r_a5_success_texts_quote_the_fact_as_received(tms: TmsService) -> None:
    assert assume(tms, "  ready( x ).", "a") == "Assumed:   ready( x ). under assumption 'a'"
    assert justified(tms, "a") == ["ready(x)"]


def test_r_p3_assumption_names_must_be_plain_atoms(tms: TmsService, journal: RecordingJournal) -> None:
    for bad in ("Infra", "_infra", "1infra", "infra healthy", "infra-healthy", "a), halt(0", "'a'", "é"):
        assert tms.assume_fact({"fact": "p(1)", "assumption": bad}) == ToolResult("InvalidArguments", True)
        assert tms.get_justification({"assumption": bad}) == ToolResult("InvalidArguments", True)
        assert tms.retract_assumption({"assumption": bad}) == ToolResult("InvalidArguments", True)
    assert journal.batches == []
    assert assume(tms, "p(1)", "infra_Healthy2") == "Assumed: p(1) under assumption 'infra_Healthy2'"


def test_retract_assumptions_pattern_grammar(tms: TmsService, journal: RecordingJournal) -> None:
    assume(tms, "p(1)", "a")
    for bad in ("Infra*", "_x", "1*", "-", "a-b", "a b", "a.b", "[ab]", "a'", "a)"):
        assert tms.retract_assumptions({"pattern": bad}) == ToolResult("InvalidArguments", True), bad
    assert len(journal.batches) == 1
    for good in ("*", "?", "?x*", "zZ9_*?"):
        assert ok(tms.retract_assumptions({"pattern": good})).startswith(f"Retracted pattern '{good}': ")
    assert assumptions(tms) == []


# --------------------------------------------------------------------- memories (§7.5)


def test_r_m7_a_memory_that_is_not_mounted(tms: TmsService, journal: RecordingJournal) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("assume_fact", {"fact": "p(1)", "assumption": "a"}),
        ("get_belief_status", {"fact": "p(1)"}),
        ("get_justification", {"assumption": "a"}),
        ("list_assumptions", {}),
        ("retract_assumption", {"assumption": "a"}),
        ("retract_assumptions", {"pattern": "*"}),
    ]
    for tool, args in calls:
        assert tms.call(tool, {**args, "memory": "nowhere"}) == ToolResult(
            "Memory not mounted: nowhere", True
        )
    assert journal.batches == []


def test_r_m8_mutations_of_a_read_only_memory_are_refused_reads_work(
    tms: TmsService, engine: Engine, journal: RecordingJournal
) -> None:
    engine.load_clauses("frozen", ["up(a)", "tms_justification(up(a), infra)"])
    for tool, args in (
        ("assume_fact", {"fact": "p(1)", "assumption": "a"}),
        ("retract_assumption", {"assumption": "infra"}),
        ("retract_assumptions", {"pattern": "*"}),
    ):
        assert tms.call(tool, {**args, "memory": "frozen"}) == ToolResult("Memory is read-only", True)
    assert journal.batches == []
    assert assumptions(tms, "frozen") == ["infra"]
    assert justified(tms, "infra", "frozen") == ["up(a)"]
    assert status(tms, "up(a)", "frozen") == {
        "status": "in",
        "justifications": ["infra"],
        "source": "unknown",
    }


def test_r_m8_read_only_is_checked_before_the_unknown_assumption(tms: TmsService) -> None:
    assert tms.retract_assumption({"assumption": "nothing", "memory": "frozen"}) == ToolResult(
        "Memory is read-only", True
    )


def test_5_1_records_are_scoped_to_their_memory(tms: TmsService, kb: KnowledgeService) -> None:
    assume(tms, "task(login)", "sprint", memory="feature_auth")
    assert assumptions(tms) == []
    assert assumptions(tms, "feature_auth") == ["sprint"]
    assert status(tms, "task(login)")["status"] == "out"
    assert status(tms, "task(login)", "feature_auth")["status"] == "in"
    assert tms.retract_assumption({"assumption": "sprint"}) == ToolResult("Unknown assumption 'sprint'", True)
    assume(tms, "task(login)", "sprint")  # the same name in default is another assumption
    assert retract(tms, "sprint", "feature_auth") == "Retracted assumption 'sprint': 1 fact(s) removed"
    assert q(kb, "task(X)") == [{"X": "login"}]
    assert q(kb, "task(X)", "feature_auth") == []
    assert assumptions(tms) == ["sprint"]


def test_5_1_records_are_hidden_from_the_schema(tms: TmsService, kb: KnowledgeService) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assert ok(kb.get_knowledge_schema({})) == (
        '{"predicates":[{"name":"available","arity":1,"type":"fact","count":1}],"total":1}'
    )


def test_5_1_records_go_into_snapshots_and_come_back(tms: TmsService, engine: Engine, tmp_path: Path) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "ready(Host, 'Port 80')", "budget_approved")
    preds = engine.predicates("default")
    write_snapshot(tmp_path, "snap", 1, [(p.name, p.arity) for p in preds], [p.clauses for p in preds])
    content = read_snapshot(tmp_path / "snap.pl")
    assert ("tms_justification", 2) in content.declared
    assert ("zpm_source", 2) in content.declared
    assert "tms_justification(ready(Host, 'Port 80'), budget_approved)" in [c.text for c in content.clauses]
    report = engine.load_clauses("replayed", [c.text for c in content.directives + content.clauses])
    assert report.failures == ()
    assert assumptions(tms, "replayed") == ["infra_healthy", "budget_approved"]
    assert justified(tms, "budget_approved", "replayed") == ["ready(Host, 'Port 80')"]
    assert clauses(engine, "replayed", sources=True) == clauses(engine, "default", sources=True)


# --------------------------------------------------------------------- assume_fact (§4.16, R-TM1, R-TM2)


def test_assume_fact_rule_syntax(tms: TmsService, journal: RecordingJournal) -> None:
    for text in ("a(1) :- b", ":- halt", "':-'(a(1), b)", "(a :- b)"):
        assert tms.assume_fact({"fact": text, "assumption": "x"}) == ToolResult(
            "assume_fact: fact must not contain rule syntax", True
        ), text
    assert journal.batches == []


def test_assume_fact_unparsable_or_not_a_fact(
    tms: TmsService, journal: RecordingJournal, kb: KnowledgeService
) -> None:
    for text in ("available(", "a. b", "X", "42", '"text"', "m:x(1)", "atom_length(a, 1)", "a, b"):
        assert tms.assume_fact({"fact": text, "assumption": "x"}) == ToolResult(
            f"assume_fact: failed to assert fact: {text}", True
        ), text
    assert journal.batches == []
    assert assumptions(tms) == []


def test_assume_fact_refuses_tms_records_as_facts(tms: TmsService, journal: RecordingJournal) -> None:
    for text in ("tms_justification(p(1), other)", "zpm_source(p(1), snapshot)"):
        assert tms.assume_fact({"fact": text, "assumption": "x"}) == ToolResult(
            f"assume_fact: failed to assert fact: {text}", True
        )
    assert journal.batches == []
    assert assumptions(tms) == []


def test_r_tm1_idempotent_for_the_same_pair(
    tms: TmsService, kb: KnowledgeService, journal: RecordingJournal
) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "available( server_a ).", "infra_healthy")
    assert q(kb, "available(X)") == [{"X": "server_a"}]
    assert justified(tms, "infra_healthy") == ["available(server_a)"]
    assert len(journal.batches) == 1


def test_r_tm1_a_second_assumption_adds_a_justification_not_a_copy(
    tms: TmsService, kb: KnowledgeService
) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "available(server_a)", "budget_approved")
    assert q(kb, "available(X)") == [{"X": "server_a"}]
    assert status(tms, "available(server_a)")["justifications"] == ["infra_healthy", "budget_approved"]


def test_r_tm1_identical_means_up_to_variable_renaming(tms: TmsService, kb: KnowledgeService) -> None:
    assume(tms, "route(X, X, Y)", "a")
    assume(tms, "route(P, P, Q)", "a")  # a variant: nothing new
    assume(tms, "route(P, Q, Q)", "a")  # not a variant: a new fact and justification
    assert justified(tms, "a") == ["route(X, X, Y)", "route(P, Q, Q)"]
    assert len(q(kb, "route(A, B, C)")) == 2


def test_r_tm1_an_existing_fact_is_not_appended_again(
    tms: TmsService, kb: KnowledgeService, journal: RecordingJournal
) -> None:
    ok(kb.remember_fact({"fact": "available(server_a)"}))
    ok(kb.remember_fact({"fact": "available(X) :- backup(X)"}))
    ok(kb.remember_fact({"fact": "backup(none)"}))
    journal.batches.clear()
    assume(tms, "available(server_a)", "infra_healthy")
    assert journal.batches == [
        ("default", [("assert", "tms_justification(available(server_a), infra_healthy)")])
    ]
    assert q(kb, "available(server_a)") == [{}]  # one copy (a rule with that head is not a copy)


def test_r_tm2_journal_batches_hold_what_was_applied(tms: TmsService, journal: RecordingJournal) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "available(server_a)", "budget_approved")
    assume(tms, "available(server_a)", "budget_approved")
    assume(tms, "pair(Left,_, 'x y')", "a")
    assert journal.batches == [
        (
            "default",
            [
                ("assert", "available(server_a)"),
                ("assert", "tms_justification(available(server_a), infra_healthy)"),
            ],
        ),
        ("default", [("assert", "tms_justification(available(server_a), budget_approved)")]),
        (
            "default",
            [("assert", "pair(Left, _, 'x y')"), ("assert", "tms_justification(pair(Left, _, 'x y'), a)")],
        ),
    ]


# --------------------------------------------------------------------- retraction (§5.2)


def test_r_tm3_orphaned_facts_go_with_every_copy(
    tms: TmsService, kb: KnowledgeService, journal: RecordingJournal
) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    ok(kb.remember_fact({"fact": "available(server_a)"}))  # a second copy, never assumed
    assume(tms, "available(server_b)", "infra_healthy")
    ok(kb.remember_fact({"fact": "available(server_c)"}))
    assert retract(tms, "infra_healthy") == "Retracted assumption 'infra_healthy': 2 fact(s) removed"
    assert q(kb, "available(X)") == [{"X": "server_c"}]
    assert assumptions(tms) == []
    assert justified(tms, "infra_healthy") == []


def test_r_tm3_the_orphan_check_looks_at_other_justifications_that_unify(
    tms: TmsService, kb: KnowledgeService
) -> None:
    assume(tms, "ready(a)", "x")
    assume(tms, "ready(b)", "x")
    assume(tms, "ready(_)", "y")  # unifies with both: neither is orphaned
    assert retract(tms, "x") == "Retracted assumption 'x': 0 fact(s) removed"
    assert q(kb, "ready(X)") == [{"X": "a"}, {"X": "b"}, {"X": "_G1"}]
    assert assumptions(tms) == ["y"]


def test_r_tm3_a_non_ground_assumed_fact_removes_every_unifiable_clause(
    tms: TmsService, kb: KnowledgeService
) -> None:
    ok(kb.remember_fact({"fact": "ready(a)"}))
    ok(kb.remember_fact({"fact": "ready(b)"}))
    ok(kb.remember_fact({"fact": "other(c)"}))
    assume(tms, "ready(_)", "guess")
    assert retract(tms, "guess") == "Retracted assumption 'guess': 1 fact(s) removed"
    assert q(kb, "ready(X)") == []
    assert q(kb, "other(X)") == [{"X": "c"}]


def test_r_tm3_the_count_is_of_distinct_orphaned_facts(tms: TmsService, engine: Engine) -> None:
    # A justification recorded twice (a hand-written snapshot) is one fact.
    engine.load_clauses(
        "default",
        [
            "up(a)",
            "up(b)",
            "tms_justification(up(a), s)",
            "tms_justification(up(a), s)",
            "tms_justification(up(b), s)",
        ],
    )
    assert retract(tms, "s") == "Retracted assumption 's': 2 fact(s) removed"


def test_r_tm4_facts_that_were_never_assumed_survive(tms: TmsService, kb: KnowledgeService) -> None:
    ok(kb.remember_fact({"fact": "kept(remembered)"}))
    ok(kb.upsert_fact({"fact": "kept(upserted)"}))
    ok(kb.remember_fact({"fact": "kept(old)"}))
    ok(kb.update_fact({"old_fact": "kept(old)", "new_fact": "kept(updated)"}))
    assume(tms, "assumed(one)", "a")
    assert retract(tms, "a") == "Retracted assumption 'a': 1 fact(s) removed"
    assert q(kb, "kept(X)") == [{"X": "remembered"}, {"X": "upserted"}, {"X": "updated"}]
    assert q(kb, "assumed(X)") == []


def test_r_tm5_multi_support(tms: TmsService, kb: KnowledgeService) -> None:
    assume(tms, "available(server_a)", "a")
    assume(tms, "available(server_a)", "b")
    assert retract(tms, "a") == "Retracted assumption 'a': 0 fact(s) removed"
    assert q(kb, "available(server_a)") == [{}]
    assert status(tms, "available(server_a)") == {
        "status": "in",
        "justifications": ["b"],
        "source": "interactive",
    }
    assert retract(tms, "b") == "Retracted assumption 'b': 1 fact(s) removed"
    assert q(kb, "available(server_a)") == []
    assert status(tms, "available(server_a)") == {"status": "out", "justifications": [], "source": "unknown"}


def test_r_tm6_one_batch_justifications_first_then_each_orphan(
    tms: TmsService, journal: RecordingJournal
) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "route(From, 'x y')", "infra_healthy")
    assume(tms, "shared(1)", "infra_healthy")
    assume(tms, "shared(1)", "other")
    journal.batches.clear()
    retract(tms, "infra_healthy")
    assert journal.batches == [
        (
            "default",
            [
                ("retractall", "tms_justification(_, infra_healthy)"),
                ("retractall", "available(server_a)"),
                ("retractall", "route(From, 'x y')"),
            ],
        )
    ]


def test_r_tm6_the_batch_is_journaled_before_the_engine_changes(
    tms: TmsService, kb: KnowledgeService, journal: RecordingJournal
) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    seen: list[Any] = []

    def probe(memory: str, entries: list[tuple[str, str]]) -> None:
        if entries[0][0] == "retractall":
            seen.append((q(kb, "available(X)"), assumptions(tms)))

    journal.probe = probe
    retract(tms, "infra_healthy")
    assert seen == [([{"X": "server_a"}], ["infra_healthy"])]
    assert q(kb, "available(X)") == []


def test_r_tm6_the_batch_is_one_write_of_one_closed_batch(tms: TmsService, journal: RecordingJournal) -> None:
    assume(tms, "p(1)", "a")
    assume(tms, "p(2)", "a")
    retract(tms, "a")
    assert journal.directory is not None
    raw = (journal.directory / "default" / "journal.wal").read_bytes().decode()
    lines = raw.split("\n")[:-1]
    # the last batch: three lines; all but its last continue the batch (journal.py framing)
    assert [json.loads(line)["op"] for line in lines[-3:]] == ["retractall"] * 3
    assert lines[-3].endswith(" ") and lines[-2].endswith(" ") and not lines[-1].endswith(" ")


def test_r_tm7_derived_beliefs_are_not_tracked(tms: TmsService, kb: KnowledgeService) -> None:
    ok(kb.define_rule({"head": "serving(X)", "body": "available(X), healthy(X)"}))
    ok(kb.remember_fact({"fact": "healthy(server_a)"}))
    assume(tms, "available(server_a)", "infra_healthy")
    assert q(kb, "serving(X)") == [{"X": "server_a"}]
    assert status(tms, "serving(server_a)")["status"] == "out"  # derivable, not justified
    retract(tms, "infra_healthy")
    assert q(kb, "serving(X)") == []
    assert q(kb, "healthy(X)") == [{"X": "server_a"}]
    schema = json.loads(ok(kb.get_knowledge_schema({})))["predicates"]
    assert {"name": "serving", "arity": 1, "type": "rule", "count": 1} in schema


def test_retract_assumption_unknown_journals_nothing(tms: TmsService, journal: RecordingJournal) -> None:
    assume(tms, "p(1)", "a")
    journal.batches.clear()
    result = tms.retract_assumption({"assumption": "b"})
    assert result == ToolResult("Unknown assumption 'b'", True)
    assert "fact(s) removed" not in result.text
    assert journal.batches == []
    assert assumptions(tms) == ["a"]


# --------------------------------------------------------------------- retract_assumptions (§4.21)


def test_r_ra1_glob_semantics() -> None:
    assert glob_regex("guess_").match("guess_")
    assert not glob_regex("guess_").match("guess_x")
    assert not glob_regex("guess_").match("xguess_")
    assert glob_regex("*").match("anything_9")
    assert glob_regex("infra_*").match("infra_")
    assert glob_regex("infra_*").match("infra_db")
    assert not glob_regex("infra_*").match("infra")
    assert glob_regex("a?c").match("abc")
    assert not glob_regex("a?c").match("ac")
    assert not glob_regex("a?c").match("abbc")
    assert glob_regex("a*b*c").match("a_x_b_c")


def test_r_ra1_the_whole_name_must_match(tms: TmsService) -> None:
    for name in ("guess_", "guess_two", "my_guess_"):
        assume(tms, f"fact({name})", name)
    assert (
        ok(tms.retract_assumptions({"pattern": "guess_"}))
        == "Retracted pattern 'guess_': 1 assumption(s) removed"
    )
    assert assumptions(tms) == ["guess_two", "my_guess_"]
    assert ok(tms.retract_assumptions({"pattern": "nomatch*"})) == (
        "Retracted pattern 'nomatch*': 0 assumption(s) removed"
    )
    assert ok(tms.retract_assumptions({"pattern": "*"})) == "Retracted pattern '*': 2 assumption(s) removed"
    assert assumptions(tms) == []


def test_r_ra2_one_batch_per_assumption_in_order_of_first_appearance(
    tms: TmsService, kb: KnowledgeService, journal: RecordingJournal
) -> None:
    assume(tms, "up(x)", "infra_b")
    assume(tms, "up(y)", "infra_a")
    assume(tms, "up(z)", "infra_b")
    assume(tms, "up(x)", "infra_a")  # x is supported by both
    assume(tms, "up(w)", "keep")
    journal.batches.clear()
    assert ok(tms.retract_assumptions({"pattern": "infra_?"})) == (
        "Retracted pattern 'infra_?': 2 assumption(s) removed"
    )
    assert journal.batches == [
        ("default", [("retractall", "tms_justification(_, infra_b)"), ("retractall", "up(z)")]),
        (
            "default",
            [
                ("retractall", "tms_justification(_, infra_a)"),
                ("retractall", "up(y)"),
                ("retractall", "up(x)"),
            ],
        ),
    ]
    assert q(kb, "up(X)") == [{"X": "w"}]


# --------------------------------------------------------------------- belief status (§5.3, §5.4)


def test_r_tm8_justifications_of_every_unifying_justification_in_recorded_order(tms: TmsService) -> None:
    assume(tms, "ready(a)", "second")
    assume(tms, "ready(b)", "first")
    assume(tms, "ready(a)", "third")
    assume(tms, "other(a)", "fourth")
    assert status(tms, "ready(X)")["justifications"] == ["second", "first", "third"]
    assert status(tms, "ready(a)")["justifications"] == ["second", "third"]
    assert status(tms, "ready( a ).")["justifications"] == ["second", "third"]  # spacing does not matter
    assert status(tms, "ready(c)") == {"status": "out", "justifications": [], "source": "unknown"}


def test_r_tm8_status_is_about_justification_not_derivability(tms: TmsService, kb: KnowledgeService) -> None:
    ok(kb.remember_fact({"fact": "remembered(x)"}))
    ok(kb.define_rule({"head": "derived(X)", "body": "remembered(X)"}))
    assert status(tms, "remembered(x)") == {"status": "out", "justifications": [], "source": "interactive"}
    assert status(tms, "derived(x)") == {"status": "out", "justifications": [], "source": "unknown"}


def test_get_belief_status_of_an_unparsable_fact(tms: TmsService) -> None:
    assert tms.get_belief_status({"fact": "ready("}) == ToolResult("InvalidArguments", True)


def test_get_belief_status_never_runs_rules_even_cyclic_ones(tms: TmsService, kb: KnowledgeService) -> None:
    ok(kb.define_rule({"head": "loop(X)", "body": "loop(X)"}))
    assume(tms, "loop(a)", "a")
    assert status(tms, "loop(a)") == {"status": "in", "justifications": ["a"], "source": "interactive"}
    assert status(tms, "loop(b)") == {"status": "out", "justifications": [], "source": "unknown"}


def test_r_tm9_interactive_for_facts_entered_by_the_tools(tms: TmsService, kb: KnowledgeService) -> None:
    assume(tms, "a(1)", "x")
    ok(kb.remember_fact({"fact": "a(2)"}))
    ok(kb.upsert_fact({"fact": "a(3)"}))
    ok(kb.remember_fact({"fact": "a(0)"}))
    ok(kb.update_fact({"old_fact": "a(0)", "new_fact": "a(4)"}))
    for n in (1, 2, 3, 4):
        assert status(tms, f"a({n})")["source"] == "interactive"


def test_r_tm9_journal_and_snapshot_sources_from_loading(tms: TmsService, engine: Engine) -> None:
    # What the loaders do (§8.2): load the clauses, then note where each fact came from.
    engine.load_clauses("default", ["from_snapshot(1)", "from_journal(1)", "from_seed(1)"])
    engine.call_helper("quipu_knowledge:qk_note_source(default, from_snapshot(1), snapshot), R = ok")
    engine.call_helper("quipu_knowledge:qk_note_source(default, from_journal(1), journal), R = ok")
    assert status(tms, "from_snapshot(1)")["source"] == "snapshot"
    assert status(tms, "from_journal(1)")["source"] == "journal"
    assert status(tms, "from_seed(1)")["source"] == "unknown"  # a seed file: no record
    assert status(tms, "never_there(1)")["source"] == "unknown"


def test_r_tm9_the_first_matching_record_of_an_existing_fact_wins(tms: TmsService, engine: Engine) -> None:
    engine.load_clauses("default", ["v(1)", "v(2)"])
    engine.call_helper("quipu_knowledge:qk_note_source(default, v(1), journal), R = ok")
    engine.call_helper("quipu_knowledge:qk_note_source(default, v(2), snapshot), R = ok")
    assert status(tms, "v(X)")["source"] == "journal"
    assume(tms, "v(1)", "a")  # v(1) exists: not entered again, its source stays
    assert status(tms, "v(1)")["source"] == "journal"


def test_r_tm9_a_fact_that_no_longer_exists_has_an_unknown_source(
    tms: TmsService, kb: KnowledgeService
) -> None:
    assume(tms, "ready(a)", "x")
    ok(kb.forget_fact({"fact": "ready(a)"}))
    # R-FF2: the justification stays, so the belief is still in; the fact is gone.
    assert status(tms, "ready(a)") == {"status": "in", "justifications": ["x"], "source": "unknown"}


def test_retraction_removes_the_source_records_of_removed_facts(tms: TmsService, engine: Engine) -> None:
    assume(tms, "gone(1)", "x")
    assume(tms, "stays(1)", "y")
    retract(tms, "x")
    sources = [p.clauses for p in engine.predicates("default") if p.name == "zpm_source"]
    assert sources == [("zpm_source(stays(1), interactive)",)]


# --------------------------------------------------------------------- get_justification, list_assumptions


def test_r_gj1_facts_in_recorded_order_rendered_canonically(tms: TmsService, kb: KnowledgeService) -> None:
    assume(tms, "z(1)", "a")
    assume(tms, "pair(Left,Right)", "a")
    ok(kb.remember_fact({"fact": "m(x)"}))
    assume(tms, "m(x)", "a")
    assume(tms, "quoted('it''s', \"str\", [1,2], -3, a-b)", "a")
    assert justified(tms, "a") == [
        "z(1)",
        "pair(Left, Right)",
        "m(x)",
        "quoted('it\\'s', \"str\", [1, 2], -3, a-b)",
    ]
    assert justified(tms, "unknown") == []
    assert ok(tms.get_justification({"assumption": "unknown"})) == '{"facts":[]}'


def test_r_la1_distinct_names_in_order_of_first_justification(tms: TmsService) -> None:
    assume(tms, "p(1)", "beta")
    assume(tms, "p(2)", "alpha")
    assume(tms, "p(3)", "beta")
    assume(tms, "p(1)", "gamma")
    assert assumptions(tms) == ["beta", "alpha", "gamma"]
    retract(tms, "alpha")
    assert assumptions(tms) == ["beta", "gamma"]


def test_r_la1_an_assumption_disappears_with_its_last_justification(tms: TmsService) -> None:
    assume(tms, "p(1)", "a")
    assume(tms, "p(1)", "b")
    retract(tms, "a")
    assert assumptions(tms) == ["b"]
    retract(tms, "b")
    assert ok(tms.list_assumptions({})) == '{"assumptions":[]}'


# --------------------------------------------------------------------- cycles (§11.1 "TMS cycles")


def test_tms_cycles_single_support_multi_support_and_non_tms_survival(
    tms: TmsService, kb: KnowledgeService
) -> None:
    # single support
    assume(tms, "available(server_a)", "infra_healthy")
    assert status(tms, "available(server_a)")["status"] == "in"
    assert retract(tms, "infra_healthy") == "Retracted assumption 'infra_healthy': 1 fact(s) removed"
    assert status(tms, "available(server_a)")["status"] == "out"
    assert q(kb, "available(server_a)") == []
    # multi-support
    assume(tms, "deploy(v3)", "tests_green")
    assume(tms, "deploy(v3)", "approved")
    assume(tms, "notify(team)", "approved")
    assert retract(tms, "tests_green") == "Retracted assumption 'tests_green': 0 fact(s) removed"
    assert status(tms, "deploy(v3)") == {
        "status": "in",
        "justifications": ["approved"],
        "source": "interactive",
    }
    assert retract(tms, "approved") == "Retracted assumption 'approved': 2 fact(s) removed"
    # non-TMS survival
    ok(kb.remember_fact({"fact": "owner(alice)"}))
    assume(tms, "oncall(alice)", "rota")
    retract(tms, "rota")
    assert q(kb, "owner(X)") == [{"X": "alice"}]
    assert status(tms, "owner(alice)")["status"] == "out"
    # and round again: the same names and facts behave the same every cycle
    for _ in range(3):
        assume(tms, "available(server_a)", "infra_healthy")
        assume(tms, "available(server_b)", "infra_healthy")
        assert assumptions(tms) == ["infra_healthy"]
        assert retract(tms, "infra_healthy") == "Retracted assumption 'infra_healthy': 2 fact(s) removed"
        assert tms.retract_assumption({"assumption": "infra_healthy"}) == ToolResult(
            "Unknown assumption 'infra_healthy'", True
        )
    assert assumptions(tms) == []
    assert q(kb, "available(X)") == []


# --------------------------------------------------------------------- replay (R-TM6, R-W4)


def replay(engine: Engine, journal: RecordingJournal, memory: str, into: str) -> None:
    """Replay the memory's journal file into another memory with the meaning of R-W2."""
    assert journal.directory is not None
    loaded = read_journal(journal.directory / memory / "journal.wal")
    assert loaded.problems == ()
    for entry in loaded.entries:
        if entry.op == "assert":
            engine.assertz(into, entry.clause)
        elif entry.op == "retract":
            engine.retract_first_fact(into, entry.clause)
        else:
            engine.retractall(into, entry.clause)


def test_replaying_the_journal_rebuilds_the_same_state(
    tms: TmsService, kb: KnowledgeService, engine: Engine, journal: RecordingJournal
) -> None:
    assume(tms, "available(server_a)", "infra_healthy")
    assume(tms, "available(server_b)", "infra_healthy")
    assume(tms, "available(server_b)", "budget_approved")
    assume(tms, "route(From, 'x y')", "guess_1")
    assume(tms, "route(a, 'x y')", "guess_2")
    ok(kb.remember_fact({"fact": "available(server_a)"}))
    ok(kb.define_rule({"head": "serving(X)", "body": "available(X)"}))
    assume(tms, "cycle(1)", "c")
    retract(tms, "c")
    assume(tms, "cycle(1)", "c")  # assumed again after its retraction
    retract(tms, "infra_healthy")
    ok(tms.retract_assumptions({"pattern": "guess_*"}))
    tms.retract_assumption({"assumption": "never"})
    assume(tms, "available(server_a)", "infra_healthy")
    ok(kb.forget_fact({"fact": "available(server_a)"}))  # R-FF2: the justification stays
    ok(kb.clear_context({"category": "cycle(_)"}))  # R-CC3: the justification stays
    replay(engine, journal, "default", "replayed")
    assert clauses(engine, "replayed") == clauses(engine, "default")
    for tool, args in (
        ("list_assumptions", {}),
        ("get_justification", {"assumption": "budget_approved"}),
        ("get_justification", {"assumption": "c"}),
        ("get_belief_status", {"fact": "available(X)"}),
    ):
        live = json.loads(ok(tms.call(tool, args)))
        replayed = json.loads(ok(tms.call(tool, {**args, "memory": "replayed"})))
        if tool == "get_belief_status":  # the source differs by design: journal, not interactive
            live.pop("source"), replayed.pop("source")
        assert replayed == live, tool
    assert assumptions(tms) == ["budget_approved", "c", "infra_healthy"]


def test_replaying_a_retraction_removes_what_the_live_retraction_removed(
    tms: TmsService, kb: KnowledgeService, engine: Engine, journal: RecordingJournal
) -> None:
    # A rule whose head unifies with an orphan goes live exactly as it goes on replay
    # (a retractall removes every clause whose head unifies, R-W2).
    ok(kb.define_rule({"head": "up(X)", "body": "mirror(X)"}))
    ok(kb.remember_fact({"fact": "up(b)"}))
    assume(tms, "up(_)", "guess")
    retract(tms, "guess")
    assert q(kb, "up(X)") == []
    replay(engine, journal, "default", "replayed")
    assert clauses(engine, "replayed") == clauses(engine, "default")


# --------------------------------------------------------------------- knowledge tools on TMS facts


def test_update_fact_on_an_assumed_fact_leaves_the_old_justification(
    tms: TmsService, kb: KnowledgeService
) -> None:
    assume(tms, 'server(alpha, "1.0")', "deployed")
    ok(kb.update_fact({"old_fact": 'server(alpha, "1.0")', "new_fact": 'server(alpha, "2.0")'}))
    assert status(tms, 'server(alpha, "1.0")') == {
        "status": "in",
        "justifications": ["deployed"],
        "source": "unknown",
    }
    assert status(tms, 'server(alpha, "2.0")') == {
        "status": "out",
        "justifications": [],
        "source": "interactive",
    }
    # The orphan is the justified (old) fact; the updated one was never assumed and stays.
    assert retract(tms, "deployed") == "Retracted assumption 'deployed': 1 fact(s) removed"
    assert q(kb, "server(alpha, V)") == [{"V": "2.0"}]


def test_clear_context_on_assumed_facts_leaves_the_justifications(
    tms: TmsService, kb: KnowledgeService
) -> None:
    assume(tms, "ready(a)", "x")
    ok(kb.clear_context({"category": "ready(_)"}))
    assert q(kb, "ready(X)") == []
    assert status(tms, "ready(a)")["justifications"] == ["x"]
    assert retract(tms, "x") == "Retracted assumption 'x': 1 fact(s) removed"
    assert assumptions(tms) == []


# --------------------------------------------------------------------- engine failures


def test_a_dead_engine_fails_the_call_and_the_next_call_succeeds(tms: TmsService, engine: Engine) -> None:
    pid = engine.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert tms.list_assumptions({}) == ToolResult("ExecutionFailed", True)
    assert ok(tms.list_assumptions({})) == '{"assumptions":[]}'
    assert assume(tms, "back(1)", "a") == "Assumed: back(1) under assumption 'a'"
    assert engine.pid != pid


def test_the_helpers_survive_a_restart(tms: TmsService, engine: Engine) -> None:
    engine.restart()
    assume(tms, "after(restart)", "a")
    assert justified(tms, "a") == ["after(restart)"]


def test_handles_only_its_six_tools(tms: TmsService) -> None:
    assert all(tms.handles(name) for name in TOOL_NAMES)
    assert not tms.handles("remember_fact")
    with pytest.raises(KeyError):
        tms.call("remember_fact", {})


def test_a_shared_lock_is_used(engine: Engine, memories: StaticMemories, journal: RecordingJournal) -> None:
    lock = threading.RLock()
    service = TmsService(engine, memories, journal, lock=lock)
    assert service._lock is lock
    with lock:  # reentrant: the holder can still call
        assert ok(service.list_assumptions({})) == '{"assumptions":[]}'
