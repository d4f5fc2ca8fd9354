"""Joins over the knowledge graph: the call cache of prolog/graph.pl (docs/logic.md).

A rule joining graph predicates calls its inner pattern once per outer solution. After a few
lookups of one call pattern in a tool call, the logic memory reads the whole pattern in one SQL
statement and answers the rest from memory. These tests hold that to three things, with a real
engine and a real store: the answers are exactly those of one read per call; the statements are
one per call pattern, not one per solution; and no cached row outlives its tool call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import QuipuError
from quipu.logic.graph_bridge import GraphBridge, Pattern, Row, StoreGraph
from quipu.logic.service import LogicHost, LogicService
from quipu.store.schema import ROOT_IRI
from tests.logic.runtime_support import root  # noqa: F401 - the root fixture
from tests.store.test_pattern_reads import statements, touches_facts

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
GRAPH = "urn:test:graph:audit"


def iri(name: str) -> str:
    return "'" + EX + name + "'"


def world(n: int) -> str:
    """n services; every third one's test run failed; labels, core counts, a blank node."""
    lines = []
    for i in range(n):
        status = "failed" if i % 3 == 0 else "passed"
        lines += [
            f"<{EX}s{i}> <{EX}kind> <{EX}Service> .",
            f"<{EX}s{i}> <{EX}runs> <{EX}r{i}> .",
            f'<{EX}r{i}> <{EX}status> "{status}" .',
            f'<{EX}s{i}> <{EX}label> "service {i}"@en .',
            f'<{EX}s{i}> <{EX}cores> "{i % 4}"^^<{XSD}integer> .',
        ]
    lines.append(f"<{EX}s0> <{EX}owner> _:team .")
    lines.append(f'_:team <{EX}label> "the team" .')
    return "\n".join(lines)


FAILED_JOIN = (
    f"aggregate_all(count, (rdf(_S, {iri('kind')}, {iri('Service')}), rdf(_S, {iri('runs')}, _R), "
    f"rdf(_R, {iri('status')}, literal(failed))), N)"
)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(str(tmp_path / "graph.db")) as store:
        store.knot(world(30), "nt", timestamp="2026-11-01T00:00:00Z")
        store.create_graph(GRAPH)
        store.knot(f"<{EX}s1> <{EX}runs> <{EX}audit1> .", "nt", graph=GRAPH)
        yield store


def open_logic(root: Path, source: StoreGraph) -> LogicHost:  # noqa: F811
    return LogicHost(root, graph=source)


@contextmanager
def world_store(root: Path, tmp_path: Path, n: int) -> Iterator[tuple[KnowledgeBase, LogicService]]:  # noqa: F811
    """A store of ``world(n)`` and a logic memory reading it."""
    with quipu.open(str(tmp_path / "big.db")) as kb:
        kb.knot(world(n), "nt")
        host = open_logic(root, StoreGraph(lambda: kb.db))
        try:
            yield kb, host.service()
        finally:
            host.close()


@pytest.fixture
def logic(root: Path, kb: KnowledgeBase) -> Iterator[LogicService]:  # noqa: F811
    host = open_logic(root, StoreGraph(lambda: kb.db))
    try:
        yield host.service()
    finally:
        host.close()


def tune(
    logic: LogicService, *, lookups: int | None = None, rows: int | None = None, per_lookup: int | None = None
) -> None:
    """Set the cache's thresholds in the engine (they are facts of prolog/graph.pl)."""
    settings = (
        ("qg_lookups_before_load", lookups),
        ("qg_cache_rows", rows),
        ("qg_rows_per_lookup", per_lookup),
    )
    for name, value in settings:
        if value is not None:
            logic.runtime.engine.call_helper(
                f"retractall(quipu_graph:{name}(_)), assertz(quipu_graph:{name}({int(value)})), R = ok"
            )


def ask(logic: LogicService, goal: str) -> list[dict[str, Any]]:
    result = logic.call("query_logic", {"goal": goal})
    assert not result.is_error, result.text
    rows: list[dict[str, Any]] = json.loads(result.text)
    return rows


