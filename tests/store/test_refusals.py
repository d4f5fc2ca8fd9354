"""Refused writes raise the right error, name the problem and change nothing (DM §1.3-1.4, §16.1-2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from quipu.api import KnowledgeBase
from quipu.errors import (
    BadLiteral,
    InvalidField,
    NotFound,
    QueryError,
    QuipuError,
    RdfParseError,
    UnknownFormat,
    UnknownGraph,
    WriteRefused,
)

from . import EX, PREFIXES, RDF_TYPE, XSD, snapshot, term_id

GOOD = f'<{EX}a> <{EX}p> "v" .\n<{EX}a> <{RDF_TYPE}> <{EX}T> .\n<{EX}a> <{EX}k> <{EX}b> .'


@pytest.fixture
def seeded(kb: KnowledgeBase) -> KnowledgeBase:
    """A store with some history, so a refusal has rows it could wrongly touch."""
    kb.create_graph(EX + "g")
    kb.knot(GOOD, timestamp="2026-01-01T00:00:00Z")
    kb.knot(f'<{EX}a> <{EX}p> "named" .', graph=EX + "g")
    kb.set(EX + "a", EX + "p", "w", timestamp="2026-01-02T00:00:00Z")
    return kb


def assert_refused(
    kb: KnowledgeBase, error: type[QuipuError], match: str, action: Callable[[], Any]
) -> QuipuError:
    """``action`` raises ``error`` with a message matching ``match``; every table is unchanged."""
    before = snapshot(kb)
    with pytest.raises(error, match=match) as info:
        action()
    assert type(info.value) is error, f"expected exactly {error.__name__}, got {type(info.value).__name__}"
    assert snapshot(kb) == before
    return info.value


# -- knot ----------------------------------------------------------------------------------------


def test_malformed_turtle(seeded: KnowledgeBase) -> None:
    err = assert_refused(seeded, RdfParseError, "RDF parse error", lambda: seeded.knot(f"<{EX}new> <{EX}p> "))
    assert err.status == 400
    assert term_id(seeded, EX + "new") is None


def test_malformed_turtle_after_good_statements_writes_nothing(seeded: KnowledgeBase) -> None:
    doc = f'<{EX}new1> <{EX}p> "ok" .\n<{EX}new2> <{EX}p> "ok" .\n<{EX}new3> <{EX}p> "broken .\n'
    assert_refused(seeded, RdfParseError, "RDF parse error", lambda: seeded.knot(doc))
    assert term_id(seeded, EX + "new1") is None


@pytest.mark.parametrize("fmt", ["nt", "nq", "trig", "jsonld", "rdfxml"])
def test_malformed_documents_in_every_format(seeded: KnowledgeBase, fmt: str) -> None:
    broken = {
        "nt": f"<{EX}x> <{EX}p> .\n",
        "nq": f"<{EX}x> <{EX}p> <{EX}o> <{EX}g> <{EX}extra> .\n",
        "trig": f"<{EX}g> {{ <{EX}x> <{EX}p> <{EX}o> .\n",
        "jsonld": '{"@id": ',
        "rdfxml": "<rdf:RDF><unclosed>",
    }[fmt]
    assert_refused(seeded, RdfParseError, "RDF parse error", lambda: seeded.knot(broken, fmt))


def test_unknown_format(seeded: KnowledgeBase) -> None:
    err = assert_refused(
        seeded, UnknownFormat, "unknown input format: 'yaml'", lambda: seeded.knot(GOOD, "yaml")
    )
    assert err.field == "format"


def test_malformed_valid_from(seeded: KnowledgeBase) -> None:
    err = assert_refused(
        seeded,
        InvalidField,
        "invalid 'valid_from': '2026-04-01'",
        lambda: seeded.knot(f'<{EX}new> <{EX}p> "v" .', valid_from="2026-04-01"),
    )
    assert err.field == "valid_from"
    assert term_id(seeded, EX + "new") is None


@pytest.mark.parametrize(
    "bad",
    ["2026-04-01", "2026-04-01T10:00:00", "2026-04-01T24:00:00Z", "2026-02-30T00:00:00Z", "soon", ""],
)
def test_malformed_valid_from_is_checked_before_parsing(seeded: KnowledgeBase, bad: str) -> None:
    """Even with malformed Turtle, the valid_from error wins (it is checked first)."""
    assert_refused(
        seeded,
        InvalidField,
        "invalid 'valid_from'",
        lambda: seeded.knot("this is { not turtle", valid_from=bad),
    )


def test_malformed_valid_from_wins_over_an_unknown_graph(seeded: KnowledgeBase) -> None:
    assert_refused(
        seeded,
        InvalidField,
        "invalid 'valid_from'",
        lambda: seeded.knot(GOOD, valid_from="yesterday", graph=EX + "typo"),
    )
    assert term_id(seeded, EX + "typo") is None


def test_unknown_graph_is_refused_and_not_interned(seeded: KnowledgeBase) -> None:
    """DM §16.2: a typo'd graph IRI never becomes a term as a side effect of being rejected."""
    err = assert_refused(
        seeded,
        UnknownGraph,
        f"unknown graph: {EX}typo-graph",
        lambda: seeded.knot(f'<{EX}new> <{EX}p> "v" .', graph=EX + "typo-graph"),
    )
    assert err.field == "graph"
    assert term_id(seeded, EX + "typo-graph") is None
    assert term_id(seeded, EX + "new") is None


