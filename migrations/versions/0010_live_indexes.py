"""The current state's own indexes: live primary claims only, in SPO, POS and OSP order.

A current read (``op = 1 AND valid_to IS NULL AND dup = 0``) used the full indexes and read the
table row behind every entry to apply that filter. These partial indexes hold only the rows
such a read can see. On SQLite they also carry every column a current-state triple pattern
reads, so the table row is never read; on PostgreSQL a btree entry is capped at 2,704 bytes and
a value can be longer, so they keep the key columns only. The full indexes stay: writes and
time travel (``as_of_tx``, ``valid_at``) use them, unchanged. docs/store.md has the numbers.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels = None
depends_on = None

LIVE = "op = 1 AND valid_to IS NULL AND dup = 0"
SQLITE = (
    ("ix_live_gea", "g, e, a, vh, v_ref, v, v_num, op, valid_to, dup", LIVE),
    ("ix_live_gav", "g, a, vh, e, v_ref, v, v_num, op, valid_to, dup", LIVE),
    ("ix_live_ref", "v_ref, g, a, e, op, valid_to, dup", f"v_ref IS NOT NULL AND {LIVE}"),
)
POSTGRESQL = (
    ("ix_live_gea", "g, e, a, vh", LIVE),
    ("ix_live_gav", "g, a, vh", LIVE),
    ("ix_live_ref", "v_ref, g", f"v_ref IS NOT NULL AND {LIVE}"),
)


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for name, columns, where in SQLITE if sqlite else POSTGRESQL:
        op.execute(f"CREATE INDEX {name} ON facts ({columns}) WHERE {where}")
    # The planner's statistics for the new indexes: an upgraded store would otherwise choose
    # between old and new ones blind until its first optimize. Exact (about 0.6 s per million
    # facts on SQLite): sampled statistics misjudge a column with few distinct values.
    if sqlite:
        op.execute("PRAGMA analysis_limit=0")
    op.execute("ANALYZE facts")
    if sqlite:  # as after a bulk load (quipu.store.dialect.LOAD_SHAPED_INDEXES): a store loaded
        # in one transaction would look like a million rows per transaction id
        op.execute("DELETE FROM sqlite_stat1 WHERE idx = 'ix_facts_tx'")
        op.execute("ANALYZE sqlite_schema")  # reload this connection's planner statistics


def downgrade() -> None:
    for name, _columns, _where in SQLITE:
        op.execute(f"DROP INDEX IF EXISTS {name}")
