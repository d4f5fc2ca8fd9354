"""The semantic event log (DM §11.1), written inside the transaction it describes.

Real SQLite files; every test reads the events back through ``kb.events()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import ShaclViolation, UnknownGraph, WriteRefused
from tests.backends import store_location
from tests.store import sql

EX = "http://ex.org/"
P = f"@prefix : <{EX}> .\n"
T1 = "2026-03-01T00:00:00Z"
T2 = "2026-03-02T00:00:00Z"
WATCH = (
    "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix : <http://ex.org/> . "
    "@prefix q: <https://quipu.dev/ontology/> .\n"
    ':Watch a sh:NodeShape ; q:onViolation "emit" ; sh:targetClass :Person ; '
    'sh:property [ sh:path :name ; sh:minCount 1 ; sh:message "a person should have a name" ] .'
)
NODES = [{"name": "alice", "type": "Person"}, {"name": "bob", "type": "Person"}]
EDGES = [{"source": "alice", "target": "bob", "relation": "knows"}]
SHAPES = (
    "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix : <http://ex.org/> . "
    "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
    ":PersonShape a sh:NodeShape ; sh:targetClass :Person ; "
    "sh:property [ sh:path :age ; sh:datatype xsd:integer ; sh:maxCount 1 ] ."
)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "events.db")) as opened:
        yield opened


def _types(kb: KnowledgeBase, after: int = 0) -> list[str]:
    return [e["type"] for e in kb.events(after=after)]


def _last_offset(kb: KnowledgeBase) -> int:
    found = kb.events()
    return found[-1]["offset"] if found else 0


def test_a_first_write_emits_schema_entity_and_edge_events_in_the_specified_order(kb: KnowledgeBase) -> None:
    result = kb.knot(P + ':alice a :Person ; :knows :bob ; :name "Alice" .', timestamp=T1)
    found = kb.events()
    assert [e["type"] for e in found] == [
        "type.new",
        "predicate.new",
        "predicate.new",
        "entity.added",
        "edge.added",
    ]
    assert {e["schema"] for e in found} == {"quipu.event/v1"}
    assert {e["ts"] for e in found} == {T1}  # the declared timestamp, not the wall clock
    assert {e["tx_id"] for e in found} == {result.tx_id}
    assert found[0]["payload"] == {"type_iri": EX + "Person"} and found[0]["subject"] == EX + "Person"
    assert {e["payload"]["predicate_iri"] for e in found[1:3]} == {EX + "knows", EX + "name"}
    assert found[3]["subject"] == EX + "alice" and found[3]["payload"] == {}
    assert found[4]["payload"] == {
        "subject": EX + "alice",
        "predicate": EX + "knows",
        "object": EX + "bob",
        "subject_preexisting": False,
        "object_preexisting": False,
    }
    offsets = [e["offset"] for e in found]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_a_reingest_of_identical_content_emits_nothing(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a :p :b .", source="s1")
    mark = _last_offset(kb)
    kb.knot(P + ":a :p :b .", source="s1")
    assert kb.events(after=mark) == []


def test_an_ownership_only_claim_and_a_partial_retraction_emit_nothing(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a :p :b .", source="s1")
    kb.knot(P + ":a :p :b .", source="s2")  # a second owner: the statement was already visible
    mark = _last_offset(kb)
    assert kb.events(after=mark) == []
    kb.retract_source("s1", "test", apply=True, expect=1)
    assert kb.events(after=mark) == []  # s2 still owns it: still visible
    kb.retract_source("s2", "test", apply=True, expect=1)
    assert _types(kb, mark) == ["entity.updated", "edge.retracted"]
    retracted = kb.events(after=mark)[1]["payload"]
    assert retracted["subject_preexisting"] is True and retracted["object"] == EX + "b"


def test_entity_updated_when_the_subject_had_rows_before(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a :p :b .")
    mark = _last_offset(kb)
    kb.knot(P + ":a :q 1 . :b :p :a .")
    found = kb.events(after=mark)
    assert found[0]["type"] == "predicate.new" and found[0]["subject"] == EX + "q"
    entity = {e["subject"]: e["type"] for e in found if e["type"].startswith("entity.")}
    assert entity == {EX + "a": "entity.updated", EX + "b": "entity.added"}
    edge = next(e for e in found if e["type"] == "edge.added")
    assert edge["payload"]["subject_preexisting"] is False and edge["payload"]["object_preexisting"] is True


def test_type_new_and_predicate_new_fire_once_per_store_lifetime(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a a :Person ; :p 1 .")
    kb.retract(EX + "a", allow_orphan=True)
    mark = _last_offset(kb)
    kb.knot(P + ":b a :Person ; :p 2 . :c a :Person .")
    assert "type.new" not in _types(kb, mark) and "predicate.new" not in _types(kb, mark)
    rows = sql(kb, "SELECT term, kind FROM schema_terms ORDER BY first_offset")
    assert rows == [(EX + "Person", "type"), (EX + "p", "predicate")]


def test_rdf_type_is_neither_a_predicate_nor_an_edge(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a a :Thing .")
    found = kb.events()
    assert [e["type"] for e in found] == ["type.new", "entity.added"]


def test_named_graph_writes_emit_no_semantic_events(kb: KnowledgeBase) -> None:
    kb.create_graph(EX + "g")
    mark = _last_offset(kb)
    kb.knot(P + ":a :p :b .", graph=EX + "g")
    assert kb.events(after=mark) == []


def test_a_rolled_back_write_leaves_no_event(kb: KnowledgeBase) -> None:
    with pytest.raises(UnknownGraph):  # the second graph of the document is not registered
        kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .\n<{EX}c> <{EX}p> <{EX}d> <{EX}nope> .", "nquads")
    assert kb.events() == []
    assert kb.stats()["facts"] == 0


def test_an_episode_emits_episode_ingested_first_with_its_activity_and_group(kb: KnowledgeBase) -> None:
    result = kb.episode("meeting-1", group_id="team-a", nodes=NODES, edges=EDGES)
    found = kb.events()
    assert found[0]["type"] == "episode.ingested"
    assert found[0]["subject"] == result.activity
    assert found[0]["payload"]["name"] == "meeting-1"
    assert found[0]["payload"]["facts"] == result.count
    assert {e["group_id"] for e in found} == {"team-a"}
    assert {e["tx_id"] for e in found} == {result.tx_id}
    mark = found[-1]["offset"]
    again = kb.episode("meeting-1", group_id="team-a", nodes=NODES, edges=EDGES)
    assert again.outcome == "unchanged" and kb.events(after=mark) == []


def _refused(kb: KnowledgeBase, after: int) -> dict[str, Any]:
    found = kb.events(after=after)
    assert [e["type"] for e in found] == ["write.refused"]
    return found[0]


def test_a_refused_write_changes_nothing_and_emits_write_refused(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    kb.knot(P + ":carol a :Person ; :age 30 .")
    before = kb.export()
    head = kb.transactions(limit=None)["transactions"][-1]["id"]
    mark = _last_offset(kb)
    with pytest.raises(ShaclViolation):
        kb.knot(P + ':dave a :Person ; :age "old" .', actor="agent-7", source="crm", timestamp=T2)
    assert kb.export() == before
    event = _refused(kb, mark)
    assert event["subject"] == "urn:quipu:graph:root" and event["group_id"] is None
    assert event["tx_id"] == head  # the latest committed transaction: the refused one never was
    payload = event["payload"]
    assert payload["gate"] == "shacl" and payload["graph"] == "urn:quipu:graph:root"
    assert payload["actor"] == "agent-7" and payload["source"] == "crm"
    assert payload["refused_datums"] == 2
    assert 0 < len(payload["reason"]) <= 500


def test_a_vocabulary_refusal_is_recorded_too(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    mark = _last_offset(kb)
    with pytest.raises(WriteRefused) as caught:
        kb.knot(P + ":x a :Robot .")
    assert caught.value.reason == "unknown_type"  # the original error, not masked
    assert _refused(kb, mark)["payload"]["gate"] == "shacl"


def test_a_refused_episode_emits_write_refused_with_its_source(tmp_path: Path) -> None:
    with quipu.open(store_location(tmp_path, "ep.db"), validate_on_write=True, base_ns=EX) as kb:
        kb.load_shapes("people", SHAPES)
        mark = _last_offset(kb)
        with pytest.raises(ShaclViolation):
            kb.episode("bad", nodes=[{"name": "x", "type": "Person", "properties": {"age": "old"}}])
        payload = _refused(kb, mark)["payload"]
        assert payload["source"] == "episode:bad" and payload["gate"] == "shacl"


def test_loading_and_removing_a_shape_set_emit_registry_events(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a :p 1 .")
    head = kb.transactions(limit=None)["transactions"][-1]["id"]
    mark = _last_offset(kb)
    kb.load_shapes("people", SHAPES, timestamp=T1)
    assert kb.remove_shapes("people", timestamp=T2) is True
    assert kb.remove_shapes("people", timestamp=T2) is False  # nothing open: nothing happened
    found = kb.events(after=mark)
    assert [(e["type"], e["subject"], e["ts"]) for e in found] == [
        ("shapes.loaded", "people", T1),
        ("shapes.removed", "people", T2),
    ]
    assert [e["payload"] for e in found] == [{"name": "people", "tx": head}] * 2
    assert {e["tx_id"] for e in found} == {head}


def test_an_emit_shape_records_a_violation_without_refusing(kb: KnowledgeBase) -> None:
    kb.load_shapes("watch", WATCH)
    mark = _last_offset(kb)
    result = kb.knot(P + ":z a :Person .")  # no name: the emit shape observes, never refuses
    found = kb.events(after=mark)
    assert [e["type"] for e in found][-1] == "shacl.violation"
    violation = found[-1]
    assert violation["subject"] == EX + "z" and violation["tx_id"] == result.tx_id
    assert (
        violation["payload"]["mode"] == "emit"
        and violation["payload"]["message"] == "a person should have a name"
    )
    assert kb.export().count("\n") == 1  # the write went through


def test_an_update_emits_events_for_its_root_transaction_only(kb: KnowledgeBase) -> None:
    kb.create_graph(EX + "g")
    mark = _last_offset(kb)
    kb.update(
        f"INSERT DATA {{ <{EX}u> <{EX}knows> <{EX}v> . GRAPH <{EX}g> {{ <{EX}w> <{EX}knows> <{EX}v> }} }}"
    )
    found = kb.events(after=mark)
    assert [e["type"] for e in found] == ["predicate.new", "entity.added", "edge.added"]
    assert {e["subject"] for e in found[1:]} == {EX + "u"}
    kb.update(f"DELETE DATA {{ <{EX}u> <{EX}knows> <{EX}v> }}")
    assert _types(kb, found[-1]["offset"]) == ["entity.updated", "edge.retracted"]
