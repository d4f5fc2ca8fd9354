"""Tables of the store at the current migration head (DM §14).

Migrations under ``migrations/versions`` create and upgrade these; this module is what the code
queries against, and a test checks that the two agree.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData()

# A rowid alias on SQLite (auto-assigned), a plain BIGINT on PostgreSQL.
ID = BigInteger().with_variant(Integer, "sqlite")

ROOT: Final = 0
ROOT_IRI: Final = "urn:quipu:graph:root"
META_IRI: Final = "urn:quipu:graph:meta"
OP_RETRACT, OP_ASSERT, OP_TOMBSTONE = 0, 1, 2

LIVE = text("op = 1 AND valid_to IS NULL")
LIVE_REF = text("op = 1 AND valid_to IS NULL AND v_ref IS NOT NULL")

terms = Table(
    "terms",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("iri", Text, nullable=False),
    Column("iri_hash", LargeBinary(16), nullable=False, unique=True),
)

transactions = Table(
    "transactions",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("timestamp", Text, nullable=False),
    Column("actor", Text),
    Column("source", Text),
    Column("graph", BigInteger, nullable=False, server_default="0"),
    Column("recorded_at", Text, nullable=False),
    Index("ix_transactions_source", "source", "graph", "id"),
)

transaction_auth = Table(
    "transaction_auth",
    metadata,
    Column("tx_id", BigInteger, ForeignKey("transactions.id"), primary_key=True),
    Column("principal", Text, nullable=False),
    Column("credential_id", Text),
    Column("auth_class", Text, nullable=False),
    CheckConstraint(
        "auth_class IN ('named_bearer', 'legacy_shared_bearer')", name="ck_transaction_auth_class"
    ),
)

facts = Table(
    "facts",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("e", BigInteger, nullable=False),
    Column("a", BigInteger, nullable=False),
    Column("v", LargeBinary, nullable=False),
    Column("vh", LargeBinary(16), nullable=False),
    Column("v_ref", BigInteger),
    Column("g", BigInteger, nullable=False, server_default="0"),
    Column("tx", BigInteger, ForeignKey("transactions.id"), nullable=False),
    Column("valid_from", Text, nullable=False),
    Column("valid_to", Text),
    Column("retracted_tx", BigInteger),
    Column("op", SmallInteger, nullable=False),
    # Revision 2: numeric shadow of Int/Float/numeric literals, for SQL comparison and ordering.
    Column("v_num", Float),
    UniqueConstraint("tx", "g", "e", "a", "vh", name="uq_facts_row_per_tx"),
    Index("ix_facts_live_gea", "g", "e", "a", "vh", sqlite_where=LIVE, postgresql_where=LIVE),
    Index("ix_facts_live_ga", "g", "a", "vh", sqlite_where=LIVE, postgresql_where=LIVE),
    Index("ix_facts_live_ref", "v_ref", "g", sqlite_where=LIVE_REF, postgresql_where=LIVE_REF),
    Index("ix_facts_gea", "g", "e", "a"),
    Index("ix_facts_gae", "g", "a", "e"),
    Index("ix_facts_gref", "g", "v_ref"),
)

graphs = Table(
    "graphs",
    metadata,
    Column("g", BigInteger, primary_key=True, autoincrement=False),
    Column("class", Text, nullable=False),
    Column("parent_branch", BigInteger, ForeignKey("graphs.g")),
    Column("created_at", Text, nullable=False),
    Column("created_actor", Text),
    CheckConstraint("class IN ('committed', 'overlay')", name="ck_graphs_class"),
)
