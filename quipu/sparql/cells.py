"""Result terms as plain tuples: what a SPARQL result carries on its way to the wire.

The fast path writes results straight from SQL rows; building an rdflib term per cell costs up
to 4.6x the query, so a cell is a ``Cell`` tuple and rdflib terms are made only when a caller
asks for them (``to_node``).
"""

from __future__ import annotations

import base64
from typing import NamedTuple

from rdflib import BNode, Literal, URIRef
from rdflib.term import Node

from quipu.store import values

URI, BNODE, LITERAL = "uri", "bnode", "literal"


class Cell(NamedTuple):
    """One RDF term: ``kind`` is uri, bnode or literal. ``datatype`` is None for a simple
    (xsd:string) or language-tagged literal; ``lang`` is set only for the latter."""

    kind: str
    value: str
    datatype: str | None = None
    lang: str | None = None


def iri_cell(iri: str) -> Cell:
    """A stored term: blank nodes are kept as ``_:label`` terms in the dictionary."""
    return Cell(BNODE, iri[2:]) if iri.startswith("_:") else Cell(URI, iri)


def literal_cell(value: bytes) -> Cell:
    """A stored literal encoding (never a ``Ref``) as a cell."""
    d = values.decode(value)
    if d.kind == "str":
        return Cell(LITERAL, d.lexical)
    if d.kind == "lang":
        return Cell(LITERAL, d.lexical, None, d.lang)
    if d.kind == "bytes":
        return Cell(LITERAL, base64.b64encode(d.value).decode("ascii"), values.XSD_BASE64)
    return Cell(LITERAL, d.lexical, d.datatype)


def from_node(node: Node) -> Cell:
    if isinstance(node, URIRef):
        return Cell(URI, str(node))
    if isinstance(node, BNode):
        return Cell(BNODE, str(node))
    if isinstance(node, Literal):
        if node.language:
            return Cell(LITERAL, str(node), None, node.language)
        dt = None if node.datatype is None or str(node.datatype) == values.XSD_STRING else str(node.datatype)
        return Cell(LITERAL, str(node), dt)
    return Cell(LITERAL, str(node))


def to_node(cell: Cell) -> Node:
    if cell.kind == URI:
        return URIRef(cell.value)
    if cell.kind == BNODE:
        return BNode(cell.value)
    if cell.lang:
        return Literal(cell.value, lang=cell.lang)
    if cell.datatype is None:
        return Literal(cell.value)
    return Literal(cell.value, datatype=URIRef(cell.datatype), normalize=False)
