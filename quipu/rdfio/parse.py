"""Parse an RDF document into statements ready for the store.

pyoxigraph's Rust parsers do the syntax work (rdflib's N-Triples parser is about 7x slower,
see notes/performance-anchors.md), through ``read_quads``, which also reads literals longer
than their buffer (quipu/rdfio/long_literals.py). Literals are encoded here, since their encoding
does not depend on the term dictionary; IRIs and blank nodes stay strings until the writer
interns them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Final, TypeVar

import pyoxigraph as ox

from quipu.errors import RdfParseError
from quipu.rdfio import long_literals
from quipu.store import values
from quipu.store.statements import Obj, Statement, StatementBatch

OX_FORMATS: Final = {  # our format names -> pyoxigraph's parsers
    "turtle": ox.RdfFormat.TURTLE,
    "nt": ox.RdfFormat.N_TRIPLES,
    "nq": ox.RdfFormat.N_QUADS,
    "trig": ox.RdfFormat.TRIG,
    "jsonld": ox.RdfFormat.JSON_LD,
    "rdfxml": ox.RdfFormat.RDF_XML,
}


T = TypeVar("T")


def read_quads(
    data: bytes, fmt: str, consume: Callable[[Iterable[ox.Quad]], T], *, base_iri: str | None = None
) -> tuple[T, dict[str, str]]:
    """``consume`` of the document's quads, and the prefixes it declares.

    A document whose literal overflows the parser's buffer is read again with its long
    literals lifted out (``long_literals``): ``consume`` may then run twice, and must start
    afresh each time. Any other token that long is a 413. ``SyntaxError`` and ``ValueError``
    (the parser's refusals) are the caller's to translate."""
    try:
        parser = ox.parse(data, format=OX_FORMATS[fmt], base_iri=base_iri)
        return consume(parser), dict(getattr(parser, "prefixes", {}) or {})
    except MemoryError as exc:
        if long_literals.BUFFER_FULL not in str(exc):
            raise
    lifted = long_literals.lift(data, fmt)
    try:
        parser = ox.parse(lifted.document, format=OX_FORMATS[fmt], base_iri=base_iri)
        out = consume(lifted.restore(parser))
    except MemoryError as exc:
        if long_literals.BUFFER_FULL not in str(exc):
            raise
        raise long_literals.too_large() from None
    except (SyntaxError, ValueError) as exc:
        if lifted.nonce in str(exc):  # a long string where a literal cannot be (JSON-LD's @type)
            raise long_literals.too_large() from None
        raise
    lifted.check_complete()
    return out, dict(getattr(parser, "prefixes", {}) or {})


def skolem_prefix(document: bytes, graph_iri: str, scope: str | None) -> str:
    """The blank-node key prefix for one document written to one graph (DM §1.5)."""
    doc_hash = hashlib.sha256(document).hexdigest()
    key = f"{scope}\x00{doc_hash}" if scope is not None else f"{doc_hash}\x00{graph_iri}"
    return "_:b" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16] + "_"


_PARSER_ID = re.compile(r"[0-9a-f]{1,32}")
_DOC_LABEL = re.compile(rb'_:([A-Za-z0-9_][A-Za-z0-9_.\-]*)|nodeID="([^"]*)"')


class _BlankNodes:
    """Document labels are kept; parser-invented ids of ``[ ]`` nodes become anon1, anon2, …

    pyoxigraph keeps labels written in the document and invents random hexadecimal ids (up to
    32 digits, leading zeros dropped) for anonymous nodes, so an id of that shape that the
    document never spells is an anonymous node.
    """

    def __init__(self, document: bytes, prefix: str) -> None:
        self.document = document
        self.prefix = prefix
        self.keys: dict[str, str] = {}
        self.anonymous = 0
        self._labels: set[str] | None = None

    def _written(self, label: str) -> bool:
        if self._labels is None:  # one scan of the document, only when needed
            self._labels = {(a or b).decode("utf-8", "replace") for a, b in _DOC_LABEL.findall(self.document)}
        return label in self._labels

    def key(self, label: str) -> str:
        key = self.keys.get(label)
        if key is None:
            if _PARSER_ID.fullmatch(label) and not self._written(label):
                self.anonymous += 1
                key = f"{self.prefix}anon{self.anonymous}"
            else:
                key = self.prefix + label
            self.keys[label] = key
        return key


def parse_document(
    data: bytes,
    fmt: str,
    *,
    graph_iri: str,
    blank_node_scope: str | None = None,
    base_iri: str | None = None,
) -> StatementBatch:
    """Parse ``data`` (format name already resolved by ``formats.input_format``)."""
    prefix = skolem_prefix(data, graph_iri, blank_node_scope)

    def statements(quads: Iterable[ox.Quad]) -> StatementBatch:
        return _statements(quads, _BlankNodes(data, prefix))

    try:
        batch, _prefixes = read_quads(data, fmt, statements, base_iri=base_iri)
    except SyntaxError as exc:
        raise RdfParseError(f"RDF parse error: {exc}") from None
    except ValueError as exc:
        raise RdfParseError(f"RDF parse error: {exc}") from None
    return batch


def _statements(quads: Iterable[ox.Quad], bnodes: _BlankNodes) -> StatementBatch:
    literal_cache: dict[tuple[str, str, str | None], bytes] = {}
    out: list[Statement] = []
    named: set[str] = set()
    iris: set[str] = set()
    append = out.append
    add_iri = iris.add
    NamedNode, BlankNode = ox.NamedNode, ox.BlankNode  # noqa: N806 - local aliases for the hot loop
    for quad in quads:
        s, p, o, g = quad.subject, quad.predicate, quad.object, quad.graph_name
        if type(s) is NamedNode:
            s_key = s.value
        elif type(s) is BlankNode:
            s_key = bnodes.key(s.value)
        else:
            raise RdfParseError("RDF parse error: RDF-star quoted triples are not supported")
        obj: Obj
        if type(o) is NamedNode:
            obj = o.value
        elif type(o) is BlankNode:
            obj = bnodes.key(o.value)
        elif type(o) is ox.Literal:
            lang = o.language
            key = (o.value, o.datatype.value, lang)
            enc = literal_cache.get(key)
            if enc is None:
                enc = values.literal(o.value, None if lang else key[1], lang)
                if len(literal_cache) < 100_000:
                    literal_cache[key] = enc
            obj = enc
        else:
            raise RdfParseError("RDF parse error: RDF-star quoted triples are not supported")
        p_iri = p.value
        add_iri(s_key)
        add_iri(p_iri)
        if type(obj) is str:
            add_iri(obj)
        if type(g) is NamedNode:
            named.add(g.value)
            append((g.value, s_key, p_iri, obj))
        elif type(g) is BlankNode:
            raise RdfParseError("RDF parse error: blank-node graph names are not supported")
        else:
            append((None, s_key, p_iri, obj))
    return StatementBatch(out, frozenset(named), iris)
