"""``export``: deterministic RDF of one graph's current statements (tools-core §1.3)."""

from __future__ import annotations

from dataclasses import dataclass

from quipu.errors import UnknownGraph
from quipu.rdfio import serialize
from quipu.rdfio.formats import output_format
from quipu.store.database import Database
from quipu.store.reads import resolve_graph, statement_ids, statement_rows
from quipu.store.schema import ROOT
from quipu.store.views import TemporalView


@dataclass(frozen=True)
class ExportResult:
    rdf: str
    format: str
    graph: str | None
    triples: int


def export(db: Database, *, graph: str | None = None, format: str = "turtle") -> ExportResult:
    """ROOT's (or one named graph's) current statements as sorted N-Triples or Turtle."""
    fmt = output_format(format)
    with db.read() as conn:
        gid = resolve_graph(db, conn, graph)
        if gid is None:
            raise UnknownGraph(f"unknown graph: {graph}", field="graph")
        rows = statement_rows(conn, TemporalView(graphs=frozenset({gid})))
        iri_of = db.terms.iris(conn, statement_ids(rows))
    rendered = [
        (serialize.iri_term(iri_of[e]), f"<{iri_of[a]}>", serialize.value_term(v, iri_of)) for e, a, v in rows
    ]
    text = serialize.ntriples(rendered) if fmt == "ntriples" else serialize.turtle(rendered)
    return ExportResult(text, fmt, None if gid == ROOT else graph, len(rows))
