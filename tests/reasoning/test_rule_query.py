"""``quipu_rule_query`` (tools-core §1.2): a test per numbered rule, on a real store, plus the
route and its MCP tool."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.config import load_settings
from quipu.errors import InvalidField, StorageError, UnknownGraph
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import build_registry
from quipu.reasoning import rule_query as rule_query_module
from quipu.rest.app import create_app
from quipu.store import claim_reads
from tests.backends import store_location
from tests.rest.support import problem, serve

EX = "http://ex.org/"
Q = "https://quipu.dev/ontology/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
CLAIM = {"subject": f"{EX}svc", "predicate": f"{EX}tier", "object": "gold"}
PREFIXES = f"@prefix : <{EX}> . @prefix q: <{Q}> . @prefix rdf: <{RDF}> .\n"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "rq.db"), base_ns=EX) as opened:
        yield opened


def negation(node: str = "neg1") -> str:
    return f':{node} a q:NegatedClaim ; rdf:subject :svc ; rdf:predicate :tier ; rdf:object "gold" .\n'


def judgment(node: str, disposition: str | None, judge: str | None = "alice") -> str:
    text = f':{node} a q:ClaimJudgment ; rdf:subject :svc ; rdf:predicate :tier ; rdf:object "gold"'
    if disposition is not None:
        text += f' ; q:disposition "{disposition}"'
    if judge is not None:
        text += f" ; q:judgedBy :{judge}"
    return text + " .\n"


def ask(kb: KnowledgeBase, **fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = kb.reasoning.rule_query(**({"claim": CLAIM} | fields))
    return answer


def test_rule_1_the_answer_comes_from_the_two_evidence_sides(kb: KnowledgeBase) -> None:
    neither = ask(kb)
    assert (neither["answer"], neither["belnap"], neither["complete"]) == ("NEITHER", "neither", True)
    kb.knot(PREFIXES + ':svc :tier "gold" .', timestamp="2026-01-01T00:00:00Z")
    supported = ask(kb)
    assert (supported["answer"], supported["belnap"]) == ("SUPPORTED", "true")
    (item,) = supported["positive"]["evidence"]
    assert item["graph"] == "urn:quipu:graph:root" and item["kind"] == "asserted" and item["tx"] == 1
    assert item["source"] == "knot:anonymous" and item["valid_from"] == "2026-01-01T00:00:00Z"
    kb.knot(PREFIXES + negation())
    both = ask(kb)
    assert (both["answer"], both["belnap"]) == ("BOTH", "both")
    assert both["negative"]["evidence"][0]["node"] == f"{EX}neg1"
    kb.retract(f"{EX}svc", predicate=f"{EX}tier")
    refuted = ask(kb)
    assert (refuted["answer"], refuted["belnap"]) == ("REFUTED", "false")
    # the past is read at its own point
    assert ask(kb, tx=1)["answer"] == "SUPPORTED"


def test_absence_is_never_negative_and_other_objects_are_other_claims(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + ':svc :tier "silver" .')
    assert ask(kb)["answer"] == "NEITHER"
    assert ask(kb, claim=CLAIM | {"object": {"str": "silver"}})["answer"] == "SUPPORTED"
    assert ask(kb, claim=CLAIM | {"object": {"iri": f"{EX}silver"}})["answer"] == "NEITHER"


def test_rule_2_judgments_are_reported_beside_the_answer_and_never_change_it(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + ':svc :tier "gold" .')
    assert ask(kb)["judgment"] == {"disposition": "none", "verdict": None, "judgments": []}
    kb.knot(PREFIXES + judgment("j0", None))  # no disposition: visible but not admitted
    seen = ask(kb)
    assert seen["judgment"]["disposition"] == "not_admitted" and seen["answer"] == "SUPPORTED"
    kb.knot(PREFIXES + judgment("j1", "refuted"))
    admitted = ask(kb)
    assert admitted["answer"] == "SUPPORTED"  # a judgment never changes the answer
    assert (admitted["judgment"]["disposition"], admitted["judgment"]["verdict"]) == ("admitted", "refuted")
    j1 = next(j for j in admitted["judgment"]["judgments"] if j["node"] == f"{EX}j1")
    assert j1 == {"node": f"{EX}j1", "disposition": "refuted", "judged_by": f"{EX}alice", "admitted": True}
    kb.knot(PREFIXES + judgment("j2", "supported", judge="bob"))
    assert ask(kb)["judgment"]["disposition"] == "conflicting"
    assert ask(kb)["judgment"]["verdict"] is None
    kb.knot(PREFIXES + judgment("j3", "maybe"))  # not a valid disposition: not admitted
    j3 = next(j for j in ask(kb)["judgment"]["judgments"] if j["node"] == f"{EX}j3")
    assert j3["admitted"] is False and j3["disposition"] is None


def test_rule_3_no_authority_is_ever_granted(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + ':svc :tier "gold" .' + judgment("j1", "supported"))
    assert ask(kb)["grants_authority"] is False


def test_rule_4_an_incomplete_read_answers_unknown(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb.knot(PREFIXES + ':svc :tier "gold" .')

    def failing(*args: object, **kwargs: object) -> object:
        raise StorageError("the store could not complete the request")

    monkeypatch.setattr(claim_reads, "claims", failing)
    unknown = ask(kb)
    assert unknown["answer"] == "UNKNOWN" and unknown["belnap"] is None and unknown["complete"] is False
    assert unknown["unknown_reason"] == "the store could not complete the request"
    assert unknown["positive"]["found"] is False and unknown["grants_authority"] is False


def test_rule_4_a_read_past_the_query_deadline_answers_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = itertools.count(0.0, 1.0)  # each look at the clock is one second later
    monkeypatch.setattr(rule_query_module, "clock", lambda: next(ticks))
    with quipu.open(store_location(tmp_path, "late.db"), base_ns=EX, query_timeout_ms=2500) as kb:
        kb.knot(PREFIXES + ':svc :tier "gold" .')
        late = ask(kb)
        assert (late["answer"], late["complete"]) == ("UNKNOWN", False)
        assert late["unknown_reason"] == "the rule query ran past its deadline of 2500 ms"
        monkeypatch.setattr(rule_query_module, "clock", lambda: 0.0)  # a clock that stands still
        assert ask(kb)["answer"] == "SUPPORTED"


def test_rule_5_the_cap_shortens_the_lists_only(kb: KnowledgeBase) -> None:
    for source in ("a", "b", "c"):  # three owners: three positive evidence items
        kb.knot(PREFIXES + ':svc :tier "gold" .', source=source)
    capped = ask(kb, max_evidence=2)
    assert capped["positive"]["found"] is True and capped["positive"]["count"] == 3
    assert len(capped["positive"]["evidence"]) == 2 and capped["positive"]["truncated"] is True
    assert [e["source"] for e in ask(kb)["positive"]["evidence"]] == ["a", "b", "c"]


def test_rule_6_nothing_is_interned(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + ':other :tier "gold" .')
    before = kb.stats()
    never = {"subject": f"{EX}never-seen", "predicate": f"{EX}also-new", "object": {"iri": f"{EX}new-too"}}
    assert ask(kb, claim=never)["answer"] == "NEITHER"
    with kb.db.read() as conn:
        known = kb.db.terms.lookup(conn, [f"{EX}never-seen", f"{EX}also-new", f"{EX}new-too"])
    assert known == {} and kb.stats() == before


def test_inferred_evidence_comes_from_the_companion_when_asked(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + ':svc :level "gold" .')
    rules = (
        "@prefix rule: <http://quipu.local/rule#> .\n"
        f'<{EX}r> a rule:Rule ; rule:id "tier" ; rule:head "tier(?s, ?v)" ; rule:body "level(?s, ?v)" .'
    )
    kb.reasoning.reason(rules=rules)
    derived = ask(kb)
    assert derived["answer"] == "SUPPORTED"
    assert derived["positive"]["evidence"][0]["kind"] == "inferred"
    assert derived["positive"]["evidence"][0]["graph"] == "urn:quipu:graph:root#inferred"
    assert derived["positive"]["evidence"][0]["source"] == "reasoner:tier"
    assert ask(kb, include_inferred=False)["answer"] == "NEITHER"


def test_same_as_is_refuted_by_distinct_from_in_either_direction(kb: KnowledgeBase) -> None:
    same = {
        "subject": f"{EX}a",
        "predicate": "http://www.w3.org/2002/07/owl#sameAs",
        "object": {"iri": f"{EX}b"},
    }
    kb.knot(PREFIXES + ":b q:distinctFrom :a .")
    refuted = ask(kb, claim=same)
    assert refuted["answer"] == "REFUTED" and refuted["negative"]["count"] == 1


def test_bad_requests_are_400_naming_the_field(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidField) as caught:
        ask(kb, claim={"subject": f"{EX}s", "predicate": f"{EX}p"})
    assert caught.value.field == "claim.object"
    with pytest.raises(InvalidField) as caught:
        ask(kb, claim=CLAIM | {"extra": 1})
    assert caught.value.field == "claim.extra"
    with pytest.raises(InvalidField) as caught:
        ask(kb, claim=CLAIM | {"object": {"nope": 1}})
    assert caught.value.field == "claim.object"
    with pytest.raises(InvalidField) as caught:
        ask(kb, claim=CLAIM | {"predicate": "not an iri"})
    assert caught.value.field == "claim.predicate"
    with pytest.raises(UnknownGraph):
        ask(kb, graph=f"{EX}unregistered")


def test_the_route_and_the_tool(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        answer = client.post("/rule/query", json={"claim": CLAIM})
        assert answer.status_code == 200 and answer.json()["answer"] == "NEITHER"
        problem(client.post("/rule/query", json={"claim": CLAIM, "why": 1}), "unknown_field")
        problem(client.post("/rule/query", json={"claim": CLAIM, "max_evidence": 0}), "invalid_field")
    app = create_app(load_settings(store={"db": store_location(tmp_path, "t.db")}))
    registry = build_registry(app.openapi())
    assert registry.tools["quipu_rule_query"].read_only is True

    async def run() -> None:
        dispatcher = Dispatcher(app, registry)
        try:
            async with app.router.lifespan_context(app):
                app.state.kb.knot(PREFIXES + ':svc :tier "gold" .')
                done = await dispatcher.call("quipu_rule_query", {"claim": CLAIM}, None)
                assert done.structured_content is not None
                assert done.structured_content["answer"] == "SUPPORTED"
        finally:
            await dispatcher.aclose()

    anyio.run(run)
