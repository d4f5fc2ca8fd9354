"""The write gates validate a delta: the payload plus the stored types of the nodes it names."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import ShaclViolation, WriteRefused
from quipu.shacl import gate, registry
from quipu.store.schema import ROOT

EX = "http://ex.org/"
P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
SHAPES = P + (
    "ex:S a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ;\n"
    "  sh:property [ sh:path ex:knows ; sh:class ex:Person ] ."
)


@pytest.fixture
def kb() -> Iterator[KnowledgeBase]:
    with quipu.open(":memory:") as kb:
        yield kb


def test_existing_bad_data_elsewhere_does_not_refuse_an_unrelated_write(kb: KnowledgeBase) -> None:
    kb.knot(P + 'ex:old a ex:Person ; ex:age "ancient" .')  # before any shapes: stored as is
    kb.load_shapes("people", SHAPES)
    assert kb.knot(P + "ex:new a ex:Person ; ex:age 3 .").tx_id > 0


def test_only_types_of_referenced_nodes_join_the_delta(kb: KnowledgeBase) -> None:
    kb.knot(P + 'ex:old a ex:Person ; ex:age "ancient" .')
    kb.load_shapes("people", SHAPES)
    payload = gate.payload_graph((P + "ex:new a ex:Person ; ex:knows ex:old .").encode())
    added = gate.add_store_types(kb.db, payload, ROOT, into=(context := type(payload)()))
    assert added == 1
    assert {(str(s), str(o)) for s, _p, o in context} == {(EX + "old", EX + "Person")}
    # ex:old's bad age is not context, so referencing it passes
    assert kb.knot(P + "ex:new a ex:Person ; ex:knows ex:old .").tx_id > 0


def test_a_refusal_carries_the_report_and_writes_nothing(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    with pytest.raises(ShaclViolation) as caught:
        kb.knot(P + 'ex:a a ex:Person ; ex:age "x" .')
    assert caught.value.report["violations"] == 1
    assert caught.value.report["issues"][0]["focus_node"] == EX + "a"
    assert kb.stats()["facts"] == 0


def test_warnings_alone_do_not_refuse(kb: KnowledgeBase) -> None:
    kb.load_shapes(
        "soft",
        P
        + "ex:W a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:name ; sh:minCount 1 ; sh:severity sh:Warning ] .",
    )
    assert kb.knot(P + "ex:a a ex:Person .").tx_id > 0


def test_vocabulary_gate_refuses_before_shacl(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    with pytest.raises(WriteRefused) as caught:
        kb.knot(P + 'ex:a a ex:Person, ex:Robot ; ex:age "x" .')
    assert caught.value.reason == "unknown_type"


def test_no_shapes_means_no_gate_work(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the payload must not be parsed for a gate when no shapes apply")

    monkeypatch.setattr(gate, "payload_graph", fail)
    assert kb.knot(P + "ex:a a ex:Anything .").tx_id > 0
    assert registry.current(kb.db) == []
