"""RDF documents as in-memory rdflib graphs, parsed by pyoxigraph like the store's ingestion.

Lexical forms stay as written (DM §2 rule 3: rdflib's own parser would normalise them), and
the document's prefix declarations are bound on the graph, and only those.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.term import Node

from quipu.errors import InvalidField, RdfParseError
from quipu.rdfio.parse import read_quads


def term(value: object) -> Node:
    if isinstance(value, ox.NamedNode):
        return URIRef(value.value)
    if isinstance(value, ox.BlankNode):
        return BNode(value.value)
    if isinstance(value, ox.Literal):
        if value.language:
            return Literal(value.value, lang=value.language)
        return Literal(value.value, datatype=URIRef(value.datatype.value), normalize=False)
    raise RdfParseError("RDF parse error: RDF-star quoted triples are not supported")


def parse_graph(data: bytes, fmt: str = "turtle", base_iri: str | None = None) -> Graph:
    """Every statement of the document (all graphs of a quad format, flattened)."""

    def fill(quads: Iterable[ox.Quad]) -> Graph:
        graph = Graph(bind_namespaces="none")
        for quad in quads:
            graph.add((term(quad.subject), term(quad.predicate), term(quad.object)))
        return graph

    try:
        graph, prefixes = read_quads(data, fmt, fill, base_iri=base_iri)
    except (SyntaxError, ValueError) as exc:
        raise RdfParseError(f"RDF parse error: {exc}") from None
    for prefix, namespace in prefixes.items():
        graph.bind(prefix, URIRef(namespace), override=True, replace=True)
    return graph


def parse_field(text: str, field: str, *, problem: str, reason: str) -> Graph:
    """A request field's Turtle; 400 ``reason`` naming ``field`` and the ``problem`` otherwise."""
    try:
        return parse_graph(text.encode("utf-8"))
    except RdfParseError as exc:
        raise InvalidField(f"'{field}' {problem}: {exc.message}", field=field, reason=reason) from None