def test_interned_but_unregistered_graph_is_refused(seeded: KnowledgeBase) -> None:
    # <ex:b> is interned (an object in GOOD) but is not a registered graph.
    assert term_id(seeded, EX + "b") is not None
    assert_refused(
        seeded,
        UnknownGraph,
        "interned but not registered",
        lambda: seeded.knot(f'<{EX}new> <{EX}p> "v" .', graph=EX + "b"),
    )


def test_companion_inferred_graph_is_refused(seeded: KnowledgeBase) -> None:
    assert_refused(
        seeded,
        WriteRefused,
        "reserved companion inferred graph",
        lambda: seeded.knot(f'<{EX}new> <{EX}p> "v" .', graph=EX + "g#inferred"),
    )
    assert_refused(
        seeded,
        WriteRefused,
        "reserved",
        lambda: seeded.create_graph("urn:quipu:graph:root#inferred"),
    )


@pytest.mark.parametrize("iri", ["urn:quipu:graph:root", "urn:quipu:graph:meta"])
def test_reserved_graph_iris_cannot_be_registered(seeded: KnowledgeBase, iri: str) -> None:
    assert_refused(seeded, WriteRefused, "reserved", lambda: seeded.create_graph(iri))


def test_registering_a_graph_twice_is_a_no_op(seeded: KnowledgeBase) -> None:
    before = snapshot(seeded)
    assert seeded.create_graph(EX + "g") is False
    assert snapshot(seeded) == before


def test_second_graph_unregistered_writes_nothing_at_all(seeded: KnowledgeBase) -> None:
    """A write refused halfway (ROOT and the first graph would be fine) writes nothing."""
    seeded.create_graph(EX + "g1")
    doc = (
        PREFIXES
        + 'ex:fresh ex:p "root" .\n'
        + 'ex:g1 { ex:fresh ex:p "one" . }\n'
        + 'ex:zz-unregistered { ex:fresh ex:p "two" . }\n'
    )
    assert_refused(seeded, UnknownGraph, "zz-unregistered", lambda: seeded.knot(doc, "trig"))
    assert term_id(seeded, EX + "fresh") is None
    assert term_id(seeded, EX + "zz-unregistered") is None


