"""ontologies: the stored OWL ontologies of the owl extra (tools-graphs-governance §8.1 OL-1).

One row per version of a named ontology, as ``shapes`` holds shape sets: loading closes the open
version (``valid_to``, ``closed_tx``) and opens a new one; removal closes it; nothing is deleted.
The table exists in every store, with or without the extra, so installing it later needs no
migration.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ontologies",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("valid_from", sa.Text, primary_key=True),
        sa.Column("turtle", sa.Text, nullable=False),
        sa.Column("loaded_at", sa.Text, nullable=False),
        sa.Column("valid_to", sa.Text),
        sa.Column("tx", sa.BigInteger),
        sa.Column("closed_tx", sa.BigInteger),
    )
    op.create_index("ix_ontologies_name_open", "ontologies", ["name", "valid_to"])


def downgrade() -> None:
    op.drop_index("ix_ontologies_name_open", table_name="ontologies")
    op.drop_table("ontologies")
