"""Store-level tests, plus the small helpers they share.

The helpers read the store through ``kb.db.read()`` (a real read snapshot), so they see
exactly what a committed write left behind.
"""

from __future__ import annotations

from typing import Any

from rdflib import Literal
from rdflib.term import Node
from sqlalchemy import Connection

from quipu.api import KnowledgeBase

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDFS_SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
PREFIXES = (
    f"@prefix ex: <{EX}> .\n@prefix xsd: <{XSD}> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
)

TABLES = ("terms", "transactions", "transaction_auth", "facts", "graphs", "alembic_version")


def driver_sql(conn: Connection, statement: str) -> str:
    """``statement`` with its ``?`` placeholders in the driver's own style (psycopg: ``%s``)."""
    if conn.dialect.paramstyle in ("format", "pyformat"):
        return statement.replace("%", "%%").replace("?", "%s")
    return statement


def sql(kb: KnowledgeBase, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of a raw SQL statement (``?`` placeholders), run in a read snapshot of the store."""
    with kb.db.read() as conn:
        return [tuple(row) for row in conn.exec_driver_sql(driver_sql(conn, statement), tuple(params)).all()]


def scalar(kb: KnowledgeBase, statement: str, *params: Any) -> Any:
    rows = sql(kb, statement, *params)
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    return rows[0][0]


def count(kb: KnowledgeBase, table: str, where: str = "1=1", *params: Any) -> int:
    return int(scalar(kb, f"SELECT COUNT(*) FROM {table} WHERE {where}", *params))


def snapshot(kb: KnowledgeBase) -> dict[str, list[tuple[Any, ...]]]:
    """The full content of every store table, in a stable order."""
    return {table: sql(kb, f"SELECT * FROM {table} ORDER BY 1") for table in TABLES}


def term_id(kb: KnowledgeBase, iri: str) -> int | None:
    rows = sql(kb, "SELECT id FROM terms WHERE iri = ?", iri)
    return None if not rows else int(rows[0][0])


def select(kb: KnowledgeBase, query: str, **kwargs: Any) -> list[dict[str, Node]]:
    """SELECT rows through ``kb.query`` (fails the test if the result is not a row list)."""
    result = kb.query(query, **kwargs)
    assert isinstance(result, list), result
    return result


def column(rows: list[dict[str, Node]], var: str) -> list[str]:
    """One variable's bindings as sorted strings (unbound rows skipped)."""
    return sorted(str(row[var]) for row in rows if var in row)


def number(term: Node) -> float:
    """The numeric value of a numeric literal binding (fails the test for anything else)."""
    assert isinstance(term, Literal), term
    value = term.toPython()
    assert isinstance(value, int | float) and not isinstance(value, bool), term
    return float(value)
