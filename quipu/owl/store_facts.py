"""The store's current ROOT and its companion as the families read facts (explain's side of
``families.Facts``), with the conversions between stored ids/values and rdflib terms."""

from __future__ import annotations

from collections.abc import Iterable

from rdflib import Literal, URIRef
from rdflib.term import Node
from sqlalchemy import Connection

from quipu.store import owl_facts, values
from quipu.store.database import Database
from quipu.store.owl_facts import Statement
from quipu.store.rdf_terms import TermMaker
from quipu.store.views import TemporalView

_LIMIT = 200  # matches read per pattern: explain shows one chain, not every one


class StoreFacts:
    """Reads of one snapshot; every value read is remembered with its stored encoding."""

    def __init__(self, db: Database, conn: Connection, view: TemporalView) -> None:
        self.db, self.conn, self.view = db, conn, view
        self.maker = TermMaker(db, conn)
        self.ids: dict[str, int | None] = {}
        self.encoded: dict[Node, bytes] = {}

    def id_of(self, iri: str) -> int | None:
        if iri not in self.ids:
            self.ids[iri] = self.db.terms.lookup(self.conn, (iri,)).get(iri)
        return self.ids[iri]

    def encode(self, term: Node) -> bytes | None:
        """A term's stored value encoding; None for an IRI the store has never seen."""
        if isinstance(term, URIRef):
            tid = self.id_of(str(term))
            return None if tid is None else values.ref(tid)
        if term in self.encoded:
            return self.encoded[term]
        assert isinstance(term, Literal)
        datatype = None if term.language else str(term.datatype) if term.datatype else None
        return values.literal(str(term), datatype, term.language)

    def term(self, value: bytes) -> Node:
        node = self.maker.value(value)
        self.encoded.setdefault(node, value)
        if isinstance(node, URIRef):
            ref = values.ref_id(value)
            if ref is not None:
                self.ids.setdefault(str(node), ref)
        return node

    def iri(self, tid: int) -> str:
        node = self.maker.term(tid)
        self.ids.setdefault(str(node), tid)
        return str(node)

    def rows(self, a: int, *, e: int | None = None, v: bytes | None = None) -> list[Statement]:
        return owl_facts.match(self.conn, self.view, a, e=e, v=v, limit=_LIMIT)

    # -- families.Facts

    def objects(self, p: URIRef, s: URIRef) -> Iterable[Node]:
        a, e = self.id_of(str(p)), self.id_of(str(s))
        if a is None or e is None:
            return []
        return [self.term(v) for _e, _a, v in self.rows(a, e=e)]

    def subjects(self, p: URIRef, o: Node) -> Iterable[URIRef]:
        a, v = self.id_of(str(p)), self.encode(o)
        if a is None or v is None:
            return []
        return [URIRef(self.iri(e)) for e, _a, _v in self.rows(a, v=v)]
