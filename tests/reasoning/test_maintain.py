"""Incremental maintenance (``Reasoner.maintain``, and ``[quipu.reasoning] reactive``): after any
mix of premise assertions and retractions, the companion must hold exactly what a full run
derives, for every kind of program. Each step checks two things: the naive reference evaluator
of ``test_reason`` agrees with the companion, and a full ``reason`` run afterwards finds
nothing to assert or retract (so every rule's claims are exactly its output)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from tests.backends import store_location
from tests.reasoning.test_reason import (
    EX,
    INFERRED,
    RULE_HEAD,
    Fact,
    Program,
    derived,
    edges,
    naive,
    nt,
    rule_doc,
)

CLOSURE = rule_doc(
    ("base", "reach(?x, ?y)", "dep(?x, ?y)"), ("step", "reach(?x, ?z)", "reach(?x, ?y), dep(?y, ?z)")
)
CLOSURE_STRATA: Program = [
    [
        (("reach", "?x", "?y"), [(False, "dep", "?x", "?y")]),
        (("reach", "?x", "?z"), [(False, "reach", "?x", "?y"), (False, "dep", "?y", "?z")]),
    ]
]


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "maintain.db"), base_ns=EX) as opened:
        yield opened


def _plain(found: set[Fact]) -> set[Fact]:
    return {f for f in found if f[1] != "fanout"}


def _delete(kb: KnowledgeBase, gone: set[Fact]) -> None:
    kb.update(f"DELETE DATA {{ {nt(gone)} }}")


def _steps(
    kb: KnowledgeBase,
    facts: set[Fact],
    doc: str,
    strata: Program,
    fresh: Any,
    seed: int,
    steps: int = 6,
    also: Any = None,
) -> list[dict[str, Any]]:
    """Random writes, each followed by maintenance and both checks (and ``also``, for what the
    reference evaluator cannot compute); returns the reports."""
    rng = random.Random(seed)
    kb.knot(nt(facts), format="nt")
    assert kb.reasoning.maintain(rules=doc).mode == "full"  # no notes yet: a full run
    assert _plain(derived(kb)) == naive(facts, strata)
    reports = []
    for _ in range(steps):
        gone = set(rng.sample(sorted(facts, key=str), k=min(len(facts), rng.randrange(1, 4))))
        added = fresh(rng) - facts
        if gone:
            _delete(kb, gone)
        if added:
            kb.knot(nt(added), format="nt")
        facts = (facts - gone) | added
        report = kb.reasoning.maintain(rules=doc)
        assert report.mode == "incremental"
        reports.append(report.as_json())
        assert _plain(derived(kb)) == naive(facts, strata)
        if also is not None:
            also()
        full = kb.reasoning.reason(rules=doc)
        assert (full.asserted, full.retracted) == (0, 0), "the maintained claims differ from a full run"
    return reports


def test_transitive_closure_with_retractions_and_alternative_paths(kb: KnowledgeBase) -> None:
    reports = _steps(
        kb,
        edges(25, 40, "dep", 1),
        CLOSURE,
        CLOSURE_STRATA,
        lambda rng: edges(25, 3, "dep", rng.randrange(1 << 30)),
        2,
    )
    assert any(r["retracted"] for r in reports) and any(r["asserted"] for r in reports)


def test_a_three_atom_join(kb: KnowledgeBase) -> None:
    facts = edges(12, 25, "a", 3) | edges(12, 25, "b", 4) | edges(12, 25, "c", 5)
    doc = rule_doc(("j", "j(?x, ?w)", "a(?x, ?y), b(?y, ?z), c(?z, ?w)"))
    strata: Program = [
        [(("j", "?x", "?w"), [(False, "a", "?x", "?y"), (False, "b", "?y", "?z"), (False, "c", "?z", "?w")])]
    ]
    _steps(kb, facts, doc, strata, lambda rng: edges(12, 4, rng.choice("abc"), rng.randrange(1 << 30)), 6)


def test_mutual_recursion(kb: KnowledgeBase) -> None:
    doc = rule_doc(
        ("odd0", "odd(?x, ?y)", "edge(?x, ?y)"),
        ("odd", "odd(?x, ?z)", "even(?x, ?y), edge(?y, ?z)"),
        ("even", "even(?x, ?z)", "odd(?x, ?y), edge(?y, ?z)"),
    )
    strata: Program = [
        [
            (("odd", "?x", "?y"), [(False, "edge", "?x", "?y")]),
            (("odd", "?x", "?z"), [(False, "even", "?x", "?y"), (False, "edge", "?y", "?z")]),
            (("even", "?x", "?z"), [(False, "odd", "?x", "?y"), (False, "edge", "?y", "?z")]),
        ]
    ]
    _steps(
        kb, edges(15, 22, "edge", 7), doc, strata, lambda rng: edges(15, 2, "edge", rng.randrange(1 << 30)), 8
    )


def test_negation_above_a_recursive_stratum(kb: KnowledgeBase) -> None:
    facts = edges(20, 28, "dep", 9) | {(f"n{i}", "tested", "yes") for i in range(0, 20, 3)}
    doc = rule_doc(
        ("base", "reach(?x, ?y)", "dep(?x, ?y)"),
        ("step", "reach(?x, ?z)", "dep(?x, ?y), reach(?y, ?z)"),
        ("risky", "risky(?x, ?y)", "reach(?x, ?y), not tested(?x, yes)"),
    )
    strata: Program = [
        [
            (("reach", "?x", "?y"), [(False, "dep", "?x", "?y")]),
            (("reach", "?x", "?z"), [(False, "dep", "?x", "?y"), (False, "reach", "?y", "?z")]),
        ],
        [(("risky", "?x", "?y"), [(False, "reach", "?x", "?y"), (True, "tested", "?x", "yes")])],
    ]

    def fresh(rng: random.Random) -> set[Fact]:
        return edges(20, 2, "dep", rng.randrange(1 << 30)) | {(f"n{rng.randrange(20)}", "tested", "yes")}

    _steps(kb, facts, doc, strata, fresh, 10)


def test_literal_valued_rules(kb: KnowledgeBase) -> None:
    facts: set[Fact] = {(f"s{i}", "tier", ("lit", "gold" if i % 3 == 0 else "silver")) for i in range(15)}
    facts |= {(f"s{i}", "owner", f"t{i % 4}") for i in range(15)}
    doc = rule_doc(
        ("gold", 'premium(?s, \\"yes\\")', 'tier(?s, \\"gold\\")'),
        ("team", "teamTier(?t, ?v)", "owner(?s, ?t), tier(?s, ?v)"),
    )
    strata: Program = [
        [(("premium", "?s", ("lit", "yes")), [(False, "tier", "?s", ("lit", "gold"))])],
        [(("teamTier", "?t", "?v"), [(False, "owner", "?s", "?t"), (False, "tier", "?s", "?v")])],
    ]

    def fresh(rng: random.Random) -> set[Fact]:
        i = rng.randrange(15, 25)
        return {(f"s{i}", "tier", ("lit", rng.choice(["gold", "silver"]))), (f"s{i}", "owner", f"t{i % 4}")}

    _steps(kb, facts, doc, strata, fresh, 11)


def test_an_aggregate_over_a_maintained_stratum(kb: KnowledgeBase) -> None:
    doc = CLOSURE + "\n" + rule_doc(("fan", "fanout(?x, count(?y))", "reach(?x, ?y)")).removeprefix(RULE_HEAD)

    def counts() -> None:  # the reference evaluator has no aggregates: count the closure
        reach: dict[str, set[object]] = {}
        for s, p, o in derived(kb):
            if p == "reach":
                reach.setdefault(str(s), set()).add(o)
        rows = kb.query(f"SELECT ?s ?n FROM <{INFERRED}> WHERE {{ ?s <{EX}fanout> ?n }}")
        assert isinstance(rows, list)
        assert {str(r["s"])[len(EX) :]: int(str(r["n"])) for r in rows} == {
            s: len(o) for s, o in reach.items()
        }

    facts = edges(15, 25, "dep", 12)
    _steps(
        kb, facts, doc, CLOSURE_STRATA, lambda rng: edges(15, 2, "dep", rng.randrange(1 << 30)), 13, 5, counts
    )


def test_a_predicate_both_stated_and_derived(kb: KnowledgeBase) -> None:
    # dep is a premise and a head: a retracted premise may stay derived through another path
    doc = rule_doc(("t", "dep(?a, ?c)", "dep(?a, ?b), dep(?b, ?c)"))
    kb.knot(nt({("a", "dep", "b"), ("b", "dep", "c"), ("a", "dep", "c"), ("c", "dep", "d")}), format="nt")
    kb.reasoning.maintain(rules=doc)
    _delete(kb, {("a", "dep", "b")})
    kb.reasoning.maintain(rules=doc)
    assert derived(kb) == {("b", "dep", "d"), ("a", "dep", "d")}  # a-c-d still holds
    _delete(kb, {("a", "dep", "c")})
    kb.reasoning.maintain(rules=doc)
    assert derived(kb) == {("b", "dep", "d")}
    full = kb.reasoning.reason(rules=doc)
    assert (full.asserted, full.retracted) == (0, 0)


def test_changed_rules_fall_back_to_a_full_run(kb: KnowledgeBase) -> None:
    kb.knot(nt(edges(10, 12, "dep", 14)), format="nt")
    kb.reasoning.maintain(rules=CLOSURE)
    other = rule_doc(("base", "reach(?x, ?y)", "dep(?y, ?x)"))
    assert kb.reasoning.maintain(rules=other).mode == "full"  # the companion's digest differs
    again = kb.reasoning.maintain(rules=other)
    assert (again.mode, again.asserted, again.retracted, again.strata_run) == ("incremental", 0, 0, 0)


def test_an_unrelated_write_touches_no_stratum(kb: KnowledgeBase) -> None:
    kb.knot(nt(edges(10, 12, "dep", 15)), format="nt")
    kb.reasoning.maintain(rules=CLOSURE)
    kb.knot(nt({("x", "likes", "y")}), format="nt")
    report = kb.reasoning.maintain(rules=CLOSURE)
    assert (report.mode, report.strata_run, report.asserted, report.retracted) == ("incremental", 0, 0, 0)


def test_no_claim_is_closed_and_reasserted_when_its_derivation_survives(kb: KnowledgeBase) -> None:
    # a->b->c and a->d->c: dropping b->c overdeletes reach(a, c), which is then re-derived;
    # maintenance keeps the claim instead of closing and writing it again
    kb.knot(nt({("a", "dep", "b"), ("b", "dep", "c"), ("a", "dep", "d"), ("d", "dep", "c")}), format="nt")
    kb.reasoning.maintain(rules=CLOSURE)
    before = _claim_ids(kb)
    _delete(kb, {("b", "dep", "c")})
    report = kb.reasoning.maintain(rules=CLOSURE)
    assert report.retracted == 1  # reach(b, c), by the base rule
    after = _claim_ids(kb)
    assert len(before - after) == 1 and not after - before  # only reach(b, c) closed, nothing new


def _claim_ids(kb: KnowledgeBase) -> set[int]:
    sql = (
        "SELECT f.id FROM facts f JOIN terms t ON t.id = f.g WHERE t.iri = :g AND f.op = 1 "
        "AND f.valid_to IS NULL AND f.a IN (SELECT id FROM terms WHERE iri = :p)"
    )
    from sqlalchemy import text

    with kb.db.read() as conn:
        rows: list[Any] = list(conn.execute(text(sql), {"g": INFERRED, "p": EX + "reach"}))
    return {int(i) for (i,) in rows}


# -- [quipu.reasoning] reactive ------------------------------------------------------------------


@pytest.fixture
def reactive(tmp_path: Path) -> Iterator[KnowledgeBase]:
    from quipu.config import Settings

    settings = Settings.model_validate(
        {
            "store": {"db": store_location(tmp_path, "reactive.db")},
            "reasoning": {"reactive": True},
            "base_ns": EX,
        }
    )
    with KnowledgeBase.from_settings(settings) as opened:
        yield opened


def _reach(kb: KnowledgeBase) -> set[Fact]:
    return {f for f in derived(kb) if f[1] == "reach"}


def test_reactive_writes_are_followed_by_their_derivations(reactive: KnowledgeBase) -> None:
    kb = reactive
    kb.load_shapes("rules", CLOSURE)
    kb.knot(nt({("a", "dep", "b"), ("b", "dep", "c")}), format="nt")
    assert _reach(kb) == {("a", "reach", "b"), ("b", "reach", "c"), ("a", "reach", "c")}
    kb.knot(nt({("c", "dep", "d")}), format="nt")
    assert ("a", "reach", "d") in _reach(kb)
    # retracting a premise removes what rested on it right after the write, not at the next run
    _delete(kb, {("b", "dep", "c")})
    assert _reach(kb) == {("a", "reach", "b"), ("c", "reach", "d")}
    last = _sources(kb)[-3:]
    assert [s for s, _a in last] == ["reasoner:base", "reasoner:step", "quipu:inferred-plane"]
    full = kb.reasoning.reason()
    assert (full.asserted, full.retracted) == (0, 0)


def test_reactive_maintains_a_named_graph_once_it_has_a_companion(reactive: KnowledgeBase) -> None:
    kb = reactive
    kb.load_shapes("rules", CLOSURE)
    g = "http://ex.org/g"
    kb.create_graph(g)
    kb.knot(f"<{EX}a> <{EX}dep> <{EX}b> .", format="nt", graph=g)
    assert not _named(kb, g)  # never reasoned over: no companion is made behind the user's back
    kb.reasoning.reason(graph=g)
    assert _named(kb, g) == {(EX + "a", EX + "b")}
    kb.knot(f"<{EX}b> <{EX}dep> <{EX}c> .", format="nt", graph=g)
    assert _named(kb, g) == {(EX + "a", EX + "b"), (EX + "b", EX + "c"), (EX + "a", EX + "c")}


def test_reactive_with_unparseable_stored_rules_keeps_the_write(
    reactive: KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    kb = reactive
    bad = RULE_HEAD + 'r:x a rule:Rule ; rule:id "x" ; rule:head "reach(?x, ?y" ; rule:body "dep(?x, ?y)" .'
    kb.load_shapes("rules", bad)
    with caplog.at_level("ERROR", logger="quipu.reasoning"):
        kb.knot(nt({("a", "dep", "b")}), format="nt")
    assert kb.query(f"ASK {{ <{EX}a> <{EX}dep> <{EX}b> }}") is True
    assert "reactive reasoning failed" in caplog.text and "rules failed to parse" in caplog.text


def _named(kb: KnowledgeBase, g: str) -> set[tuple[str, str]]:
    rows = kb.query(f"SELECT ?s ?o WHERE {{ GRAPH <{g}#inferred> {{ ?s <{EX}reach> ?o }} }}")
    assert isinstance(rows, list)
    return {(str(r["s"]), str(r["o"])) for r in rows}


def _sources(kb: KnowledgeBase) -> list[tuple[str, str]]:
    with kb.db.read() as conn:
        rows: list[Any] = list(conn.exec_driver_sql("SELECT source, actor FROM transactions ORDER BY id"))
    return [(str(s), str(a)) for s, a in rows]


def test_loading_rules_takes_effect_at_once_and_removing_them_stops_maintenance(
    reactive: KnowledgeBase,
) -> None:
    # shapes rule 6: the reactive rule set is reloaded from the stored shapes, no restart
    kb = reactive
    kb.knot(nt({("a", "dep", "b"), ("b", "dep", "c")}), format="nt")
    assert not _reach(kb)
    kb.load_shapes("rules", CLOSURE)
    assert _reach(kb) == {("a", "reach", "b"), ("b", "reach", "c"), ("a", "reach", "c")}
    kb.remove_shapes("rules")
    kb.knot(nt({("c", "dep", "d")}), format="nt")
    assert ("c", "reach", "d") not in _reach(kb)  # no stored rules: nothing is maintained


def test_another_writer_of_derived_as_of_does_not_hide_premise_changes(kb: KnowledgeBase) -> None:
    # An OWL materialisation into ROOT's companion moves derivedAsOfTx to its own head;
    # maintenance starts from the rules' own note (rulesAsOfTx), so it still sees the edge
    # written in between.
    from quipu.reasoning.companion import bookkeeping
    from quipu.store import graph_registry

    kb.knot(nt({("a", "dep", "b")}), format="nt")
    kb.reasoning.maintain(rules=CLOSURE)
    kb.knot(nt({("b", "dep", "c")}), format="nt")
    with kb.db.write() as ctx:
        gid = graph_registry.graph_id(kb.db, ctx.conn, INFERRED)
        assert gid is not None
        head = graph_registry.head_of(ctx.conn, 0)
        bookkeeping(kb.db, ctx, INFERRED, gid, False, head, "2026-12-07T00:00:00Z")  # as OWL does
    report = kb.reasoning.maintain(rules=CLOSURE)
    assert report.mode == "incremental" and report.asserted == 2  # base: b-c; step: a-c
    assert _reach(kb) == {("a", "reach", "b"), ("b", "reach", "c"), ("a", "reach", "c")}
