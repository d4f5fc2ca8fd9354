"""SPARQL Update's vocabulary and SHACL gates (tools-core §3.10 rule 8): each destination graph's
inserts are validated as a delta inside the write; a refusal writes nothing anywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import ShaclViolation, WriteRefused
from tests.backends import store_location

EX = "http://ex.org/"
G = "http://ex.org/g"
H = "http://ex.org/h"
P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
SHAPES = P + (
    "ex:S a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ;\n"
    "  sh:property [ sh:path ex:name ; sh:datatype xsd:string ] ;\n"
    "  sh:property [ sh:path ex:knows ; sh:class ex:Person ] ."
)
U = "PREFIX ex: <http://ex.org/>\n"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "u.db")) as kb:
        yield kb


def _facts(kb: KnowledgeBase) -> int:
    return int(kb.stats()["facts"])


def test_a_valid_update_passes_the_gate(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    result = kb.update(U + 'INSERT DATA { ex:a a ex:Person ; ex:age 3 ; ex:name "Ann" }')
    assert result["asserted"] == 3 and result["tx"] is not None


def test_an_invalid_update_is_refused_and_writes_nothing(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    with pytest.raises(ShaclViolation) as caught:
        kb.update(U + 'INSERT DATA { ex:a a ex:Person ; ex:age "old" . ex:b ex:p 1 }')
    refused = caught.value
    assert refused.reason == "shacl_violation" and refused.status == 400
    assert refused.message.endswith("No facts were written")
    assert refused.report["violations"] == 1
    assert refused.report["issues"][0]["focus_node"] == EX + "a"
    assert refused.report["graph"] is None
    assert "hint" in refused.report
    assert _facts(kb) == 0


def test_a_refused_update_rolls_back_its_deletions_too(kb: KnowledgeBase) -> None:
    kb.update(U + "INSERT DATA { ex:x ex:p 1 }")
    kb.load_shapes("people", SHAPES)
    with pytest.raises(ShaclViolation):
        kb.update(U + 'DELETE DATA { ex:x ex:p 1 } ; INSERT DATA { ex:a a ex:Person ; ex:age "old" }')
    assert kb.query(U + "ASK { ex:x ex:p 1 }") is True


def test_deletions_alone_are_not_gated(kb: KnowledgeBase) -> None:
    kb.update(U + 'INSERT DATA { ex:a a ex:Person ; ex:age "old" }')  # before the shapes
    kb.load_shapes("people", SHAPES)
    # Deleting the type leaves ex:a with a bad age nowhere validated: deletions are not checked.
    result = kb.update(U + "DELETE DATA { ex:a a ex:Person }")
    assert result["retracted"] == 1 and result["asserted"] == 0


def test_the_context_is_the_state_the_update_leaves(kb: KnowledgeBase) -> None:
    kb.update(U + "INSERT DATA { ex:b a ex:Person }")
    kb.load_shapes("people", SHAPES)
    # ex:b stops being a Person in the same request: knowing it no longer passes sh:class.
    with pytest.raises(ShaclViolation) as caught:
        kb.update(U + "DELETE DATA { ex:b a ex:Person } ; INSERT DATA { ex:a a ex:Person ; ex:knows ex:b }")
    assert caught.value.report["issues"][0]["component"] == "sh:ClassConstraintComponent"
    # ... and a stored Person still is one.
    kb.update(U + "INSERT DATA { ex:c a ex:Person }")
    assert kb.update(U + "INSERT DATA { ex:a a ex:Person ; ex:knows ex:c }")["asserted"] == 2


def test_a_where_template_is_gated_per_solution(kb: KnowledgeBase) -> None:
    kb.update(U + 'INSERT DATA { ex:a ex:label "x" . ex:b ex:label "y" }')
    kb.load_shapes("people", SHAPES)
    with pytest.raises(ShaclViolation) as caught:
        kb.update(U + "INSERT { ?s a ex:Person ; ex:age ?l } WHERE { ?s ex:label ?l }")
    assert caught.value.report["violations"] == 2
    assert _facts(kb) == 2


def test_a_multi_graph_update_is_gated_per_graph(kb: KnowledgeBase) -> None:
    kb.create_graph(G)
    kb.update(U + f"INSERT DATA {{ GRAPH <{G}> {{ ex:b a ex:Person }} }}")
    kb.load_shapes("people", SHAPES)
    # ex:b is a Person in G only: knowing it from ROOT fails sh:class, from G passes.
    with pytest.raises(ShaclViolation) as caught:
        kb.update(
            U + f"INSERT DATA {{ ex:a a ex:Person ; ex:knows ex:b . GRAPH <{G}> {{ ex:c a ex:Person ; "
            "ex:knows ex:b } }"
        )
    assert caught.value.report["graph"] is None
    assert [i["focus_node"] for i in caught.value.report["issues"]] == [EX + "a"]
    ask = U + f"ASK {{ GRAPH <{G}> {{ ex:c ex:knows ex:b }} }}"
    assert kb.query(ask) is False and _facts(kb) == 0
    result = kb.update(U + f"INSERT DATA {{ GRAPH <{G}> {{ ex:c a ex:Person ; ex:knows ex:b }} }}")
    assert result["asserted"] == 2 and kb.query(ask) is True


def test_a_violation_in_a_named_graph_refuses_the_root_part_too(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    with pytest.raises(ShaclViolation) as caught:
        kb.update(
            U
            + f'INSERT DATA {{ ex:a a ex:Person ; ex:age 1 . GRAPH <{H}> {{ ex:z a ex:Person ; ex:age "x" }} }}'
        )
    assert caught.value.report["graph"] == H
    assert H in caught.value.message
    assert _facts(kb) == 0
    with kb.db.read() as conn:  # the new graph was neither registered nor interned
        assert kb.db.terms.lookup(conn, [H]) == {}


def test_root_types_the_update_inserts_count_for_a_named_graph(kb: KnowledgeBase) -> None:
    kb.create_graph(G)
    kb.load_shapes("people", SHAPES)
    text = U + f"INSERT DATA {{ ex:b a ex:Person . GRAPH <{G}> {{ ex:a a ex:Person ; ex:knows ex:b }} }}"
    assert kb.update(text)["asserted"] == 3


def test_the_vocabulary_gate_refuses_an_unsanctioned_type(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    with pytest.raises(WriteRefused) as caught:
        kb.update(U + "INSERT DATA { ex:a a ex:Robot }")
    assert caught.value.reason == "unknown_type" and caught.value.field == "update"
    assert _facts(kb) == 0


def test_without_shapes_nothing_is_gated(kb: KnowledgeBase) -> None:
    assert kb.update(U + 'INSERT DATA { ex:a a ex:Robot ; ex:age "old" }')["asserted"] == 2


def test_removed_shapes_stop_gating_updates(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    with pytest.raises(ShaclViolation):
        kb.update(U + 'INSERT DATA { ex:a a ex:Person ; ex:age "old" }')
    kb.remove_shapes("people")
    assert kb.update(U + 'INSERT DATA { ex:a a ex:Person ; ex:age "old" }')["asserted"] == 2


def test_a_plain_string_literal_is_an_xsd_string(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    kb.load_shapes(
        "status",
        P + "ex:T a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path "
        'ex:status ; sh:in ( "open" "closed" ) ] .',
    )
    # sh:in compares terms: the update's "open" must be the shapes' "open" (an xsd:string).
    assert (
        kb.update(U + 'INSERT DATA { ex:a a ex:Person ; ex:name "Ann" ; ex:status "open" }')["asserted"] == 3
    )
    with pytest.raises(ShaclViolation):
        kb.update(U + 'INSERT DATA { ex:b a ex:Person ; ex:name "Bo"@en }')


def test_a_refusal_is_recorded_as_write_refused(kb: KnowledgeBase) -> None:
    kb.load_shapes("people", SHAPES)
    with pytest.raises(ShaclViolation):
        kb.update(U + 'INSERT DATA { ex:a a ex:Person ; ex:age "old" }', actor="alice")
    refused = [e for e in kb.events() if e["type"] == "write.refused"]
    assert len(refused) == 1
    payload = refused[0]["payload"]
    assert payload["gate"] == "shacl" and payload["actor"] == "alice"
    assert payload["source"] == "sparql-update" and payload["refused_datums"] == 2
