"""Gated writes reuse pySHACL's prepared shapes while the stored sets are unchanged, and never
validate against a stale set: the cache key is the shape text each write reads in its own
transaction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyshacl import ShapesGraph
from rdflib import Graph

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import ShaclViolation
from quipu.shacl import gate, registry, validate
from tests.backends import store_location

P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
INTEGER_AGE = (
    P
    + "ex:S a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ."
)
STRING_AGE = (
    P
    + "ex:S a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:age ; sh:datatype xsd:string ] ."
)
AGE_NUMBER = P + "ex:a a ex:Person ; ex:age 3 ."
AGE_TEXT = P + 'ex:a a ex:Person ; ex:age "three" .'


@pytest.fixture
def path(tmp_path: Path) -> str:
    return store_location(tmp_path, "cache.db")


@pytest.fixture
def kb(path: str) -> Iterator[KnowledgeBase]:
    with quipu.open(path) as kb:
        yield kb


def test_writes_with_unchanged_sets_prepare_the_shapes_once(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared: list[Graph] = []
    real = validate.prepare

    def counting(shapes: Graph) -> ShapesGraph:
        prepared.append(shapes)
        return real(shapes)

    monkeypatch.setattr(registry, "prepare", counting)
    registry._bundle.cache_clear()
    kb.load_shapes("people", INTEGER_AGE)
    for _ in range(3):
        kb.knot(AGE_NUMBER)
    assert len(prepared) == 1


def test_the_prepared_shapes_are_the_ones_every_run_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = registry.bundle([INTEGER_AGE])
    assert isinstance(bundle.prepared, validate.PreparedShapes)
    assert registry.bundle([INTEGER_AGE]) is bundle

    def rebuilt(*args: object, **kwargs: object) -> None:
        raise AssertionError("a gated run must not prepare the shapes again")

    monkeypatch.setattr(validate, "prepare", rebuilt)
    payload = gate.payload_graph(AGE_TEXT.encode())
    report = validate.validate(payload, bundle.graph, prepared=bundle.prepared)
    assert report.count("Violation") == 1


def test_a_changed_set_takes_effect_on_the_very_next_write(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", INTEGER_AGE)
    assert kb.knot(AGE_NUMBER).tx_id > 0  # the integer shapes are now prepared and cached
    kb.load_shapes("people", STRING_AGE)
    with pytest.raises(ShaclViolation):
        kb.knot(AGE_NUMBER)
    assert kb.knot(AGE_TEXT).tx_id > 0


def test_a_set_changed_by_another_process_takes_effect_on_the_next_write(
    kb: KnowledgeBase, path: str
) -> None:
    kb.load_shapes("people", INTEGER_AGE)
    assert kb.knot(AGE_NUMBER).tx_id > 0
    with quipu.open(path) as other:  # another writer of the same file
        other.load_shapes("people", STRING_AGE)
    with pytest.raises(ShaclViolation):
        kb.knot(AGE_NUMBER)


def test_the_same_instant_replacement_is_not_stale(kb: KnowledgeBase) -> None:
    # Same name, same valid_from, same watermark: only the text tells the versions apart.
    at = "2026-01-01T00:00:00Z"
    kb.load_shapes("people", INTEGER_AGE, timestamp=at)
    assert kb.knot(AGE_NUMBER).tx_id > 0
    kb.load_shapes("people", STRING_AGE, timestamp=at)
    with pytest.raises(ShaclViolation):
        kb.knot(AGE_NUMBER)


def test_a_removed_set_stops_gating(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", INTEGER_AGE)
    with pytest.raises(ShaclViolation):
        kb.knot(AGE_TEXT)
    kb.remove_shapes("people")
    assert kb.knot(AGE_TEXT).tx_id > 0


def test_request_shapes_still_gate_and_do_not_leak_into_later_writes(kb: KnowledgeBase) -> None:
    with pytest.raises(ShaclViolation):
        kb.knot(AGE_TEXT, shapes=INTEGER_AGE)
    with pytest.raises(ShaclViolation):
        kb.knot(AGE_NUMBER, shapes=STRING_AGE)
    assert kb.knot(AGE_TEXT, shapes=STRING_AGE).tx_id > 0
    assert kb.knot(AGE_TEXT).tx_id > 0  # no shapes at all now


def test_request_shapes_join_cached_stored_sets(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", INTEGER_AGE)
    assert kb.knot(AGE_NUMBER).tx_id > 0
    # Both apply: the stored integer rule and the request's string rule cannot both hold.
    with pytest.raises(ShaclViolation):
        kb.knot(AGE_NUMBER, shapes=STRING_AGE)
    assert kb.knot(AGE_NUMBER).tx_id > 0


def test_untargeted_shapes_still_apply_through_the_shapes_that_use_them() -> None:
    shapes = P + (
        "ex:S a sh:NodeShape ; sh:targetClass ex:Person ; sh:node ex:Aged .\n"
        "ex:Aged a sh:NodeShape ; sh:property ex:AgeShape .\n"
        "ex:AgeShape a sh:PropertyShape ; sh:path ex:age ; sh:datatype xsd:integer .\n"
        "ex:Named a sh:PropertyShape ; sh:targetClass ex:Person ; sh:path ex:name ; sh:minCount 1 ."
    )
    bundle = registry.bundle([shapes])
    assert bundle.prepared is not None
    started = {str(s.node) for s in bundle.prepared.shapes}
    assert started == {"http://ex.org/S", "http://ex.org/Named"}  # the targeted ones
    report = validate.validate(gate.payload_graph(AGE_TEXT.encode()), bundle.graph, prepared=bundle.prepared)
    components = sorted(i.component or "" for i in report.issues)
    assert components == ["sh:MinCountConstraintComponent", "sh:NodeConstraintComponent"]


def test_a_type_with_many_owners_is_one_context_statement(kb: KnowledgeBase) -> None:
    for source in ("one", "two", "three"):  # three ownership claims of the same visible fact
        kb.knot(P + "ex:b a ex:Person .", source=source)
    payload = gate.payload_graph((P + "ex:a ex:knows ex:b .").encode())
    context = Graph()
    assert gate.add_store_types(kb.db, payload, 0, into=context) == 1
    assert len(context) == 1
