"""graph registry: the label cache and lifecycle on ``graphs``, datasets, and the frozen-pack
registry (tools-graphs-governance §0.8, §1.3-§1.6).

* ``graphs`` gains the registry columns of §0.8: ``source`` (the attachment alias, NULL when
  local), ``lifecycle`` (NULL or ``frozen``), ``data_kind``, and the label cache mirrored from the
  meta-graph in the same transaction as each declaration: ``fresh_rank`` (stale 1, recomputing 2,
  fresh 3), ``durability_rank`` (soleRecord 1, reproducible 2, backed 3), ``trust_iri``,
  ``trust_rank``, ``trust_chain``, ``policy`` (sorted, space-separated tokens), ``labels_tx`` (the
  declaring transaction; NULL: never labelled) and ``labels_valid_to`` (expiry).
* ``datasets`` / ``dataset_members`` — named sets of graph IRIs; authoritative for resolution (the
  meta-graph mirror is history).
* ``frozen_packs`` — one row per freeze; a thaw stamps ``thawed_at`` and never deletes it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")
_CACHE = (
    ("source", sa.Text),
    ("lifecycle", sa.Text),
    ("data_kind", sa.Text),
    ("fresh_rank", sa.SmallInteger),
    ("durability_rank", sa.SmallInteger),
    ("trust_iri", sa.Text),
    ("trust_rank", sa.BigInteger),
    ("trust_chain", sa.Text),
    ("policy", sa.Text),
    ("labels_tx", sa.BigInteger),
    ("labels_valid_to", sa.Text),
)


def upgrade() -> None:
    for name, kind in _CACHE:
        op.add_column("graphs", sa.Column(name, kind))
    op.create_table(
        "datasets",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("updated_at", sa.Text, nullable=False),
    )
    op.create_table(
        "dataset_members",
        sa.Column("dataset", sa.Text, sa.ForeignKey("datasets.name"), primary_key=True),
        sa.Column("graph", sa.Text, primary_key=True),
        sa.Column("ord", sa.BigInteger),
    )
    op.create_index("ix_dataset_members_graph", "dataset_members", ["graph"])
    op.create_table(
        "frozen_packs",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("graph_iri", sa.Text, nullable=False),
        sa.Column("alias", sa.Text, nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("frozen_at", sa.Text, nullable=False),
        sa.Column("thawed_at", sa.Text),
        sa.Column("facts", sa.BigInteger, nullable=False),
        sa.Column("transactions", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_frozen_packs_graph", "frozen_packs", ["graph_iri", "thawed_at"])


def downgrade() -> None:
    op.drop_index("ix_frozen_packs_graph", table_name="frozen_packs")
    op.drop_table("frozen_packs")
    op.drop_index("ix_dataset_members_graph", table_name="dataset_members")
    op.drop_table("dataset_members")
    op.drop_table("datasets")
    with op.batch_alter_table("graphs") as batch:
        for name, _ in reversed(_CACHE):
            batch.drop_column(name)
