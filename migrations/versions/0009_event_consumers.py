"""event consumers and push subscriptions (DM §11.2, tools-core §3.12-§3.13).

* ``consumers`` — one durable cursor per consumer id: the highest processed event offset.
  A subscription's delivery cursor is the row ``sub:<consumer_id>``.
* ``subscriptions`` — one webhook per consumer id, with its delivery state (failures in a row,
  the backoff's next attempt, the last answer), so that a restarted server resumes where the
  last one stopped and ``list`` can show why a receiver is behind.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "consumers",
        sa.Column("consumer_id", sa.Text, primary_key=True),
        sa.Column("committed_offset", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
    )
    op.create_table(
        "subscriptions",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("consumer_id", sa.Text, nullable=False, unique=True),
        sa.Column("webhook_url", sa.Text, nullable=False),
        sa.Column("types", sa.Text, nullable=False, server_default="[]"),
        sa.Column("mode", sa.Text, nullable=False),
        sa.Column("batch_size", sa.Integer, nullable=False),
        sa.Column("batch_window_s", sa.Integer, nullable=False),
        sa.Column("secret", sa.Text),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("retry_at", sa.Float),
        sa.Column("last_attempt_at", sa.Text),
        sa.Column("last_success_at", sa.Text),
        sa.Column("last_status", sa.Integer),
        sa.Column("last_error", sa.Text),
        sa.Column("delivered", sa.BigInteger, nullable=False, server_default="0"),
        sa.CheckConstraint("mode IN ('realtime', 'batch')", name="ck_subscriptions_mode"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("subscriptions")
    op.drop_table("consumers")
