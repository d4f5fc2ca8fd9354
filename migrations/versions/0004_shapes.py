"""shapes: the persistent, versioned SHACL shape-set registry (DM §14.1, tools-core §2.2).

One row per version of a named shape set: loading closes the open version (``valid_to``) and
opens a new one; removal closes it. Nothing is ever deleted, so the sets that were open at any
point stay readable. ``prefixes`` keeps the set's ``@prefix`` declarations (JSON) for CURIE
compaction (tools-core §0.6), and ``closed_tx`` the watermark at closing, so a version can be
chosen "as of tx N" as well as "valid at T".

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shapes",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("valid_from", sa.Text, primary_key=True),
        sa.Column("turtle", sa.Text, nullable=False),
        sa.Column("prefixes", sa.Text, nullable=False, server_default="{}"),
        sa.Column("loaded_at", sa.Text, nullable=False),
        sa.Column("valid_to", sa.Text),
        sa.Column("tx", sa.BigInteger),
        sa.Column("closed_tx", sa.BigInteger),
    )
    op.create_index("ix_shapes_name_open", "shapes", ["name", "valid_to"])


def downgrade() -> None:
    op.drop_index("ix_shapes_name_open", table_name="shapes")
    op.drop_table("shapes")
