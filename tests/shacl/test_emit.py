"""Shapes annotated ``quipu:onViolation "emit"`` never gate; their results are queued on the
write context as ``shacl.violation`` advisories (DM §11.1 item 5, §12 step 4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import RDF, URIRef

import quipu
from quipu.api import KnowledgeBase
from quipu.episodes.build import build, parse_episode
from quipu.episodes.gate import episode_gate
from quipu.errors import ShaclViolation
from quipu.shacl import gate
from quipu.shacl.update_gate import GraphDelta, check_update
from quipu.store.context import QueuedEvent
from quipu.store.schema import ROOT
from tests.backends import store_location

EX = "http://ex.org/"
P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> . @prefix q: <https://quipu.dev/ontology/> .\n"
SOFT = P + (
    'ex:Soft a sh:NodeShape ; q:onViolation "emit" ; sh:targetClass ex:Person ;\n'
    '  sh:property [ sh:path ex:name ; sh:minCount 1 ; sh:message "a person should have a name" ] .'
)
HARD = P + (
    "ex:Hard a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ."
)
NAMELESS = P + "ex:a a ex:Person ; ex:age 3 ."


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "emit.db")) as kb:
        yield kb


def _gated(kb: KnowledgeBase, data: str, target: int = ROOT) -> list[QueuedEvent]:
    """Run the /knot gate inside a write, as ingest does, and return what it queued."""
    with kb.db.write() as ctx:
        gate.check_write(kb.db, data.encode(), target=target, conn=ctx.conn, advisories=ctx.advisories)
        return list(ctx.advisories)


def test_a_write_violating_an_emit_shape_succeeds_and_queues_an_advisory(kb: KnowledgeBase) -> None:
    kb.load_shapes("soft", SOFT)
    queued = _gated(kb, NAMELESS)
    assert queued == [
        QueuedEvent(
            type="shacl.violation",
            subject=EX + "a",
            payload={
                "shape": EX + "Soft",  # the anonymous property shape's owner, by name
                "message": "a person should have a name",
                "component": "sh:MinCountConstraintComponent",
                "path": EX + "name",
                "severity": "Violation",
                "mode": "emit",
            },
        )
    ]
    assert kb.knot(NAMELESS).tx_id > 0  # the knot path itself is not refused


def test_emit_and_reject_shapes_split_one_run(kb: KnowledgeBase) -> None:
    kb.load_shapes("soft", SOFT)
    kb.load_shapes("hard", HARD)
    assert [a.payload["shape"] for a in _gated(kb, NAMELESS)] == [EX + "Soft"]
    with pytest.raises(ShaclViolation) as caught:
        kb.knot(P + 'ex:b a ex:Person ; ex:age "x" .')
    # The refusal reports only the rejecting shape; the emit result is not an issue.
    assert [i["component"] for i in caught.value.report["issues"]] == ["sh:DatatypeConstraintComponent"]


def test_no_emit_shapes_queue_nothing(kb: KnowledgeBase) -> None:
    kb.load_shapes("hard", HARD)
    assert _gated(kb, NAMELESS) == []


def test_a_conforming_write_queues_nothing(kb: KnowledgeBase) -> None:
    kb.load_shapes("soft", SOFT)
    assert _gated(kb, P + 'ex:a a ex:Person ; ex:name "Ann" .') == []


def test_request_emit_shapes_queue_too(kb: KnowledgeBase) -> None:
    with kb.db.write() as ctx:
        gate.check_write(
            kb.db, NAMELESS.encode(), request_shapes=SOFT, conn=ctx.conn, advisories=ctx.advisories
        )
        assert [a.type for a in ctx.advisories] == ["shacl.violation"]


def test_a_named_graph_write_queues_no_advisory(kb: KnowledgeBase) -> None:
    # Only ROOT commits emit events (DM §11.1): a named graph's emit results are dropped.
    kb.create_graph(EX + "g")
    kb.load_shapes("soft", SOFT)
    with kb.db.read() as conn:
        gid = kb.db.terms.lookup(conn, [EX + "g"])[EX + "g"]
    assert _gated(kb, NAMELESS, target=gid) == []


def test_an_episode_gate_queues_emit_results(kb: KnowledgeBase) -> None:
    shapes = P + (
        'ex:Soft a sh:NodeShape ; q:onViolation "emit" ; sh:targetClass <' + kb.base_ns + "Service> ;\n"
        "  sh:property [ sh:path ex:owner ; sh:minCount 1 ] ."
    )
    body = parse_episode(name="e1", episode_body="note", nodes=[{"name": "svc", "type": "Service"}])
    built = build(body, kb.base_ns)
    check = episode_gate(kb.db, request_shapes=shapes)
    with kb.db.write() as ctx:
        check(ctx, ROOT, built)
        assert [(a.type, a.payload["shape"], a.payload["path"]) for a in ctx.advisories] == [
            ("shacl.violation", EX + "Soft", EX + "owner")
        ]


def test_an_update_queues_emit_results_for_root(kb: KnowledgeBase) -> None:

    kb.load_shapes("soft", SOFT)
    person = (URIRef(EX + "a"), RDF.type, URIRef(EX + "Person"))
    with kb.db.write() as ctx:
        deltas = [GraphDelta(None, ROOT, [person]), GraphDelta(EX + "new", None, [person])]
        check_update(kb.db, ctx, deltas, actor=None, source="sparql-update", timestamp="2026-01-01T00:00:00Z")
        assert [(a.subject, a.payload["shape"]) for a in ctx.advisories] == [(EX + "a", EX + "Soft")]
