"""Source ownership end to end: a statement stays visible until every owner retracts it."""

from __future__ import annotations

import pytest

from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, UnknownGraph, WriteRefused
from tests.store import EX, PREFIXES, count, select, snapshot

OWNER_Q = f"SELECT ?o WHERE {{ <{EX}svc> <{EX}owner> ?o }}"
DOC = PREFIXES + "ex:svc ex:owner ex:alice ; ex:tier 1 .\n"


def _owners(kb: KnowledgeBase, **kwargs: object) -> list[str]:
    return sorted(str(r["o"]) for r in select(kb, OWNER_Q, **kwargs))


def test_statement_owned_by_two_sources_stays_visible_until_both_retract(kb: KnowledgeBase) -> None:
    kb.knot(DOC, source="inventory-a", timestamp="2026-01-01T00:00:00Z")
    kb.knot(DOC, source="inventory-b", timestamp="2026-01-02T00:00:00Z")
    assert count(kb, "facts", "op = 1") == 4  # two claims per statement

    first = kb.retract_source("inventory-a", "T-1", apply=True, expect=2, timestamp="2026-02-01T00:00:00Z")
    assert first["retracted"] == 2 and first["remaining"] == 0
    assert _owners(kb) == [f"{EX}alice"]  # B still claims it
    assert count(kb, "facts", "op = 1 AND valid_to IS NULL") == 2

    second = kb.retract_source("inventory-b", "T-2", apply=True, expect=2, timestamp="2026-03-01T00:00:00Z")
    assert second["retracted"] == 2
    assert _owners(kb) == []
    # Nothing was deleted: the past is still readable at both axes.
    assert _owners(kb, as_of_tx=first["tx_id"]) == [f"{EX}alice"]
    assert _owners(kb, valid_at="2026-02-15T00:00:00Z") == [f"{EX}alice"]
    assert _owners(kb, valid_at="2026-03-15T00:00:00Z") == []


def test_repair_transaction_is_stamped_and_closes_with_its_timestamp(kb: KnowledgeBase) -> None:
    kb.knot(DOC, source="legacy", timestamp="2026-01-01T00:00:00Z")
    out = kb.retract_source("legacy", "ticket-9", apply=True, expect=2, timestamp="2026-04-01T12:00:00Z")
    log = kb.transactions()["transactions"]
    assert log[-1]["id"] == out["tx_id"] and log[-1]["source"] == "repair:ticket-9"
    closed = count(
        kb, "facts", "op = 1 AND valid_to = ? AND retracted_tx = ?", "2026-04-01T12:00:00Z", out["tx_id"]
    )
    assert closed == 2
    assert count(kb, "facts", "op = 0 AND tx = ?", out["tx_id"]) == 2  # one record per statement


def test_preview_reports_the_plan_and_writes_nothing(kb: KnowledgeBase) -> None:
    kb.knot(DOC, source="legacy")
    kb.knot(PREFIXES + "ex:other ex:owner ex:bob .\n", source="someone-else")
    before = snapshot(kb)
    plan = kb.retract_source("legacy", "T-3")
    assert plan["planned"] == 2 and plan["entities"] == 1 and plan["applied"] is False
    assert plan["tx_id"] is None and plan["retracted"] is None and "remaining" not in plan
    assert plan["graph"] == "urn:quipu:graph:root" and plan["repair_source"] == "repair:T-3"
    assert plan["sample"] == [
        {"entity": f"{EX}svc", "predicate": f"{EX}owner", "value": f"{EX}alice"},
        {"entity": f"{EX}svc", "predicate": f"{EX}tier", "value": 1},
    ]
    assert plan["sample_truncated"] is False
    assert snapshot(kb) == before


def test_apply_needs_the_confirmed_count(kb: KnowledgeBase) -> None:
    kb.knot(DOC, source="legacy")
    before = snapshot(kb)
    with pytest.raises(InvalidField, match="current plan is 2 statement"):
        kb.retract_source("legacy", "T-4", apply=True)
    with pytest.raises(WriteRefused, match="expect=5 does not match the current plan of 2"):
        kb.retract_source("legacy", "T-4", apply=True, expect=5)
    assert snapshot(kb) == before


def test_empty_plan_applies_as_an_empty_repair_transaction(kb: KnowledgeBase) -> None:
    out = kb.retract_source("nobody", "T-5", apply=True, expect=0)
    assert out["planned"] == 0 and out["retracted"] == 0 and out["tx_id"] > 0


@pytest.mark.parametrize(
    ("source", "repair", "field"), [("", "T", "source"), ("  ", "T", "source"), ("s", "", "repair")]
)
def test_missing_source_or_repair_is_refused(kb: KnowledgeBase, source: str, repair: str, field: str) -> None:
    with pytest.raises(InvalidField) as err:
        kb.retract_source(source, repair)
    assert err.value.field == field


def test_unknown_graph_is_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(UnknownGraph):
        kb.retract_source("legacy", "T", graph="http://example.org/no-such-graph")


def test_scoped_to_the_graph(kb: KnowledgeBase) -> None:
    kb.create_graph(f"{EX}g")
    kb.knot(DOC, source="legacy")
    kb.knot(DOC, source="legacy", graph=f"{EX}g")
    kb.retract_source("legacy", "T", apply=True, expect=2, graph=f"{EX}g")
    assert _owners(kb) == [f"{EX}alice"]
    assert _owners(kb, graph=f"{EX}g") == []


IDENTITY = PREFIXES + 'ex:x rdfs:label "X" ; a ex:Thing ; ex:size 3 .\n'


def _labels(kb: KnowledgeBase) -> list[str]:
    rows = select(kb, f"SELECT ?l WHERE {{ <{EX}x> <http://www.w3.org/2000/01/rdf-schema#label> ?l }}")
    return [str(r["l"]) for r in rows]


def test_identity_guard_keeps_the_label_of_an_entity_others_reference(kb: KnowledgeBase) -> None:
    kb.knot(IDENTITY, source="producer")
    kb.knot(PREFIXES + "ex:y ex:dependsOn ex:x .\n", source="someone-else")
    plan = kb.retract_source("producer", "T")
    assert plan["planned"] == 2  # type and size; the label is spared
    kb.retract_source("producer", "T", apply=True, expect=2)
    assert _labels(kb) == ["X"]
    assert kb.query(f"ASK {{ <{EX}x> a <{EX}Thing> }}") is False


def test_identity_guard_lets_an_unreferenced_label_go(kb: KnowledgeBase) -> None:
    kb.knot(IDENTITY, source="producer")
    assert kb.retract_source("producer", "T")["planned"] == 3
    kb.retract_source("producer", "T", apply=True, expect=3)
    assert _labels(kb) == []


def test_identity_guard_ignores_references_from_the_same_code_repository(kb: KnowledgeBase) -> None:
    kb.knot(IDENTITY, source="snapshot:code:repo1:core")
    kb.knot(PREFIXES + "ex:y ex:dependsOn ex:x .\n", source="snapshot:code:repo1:tests")
    assert kb.retract_source("snapshot:code:repo1:core", "T")["planned"] == 3
    kb.knot(PREFIXES + "ex:z ex:dependsOn ex:x .\n", source="snapshot:code:repo2")
    assert kb.retract_source("snapshot:code:repo1:core", "T")["planned"] == 2