def test_a_join_costs_one_statement_per_call_pattern_not_one_per_solution(
    root: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    with world_store(root, tmp_path, 600) as (kb, logic):
        with statements(kb) as log:
            assert ask(logic, FAILED_JOIN) == [{"N": 200}]
        read = [q for q in log if touches_facts(q)]
        # The outer pattern: its 600 rows in two growing pages (500, then up to 1000). Each
        # inner pattern (runs, status): 7 lookups one by one; at the 8th its 600 rows are
        # counted, found worth loading (8 lookups x 250 rows >= 600) and read in one
        # statement, which answers the remaining 593 lookups.
        assert len(read) == 2 + 2 * (7 + 1 + 1), read
        assert sum("count(" in q for q in read) == 2
        assert sum("LIMIT" not in q for q in read) == 2  # the two whole-pattern loads


GOALS = [
    FAILED_JOIN,
    # rdf/4 with the graph unbound: ROOT and the named graph
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf(S, {iri('runs')}, R, G)",
    # literals: a partly bound language string, a bound typed one, a non-canonical and an
    # upper-case tag (each answers as the store compares it, then unifies)
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf(S, {iri('label')}, literal(lang(en, L)))",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf(S, {iri('cores')}, literal(type('{XSD}integer', '2')))",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf(S, {iri('cores')}, literal(type('{XSD}integer', '02')))",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf(S, {iri('label')}, literal(lang('EN', L)))",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf(S, {iri('cores')}, literal(C))",
    # lookups by object: the inner pattern bound on its object
    f"rdf(R, {iri('status')}, literal(failed)), rdf(S, {iri('runs')}, R)",
    # the past: a valid time and a transaction read point, and each fact's transaction
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf_at(S, {iri('runs')}, R, '2026-11-10T00:00:00Z')",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf_at(S, {iri('runs')}, R, '2020-01-01T00:00:00Z')",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf_tx(S, {iri('runs')}, R, Tx)",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf_tx(S, {iri('runs')}, R, 1)",
    # a blank node's key joins like an IRI
    f"rdf(S, {iri('owner')}, T), rdf(T, {iri('label')}, L)",
    # a subject the store has never seen, and a pattern whose predicate nobody uses
    f"member(S, ['{EX}nobody', '{EX}s3']), rdf(S, {iri('runs')}, R)",
    f"rdf(S, {iri('kind')}, {iri('Service')}), rdf(S, {iri('unused')}, O)",
]


@pytest.mark.parametrize("goal", GOALS)
def test_cached_answers_are_the_answers_of_one_read_per_call(logic: LogicService, goal: str) -> None:
    tune(logic, lookups=10**9)  # never cached
    fetched = ask(logic, goal)
    tune(logic, lookups=1)  # cached from the first lookup
    cached = ask(logic, goal)
    assert cached == fetched  # the same solutions in the same order
    tune(logic, lookups=8)


def test_the_answers_are_right(logic: LogicService) -> None:
    """Spot checks of what the agreement test compares, so that agreeing on a wrong answer fails."""
    tune(logic, lookups=1)
    assert ask(logic, FAILED_JOIN) == [{"N": 10}]
    named = ask(logic, f"rdf({iri('s1')}, {iri('runs')}, R, G)")
    assert {(r["R"], r["G"]) for r in named} == {(EX + "r1", ROOT_IRI), (EX + "audit1", GRAPH)}
    assert ask(logic, f"rdf(R, {iri('status')}, literal(failed)), rdf(S, {iri('runs')}, R)")[:2] == [
        {"R": EX + "r0", "S": EX + "s0"},
        {"R": EX + "r3", "S": EX + "s3"},
    ]
    assert ask(logic, f"rdf(S, {iri('owner')}, T), rdf(T, {iri('label')}, literal(L))") == [
        {"S": EX + "s0", "T": ask(logic, f"rdf({iri('s0')}, {iri('owner')}, T)")[0]["T"], "L": "the team"}
    ]
    cores = ask(logic, f"rdf({iri('s2')}, {iri('cores')}, literal(C))")  # an unbound literal
    assert cores == [{"C": {"functor": "type", "args": [XSD + "integer", "2"]}}]
    past = f"rdf(S, {iri('kind')}, {iri('Service')}), rdf_at(S, {iri('runs')}, R, '2020-01-01T00:00:00Z')"
    assert ask(logic, past) == []  # before the valid time of every run


def test_a_pattern_too_big_for_the_cache_is_read_per_call(root: Path, tmp_path: Path) -> None:  # noqa: F811
    with world_store(root, tmp_path, 60) as (kb, logic):
        tune(logic, lookups=2, rows=50)  # 60 rows per inner pattern: neither fits
        with statements(kb) as log:
            assert ask(logic, FAILED_JOIN) == [{"N": 20}]
        read = [q for q in log if touches_facts(q)]
        # each inner pattern: counted once at the 2nd lookup, found too big, then every
        # lookup on its own
        assert len(read) == 1 + 2 * (1 + 60), len(read)
        assert sum("count(" in q for q in read) == 2 and all("LIMIT" in q for q in read)


def test_a_few_lookups_of_a_big_pattern_never_load_it(root: Path, tmp_path: Path) -> None:  # noqa: F811
    with world_store(root, tmp_path, 600) as (kb, logic):
        tune(logic, per_lookup=10)  # loading 600 rows is worth 60 lookups
        few = ", ".join(f"'{EX}s{i}'" for i in range(59))
        with statements(kb) as log:
            assert len(ask(logic, f"member(S, [{few}]), rdf(S, {iri('runs')}, R)")) == 59
        read = [q for q in log if touches_facts(q)]
        assert len(read) == 59 + 1 and all("LIMIT" in q for q in read)  # the lookups, one count
        more = ", ".join(f"'{EX}s{i}'" for i in range(100))
        with statements(kb) as log:
            assert len(ask(logic, f"member(S, [{more}]), rdf(S, {iri('runs')}, R)")) == 100
        read = [q for q in log if touches_facts(q)]
        # 59 lookups one by one, the count, the 60th loads the pattern: 40 from memory
        assert len(read) == 59 + 1 + 1 and sum("LIMIT" not in q for q in read) == 1


def test_no_cached_row_outlives_its_tool_call(logic: LogicService, kb: KnowledgeBase) -> None:
    tune(logic, lookups=1)
    assert ask(logic, FAILED_JOIN) == [{"N": 10}]
    kb.knot(f'<{EX}r1> <{EX}status> "failed" .', "nt")  # s1's run fails too now
    assert ask(logic, FAILED_JOIN) == [{"N": 11}]
    kb.retract(EX + "r0", predicate=EX + "status")
    assert ask(logic, FAILED_JOIN) == [{"N": 10}]
    # a belief over the graph is re-evaluated when asked: explain_why reads the graph again
    logic.call(
        "define_rule",
        {"head": "failing(S)", "body": f"rdf(S, {iri('runs')}, R), rdf(R, {iri('status')}, literal(failed))"},
    )
    assert json.loads(logic.call("explain_why", {"fact": f"failing({iri('s1')})"}).text)["proven"] is True
    kb.retract(EX + "r1", predicate=EX + "status")
    assert json.loads(logic.call("explain_why", {"fact": f"failing({iri('s1')})"}).text)["proven"] is False


class BreaksMidLoad(StoreGraph):
    """A store whose whole-pattern read fails after its first rows (a lost database, say)."""

    def stream(self, pattern: Pattern, chunk: int) -> Iterator[list[Row]]:
        yield from list(super().stream(pattern, 1))[:1]
        raise QuipuError("the database went away mid-read")


def test_a_failed_load_is_an_error_never_no_solutions(root: Path, kb: KnowledgeBase) -> None:  # noqa: F811
    host = open_logic(root, BreaksMidLoad(lambda: kb.db))
    try:
        logic = host.service()
        tune(logic, lookups=1)
        result = logic.call("query_logic", {"goal": FAILED_JOIN})
        assert result.is_error and "the database went away mid-read" in result.text
        tune(logic, lookups=10**9)  # the same connection still answers the next call
        assert ask(logic, FAILED_JOIN) == [{"N": 10}]
    finally:
        host.close()


def test_the_bridge_sends_a_whole_pattern_in_page_lines_or_says_it_is_too_big(kb: KnowledgeBase) -> None:
    bridge = GraphBridge(StoreGraph(lambda: kb.db))
    try:
        request = {"s": None, "p": EX + "runs", "o": None, "graph": None, "point": None}
        lines = list(bridge.answers(json.dumps({**request, "bulk": 100}).encode()))
        assert [line["more"] for line in lines] == [True, False] and lines[-1]["truncated"] is False
        assert len(lines[0]["rows"]) == 30 and lines[-1]["rows"] == []
        tx = min(t["id"] for t in kb.transactions()["transactions"])  # the world's
        assert list(lines[0]["rows"][0]) == [EX + "s0", EX + "runs", ["iri", EX + "r0"], ROOT_IRI, tx]
        too_big = list(bridge.answers(json.dumps({**request, "bulk": 29}).encode()))
        assert too_big == [{"rows": [], "more": False, "truncated": True}]
        assert list(bridge.answers(json.dumps({**request, "count": 100}).encode())) == [{"count": 30}]
        assert list(bridge.answers(json.dumps({**request, "count": 10}).encode())) == [{"count": 11}]
        page = list(bridge.answers(json.dumps({**request, "size": 7}).encode()))
        assert len(page) == 1 and len(page[0]["rows"]) == 7 and page[0]["next"] is not None
        refusals = (
            ({"size": 0}, "size"),
            ({"size": 5001}, "size"),
            ({"bulk": -1}, "bulk"),
            ({"count": "9"}, "count"),
        )
        for bad, field in refusals:
            (refused,) = bridge.answers(json.dumps({**request, **bad}).encode())
            assert field in refused["error"]
    finally:
        bridge.close()


class SlowLoad(StoreGraph):
    """A whole-pattern read that outlasts the query's time limit."""

    def stream(self, pattern: Pattern, chunk: int) -> Iterator[list[Row]]:
        time.sleep(2.5)
        yield from super().stream(pattern, chunk)


def test_a_load_stopped_by_the_time_limit_fails_the_query_and_the_next_one_answers(
    root: Path,  # noqa: F811
    kb: KnowledgeBase,
) -> None:
    host = open_logic(root, SlowLoad(lambda: kb.db))
    try:
        logic = host.service()
        logic.runtime.engine.query_timeout = 1.0
        tune(logic, lookups=1)
        result = logic.call("query_logic", {"goal": FAILED_JOIN})
        assert result.is_error and result.text.startswith("Query execution failed"), result.text
        tune(logic, lookups=10**9)  # a fresh connection: the late reply is not read as this one's
        assert ask(logic, FAILED_JOIN) == [{"N": 10}]
    finally:
        host.close()


STRANGE = ["line\nbreak", "tab\there", "bell\x01\x7f", "quote'\\back\\", "é ü 😀", "end.\n", "0'c", "[]"]


@pytest.mark.parametrize("lookups", [1, 10**9], ids=["cached", "per call"])
def test_every_character_comes_back_as_stored(logic: LogicService, kb: KnowledgeBase, lookups: int) -> None:
    """Replies are Prolog terms: control characters, quotes, backslashes and any Unicode in a
    literal or an IRI are read back exactly, whether cached or fetched."""
    doc = (
        "\n".join(
            f"<{EX}odd{i}> <{EX}text> {json.dumps(text, ensure_ascii=False)}@en ."
            for i, text in enumerate(STRANGE)
        )
        + f"\n<{EX}odd0> <{EX}ref> <{EX}x'%5B%5D(.)> ."
    )
    kb.knot(doc, "nt")
    tune(logic, lookups=lookups)
    goal = (
        f"member(I, [{', '.join(str(i) for i in range(len(STRANGE)))}]), atom_concat('{EX}odd', I, S), "
        f"rdf(S, {iri('text')}, literal(lang(en, T)))"
    )
    assert [row["T"] for row in ask(logic, goal)] == STRANGE
    assert ask(logic, f"rdf({iri('odd0')}, {iri('ref')}, O)") == [{"O": EX + "x'%5B%5D(.)"}]


SHAPES = (
    f"@prefix ex: <{EX}> . @prefix xsd: <{XSD}> . @prefix sh: <http://www.w3.org/ns/shacl#> .\n"
    "ex:ServiceShape a sh:NodeShape ; sh:targetClass ex:Service ."
)


def test_curies_through_the_stores_prefixes_in_and_out(logic: LogicService, kb: KnowledgeBase) -> None:
    """In an IRI position (and as a datatype) Prefix:Local is expanded through the prefixes of
    the store's shape sets, as semweb/rdf11 reads it; query_logic writes IRIs as CURIEs the way
    /query does. Literals are never compacted."""
    before = ask(logic, f"rdf(S, {iri('runs')}, {iri('r3')})")
    assert before == [{"S": EX + "s3"}]  # no shape sets, no prefixes: full IRIs
    refused = logic.call("query_logic", {"goal": "rdf(S, ex:runs, ex:r3)"})
    assert refused.is_error and "unknown prefix ex" in refused.text  # never silently nothing
    kb.load_shapes("services", SHAPES)
    assert ask(logic, "rdf(S, ex:runs, ex:r3)") == [{"S": "ex:s3"}]
    assert ask(logic, "rdf(ex:s3, ex:cores, literal(type(xsd:integer, C)))") == [{"C": "3"}]
    assert ask(logic, f"rdf({iri('s3')}, {iri('label')}, L)") == [
        {"L": {"functor": "literal", "args": [{"functor": "lang", "args": ["en", "service 3"]}]}}
    ]
    # a literal that looks like an IRI stays as stored; an IRI with no safe local name stays full
    kb.knot(f'<{EX}s3> <{EX}note> "{EX}s4" .\n<{EX}s3> <{EX}see> <{EX}a/b> .', "nt")
    assert ask(logic, "rdf(ex:s3, ex:note, O)") == [{"O": {"functor": "literal", "args": [EX + "s4"]}}]
    # once out of its literal, a text is an atom like any other (docs/logic.md says so)
    assert ask(logic, "rdf(ex:s3, ex:note, literal(N))") == [{"N": "ex:s4"}]
    assert ask(logic, "rdf(ex:s3, ex:see, O)") == [{"O": EX + "a/b"}]
    # a CURIE in a rule is expanded too, and explain_why proves it
    logic.call("define_rule", {"head": "runs_of(S, R)", "body": "rdf(S, ex:runs, R)"})
    assert ask(logic, "runs_of(ex:s3, R)") == [{"R": "ex:r3"}]
    assert json.loads(logic.call("explain_why", {"fact": "runs_of(ex:s3, ex:r3)"}).text)["proven"] is True
    refused = logic.call("query_logic", {"goal": "rdf(S, nope:runs, O)"})
    assert refused.is_error and "unknown prefix nope" in refused.text and "ex" in refused.text
