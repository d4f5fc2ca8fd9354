"""sharing: the store's identity, import reviews and attestation sessions (tools-graphs-governance §4).

* ``store_identity``: one row, written here, naming this store in every share it produces
  (``store_id``) and in every acquire a consumer asks of it. A random id, so two stores made from
  the same file copy can still be told apart only by re-identifying one of them on purpose.
* ``share_imports``: the review state of each imported share (staged, quarantined, promoted,
  rejected, expired), keyed by share id. A refused import writes no row.
* ``share_sessions`` / ``share_nonces``: producer session bindings a receiver registered through a
  separate channel, and the attestation nonces consumed by ``attested`` imports (no replay).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    identity = op.create_table(
        "store_identity",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("created_at", sa.Text, nullable=False),
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    op.bulk_insert(identity, [{"id": f"urn:quipu:store:{uuid.uuid4()}", "created_at": now}])
    op.create_table(
        "share_imports",
        sa.Column("share_id", sa.Text, primary_key=True),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("staging_graph", sa.Text, nullable=False),
        sa.Column("import_id", sa.Text, nullable=False),
        sa.Column("graph_hash", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("tx_id", sa.BigInteger),
        sa.Column("promoted_tx", sa.BigInteger),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.CheckConstraint(
            "state IN ('staged', 'quarantined', 'promoted', 'rejected', 'expired')",
            name="ck_share_imports_state",
        ),
    )
    op.create_table(
        "share_sessions",
        sa.Column("session", sa.Text, primary_key=True),
        sa.Column("agent", sa.Text, nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("key_id", sa.Text, nullable=False),
        sa.Column("introducer", sa.Text, nullable=False),
        sa.Column("issued_at_epoch", sa.BigInteger, nullable=False),
        sa.Column("expires_at_epoch", sa.BigInteger, nullable=False),
        sa.Column("revoked", sa.SmallInteger, nullable=False, server_default="0"),
        sa.Column("registered_at", sa.Text, nullable=False),
    )
    op.create_table(
        "share_nonces",
        sa.Column("nonce", sa.Text, primary_key=True),
        sa.Column("session", sa.Text, nullable=False),
        sa.Column("share_id", sa.Text, nullable=False),
        sa.Column("consumed_at", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("share_nonces")
    op.drop_table("share_sessions")
    op.drop_table("share_imports")
    op.drop_table("store_identity")
