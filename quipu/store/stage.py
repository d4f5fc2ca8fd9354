"""Per-connection scratch tables that batches pass through.

Set-based SQL over a staged batch (instead of one statement per triple) serves bulk ingest and
most writes; ``writes.assert_rows`` binds a batch of a few dozen claims into its INSERT instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Column, Connection, Float, LargeBinary, MetaData, Table, Text, delete
from sqlalchemy.schema import CreateTable

from quipu.store.dialect import Dialect

# (e, a, v, vh, v_ref, v_num)
Row = tuple[int, int, bytes, bytes, int | None, float | None]
ROW_COLUMNS = ("e", "a", "v", "vh", "v_ref", "v_num")

_meta = MetaData()
fact_stage = Table(
    "quipu_stage",
    _meta,
    Column("e", BigInteger),
    Column("a", BigInteger),
    Column("v", LargeBinary),
    Column("vh", LargeBinary),
    Column("v_ref", BigInteger),
    Column("v_num", Float),
    prefixes=["TEMPORARY"],
)
term_stage = Table(
    "quipu_term_stage",
    _meta,
    Column("iri_hash", LargeBinary),
    Column("iri", Text),
    prefixes=["TEMPORARY"],
)
TEMP_TABLES = "quipu_temp_tables"  # conn.info key: temporary tables this connection has
_CLEAR = {t.name: delete(t) for t in (fact_stage, term_stage)}


def forget_temp_tables(conn: Connection) -> None:
    """Call after a rollback: temporary tables created inside it are gone."""
    conn.info.pop(TEMP_TABLES, None)


def fill(conn: Connection, dialect: Dialect, table: Table, rows: Sequence[tuple[Any, ...]]) -> int:
    """Replace ``table``'s contents with ``rows``; returns how many were staged."""
    created: set[str] = conn.info.setdefault(TEMP_TABLES, set())
    if table.name not in created:
        conn.execute(CreateTable(table, if_not_exists=True))
        created.add(table.name)
    dialect.prepared(_CLEAR[table.name]).run(conn)
    if rows:
        dialect.insert_tuples(conn, table, [c.name for c in table.columns], rows)
    return len(rows)
