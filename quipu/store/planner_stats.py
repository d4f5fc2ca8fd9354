"""What SQLite's planner believes about the store's size, read from its statistics.

The SPARQL compiler shapes a few statements around the planner's choices; ``ANALYZE`` (run after
a bulk load, by migrations and by ``PRAGMA optimize`` at close) is what keeps the belief close.
"""

from __future__ import annotations

from sqlalchemy import Connection


def facts_rows(conn: Connection) -> int | None:
    """The row count of ``facts`` as SQLite's planner takes it (``sqlite_stat1``), or None when
    the store has no statistics yet (the planner then makes no size-based choices)."""
    if conn.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone() is None:
        return None  # no ANALYZE has run yet
    # A full index's first number is the table's rows. Not ix_facts_tx: its statistics are
    # dropped after a bulk load (dialect.LOAD_SHAPED_INDEXES).
    row = conn.exec_driver_sql(
        "SELECT stat FROM sqlite_stat1 WHERE tbl = 'facts' AND idx = 'ix_facts_gea'"
    ).fetchone()
    if row is None or not row[0]:
        return None
    return int(str(row[0]).split()[0])
