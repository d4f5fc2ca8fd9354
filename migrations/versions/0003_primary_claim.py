"""facts.dup: marks every live claim but one per statement (the extra owners' claims).

With it a current-state query reads ``dup = 0`` and sees each statement once, instead of
collapsing claims with DISTINCT. Existing live claims are backfilled: the oldest live claim of
each statement keeps 0.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("facts", sa.Column("dup", sa.SmallInteger, nullable=False, server_default="0"))
    op.execute(
        """
        UPDATE facts SET dup = 1
        WHERE op = 1 AND valid_to IS NULL AND EXISTS (
            SELECT 1 FROM facts AS older
            WHERE older.g = facts.g AND older.e = facts.e AND older.a = facts.a
              AND older.vh = facts.vh AND older.v = facts.v
              AND older.op = 1 AND older.valid_to IS NULL AND older.id < facts.id
        )
        """
    )


def downgrade() -> None:
    with op.batch_alter_table("facts") as batch:
        batch.drop_column("dup")
