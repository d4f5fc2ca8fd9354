"""Labeled entities: what the name-matching tools match against (tools-search §5.8-§5.10).

* ``labeled_rows``: spotlight's and reconcile's list, one ``(iri, label, type)`` row per (label,
  type) pair of every entity with a current ROOT plain-string ``rdfs:label``, joined with its
  asserted ``rdf:type`` IRIs (``""`` when it has none). Only ROOT: named graphs are left out
  (spec errata, spotlight).
* ``name_labels``: resolve's list, ``(iri, label)`` over every local graph a write can name (ROOT
  and the registered named graphs; not the meta-graph, nor reasoner-only companion graphs).

Rows come in store order: entity term id, then label claim, then type claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection

from quipu.store import labels as store_labels
from quipu.store.database import Database
from quipu.store.reads import named_graph_ids
from quipu.store.schema import ROOT
from quipu.store.views import TemporalView
from quipu.store.writes import is_companion

LABEL: Final = "http://www.w3.org/2000/01/rdf-schema#label"
TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@dataclass(frozen=True, slots=True)
class LabeledRow:
    iri: str
    label: str
    type: str  # the type IRI; "" when the entity has no asserted type


def local_name(iri: str) -> str:
    """What follows the last ``#``, otherwise the last ``/``, otherwise the whole IRI."""
    for mark in ("#", "/"):
        if mark in iri:
            return iri.rsplit(mark, 1)[1]
    return iri


def labeled_rows(db: Database, conn: Connection) -> list[LabeledRow]:
    """Spotlight's and reconcile's rows, read from the current ROOT facts."""
    ids = db.terms.lookup(conn, (LABEL, TYPE))
    label = ids.get(LABEL)
    if label is None:
        return []
    rows = store_labels.label_rows(conn, TemporalView(), label, ids.get(TYPE))
    return [LabeledRow(iri, text, type_iri) for iri, text, type_iri in rows]


def name_labels(db: Database, conn: Connection) -> list[tuple[str, str]]:
    """Resolve's ``(iri, label)`` rows: current plain-string labels of every local graph."""
    label = db.terms.lookup(conn, (LABEL,)).get(LABEL)
    if label is None:
        return []
    named = named_graph_ids(conn, db)
    graph_iris = db.terms.iris(conn, named)
    graphs = [ROOT, *(g for g in named if not is_companion(graph_iris.get(g, "")))]
    rows = store_labels.label_rows(conn, TemporalView(graphs=frozenset(graphs)), label)
    return [(iri, text) for iri, text, _type in rows]