@pytest.mark.parametrize(
    ("literal", "match"),
    [
        ('"abc"^^xsd:integer', "bad integer literal"),
        ('"+-5"^^xsd:integer', "bad integer literal"),
        ('"1.5"^^xsd:integer', "bad integer literal"),
        ('"1.2.3"^^xsd:decimal', "bad numeric literal"),
        ('"1e5"^^xsd:decimal', "bad numeric literal"),
        ('"abc"^^xsd:double', "bad double literal"),
        ('"ten"^^xsd:float', "bad numeric literal"),
        ('"1.5"^^xsd:int', "bad numeric literal"),
        ('"x"^^xsd:nonNegativeInteger', "bad numeric literal"),
    ],
)
def test_bad_literals(seeded: KnowledgeBase, literal: str, match: str) -> None:
    doc = PREFIXES + f'ex:fresh ex:ok "fine" .\nex:fresh ex:bad {literal} .\n'
    assert_refused(seeded, BadLiteral, match, lambda: seeded.knot(doc))
    assert term_id(seeded, EX + "fresh") is None


@pytest.mark.parametrize(
    "literal",
    [
        '"9223372036854775807"^^xsd:integer',
        '"-9223372036854775808"^^xsd:integer',
        '"+5"^^xsd:integer',
        '".5"^^xsd:decimal',
        '"INF"^^xsd:double',
        '"-1E3"^^xsd:double',
    ],
)
def test_edge_literals_are_accepted(seeded: KnowledgeBase, literal: str) -> None:
    out = seeded.knot(PREFIXES + f"ex:fresh ex:v {literal} .\n")
    assert out.claims == 1


def test_bad_literal_in_another_format(seeded: KnowledgeBase) -> None:
    doc = f'<{EX}fresh> <{EX}n> "abc"^^<{XSD}integer> .\n'
    assert_refused(seeded, BadLiteral, "bad integer literal", lambda: seeded.knot(doc, "nt"))


# -- retract and set -------------------------------------------------------------------------------


@pytest.mark.parametrize("entity", ["", "   ", "not an iri", "relative/path"])
def test_retract_with_an_invalid_entity(seeded: KnowledgeBase, entity: str) -> None:
    err = assert_refused(seeded, InvalidField, "'entity'", lambda: seeded.retract(entity))
    assert err.field == "entity"


@pytest.mark.parametrize("entity", ["", "not an iri"])
def test_set_with_an_invalid_entity(seeded: KnowledgeBase, entity: str) -> None:
    err = assert_refused(seeded, InvalidField, "'entity'", lambda: seeded.set(entity, EX + "p", "x"))
    assert err.field == "entity"


def test_set_with_an_invalid_predicate(seeded: KnowledgeBase) -> None:
    assert_refused(seeded, InvalidField, "'predicate'", lambda: seeded.set(EX + "a", "", "x"))


def test_retract_unknown_entity(seeded: KnowledgeBase) -> None:
    err = assert_refused(
        seeded, NotFound, f"entity not found: {EX}nobody", lambda: seeded.retract(EX + "nobody")
    )
    assert err.status == 400
    assert term_id(seeded, EX + "nobody") is None


def test_set_unknown_entity_mints_nothing(seeded: KnowledgeBase) -> None:
    """tools-core §3.6 rule 7: /set on a typo'd IRI must not mint a node (nor its predicate/value)."""
    assert_refused(
        seeded,
        NotFound,
        f"entity not found: {EX}nobody",
        lambda: seeded.set(EX + "nobody", EX + "new-pred", {"iri": EX + "new-obj"}),
    )
    assert term_id(seeded, EX + "new-pred") is None
    assert term_id(seeded, EX + "new-obj") is None


def test_retract_unknown_predicate(seeded: KnowledgeBase) -> None:
    assert_refused(
        seeded,
        NotFound,
        f"predicate not found: {EX}nopred",
        lambda: seeded.retract(EX + "a", EX + "nopred"),
    )


@pytest.mark.parametrize(
    "value",
    [{"foo": 1}, {"int": "5"}, {"int": True}, {"bool": 1}, {"iri": "not an iri"}, {"value": "x"}, 5, ["x"]],
)
def test_bad_value_forms(seeded: KnowledgeBase, value: Any) -> None:
    assert_refused(seeded, InvalidField, "value", lambda: seeded.retract(EX + "a", EX + "p", value))
    assert_refused(seeded, InvalidField, "value", lambda: seeded.set(EX + "a", EX + "p", value))


