"""vectors: one embedding per entity over valid time, and a generation for cached indexes
(tools-search §3.1).

* ``vectors`` — ``(entity_id, valid_from)`` keyed rows of the embedding text and its vector
  (little-endian float32 bytes: BLOB on SQLite, bytea on PostgreSQL). Writing a vector closes the
  entity's current row (``valid_to``) and adds the new one; nothing is deleted. ``named_only``
  marks an entity embedded from named-graph facts alone, which default search leaves out.
  ``changed`` is the ``vector_state`` generation of the write that last touched the row.
* ``vector_state`` — one row holding the generation every vector write raises, in the same
  transaction, so an in-memory index knows in one lookup whether it is current and can read
  just the rows changed since.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels = None
depends_on = None

CURRENT = sa.text("valid_to IS NULL")


def upgrade() -> None:
    op.create_table(
        "vectors",
        sa.Column("entity_id", sa.BigInteger, primary_key=True),
        sa.Column("valid_from", sa.Text, primary_key=True),
        sa.Column("valid_to", sa.Text),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("embedding", sa.LargeBinary, nullable=False),
        sa.Column("named_only", sa.SmallInteger, nullable=False, server_default="0"),
        sa.Column("changed", sa.BigInteger, nullable=False),
    )
    op.create_index(
        "ix_vectors_current", "vectors", ["entity_id"], unique=True,
        sqlite_where=CURRENT, postgresql_where=CURRENT,
    )  # fmt: skip
    op.create_index("ix_vectors_changed", "vectors", ["changed"])
    op.create_table(
        "vector_state",
        sa.Column("id", sa.SmallInteger, primary_key=True),
        sa.Column("generation", sa.BigInteger, nullable=False),
        sa.CheckConstraint("id = 1", name="ck_vector_state_one_row"),
    )
    op.execute("INSERT INTO vector_state (id, generation) VALUES (1, 0)")


def downgrade() -> None:
    op.drop_table("vector_state")
    op.drop_index("ix_vectors_changed", table_name="vectors")
    op.drop_index("ix_vectors_current", table_name="vectors")
    op.drop_table("vectors")
