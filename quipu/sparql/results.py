"""Standard SPARQL result formats (JSON and CSV, W3C) from a ``QueryResult``."""

from __future__ import annotations

import csv
import io
from typing import Any

from rdflib import BNode, Literal, URIRef
from rdflib.term import Node

from quipu.sparql.engine import QueryResult
from quipu.store.values import XSD_STRING


def term_json(term: Node) -> dict[str, str]:
    if isinstance(term, URIRef):
        return {"type": "uri", "value": str(term)}
    if isinstance(term, BNode):
        return {"type": "bnode", "value": str(term)}
    if isinstance(term, Literal):
        out = {"type": "literal", "value": str(term)}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype is not None and str(term.datatype) != XSD_STRING:
            out["datatype"] = str(term.datatype)
        return out
    return {"type": "literal", "value": str(term)}


def sparql_json(result: QueryResult) -> dict[str, Any]:
    """application/sparql-results+json for SELECT and ASK."""
    if result.form == "ASK":
        return {"head": {}, "boolean": bool(result.boolean)}
    return {
        "head": {"vars": result.variables},
        "results": {"bindings": [{k: term_json(v) for k, v in row.items()} for row in result.rows]},
    }


def sparql_csv(result: QueryResult) -> str:
    """text/csv for SELECT (blank nodes as ``_:label``, literals by lexical form)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    if result.form == "ASK":
        writer.writerow(["boolean"])
        writer.writerow(["true" if result.boolean else "false"])
        return buf.getvalue()
    writer.writerow(result.variables)
    for row in result.rows:
        writer.writerow([_csv_cell(row.get(v)) for v in result.variables])
    return buf.getvalue()


def _csv_cell(term: Node | None) -> str:
    if term is None:
        return ""
    if isinstance(term, BNode):
        return f"_:{term}"
    return str(term)


def term_text(term: Node | None) -> str:
    """A compact human rendering for tables."""
    if term is None:
        return ""
    if isinstance(term, URIRef):
        return f"<{term}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    if isinstance(term, Literal):
        return term.n3()
    return str(term)
