"""Read services: export, cord, unravel, entity, entity_history, transactions, stats."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import Graph

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, NotFound, UnknownFormat, UnknownGraph
from tests.backends import store_location

from . import EX, PREFIXES, RDF_TYPE, RDFS_LABEL, RDFS_SUBCLASS, XSD

DOC = PREFIXES + (
    'ex:b ex:name "Bee" ; ex:knows ex:a ; a ex:Person .\n'
    'ex:a ex:name "Ay", "Alpha"@en ; ex:age 30 ; a ex:Person ; ex:note "line\\nbreak \\"quoted\\"" .\n'
    "ex:c ex:tag ex:x .\n"
)


@pytest.fixture
def loaded(kb: KnowledgeBase) -> KnowledgeBase:
    kb.knot(DOC, timestamp="2026-01-01T00:00:00Z")
    return kb


# -- export --------------------------------------------------------------------------------------


def test_export_ntriples_is_sorted_unique_and_escaped(loaded: KnowledgeBase) -> None:
    out = loaded.export("ntriples")
    lines = out.splitlines(keepends=True)
    assert lines == sorted(set(lines))
    assert len(lines) == 9
    assert all(line.endswith(" .\n") for line in lines)
    assert f'<{EX}a> <{EX}note> "line\\nbreak \\"quoted\\"" .\n' in lines
    assert f'<{EX}a> <{EX}age> "30"^^<{XSD}integer> .\n' in lines
    assert f'<{EX}a> <{EX}name> "Alpha"@en .\n' in lines
    # The document round-trips through an independent parser.
    assert len(Graph().parse(data=out, format="nt")) == 9


def test_export_is_deterministic_whatever_the_write_order(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.knot(DOC)
    other = quipu.open(store_location(tmp_path, "other.db"))
    try:
        lines = DOC.splitlines()
        reordered = "\n".join(lines[:3] + list(reversed(lines[3:]))) + "\n"
        other.knot(f'<{EX}zzz> <{EX}p> "first" .')  # different term ids in the other store
        other.knot(reordered)
        other.retract(EX + "zzz")
        assert other.export("ntriples") == kb.export("ntriples")
        assert other.export("turtle") == kb.export("turtle")
    finally:
        other.close()
    assert kb.export("ntriples") == kb.export("nt")
    assert kb.export() == kb.export("ntriples")  # the API default is N-Triples


def test_export_turtle_groups_by_subject_then_predicate(loaded: KnowledgeBase) -> None:
    out = loaded.export("turtle")
    assert out == (
        f'<{EX}a> <{EX}age> "30"^^<{XSD}integer> ;\n'
        f'    <{EX}name> "Alpha"@en, "Ay" ;\n'
        f'    <{EX}note> "line\\nbreak \\"quoted\\"" ;\n'
        f"    <{RDF_TYPE}> <{EX}Person> .\n"
        "\n"
        f"<{EX}b> <{EX}knows> <{EX}a> ;\n"
        f'    <{EX}name> "Bee" ;\n'
        f"    <{RDF_TYPE}> <{EX}Person> .\n"
        "\n"
        f"<{EX}c> <{EX}tag> <{EX}x> .\n"
    )
    parsed = Graph().parse(data=out, format="turtle")
    assert parsed.isomorphic(Graph().parse(data=loaded.export("ntriples"), format="nt"))


def test_export_a_statement_with_two_owners_once(loaded: KnowledgeBase) -> None:
    loaded.knot(f"<{EX}c> <{EX}tag> <{EX}x> .", source="someone-else")
    assert loaded.export("ntriples").count(f"<{EX}c> <{EX}tag> <{EX}x> .") == 1
    assert loaded.export("turtle").count(f"<{EX}tag>") == 1


def test_export_scopes(loaded: KnowledgeBase) -> None:
    g = EX + "g"
    loaded.create_graph(g)
    loaded.knot(f'<{EX}n> <{EX}p> "named only" .\n<{EX}c> <{EX}tag> <{EX}x> .', graph=g)
    named = loaded.export("ntriples", graph=g)
    assert named == (f'<{EX}c> <{EX}tag> <{EX}x> .\n<{EX}n> <{EX}p> "named only" .\n')
    root = loaded.export("ntriples")
    assert "named only" not in root
    assert loaded.export("ntriples", graph="urn:quipu:graph:root") == root
    assert loaded.export("ntriples", graph="") == root


def test_export_of_an_empty_registered_graph_is_empty(loaded: KnowledgeBase) -> None:
    loaded.create_graph(EX + "empty")
    assert loaded.export("ntriples", graph=EX + "empty") == ""
    assert loaded.export("turtle", graph=EX + "empty") == ""


def test_export_unknown_graph(loaded: KnowledgeBase) -> None:
    with pytest.raises(UnknownGraph, match=f"unknown graph: {EX}nope"):
        loaded.export(graph=EX + "nope")
    # Interned but not registered is unknown too.
    with pytest.raises(UnknownGraph):
        loaded.export(graph=EX + "a")


def test_export_unknown_format(loaded: KnowledgeBase) -> None:
    with pytest.raises(UnknownFormat, match="unknown export format: rdfxml"):
        loaded.export("rdfxml")


def test_export_shows_current_state_only(loaded: KnowledgeBase) -> None:
    loaded.retract(EX + "c")
    loaded.set(EX + "a", EX + "age", {"int": 31})
    out = loaded.export("ntriples")
    assert f"<{EX}c>" not in out
    assert '"30"' not in out and f'<{EX}a> <{EX}age> "31"^^<{XSD}integer> .' in out


def test_export_keeps_blank_node_labels(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + 'ex:a ex:addr _:home .\n_:home ex:city "Lima" .\n')
    out = kb.export("ntriples")
    (bnode,) = {line.split(" ")[0] for line in out.splitlines() if line.startswith("_:")}
    assert bnode.startswith("_:b") and bnode.endswith("_home")
    assert f"<{EX}a> <{EX}addr> {bnode} .\n" in out


# -- cord ----------------------------------------------------------------------------------------


def test_cord_lists_every_entity_ordered_by_iri(loaded: KnowledgeBase) -> None:
    out = loaded.cord()
    assert [e["iri"] for e in out["entities"]] == [EX + "a", EX + "b", EX + "c"]
    assert out["count"] == 3
    a = out["entities"][0]
    assert [f["predicate"] for f in a["facts"]] == sorted(f["predicate"] for f in a["facts"])
    assert {"predicate": EX + "age", "value": 30} in a["facts"]
    assert {"predicate": EX + "name", "value": {"value": "Alpha", "lang": "en"}} in a["facts"]
    assert {"predicate": RDF_TYPE, "value": EX + "Person"} in a["facts"]
    assert len(a["facts"]) == 5


def test_cord_type_filter_is_asserted_only(loaded: KnowledgeBase) -> None:
    loaded.knot(PREFIXES + "ex:Student rdfs:subClassOf ex:Person .\nex:s a ex:Student .\n")
    people = loaded.cord(type=EX + "Person")
    assert [e["iri"] for e in people["entities"]] == [EX + "a", EX + "b"]
    assert [e["iri"] for e in loaded.cord(type=EX + "Student")["entities"]] == [EX + "s"]


def test_cord_predicate_filter_lists_all_facts(loaded: KnowledgeBase) -> None:
    out = loaded.cord(predicate=EX + "knows")
    assert [e["iri"] for e in out["entities"]] == [EX + "b"]
    # Each listed entity carries all its current statements, not just the filtered predicate.
    assert sorted(f["predicate"] for f in out["entities"][0]["facts"]) == [
        EX + "knows",
        EX + "name",
        RDF_TYPE,
    ]


def test_cord_type_wins_over_predicate(loaded: KnowledgeBase) -> None:
    out = loaded.cord(type=EX + "Person", predicate=EX + "tag")
    assert [e["iri"] for e in out["entities"]] == [EX + "a", EX + "b"]


def test_cord_limit(loaded: KnowledgeBase) -> None:
    assert [e["iri"] for e in loaded.cord(limit=2)["entities"]] == [EX + "a", EX + "b"]
    assert [e["iri"] for e in loaded.cord(limit=0)["entities"]] == [EX + "a"]  # below 1 becomes 1
    assert loaded.cord(limit=2, type=EX + "Person")["count"] == 2


def test_cord_lists_each_statement_once_and_only_current_ones(loaded: KnowledgeBase) -> None:
    loaded.knot(f"<{EX}c> <{EX}tag> <{EX}x> .\n<{EX}c> <{EX}tag> <{EX}y> .", source="other")
    loaded.retract(EX + "c", EX + "tag", {"iri": EX + "y"})
    (c,) = [e for e in loaded.cord()["entities"] if e["iri"] == EX + "c"]
    assert c["facts"] == [{"predicate": EX + "tag", "value": EX + "x"}]
    # A wholly retracted entity disappears.
    loaded.retract(EX + "c")
    assert [e["iri"] for e in loaded.cord()["entities"]] == [EX + "a", EX + "b"]


def test_cord_rejects_non_iris(loaded: KnowledgeBase) -> None:
    with pytest.raises(InvalidField, match="type"):
        loaded.cord(type="Person")
    with pytest.raises(InvalidField, match="predicate"):
        loaded.cord(predicate="bad iri")


def test_cord_ignores_named_graphs(loaded: KnowledgeBase) -> None:
    loaded.create_graph(EX + "g")
    loaded.knot(f"<{EX}zed> <{RDF_TYPE}> <{EX}Person> .", graph=EX + "g")
    assert [e["iri"] for e in loaded.cord(type=EX + "Person")["entities"]] == [EX + "a", EX + "b"]


# -- unravel -------------------------------------------------------------------------------------


def test_unravel_one_row_per_claim_ordered(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}b> <{EX}p> "1" .\n<{EX}a> <{EX}q> "2" .', source="A")  # tx 1
    kb.knot(f'<{EX}a> <{EX}p> "3" .\n<{EX}a> <{EX}q> "2" .', source="B")  # tx 2
    out = kb.unravel(tx=2)
    assert [(f["entity"], f["predicate"], f["tx"]) for f in out["facts"]] == [
        (EX + "a", EX + "p", 2),
        (EX + "a", EX + "q", 1),
        (EX + "a", EX + "q", 2),
        (EX + "b", EX + "p", 1),
    ]
    assert out["count"] == 4
    assert kb.unravel(tx=1)["count"] == 2


def test_unravel_needs_a_read_point(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidField, match="'tx' or 'valid_at'"):
        kb.unravel()
    with pytest.raises(InvalidField, match="valid_at"):
        kb.unravel(valid_at="  ")


def test_unravel_is_root_only(kb: KnowledgeBase) -> None:
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}a> <{EX}p> "named" .', graph=EX + "g")
    kb.knot(f'<{EX}a> <{EX}p> "root" .')
    assert [f["value"] for f in kb.unravel(tx=2)["facts"]] == ["root"]


def test_unravel_values_use_the_json_forms(kb: KnowledgeBase) -> None:
    kb.knot(
        PREFIXES
        + 'ex:a ex:i 5 ; ex:d 1.5e0 ; ex:b false ; ex:l "x"@fr ; ex:t "2026-01-01"^^xsd:date ; ex:r ex:z .\n'
        + 'ex:a ex:inf "INF"^^xsd:double ; ex:e "1.5"^^xsd:double .\n',
        timestamp="2026-01-01T00:00:00Z",
    )
    got = {f["predicate"][len(EX) :]: f["value"] for f in kb.unravel(tx=1)["facts"]}
    assert got == {
        "i": 5,
        "d": {"value": "1.5e0", "datatype": XSD + "double"},  # kept as written: not a JSON number
        "e": 1.5,  # the canonical form is a Float
        "b": False,
        "l": {"value": "x", "lang": "fr"},
        "t": {"value": "2026-01-01", "datatype": XSD + "date"},
        "r": EX + "z",
        "inf": {"value": "INF", "datatype": XSD + "double"},  # [changed from DM §2.1]: not null
    }


# -- entity --------------------------------------------------------------------------------------


def test_entity_describes_current_outgoing_statements(loaded: KnowledgeBase) -> None:
    doc = loaded.entity(EX + "a")
    assert doc == {
        "@id": EX + "a",
        "@type": EX + "Person",
        EX + "age": 30,
        # Several values → an array ordered by value ('"Alpha"@en' sorts before '"Ay"').
        EX + "name": [{"@value": "Alpha", "@language": "en"}, "Ay"],
        EX + "note": 'line\nbreak "quoted"',
    }
    # Incoming edges (ex:b ex:knows ex:a) are not part of the description.
    assert EX + "knows" not in doc


def test_entity_references_and_expanded_labels(kb: KnowledgeBase) -> None:
    kb.knot(
        PREFIXES
        + 'ex:a ex:knows ex:b, ex:c ; a ex:T, ex:U ; ex:v "2026-01-01"^^xsd:date .\n'
        + 'ex:b rdfs:label "Bee" .\nex:c rdfs:label "Sea", "Mer"@fr .\n'
    )
    plain = kb.entity(EX + "a")
    assert plain["@type"] == [EX + "T", EX + "U"]
    assert plain[EX + "knows"] == [{"@id": EX + "b"}, {"@id": EX + "c"}]
    assert plain[EX + "v"] == {"@value": "2026-01-01", "@type": XSD + "date"}
    expanded = kb.entity(EX + "a", expanded=True)
    knows = {node["@id"]: node.get(RDFS_LABEL) for node in expanded[EX + "knows"]}
    assert knows[EX + "b"] == "Bee"
    # Labels use the JSON-LD value forms and value order, like every property of the document.
    assert knows[EX + "c"] == [{"@value": "Mer", "@language": "fr"}, "Sea"]


def test_entity_unknown_or_empty(kb: KnowledgeBase) -> None:
    assert kb.entity(EX + "never") == {"@id": EX + "never"}
    kb.knot(f'<{EX}gone> <{EX}p> "x" .\n<{EX}obj-only> <{EX}p> <{EX}target> .')
    kb.retract(EX + "gone")
    assert kb.entity(EX + "gone") == {"@id": EX + "gone"}
    assert kb.entity(EX + "target") == {"@id": EX + "target"}
    with pytest.raises(InvalidField):
        kb.entity("not an iri")


def test_entity_is_root_and_each_statement_once(loaded: KnowledgeBase) -> None:
    loaded.create_graph(EX + "g")
    loaded.knot(f'<{EX}c> <{EX}other> "named" .', graph=EX + "g")
    loaded.knot(f"<{EX}c> <{EX}tag> <{EX}x> .", source="second-owner")
    assert loaded.entity(EX + "c") == {"@id": EX + "c", EX + "tag": {"@id": EX + "x"}}


# -- entity history ------------------------------------------------------------------------------


def test_entity_history_rows_in_tx_order(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1" .\n<{EX}a> <{EX}k> <{EX}b> .', timestamp="2026-01-01T00:00:00Z")  # tx 1
    kb.knot(f'<{EX}a> <{EX}p> "1" .', source="other", timestamp="2026-01-02T00:00:00Z")  # tx 2
    kb.set(EX + "a", EX + "p", "2", timestamp="2026-01-03T00:00:00Z")  # tx 3
    kb.knot(f'<{EX}b> <{EX}p> "not about a" .\n<{EX}z> <{EX}k> <{EX}a> .')  # tx 4
    out = kb.entity_history(EX + "a")
    assert out["iri"] == EX + "a"
    assert [(h["op"], h["predicate"][len(EX) :], h["value"], h["tx"]) for h in out["history"]] == [
        ("assert", "k", EX + "b", 1),
        ("assert", "p", "1", 1),
        ("assert", "p", "1", 2),
        ("retract", "p", "1", 3),
        ("assert", "p", "2", 3),
    ]
    assert out["count"] == 5
    closed = [h for h in out["history"] if h["value"] == "1"]
    assert [h["valid_to"] for h in closed] == ["2026-01-03T00:00:00Z"] * 3
    assert out["history"][-1]["valid_from"] == "2026-01-03T00:00:00Z"
    assert out["history"][-1]["valid_to"] is None


def test_entity_history_unknown_iri(kb: KnowledgeBase) -> None:
    with pytest.raises(NotFound, match=f"entity not found: {EX}nobody"):
        kb.entity_history(EX + "nobody")
    with pytest.raises(InvalidField, match="missing 'iri'"):
        kb.entity_history("")


def test_entity_history_known_iri_without_root_rows(kb: KnowledgeBase) -> None:
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}a> <{EX}p> "named" .\n<{EX}x> <{EX}p> <{EX}obj> .', graph=EX + "g")
    assert kb.entity_history(EX + "a") == {"iri": EX + "a", "history": [], "count": 0}
    assert kb.entity_history(EX + "obj")["history"] == []


# -- transactions --------------------------------------------------------------------------------


def test_transactions_since_and_limit(kb: KnowledgeBase) -> None:
    for i in range(5):
        kb.knot(f'<{EX}a> <{EX}p> "{i}" .', actor=f"actor{i}", timestamp=f"2026-01-0{5 - i}T00:00:00Z")
    log = kb.transactions()
    assert [t["id"] for t in log["transactions"]] == [1, 2, 3, 4, 5]
    assert log["count"] == 5
    assert log["transactions"][0] == {
        "id": 1,
        "timestamp": "2026-01-05T00:00:00Z",
        "actor": "actor0",
        "source": "knot:actor0",
        "authenticated": None,
    }
    # Timestamps are declarations and may run backwards relative to ids.
    assert [t["timestamp"][:10] for t in log["transactions"]] == [f"2026-01-0{d}" for d in (5, 4, 3, 2, 1)]
    assert [t["id"] for t in kb.transactions(since=2)["transactions"]] == [3, 4, 5]
    assert [t["id"] for t in kb.transactions(limit=2)["transactions"]] == [1, 2]  # oldest first
    assert [t["id"] for t in kb.transactions(since=2, limit=1)["transactions"]] == [3]
    assert [t["id"] for t in kb.transactions(limit=0)["transactions"]] == [1]  # clamped to >= 1
    assert [t["id"] for t in kb.transactions(limit=None)["transactions"]] == [1, 2, 3, 4, 5]
    assert kb.transactions(since=5) == {"transactions": [], "count": 0}


def test_transactions_of_an_empty_store(kb: KnowledgeBase) -> None:
    assert kb.transactions() == {"transactions": [], "count": 0}


# -- stats ---------------------------------------------------------------------------------------


def test_stats_counts_root_current_statements(kb: KnowledgeBase) -> None:
    assert kb.stats() == {"facts": 0, "entities": 0, "predicates": 0}
    kb.knot(f'<{EX}a> <{EX}p> "1", "2" .\n<{EX}b> <{EX}p> "1" .\n<{EX}b> <{EX}q> <{EX}a> .')
    assert kb.stats() == {"facts": 4, "entities": 2, "predicates": 2}
    # A second owner is collapsed.
    kb.knot(f'<{EX}a> <{EX}p> "1" .', source="other")
    assert kb.stats() == {"facts": 4, "entities": 2, "predicates": 2}
    # Named graphs do not count.
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}c> <{EX}r> "x" .', graph=EX + "g")
    assert kb.stats() == {"facts": 4, "entities": 2, "predicates": 2}
    # Retractions and sets change the counts immediately.
    kb.retract(EX + "b", EX + "q", allow_orphan=True)
    assert kb.stats() == {"facts": 3, "entities": 2, "predicates": 1}
    kb.set(EX + "a", EX + "p", "only")
    assert kb.stats() == {"facts": 2, "entities": 2, "predicates": 1}
    kb.retract(EX + "b")
    assert kb.stats() == {"facts": 1, "entities": 1, "predicates": 1}


def test_stats_seen_by_a_second_handle(kb: KnowledgeBase, tmp_path: Path) -> None:
    """Counts are never stale: another handle on the same file sees each write."""
    kb.knot(f'<{EX}a> <{EX}p> "1" .')
    other = quipu.open(store_location(tmp_path, "kb.db"))
    try:
        assert other.stats()["facts"] == 1
        kb.knot(f'<{EX}a> <{EX}p> "2" .')
        assert other.stats()["facts"] == 2
    finally:
        other.close()


def test_subclass_typed_entities(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + "ex:Student rdfs:subClassOf ex:Person .\nex:s a ex:Student .\n")
    assert kb.cord(type=EX + "Person")["entities"] == []
    assert kb.entity(EX + "Student")[RDFS_SUBCLASS] == {"@id": EX + "Person"}