def test_set_without_a_value(seeded: KnowledgeBase) -> None:
    assert_refused(seeded, InvalidField, "missing 'value'", lambda: seeded.set(EX + "a", EX + "p", None))


def test_bad_typed_value_on_the_json_surface(seeded: KnowledgeBase) -> None:
    assert_refused(
        seeded,
        BadLiteral,
        "bad integer literal",
        lambda: seeded.set(EX + "a", EX + "n", {"value": "abc", "datatype": XSD + "integer"}),
    )
    # xsd:integer is unbounded, but Python cannot write out an int past sys.get_int_max_str_digits()
    assert_refused(seeded, BadLiteral, "too long", lambda: seeded.set(EX + "a", EX + "n", {"int": 10**5000}))
    assert term_id(seeded, EX + "n") is None


def test_retract_bare_string_aimed_at_a_reference(seeded: KnowledgeBase) -> None:
    """tools-core §3.7 rule 5: a bare string can never equal a stored reference → 400, not 0."""
    assert_refused(
        seeded,
        WriteRefused,
        "retract matched nothing.*takes an IRI reference",
        lambda: seeded.retract(EX + "a", EX + "k", EX + "b"),
    )


def test_retract_bare_iri_looking_string_on_an_empty_predicate(seeded: KnowledgeBase) -> None:
    seeded.knot(f'<{EX}a> <{EX}empty> "x" .')
    seeded.retract(EX + "a", EX + "empty")
    assert_refused(
        seeded,
        WriteRefused,
        "looks like an IRI",
        lambda: seeded.retract(EX + "a", EX + "empty", "http://example.org/thing"),
    )


def test_half_ghost_refusal(seeded: KnowledgeBase) -> None:
    assert_refused(seeded, WriteRefused, "last rdf:type", lambda: seeded.retract(EX + "a", RDF_TYPE))


# -- reads never intern ------------------------------------------------------------------------------


def test_reads_never_intern(seeded: KnowledgeBase) -> None:
    before = snapshot(seeded)
    unknown = EX + "unknown-thing"
    assert seeded.query(f"SELECT ?o WHERE {{ <{unknown}> <{EX}unknown-p> ?o }}") == []
    assert seeded.query(f"SELECT ?s WHERE {{ ?s ?p <{unknown}> }}") == []
    assert seeded.query(f"ASK {{ GRAPH <{unknown}> {{ ?s ?p ?o }} }}") is False
    assert seeded.query(f"SELECT ?s FROM <{unknown}> FROM NAMED <{unknown}-2> WHERE {{ ?s ?p ?o }}") == []
    assert seeded.query("SELECT ?s WHERE { ?s ?p ?o }", graph=unknown) == []
    assert seeded.query(f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}", as_of_tx=1, valid_at="2026-01-01T00:00:00Z")
    assert seeded.cord(type=unknown) == {"entities": [], "count": 0}
    assert seeded.cord(predicate=unknown) == {"entities": [], "count": 0}
    assert seeded.entity(unknown) == {"@id": unknown}
    with pytest.raises(NotFound):
        seeded.entity_history(unknown)
    with pytest.raises(UnknownGraph):
        seeded.export(graph=unknown)
    seeded.unravel(tx=2)
    seeded.transactions()
    seeded.stats()
    assert snapshot(seeded) == before
    assert term_id(seeded, unknown) is None


@pytest.mark.parametrize(
    "query",
    ["SELECT ?o WHERE { ?s ?p ", "SELECT ?o WHERE { SERVICE <http://x/> { ?s ?p ?o } }", "   "],
)
def test_refused_queries_change_nothing(seeded: KnowledgeBase, query: str) -> None:
    assert_refused(seeded, QueryError, ".", lambda: seeded.query(query))
