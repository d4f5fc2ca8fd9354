"""Core store: terms, transactions, facts, graphs (DM §14.1).

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")
REF = sa.text("v_ref IS NOT NULL")
META_IRI = "urn:quipu:graph:meta"


def upgrade() -> None:
    terms = op.create_table(
        "terms",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("iri", sa.Text, nullable=False),
        sa.Column("iri_hash", sa.LargeBinary(16), nullable=False, unique=True),
    )
    op.create_table(
        "transactions",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("timestamp", sa.Text, nullable=False),
        sa.Column("actor", sa.Text),
        sa.Column("source", sa.Text),
        sa.Column("graph", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("recorded_at", sa.Text, nullable=False),
    )
    op.create_index("ix_transactions_source", "transactions", ["source", "graph", "id"])
    op.create_table(
        "transaction_auth",
        sa.Column("tx_id", sa.BigInteger, sa.ForeignKey("transactions.id"), primary_key=True),
        sa.Column("principal", sa.Text, nullable=False),
        sa.Column("credential_id", sa.Text),
        sa.Column("auth_class", sa.Text, nullable=False),
        sa.CheckConstraint(
            "auth_class IN ('named_bearer', 'legacy_shared_bearer')",
            name="ck_transaction_auth_class",
        ),
    )
    op.create_table(
        "facts",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("e", sa.BigInteger, nullable=False),
        sa.Column("a", sa.BigInteger, nullable=False),
        sa.Column("v", sa.LargeBinary, nullable=False),
        sa.Column("vh", sa.LargeBinary(16), nullable=False),
        sa.Column("v_ref", sa.BigInteger),
        sa.Column("g", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("tx", sa.BigInteger, sa.ForeignKey("transactions.id"), nullable=False),
        sa.Column("valid_from", sa.Text, nullable=False),
        sa.Column("valid_to", sa.Text),
        sa.Column("retracted_tx", sa.BigInteger),
        sa.Column("op", sa.SmallInteger, nullable=False),
    )
    # Four full indexes serve both current and historical reads; see quipu/store/schema.py.
    for name, cols, where in (
        ("ix_facts_gea", ["g", "e", "a", "vh"], None),
        ("ix_facts_gav", ["g", "a", "vh"], None),
        ("ix_facts_ref", ["v_ref", "g"], REF),
        ("ix_facts_tx", ["tx"], None),
    ):
        op.create_index(name, "facts", cols, sqlite_where=where, postgresql_where=where)
    graphs = op.create_table(
        "graphs",
        sa.Column("g", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("class", sa.Text, nullable=False),
        sa.Column("parent_branch", sa.BigInteger, sa.ForeignKey("graphs.g")),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("created_actor", sa.Text),
        sa.CheckConstraint("class IN ('committed', 'overlay')", name="ck_graphs_class"),
    )
    # ROOT and the label meta-graph exist from creation (DM §1.6, §3.1).
    op.bulk_insert(
        terms, [{"id": 1, "iri": META_IRI, "iri_hash": hashlib.sha256(META_IRI.encode()).digest()[:16]}]
    )
    if op.get_bind().dialect.name == "postgresql":
        # An explicit id does not advance PostgreSQL's sequence; the next term must get 2.
        op.execute("SELECT setval(pg_get_serial_sequence('terms', 'id'), 1)")
    op.bulk_insert(
        graphs,
        [
            {
                "g": 0,
                "class": "committed",
                "parent_branch": None,
                "created_at": "1970-01-01T00:00:00Z",
                "created_actor": None,
            },
            {
                "g": 1,
                "class": "committed",
                "parent_branch": None,
                "created_at": "1970-01-01T00:00:00Z",
                "created_actor": None,
            },
        ],
    )


def downgrade() -> None:
    for table in ("graphs", "facts", "transaction_auth", "transactions", "terms"):
        op.drop_table(table)
