"""The shapes registry: versions, history, open sets at a point, prefixes, vocabulary, emit shapes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rdflib import URIRef

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, MissingField, NotFound
from quipu.shacl import registry

EX = "http://ex.org/"
SH = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
PERSON = SH + "ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ."
ANIMAL = SH + "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\nex:Dog rdfs:subClassOf ex:Animal ."
T1, T2, T3 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"


@pytest.fixture
def kb() -> Iterator[KnowledgeBase]:
    with quipu.open(":memory:") as kb:
        yield kb


def _rows(kb: KnowledgeBase) -> list[tuple[object, ...]]:
    with kb.db.read() as conn:
        return [
            tuple(r)
            for r in conn.exec_driver_sql(
                "SELECT name, valid_from, valid_to, tx, closed_tx FROM shapes ORDER BY name, valid_from"
            )
        ]


def test_load_opens_a_version_and_reload_closes_the_previous_one(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", PERSON, timestamp=T1)
    kb.knot(f"<{EX}a> a <{EX}Person> .")
    kb.load_shapes("people", PERSON + " ex:X a sh:NodeShape .", timestamp=T2)
    assert _rows(kb) == [("people", T1, T2, 0, 1), ("people", T2, None, 1, None)]
    assert [s.valid_from for s in kb.shape_sets()] == [T2]


def test_reload_at_the_same_instant_replaces_that_version(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", PERSON, timestamp=T1)
    kb.load_shapes("people", ANIMAL, timestamp=T1)
    assert _rows(kb) == [("people", T1, None, 0, None)]
    assert registry.get(kb.db, "people").turtle == ANIMAL


def test_remove_closes_and_keeps_history(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", PERSON, timestamp=T1)
    assert kb.remove_shapes("people", timestamp=T2) is True
    assert kb.remove_shapes("people", timestamp=T3) is False
    assert _rows(kb) == [("people", T1, T2, 0, 0)]
    assert kb.shape_sets() == []
    with pytest.raises(NotFound, match="no shape set named 'people'"):
        registry.get(kb.db, "people")


def test_open_sets_at_a_valid_time_and_a_transaction(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", PERSON, timestamp=T1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .")  # tx 1
    kb.load_shapes("people", ANIMAL, timestamp=T2)
    kb.knot(f"<{EX}a> <{EX}p> 2 .")  # tx 2
    kb.remove_shapes("people", timestamp=T3)
    with kb.db.read() as conn:
        assert [s.turtle for s in registry.open_sets(conn, valid_at="2026-01-15T00:00:00Z")] == [PERSON]
        assert [s.turtle for s in registry.open_sets(conn, valid_at="2026-02-15T00:00:00Z")] == [ANIMAL]
        assert registry.open_sets(conn, valid_at="2026-04-01T00:00:00Z") == []
        assert [s.turtle for s in registry.open_sets(conn, as_of_tx=0)] == [PERSON]
        assert [s.turtle for s in registry.open_sets(conn, as_of_tx=1)] == [ANIMAL]
        assert registry.open_sets(conn, as_of_tx=2) == []


def test_load_refuses_what_does_not_parse_and_stores_nothing(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidField) as caught:
        kb.load_shapes("bad", "this is not turtle")
    assert caught.value.reason == "invalid_shapes"
    with pytest.raises(InvalidField) as caught:  # Turtle, but not loadable SHACL
        kb.load_shapes("bad", SH + "ex:S a sh:NodeShape ; sh:minCount 1 ; sh:path ex:p ; sh:path ex:q .")
    assert caught.value.reason == "invalid_shapes"
    with pytest.raises(MissingField):
        kb.load_shapes("bad", "  ")
    with pytest.raises(MissingField):
        kb.load_shapes(" ", PERSON)
    assert _rows(kb) == []


def test_prefixes_are_the_declarations_of_the_set(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", PERSON)
    assert kb.shape_sets()[0].prefixes == {"sh": "http://www.w3.org/ns/shacl#", "ex": EX}


def test_vocabulary_is_target_classes_and_superclasses() -> None:
    bundle = registry.bundle([PERSON, ANIMAL])
    assert bundle.vocabulary == {EX + "Person", EX + "Animal"}


def test_emit_shapes_and_their_property_shapes_are_found() -> None:
    text = SH + (
        '@prefix q: <https://quipu.dev/ontology/> .\nex:Soft a sh:NodeShape ; q:onViolation "emit" ; '
        "sh:targetClass ex:Person ; sh:property ex:SoftName .\nex:SoftName sh:path ex:name ; sh:minCount 1 .\n"
        "ex:Hard a sh:NodeShape ; sh:targetClass ex:Person ."
    )
    assert registry.bundle([text]).emit == {URIRef(EX + "Soft"), URIRef(EX + "SoftName")}


def test_cached_bundles_are_not_changed_by_validation() -> None:
    from rdflib import Graph

    from quipu.shacl.validate import validate

    bundle = registry.bundle([PERSON])
    before = len(bundle.graph)
    validate(Graph().parse(data=f"<{EX}a> a <{EX}Person> .", format="turtle"), bundle.graph)
    assert len(bundle.graph) == before


def test_a_load_or_removal_cannot_predate_the_open_version(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", PERSON, timestamp=T2)
    with pytest.raises(InvalidField, match="versions only move forward"):
        kb.load_shapes("people", ANIMAL, timestamp=T1)
    with pytest.raises(InvalidField, match="versions only move forward"):
        kb.remove_shapes("people", timestamp=T1)
    assert _rows(kb) == [("people", T2, None, 0, None)]
