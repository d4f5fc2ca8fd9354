"""A per-connection scratch table that batches of statements pass through.

Set-based SQL over a staged batch (instead of one statement per triple) keeps bulk ingest and
small writes on the same code path.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import BigInteger, Column, Connection, Float, LargeBinary, MetaData, Table
from sqlalchemy.schema import CreateTable

from quipu.store.dialect import Dialect

# (e, a, v, vh, v_ref, v_num)
Row = tuple[int, int, bytes, bytes, int | None, float | None]

_meta = MetaData()
stage = Table(
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


def stage_rows(conn: Connection, dialect: Dialect, rows: Iterable[Row]) -> int:
    """Replace the stage's contents with ``rows``; returns how many were staged.

    The CREATE runs every time (a no-op once the table exists) because a rolled-back
    transaction also rolls back a temporary table created inside it.
    """
    conn.execute(CreateTable(stage, if_not_exists=True))
    conn.exec_driver_sql("DELETE FROM quipu_stage")
    batch = rows if isinstance(rows, list) else list(rows)
    if batch:
        dialect.insert_tuples(conn, stage, batch)
    return len(batch)
