"""Standard SPARQL result formats (JSON and CSV, W3C) from a ``QueryResult``."""

from __future__ import annotations

import csv
import io
from typing import Any

from rdflib import BNode, Literal, URIRef
from rdflib.term import Node

from quipu.sparql.cells import BNODE, LITERAL, Cell
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
        "results": {"bindings": [_binding(result.variables, row) for row in result.table]},
    }


def cell_json(cell: Cell) -> dict[str, str]:
    if cell.kind != LITERAL:
        return {"type": cell.kind, "value": cell.value}
    if cell.lang:
        return {"type": "literal", "value": cell.value, "xml:lang": cell.lang}
    if cell.datatype:
        return {"type": "literal", "value": cell.value, "datatype": cell.datatype}
    return {"type": "literal", "value": cell.value}


def _binding(names: list[str], row: tuple[Cell | None, ...]) -> dict[str, dict[str, str]]:
    return {name: cell_json(cell) for name, cell in zip(names, row, strict=True) if cell is not None}


def sparql_csv(result: QueryResult) -> str:
    """text/csv for SELECT (blank nodes as ``_:label``, literals by lexical form)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    if result.form == "ASK":
        writer.writerow(["boolean"])
        writer.writerow(["true" if result.boolean else "false"])
        return buf.getvalue()
    writer.writerow(result.variables)
    for row in result.table:
        writer.writerow([_csv_cell(cell) for cell in row])
    return buf.getvalue()


def _csv_cell(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if cell.kind == BNODE:
        return f"_:{cell.value}"
    return cell.value


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
