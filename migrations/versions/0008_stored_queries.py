"""stored named queries: versioned definitions and their ordered parameter specs (tools-search §5.18).

* ``stored_queries`` — one row per version of a name, keyed by ``(name, valid_from)``; the
  current version has ``valid_to`` NULL. ``tx`` is the latest committed transaction when the
  version opened (a watermark: loading a query writes no facts and opens no transaction).
* ``stored_query_params`` — the version's parameter specs in declaration order (``ord``).

Rows are never deleted, except when a load at the same instant replaces that version.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stored_queries",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("valid_from", sa.Text, primary_key=True),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("template", sa.Text, nullable=False),
        sa.Column("dataset", sa.Text),
        sa.Column("valid_to", sa.Text),
        sa.Column("tx", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_stored_queries_current", "stored_queries", ["name", "valid_to"])
    op.create_table(
        "stored_query_params",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("valid_from", sa.Text, primary_key=True),
        sa.Column("ord", sa.Integer, primary_key=True),
        sa.Column("param", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("required", sa.SmallInteger, nullable=False),
        sa.Column("default_value", sa.Text),
        sa.Column("description", sa.Text, nullable=False),
        sa.ForeignKeyConstraint(
            ["name", "valid_from"],
            ["stored_queries.name", "stored_queries.valid_from"],
            name="fk_stored_query_params_version",
        ),
        sa.CheckConstraint("kind IN ('iri', 'text', 'int')", name="ck_stored_query_params_kind"),
    )


def downgrade() -> None:
    op.drop_table("stored_query_params")
    op.drop_index("ix_stored_queries_current", table_name="stored_queries")
    op.drop_table("stored_queries")
