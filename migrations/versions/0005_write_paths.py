"""write paths: the event log, staged snapshot uploads and schema proposals (DM §11.1, §14.1).

* ``events`` — the append-only semantic log, written in the transaction it describes
  (AUTOINCREMENT, so an offset is never reused), and ``schema_terms``, which remembers the
  first offset at which each type and predicate appeared (``type.new`` / ``predicate.new``).
* ``snapshot_uploads`` / ``snapshot_upload_parts`` — staged parts of a large snapshot, and
  ``snapshot_promotions`` — the persisted outcome of a promotion, so a poll after a restart
  still answers (tools-core §3.2–§3.3).
* ``proposals`` — the schema-evolution queue (tools-graphs-governance §7).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("event_offset", _ID, primary_key=True, autoincrement=True),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("ts", sa.Text, nullable=False),
        sa.Column("subject", sa.Text),
        sa.Column("group_id", sa.Text),
        sa.Column("tx_id", sa.BigInteger, nullable=False),
        sa.Column("payload", sa.Text, nullable=False, server_default="{}"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_events_type", "events", ["type", "event_offset"])
    op.create_index("ix_events_group", "events", ["group_id", "event_offset"])
    op.create_index("ix_events_ts", "events", ["ts"])
    op.create_table(
        "schema_terms",
        sa.Column("term", sa.Text, primary_key=True),
        sa.Column("kind", sa.Text, primary_key=True),
        sa.Column("first_offset", sa.BigInteger, nullable=False),
        sa.CheckConstraint("kind IN ('type', 'predicate')", name="ck_schema_terms_kind"),
    )
    op.create_table(
        "snapshot_uploads",
        sa.Column("upload_id", sa.Text, primary_key=True),
        sa.Column("snapshot", sa.Text, nullable=False),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("total_parts", sa.Integer, nullable=False),
        sa.Column("total_bytes", sa.BigInteger, nullable=False),
        sa.Column("timestamp", sa.Text, nullable=False),
        sa.Column("actor", sa.Text),
        sa.Column("source", sa.Text),
        sa.Column("graph", sa.Text),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "snapshot_upload_parts",
        sa.Column(
            "upload_id",
            sa.Text,
            sa.ForeignKey("snapshot_uploads.upload_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("part_number", sa.Integer, primary_key=True),
        sa.Column("part_hash", sa.Text, nullable=False),
        sa.Column("byte_count", sa.Integer, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "snapshot_promotions",
        sa.Column("upload_id", sa.Text, primary_key=True),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("result", sa.Text),
        sa.Column("error", sa.Text),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.CheckConstraint("state IN ('running', 'complete', 'failed')", name="ck_promotions_state"),
    )
    op.create_table(
        "proposals",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("diff", sa.Text, nullable=False),
        sa.Column("rationale", sa.Text),
        sa.Column("proposer", sa.Text, nullable=False),
        sa.Column("trigger_ref", sa.Text),
        sa.Column("status", sa.Text, nullable=False, server_default="pending"),
        sa.Column("decided_by", sa.Text),
        sa.Column("decided_at", sa.Text),
        sa.Column("decision_note", sa.Text),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.CheckConstraint("kind IN ('shape', 'ontology', 'class', 'property')", name="ck_proposals_kind"),
        sa.CheckConstraint("status IN ('pending', 'accepted', 'rejected')", name="ck_proposals_status"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_proposals_status", "proposals", ["status", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_proposals_status", table_name="proposals")
    op.drop_table("proposals")
    op.drop_table("snapshot_promotions")
    op.drop_table("snapshot_upload_parts")
    op.drop_table("snapshot_uploads")
    op.drop_table("schema_terms")
    op.drop_index("ix_events_ts", table_name="events")
    op.drop_index("ix_events_group", table_name="events")
    op.drop_index("ix_events_type", table_name="events")
    op.drop_table("events")
