"""Stored ids and values as rdflib terms (DM §15.2 term mapping), with a per-read cache."""

from __future__ import annotations

import base64
from collections.abc import Iterable

from rdflib import BNode, Literal, URIRef
from rdflib.term import Node
from sqlalchemy import Connection

from quipu.store import values
from quipu.store.database import Database


class TermMaker:
    """Builds rdflib terms for one read snapshot; term ids resolve in batches."""

    def __init__(self, db: Database, conn: Connection) -> None:
        self.db = db
        self.conn = conn
        self.terms: dict[int, Node] = {}

    def load(self, ids: Iterable[int]) -> None:
        """Resolve many ids with one dictionary round trip (call before ``term``/``value``)."""
        missing = [i for i in ids if i not in self.terms]
        if missing:
            for tid, iri in self.db.terms.iris(self.conn, missing).items():
                self.terms[tid] = BNode(iri[2:]) if iri.startswith("_:") else URIRef(iri)

    def term(self, tid: int) -> Node:
        found = self.terms.get(tid)
        if found is None:
            self.load((tid,))
            found = self.terms[tid]
        return found

    def value(self, value: bytes) -> Node:
        d = values.decode(value)
        if d.kind == "ref":
            return self.term(d.value)
        if d.kind == "str":
            return Literal(d.lexical)
        if d.kind == "lang":
            return Literal(d.lexical, lang=d.lang)
        if d.kind == "bytes":
            return Literal(base64.b64encode(d.value).decode("ascii"), datatype=URIRef(values.XSD_BASE64))
        return Literal(d.lexical, datatype=URIRef(d.datatype or values.XSD_STRING), normalize=False)
