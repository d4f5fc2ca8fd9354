"""Which queries count as point lookups (quipu.sparql.cost): they never wait for the WAL drain, and
a server answers them in a read lane of their own."""

from __future__ import annotations

import pytest
from rdflib.plugins.sparql import prepareQuery

from quipu.errors import QueryError
from quipu.sparql.cost import is_point_lookup
from quipu.sparql.engine import known_point_query, point_query

pytestmark = pytest.mark.backend_independent  # parses queries only


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ?p ?o WHERE { <urn:a> ?p ?o }",
        "SELECT DISTINCT ?o WHERE { <urn:a> <urn:p> ?o } LIMIT 5",
        "ASK { <urn:a> <urn:p> ?o . ?o <urn:q> 'x' }",
        "SELECT ?s WHERE { ?s <urn:p> <urn:o> FILTER(?s != <urn:b>) }",
        "ASK { ?s <urn:p> <urn:o> . ?s <urn:q> <urn:r> . <urn:a> <urn:q> <urn:b> }",
    ],
)
def test_anchored_patterns_are_point_lookups(query: str) -> None:
    assert is_point_lookup(prepareQuery(query).algebra)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d }",
        "SELECT ?s WHERE { ?s ?p ?o }",
        "SELECT ?o WHERE { <urn:a> <urn:p>+ ?o }",
        "SELECT ?o WHERE { <urn:a> <urn:p> ?o . ?x ?y ?z }",
        "SELECT ?o WHERE { <urn:a> <urn:p> ?o OPTIONAL { ?o <urn:q> ?z } }",
        "SELECT ?o WHERE { <urn:a> <urn:p> ?o FILTER EXISTS { ?x ?y ?z } }",
        "SELECT ?o WHERE { <urn:a> <urn:p> ?o } ORDER BY ?o",
        "SELECT ?o WHERE { { <urn:a> <urn:p> ?o } UNION { <urn:b> <urn:p> ?o } }",
        "CONSTRUCT { ?s ?p ?o } WHERE { <urn:a> ?p ?o }",
        "SELECT * WHERE { <urn:a> <urn:p1> ?a . <urn:a> <urn:p2> ?b . <urn:a> <urn:p3> ?c . "
        "<urn:a> <urn:p4> ?d . <urn:a> <urn:p5> ?e }",
        # anchored, but sharing no variable: a cross product of two ranges
        "ASK { ?x <urn:p> <urn:A> . ?y <urn:p> <urn:B> FILTER(?x = ?y) }",
        "SELECT * WHERE { <urn:a> <urn:p> ?o . <urn:b> <urn:q> ?r }",
    ],
)
def test_anything_else_is_a_long_read(query: str) -> None:
    assert not is_point_lookup(prepareQuery(query).algebra)


def test_the_text_form_remembers_its_answers_without_parsing_again() -> None:
    text = "ASK { <urn:remembered> ?p ?o }"
    assert known_point_query(text) is None  # never seen: the caller must parse, in a thread
    assert point_query(text) is True
    assert known_point_query(text) is True
    assert point_query("SELECT ?s WHERE { ?s ?p ?o }") is False
    with pytest.raises(QueryError):
        point_query("SELECT WHERE {")
