"""The vocabulary and SHACL gates of an episode write (tools-core §3.4, DM §12 steps 3-4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quipu.api import KnowledgeBase
from quipu.config import load_settings
from quipu.episodes.gate import EpisodeShaclViolation
from quipu.episodes.iris import DEFAULT_BASE_NS as NS
from quipu.errors import InvalidField, ShaclViolation, WriteRefused
from tests.backends import store_location
from tests.store import snapshot

SHAPES = f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix o: <{NS}> .
o:ServiceShape a sh:NodeShape ; sh:targetClass o:Service ;
    sh:property [ sh:path o:tier ; sh:minCount 1 ; sh:in ("gold" "silver") ] .
o:DatabaseShape a sh:NodeShape ; sh:targetClass o:Database .
"""
VALID = [
    {"name": "svc", "type": "Service", "properties": {"tier": "gold"}},
    {"name": "db", "type": "Database"},
]
INVALID = [{"name": "svc", "type": "Service", "properties": {"tier": "bronze"}}]
EDGES = [{"source": "svc", "target": "db", "relation": "uses"}]


def state(kb: KnowledgeBase) -> tuple[str, dict[str, Any], dict[str, list[tuple[Any, ...]]]]:
    return kb.export("ntriples"), kb.transactions(), snapshot(kb)


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """A store with validate_on_write on and the shapes stored."""
    settings = load_settings(
        store={"db": store_location(tmp_path, "g.db")}, shacl={"validate_on_write": True}
    )
    kb = KnowledgeBase.from_settings(settings)
    kb.load_shapes("services", SHAPES)
    try:
        yield kb
    finally:
        kb.close()


def test_validate_on_write_defaults_to_false_and_reaches_the_knowledge_base(tmp_path: Path) -> None:
    settings = load_settings(store={"db": store_location(tmp_path, "d.db")})
    assert settings.shacl.validate_on_write is False
    kb = KnowledgeBase.from_settings(settings)
    try:
        assert kb.validate_on_write is False
    finally:
        kb.close()


def test_stored_shapes_refuse_an_invalid_episode_and_write_nothing(gated: KnowledgeBase) -> None:
    before = state(gated)
    with pytest.raises(EpisodeShaclViolation) as refused:
        gated.episode("bad", nodes=INVALID)
    assert refused.value.status == 400 and refused.value.reason == "shacl_violation"
    (issue,) = refused.value.report["issues"]
    assert (issue["focus_node"], issue["path"]) == (NS + "svc", NS + "tier")
    assert issue["allowed"] == ["gold", "silver"]
    assert refused.value.report["conforms"] is False
    assert state(gated) == before


def test_stored_shapes_let_a_valid_episode_through(gated: KnowledgeBase) -> None:
    assert gated.episode("good", nodes=VALID, edges=EDGES).outcome == "created"


def test_the_gate_runs_before_the_idempotency_check(gated: KnowledgeBase) -> None:
    gated.episode("good", nodes=VALID)
    # The same episode, now gated by stricter request shapes: refused, not "unchanged".
    strict = SHAPES.replace('("gold" "silver")', '("silver")')
    with pytest.raises(EpisodeShaclViolation):
        gated.episode("good", nodes=VALID, shapes=strict)


def test_stored_shapes_do_not_shacl_gate_episodes_when_validate_on_write_is_off(kb: KnowledgeBase) -> None:
    kb.load_shapes("services", SHAPES)
    assert kb.episode("bad", nodes=INVALID).outcome == "created"


def test_request_shapes_gate_an_episode_whatever_the_setting(kb: KnowledgeBase) -> None:
    before = state(kb)
    with pytest.raises(EpisodeShaclViolation):
        kb.episode("bad", nodes=INVALID, shapes=SHAPES)
    assert state(kb) == before
    assert kb.episode("good", nodes=VALID, shapes=SHAPES).outcome == "created"


def test_request_shapes_that_do_not_parse_are_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidField) as refused:
        kb.episode("e", nodes=VALID, shapes="not turtle {")
    assert refused.value.field == "shapes"
    assert kb.transactions()["transactions"] == []


def test_the_vocabulary_gate_refuses_an_unsanctioned_node_type_once_shapes_are_stored(
    kb: KnowledgeBase,
) -> None:
    kb.load_shapes("services", SHAPES)  # validate_on_write off: the vocabulary gate still runs
    before = state(kb)
    with pytest.raises(WriteRefused) as refused:
        kb.episode("e", nodes=[{"name": "c", "type": "Cache"}])
    assert refused.value.reason == "unknown_type"
    assert refused.value.extra["unknown_types"] == [NS + "Cache"]
    assert state(kb) == before


def test_provenance_types_are_not_vocabulary_questions(kb: KnowledgeBase) -> None:
    kb.load_shapes("services", SHAPES)
    # prov:Activity and rdf:Statement (an edge with a confidence) are quipu's own scaffolding.
    edges = [{**EDGES[0], "confidence": 0.9}]
    assert kb.episode("e", nodes=VALID, edges=edges).outcome == "created"


def test_knot_keeps_its_own_refusal_class(kb: KnowledgeBase) -> None:
    with pytest.raises(ShaclViolation) as refused:
        kb.knot(f"<{NS}svc> a <{NS}Service> .", shapes=SHAPES)
    assert not isinstance(refused.value, EpisodeShaclViolation)
