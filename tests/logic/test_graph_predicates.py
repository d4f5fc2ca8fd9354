"""rdf/3, rdf/4, rdf_at/4 and rdf_tx/4: the logic memory reading quipu's knowledge graph
(docs/logic.md), with a real SWI-Prolog engine and a real store.

Rules mix graph facts and logic facts; the answers follow the graph as it changes; past valid
times and transactions read back; IRIs and literals full of quotes and operators stay data; the
graph cannot be written from the logic memory; and without a store the predicates say so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.logic.graph_bridge import NO_STORE, GraphBridge, StoreAt, StoreGraph
from quipu.logic.service import LogicHost, LogicService
from tests.logic.runtime_support import root  # noqa: F401 - the root fixture

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
WORLD = f"""@prefix ex: <{EX}> .
ex:checkout ex:kind ex:Service ; ex:label "Checkout"@en ; ex:cores 4 ; ex:testRun ex:run1 .
ex:search ex:kind ex:Service ; ex:testRun ex:run2 .
ex:run1 ex:status "failed" .
ex:run2 ex:status "passed" .
"""


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(str(tmp_path / "graph.db")) as store:
        store.knot(WORLD, timestamp="2026-11-01T00:00:00Z")
        yield store


@pytest.fixture
def logic(root: Path, kb: KnowledgeBase) -> Iterator[LogicService]:  # noqa: F811
    host = LogicHost(root, graph=StoreGraph(lambda: kb.db))
    try:
        yield host.service()
    finally:
        host.close()


def ask(logic: LogicService, goal: str) -> list[dict[str, Any]]:
    result = logic.call("query_logic", {"goal": goal})
    assert not result.is_error, result.text
    rows: list[dict[str, Any]] = json.loads(result.text)
    return rows


def refused(logic: LogicService, tool: str, **arguments: str) -> str:
    result = logic.call(tool, arguments)
    assert result.is_error, result.text
    return result.text


def iri(name: str) -> str:
    return "'" + EX + name + "'"


RISKY = f"customer_facing(S), \\+ ( rdf(S, {iri('testRun')}, R), rdf(R, {iri('status')}, literal(passed)) )"


def test_a_rule_over_graph_facts_and_logic_facts(logic: LogicService) -> None:
    """A deploy is risky if the graph says the service has no passing test run and the logic
    memory says it is customer-facing."""
    for name in ("checkout", "search"):
        assert not logic.call("remember_fact", {"fact": f"customer_facing({iri(name)})"}).is_error
    assert not logic.call("define_rule", {"head": "risky(S)", "body": RISKY}).is_error
    assert ask(logic, "risky(S)") == [{"S": EX + "checkout"}]


def test_the_answer_follows_the_graph_with_no_stale_cache(logic: LogicService, kb: KnowledgeBase) -> None:
    logic.call("remember_fact", {"fact": f"customer_facing({iri('checkout')})"})
    logic.call("define_rule", {"head": "risky(S)", "body": RISKY})
    assert ask(logic, "risky(S)") == [{"S": EX + "checkout"}]
    kb.knot(f'<{EX}checkout> <{EX}testRun> <{EX}run3> .\n<{EX}run3> <{EX}status> "passed" .', "nt")
    assert ask(logic, "risky(S)") == []  # the next question sees the new transaction
    kb.retract(EX + "run3", predicate=EX + "status")
    assert ask(logic, "risky(S)") == [{"S": EX + "checkout"}]


def test_terms_map_to_atoms_and_literal_terms(logic: LogicService) -> None:
    rows = ask(logic, f"rdf({iri('checkout')}, P, O)")
    by_predicate = {row["P"]: row["O"] for row in rows}
    assert by_predicate[EX + "kind"] == EX + "Service"  # an IRI is the atom of its full text
    assert by_predicate[EX + "label"] == {
        "functor": "literal",
        "args": [{"functor": "lang", "args": ["en", "Checkout"]}],
    }
    assert by_predicate[EX + "cores"] == {
        "functor": "literal",
        "args": [{"functor": "type", "args": [XSD + "integer", "4"]}],
    }
    assert ask(logic, f"rdf(S, {iri('status')}, literal(passed))") == [{"S": EX + "run2"}]
    assert ask(logic, "rdf(S, P, literal(lang(en, L)))") == [
        {"S": EX + "checkout", "P": EX + "label", "L": "Checkout"}
    ]
    assert ask(logic, f"rdf(S, {iri('cores')}, literal(type('{XSD}integer', '4')))") == [
        {"S": EX + "checkout"}
    ]
    # a bound argument no stored term can be matches nothing (not an error)
    assert ask(logic, "rdf(42, P, O)") == []
    assert ask(logic, f"rdf(S, {iri('status')}, literal(f(x)))") == []


def test_rdf_at_and_rdf_tx_read_the_past(logic: LogicService, kb: KnowledgeBase) -> None:
    first = kb.transactions()["transactions"][-1]["id"]
    kb.knot(f"<{EX}flags> <{EX}kind> <{EX}Service> .", "nt", timestamp="2026-11-20T00:00:00Z")
    kb.retract(EX + "search", predicate=EX + "kind", timestamp="2026-11-25T00:00:00Z")
    services = f"rdf_at(S, {iri('kind')}, {iri('Service')}, '{{at}}')"
    assert {r["S"] for r in ask(logic, services.format(at="2026-11-10T00:00:00Z"))} == {
        EX + "checkout",
        EX + "search",
    }
    assert {r["S"] for r in ask(logic, services.format(at="2026-11-22T00:00:00Z"))} == {
        EX + "checkout",
        EX + "search",
        EX + "flags",
    }
    assert {r["S"] for r in ask(logic, f"rdf(S, {iri('kind')}, {iri('Service')})")} == {
        EX + "checkout",
        EX + "flags",
    }
    as_known = f"rdf_tx(S, {iri('kind')}, {iri('Service')}, {first})"
    assert {r["S"] for r in ask(logic, as_known)} == {EX + "checkout", EX + "search"}
    asserted = ask(logic, f"rdf_tx({iri('flags')}, {iri('kind')}, O, Tx)")
    assert asserted == [{"O": EX + "Service", "Tx": first + 1}]


def test_rdf4_reads_named_graphs(logic: LogicService, kb: KnowledgeBase) -> None:
    graph = "urn:test:graph:audit"
    kb.create_graph(graph)
    kb.knot(f"<{EX}checkout> <{EX}auditedBy> <{EX}ana> .", "nt", graph=graph)
    assert ask(logic, f"rdf(S, {iri('auditedBy')}, O)") == []  # rdf/3 is ROOT
    assert ask(logic, f"rdf(S, {iri('auditedBy')}, O, G)") == [
        {"S": EX + "checkout", "O": EX + "ana", "G": graph}
    ]
    assert ask(logic, f"rdf(S, {iri('auditedBy')}, O, '{graph}')") == [
        {"S": EX + "checkout", "O": EX + "ana"}
    ]


# IRIs and a literal a goal could be confused by if anything pasted text into code (an IRI
# cannot hold a double quote or a backslash: the literal does).
HOSTILE = [
    EX + "quote'in",
    EX + "paren),halt(",
    EX + ":-",
    EX + "a,b;c",
    EX + "x%0Ay",
    "urn:x:'),halt,('",
    EX + "it's(a)trap.pl",
]
TRAP = '\'), halt, ("x" :- true)\\'


@pytest.mark.parametrize("subject", HOSTILE)
def test_hostile_iris_and_literals_reach_the_store_as_data(
    logic: LogicService, kb: KnowledgeBase, subject: str
) -> None:
    escaped = TRAP.replace("\\", "\\\\").replace('"', '\\"')
    kb.knot(f'<{subject}> <{EX}note> "{escaped}" .', "nt")
    quoted = "'" + subject.replace("\\", "\\\\").replace("'", "\\'") + "'"
    assert ask(logic, f"rdf({quoted}, {iri('note')}, O)") == [{"O": {"functor": "literal", "args": [TRAP]}}]
    assert ask(logic, f"rdf(S, {iri('note')}, literal(L))") == [{"S": subject, "L": TRAP}]
    assert ask(logic, "X = 1") == [{"X": 1}]  # the engine is still there


def test_the_graph_is_read_only_from_the_logic_memory(logic: LogicService, kb: KnowledgeBase) -> None:
    before = kb.export("ntriples")
    assert refused(logic, "remember_fact", fact=f"rdf({iri('a')}, {iri('b')}, {iri('c')})")
    assert refused(logic, "define_rule", head="rdf_at(S, P, O, T)", body="S = P, O = T")
    assert refused(logic, "query_logic", goal=f"assertz(rdf({iri('a')}, {iri('b')}, {iri('c')}))")
    assert kb.export("ntriples") == before
    assert ask(logic, f"rdf({iri('a')}, P, O)") == []


def test_pages_stream_a_large_answer(logic: LogicService, kb: KnowledgeBase) -> None:
    kb.knot("\n".join(f"<{EX}n{i}> <{EX}member> <{EX}club> ." for i in range(1_234)), "nt")
    assert ask(logic, f"aggregate_all(count, rdf(_S, {iri('member')}, {iri('club')}), N)") == [{"N": 1_234}]


def test_without_a_store_the_predicates_say_which_setting(root: Path) -> None:  # noqa: F811
    for source in (None, StoreAt()):
        host = LogicHost(root, graph=source)
        try:
            result = host.service().call("query_logic", {"goal": "rdf(S, P, O)"})
        finally:
            host.close()
        assert result.is_error and "[quipu.logic] store" in result.text and "--db" in result.text
        assert NO_STORE in result.text


def test_a_store_named_by_location_is_opened_on_first_read(root: Path, tmp_path: Path) -> None:  # noqa: F811
    location = str(tmp_path / "named.db")
    with quipu.open(location) as store:
        store.knot(WORLD)
    host = LogicHost(root, graph=StoreAt(location))
    try:
        assert len(ask(host.service(), f"rdf(S, {iri('kind')}, O)")) == 2
    finally:
        host.close()


def test_the_bridge_refuses_what_is_not_a_request() -> None:
    bridge = GraphBridge(StoreAt())

    def answer(line: bytes) -> dict[str, Any]:
        (reply,) = bridge.answers(line)  # a refusal is one reply line
        return reply

    try:
        code = answer(b"rdf(S,P,O)\n")
        assert set(code) == {"error"} and "not JSON" in code["error"]
        assert answer(b'{"s": 1}')["error"] == "s must be a string or null"
        assert "after" in answer(b'{"after": -1}')["error"]
        assert "o must be" in answer(b'{"o": ["code", "halt"]}')["error"]
        assert "longer than" in answer(b"{" + b" " * 70_000 + b"}")["error"]
    finally:
        bridge.close()


def test_explain_why_shows_graph_facts_as_leaves_with_their_transaction(
    logic: LogicService, kb: KnowledgeBase
) -> None:
    logic.call("remember_fact", {"fact": f"customer_facing({iri('checkout')})"})
    body = f"customer_facing(S), rdf(S, {iri('testRun')}, R), rdf(R, {iri('status')}, literal(failed))"
    logic.call("define_rule", {"head": "risky(S)", "body": body})
    result = logic.call("explain_why", {"fact": f"risky({iri('checkout')})"})
    assert not result.is_error, result.text
    proof = json.loads(result.text)
    assert proof["proven"] is True
    leaves = proof["proof_tree"]["children"]
    assert [leaf["rule_applied"] for leaf in leaves] == ["fact", "graph", "graph"]
    tx = kb.transactions()["transactions"][0]["id"]
    assert [leaf.get("tx") for leaf in leaves] == [None, tx, tx]
    assert leaves[1]["goal"] == f"rdf({iri('checkout')}, {iri('testRun')}, {iri('run1')})"
    assert leaves[1]["children"] == []


def test_a_huge_bound_literal_is_refused_and_the_next_call_still_answers(logic: LogicService) -> None:
    huge = "x" * 100_000
    result = logic.call("query_logic", {"goal": f"rdf(S, P, literal('{huge}'))"})
    assert result.is_error and "longer than" in result.text
    assert ask(logic, f"rdf(S, {iri('status')}, literal(passed))") == [{"S": EX + "run2"}]
