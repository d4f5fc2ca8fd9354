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
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Table,
    Text,
    text,
)

metadata = MetaData()

# The newest Alembic revision (migrations/versions): a store already there opens without loading
# Alembic at all. tests/test_migrations.py keeps it equal to the scripts' head.
SCHEMA_REVISION: Final = "0012"

# A rowid alias on SQLite (auto-assigned), a plain BIGINT on PostgreSQL.
ID = BigInteger().with_variant(Integer, "sqlite")

ROOT: Final = 0
ROOT_IRI: Final = "urn:quipu:graph:root"
META_IRI: Final = "urn:quipu:graph:meta"
OP_RETRACT, OP_ASSERT, OP_TOMBSTONE = 0, 1, 2

REF = text("v_ref IS NOT NULL")
# A live primary claim: asserted, not closed, the one claim current reads see per statement.
# The readers write these three terms with literal constants (views.visible, views.primary):
# a planner uses a partial index only when the query's WHERE visibly implies the index's.
LIVE_SQL: Final = "op = 1 AND valid_to IS NULL AND dup = 0"
LIVE = text(LIVE_SQL)
LIVE_REF = text(f"v_ref IS NOT NULL AND {LIVE_SQL}")

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
    # Revision 3: 1 on a live claim written while its statement already had one (a second
    # owner). Exactly one live claim per statement has 0, so a current-state query reads each
    # statement once without DISTINCT. Only the current state: history keeps whatever it had.
    Column("dup", SmallInteger, nullable=False, server_default="0"),
    # Index design [changed from DM §14.1]: four full indexes instead of three partial "live"
    # ones, three history ones and UNIQUE(tx, g, e, a, vh). Every insert maintains each index,
    # and the duplicates cost about half the write time and half the file (measured in the
    # ingest benchmark). They serve writes and time travel; current reads have the live indexes
    # below. One row per statement per transaction is guaranteed by the writer's deduplication.
    Index("ix_facts_gea", "g", "e", "a", "vh"),  # subject lookups, writer checks, history
    Index("ix_facts_gav", "g", "a", "vh"),  # predicate and object lookups
    Index("ix_facts_ref", "v_ref", "g", sqlite_where=REF, postgresql_where=REF),  # reverse edges
    Index("ix_facts_tx", "tx"),  # transaction-time feeds
    # Revision 10: the current state's own indexes, holding live primary claims only, so a
    # current read filters nothing and (on SQLite) never reads the table row: SPO, POS and OSP
    # orders carrying every column a current-state triple pattern reads, the live predicate's
    # own columns included (SQLite counts a column the WHERE names as one the index must hold).
    # PostgreSQL gets the key columns only (POSTGRES_LIVE_INDEXES): a btree entry there is
    # capped at 2,704 bytes, and ``v`` can be a long literal. docs/store.md has the measurements.
    Index(
        "ix_live_gea", "g", "e", "a", "vh", "v_ref", "v", "v_num", "op", "valid_to", "dup", sqlite_where=LIVE
    ),
    Index(
        "ix_live_gav", "g", "a", "vh", "e", "v_ref", "v", "v_num", "op", "valid_to", "dup", sqlite_where=LIVE
    ),
    Index("ix_live_ref", "v_ref", "g", "a", "e", "op", "valid_to", "dup", sqlite_where=LIVE_REF),
)
LIVE_INDEXES: Final = frozenset({"ix_live_gea", "ix_live_gav", "ix_live_ref"})
for _index in facts.indexes:
    if _index.name in LIVE_INDEXES:
        _index.ddl_if(dialect="sqlite")


# PostgreSQL's twins of the live indexes: the same names, orders and predicates, without the
# value columns (a heap fetch reads them; the predicate still keeps every closed row out).
POSTGRES_LIVE_INDEXES: Final = (
    ("ix_live_gea", "g, e, a, vh", LIVE_SQL),
    ("ix_live_gav", "g, a, vh", LIVE_SQL),
    ("ix_live_ref", "v_ref, g", f"v_ref IS NOT NULL AND {LIVE_SQL}"),
)


def postgres_live_index_ddl() -> list[str]:
    """CREATE INDEX statements for the live indexes on PostgreSQL."""
    return [
        f"CREATE INDEX {name} ON facts ({cols}) WHERE {where}" for name, cols, where in POSTGRES_LIVE_INDEXES
    ]


graphs = Table(
    "graphs",
    metadata,
    Column("g", BigInteger, primary_key=True, autoincrement=False),
    Column("class", Text, nullable=False),
    Column("parent_branch", BigInteger, ForeignKey("graphs.g")),
    Column("created_at", Text, nullable=False),
    Column("created_actor", Text),
    # Revision 7: the registry columns of tools-graphs-governance §0.8 and the label cache, kept
    # equal to the meta-graph's label facts by every declaration (migrations/versions/0007).
    Column("source", Text),
    Column("lifecycle", Text),
    Column("data_kind", Text),
    Column("fresh_rank", SmallInteger),
    Column("durability_rank", SmallInteger),
    Column("trust_iri", Text),
    Column("trust_rank", BigInteger),
    Column("trust_chain", Text),
    Column("policy", Text),
    Column("labels_tx", BigInteger),
    Column("labels_valid_to", Text),
    CheckConstraint("class IN ('committed', 'overlay')", name="ck_graphs_class"),
)

# Revision 7: named datasets (tools-graphs-governance §1.6), authoritative for resolution.
datasets = Table(
    "datasets",
    metadata,
    Column("name", Text, primary_key=True),
    Column("updated_at", Text, nullable=False),
)

dataset_members = Table(
    "dataset_members",
    metadata,
    Column("dataset", Text, ForeignKey("datasets.name"), primary_key=True),
    Column("graph", Text, primary_key=True),
    Column("ord", BigInteger),
    Index("ix_dataset_members_graph", "graph"),
)

# Revision 7: one row per freeze (§1.4); a thaw stamps thawed_at, never deletes the row.
frozen_packs = Table(
    "frozen_packs",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("graph_iri", Text, nullable=False),
    Column("alias", Text, nullable=False),
    Column("path", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("frozen_at", Text, nullable=False),
    Column("thawed_at", Text),
    Column("facts", BigInteger, nullable=False),
    Column("transactions", BigInteger, nullable=False),
    Index("ix_frozen_packs_graph", "graph_iri", "thawed_at"),
)

# Revision 8: stored named queries (tools-search §5.18), versioned like shape sets: a version is
# current while valid_to is NULL; a load or removal closes it, and only a reload at the same
# instant deletes (replaces) a version. tx: the latest committed transaction when it opened.
stored_queries = Table(
    "stored_queries",
    metadata,
    Column("name", Text, primary_key=True),
    Column("valid_from", Text, primary_key=True),
    Column("description", Text, nullable=False),
    Column("template", Text, nullable=False),
    Column("dataset", Text),
    Column("valid_to", Text),
    Column("tx", BigInteger, nullable=False),
    Index("ix_stored_queries_current", "name", "valid_to"),
)

# The ordered parameter specs of one stored-query version, keyed by (name, valid_from).
stored_query_params = Table(
    "stored_query_params",
    metadata,
    Column("name", Text, primary_key=True),
    Column("valid_from", Text, primary_key=True),
    Column("ord", Integer, primary_key=True),
    Column("param", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("required", SmallInteger, nullable=False),
    Column("default_value", Text),
    Column("description", Text, nullable=False),
    ForeignKeyConstraint(
        ["name", "valid_from"],
        ["stored_queries.name", "stored_queries.valid_from"],
        name="fk_stored_query_params_version",
    ),
    CheckConstraint("kind IN ('iri', 'text', 'int')", name="ck_stored_query_params_kind"),
)

# Revision 4: versioned SHACL shape sets (DM §14.1). A version is open while valid_to is NULL;
# loading or removing closes it, never deletes it. prefixes: the set's @prefix map as JSON.
shapes = Table(
    "shapes",
    metadata,
    Column("name", Text, primary_key=True),
    Column("valid_from", Text, primary_key=True),
    Column("turtle", Text, nullable=False),
    Column("prefixes", Text, nullable=False, server_default="{}"),
    Column("loaded_at", Text, nullable=False),
    Column("valid_to", Text),
    Column("tx", BigInteger),  # watermark (latest committed transaction) when the version opened
    Column("closed_tx", BigInteger),  # the same when it closed [designed here]
    Index("ix_shapes_name_open", "name", "valid_to"),
)

# Revision 11: stored OWL ontologies (tools-graphs-governance §8.1 OL-1), versioned by name exactly
# as the shape sets are: a load closes the open version, a removal closes it, nothing is deleted.
ontologies = Table(
    "ontologies",
    metadata,
    Column("name", Text, primary_key=True),
    Column("valid_from", Text, primary_key=True),
    Column("turtle", Text, nullable=False),
    Column("loaded_at", Text, nullable=False),
    Column("valid_to", Text),
    Column("tx", BigInteger),  # watermark (latest committed transaction) when the version opened
    Column("closed_tx", BigInteger),  # the same when it closed
    Index("ix_ontologies_name_open", "name", "valid_to"),
)

# Revision 12: sharing (tools-graphs-governance §4). The store's own identity (one row, written
# by the migration), the review state of each imported share, and the producer sessions a
# receiver registered for attested imports with the nonces they consumed.
store_identity = Table(
    "store_identity",
    metadata,
    Column("id", Text, primary_key=True),
    Column("created_at", Text, nullable=False),
)

share_imports = Table(
    "share_imports",
    metadata,
    Column("share_id", Text, primary_key=True),
    Column("state", Text, nullable=False),
    Column("staging_graph", Text, nullable=False),
    Column("import_id", Text, nullable=False),
    Column("graph_hash", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("tx_id", BigInteger),  # the staging write
    Column("promoted_tx", BigInteger),  # the latest promotion into ROOT
    Column("updated_at", Text, nullable=False),
    CheckConstraint(
        "state IN ('staged', 'quarantined', 'promoted', 'rejected', 'expired')",
        name="ck_share_imports_state",
    ),
)

share_sessions = Table(
    "share_sessions",
    metadata,
    Column("session", Text, primary_key=True),
    Column("agent", Text, nullable=False),
    Column("public_key", Text, nullable=False),
    Column("key_id", Text, nullable=False),
    Column("introducer", Text, nullable=False),
    Column("issued_at_epoch", BigInteger, nullable=False),
    Column("expires_at_epoch", BigInteger, nullable=False),
    Column("revoked", SmallInteger, nullable=False, server_default="0"),
    Column("registered_at", Text, nullable=False),
)

share_nonces = Table(
    "share_nonces",
    metadata,
    Column("nonce", Text, primary_key=True),
    Column("session", Text, nullable=False),
    Column("share_id", Text, nullable=False),
    Column("consumed_at", Text, nullable=False),
)

# Revision 5: the semantic event log (DM §11.1). AUTOINCREMENT: an offset is never reused,
# even after the newest event of a rolled-back or pruned range.
events = Table(
    "events",
    metadata,
    Column("event_offset", ID, primary_key=True, autoincrement=True),
    Column("type", Text, nullable=False),
    Column("ts", Text, nullable=False),
    Column("subject", Text),
    Column("group_id", Text),
    Column("tx_id", BigInteger, nullable=False),
    Column("payload", Text, nullable=False, server_default="{}"),
    Index("ix_events_type", "type", "event_offset"),
    Index("ix_events_group", "group_id", "event_offset"),
    Index("ix_events_ts", "ts"),
    sqlite_autoincrement=True,
)

# First appearance of each class and predicate, for type.new / predicate.new.
schema_terms = Table(
    "schema_terms",
    metadata,
    Column("term", Text, primary_key=True),
    Column("kind", Text, primary_key=True),
    Column("first_offset", BigInteger, nullable=False),
    CheckConstraint("kind IN ('type', 'predicate')", name="ck_schema_terms_kind"),
)

# Revision 9: durable consumer cursors (DM §11.2). A subscription's delivery cursor is the row
# of consumer "sub:<consumer_id>", so pull and push share one at-least-once contract.
consumers = Table(
    "consumers",
    metadata,
    Column("consumer_id", Text, primary_key=True),
    Column("committed_offset", BigInteger, nullable=False),
    Column("updated_at", Text, nullable=False),
)

# Revision 9: push subscriptions (tools-core §3.13) and their delivery state, which is kept here
# so that a restarted server resumes the same backoff and ``list`` can show it.
subscriptions = Table(
    "subscriptions",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("consumer_id", Text, nullable=False, unique=True),
    Column("webhook_url", Text, nullable=False),
    Column("types", Text, nullable=False, server_default="[]"),  # JSON array; empty: every type
    Column("mode", Text, nullable=False),
    Column("batch_size", Integer, nullable=False),
    Column("batch_window_s", Integer, nullable=False),
    Column("secret", Text),  # HMAC key of X-Quipu-Signature [designed here]; never listed
    Column("created_at", Text, nullable=False),
    Column("failures", Integer, nullable=False, server_default="0"),  # in a row, since the last 2xx
    Column("retry_at", Float),  # epoch seconds: no attempt before (backoff); NULL: due now
    Column("last_attempt_at", Text),
    Column("last_success_at", Text),
    Column("last_status", Integer),  # HTTP status of the last attempt; NULL: no answer
    Column("last_error", Text),
    Column("delivered", BigInteger, nullable=False, server_default="0"),  # events acknowledged
    CheckConstraint("mode IN ('realtime', 'batch')", name="ck_subscriptions_mode"),
    sqlite_autoincrement=True,
)

# Staged snapshot uploads (tools-core §3.2): the manifest fixed by the first part, then the parts.
snapshot_uploads = Table(
    "snapshot_uploads",
    metadata,
    Column("upload_id", Text, primary_key=True),
    Column("snapshot", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("total_parts", Integer, nullable=False),
    Column("total_bytes", BigInteger, nullable=False),
    Column("timestamp", Text, nullable=False),  # "" when the stage call had none
    Column("actor", Text),
    Column("source", Text),
    Column("graph", Text),
    Column("created_at", BigInteger, nullable=False),  # epoch seconds
    Column("expires_at", BigInteger, nullable=False),
)

snapshot_upload_parts = Table(
    "snapshot_upload_parts",
    metadata,
    Column(
        "upload_id",
        Text,
        ForeignKey("snapshot_uploads.upload_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("part_number", Integer, primary_key=True),
    Column("part_hash", Text, nullable=False),
    Column("byte_count", Integer, nullable=False),
    Column("payload", LargeBinary, nullable=False),
)

# A promotion's persisted outcome [designed here]: a poll after a restart still answers.
snapshot_promotions = Table(
    "snapshot_promotions",
    metadata,
    Column("upload_id", Text, primary_key=True),
    Column("state", Text, nullable=False),
    Column("result", Text),  # JSON: the /knot response (or its SHACL refusal body)
    Column("error", Text),
    Column("updated_at", Text, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    CheckConstraint("state IN ('running', 'complete', 'failed')", name="ck_promotions_state"),
)

# Schema-evolution proposals (tools-graphs-governance §7): pending -> accepted | rejected.
proposals = Table(
    "proposals",
    metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("kind", Text, nullable=False),
    Column("target", Text, nullable=False),
    Column("diff", Text, nullable=False),
    Column("rationale", Text),
    Column("proposer", Text, nullable=False),
    Column("trigger_ref", Text),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("decided_by", Text),
    Column("decided_at", Text),
    Column("decision_note", Text),
    Column("created_at", Text, nullable=False),
    CheckConstraint("kind IN ('shape', 'ontology', 'class', 'property')", name="ck_proposals_kind"),
    CheckConstraint("status IN ('pending', 'accepted', 'rejected')", name="ck_proposals_status"),
    Index("ix_proposals_status", "status", "created_at"),
    sqlite_autoincrement=True,
)

CURRENT_VECTOR = text("valid_to IS NULL")

# One embedding per entity over valid time (tools-search §3.1); revision 6.
vectors = Table(
    "vectors",
    metadata,
    Column("entity_id", BigInteger, primary_key=True),
    Column("valid_from", Text, primary_key=True),
    Column("valid_to", Text),
    Column("text", Text, nullable=False),
    Column("embedding", LargeBinary, nullable=False),  # little-endian float32
    Column("named_only", SmallInteger, nullable=False, server_default="0"),
    Column("changed", BigInteger, nullable=False),  # the vector_state generation that last touched it
    Index("ix_vectors_current", "entity_id", unique=True, sqlite_where=CURRENT_VECTOR,
          postgresql_where=CURRENT_VECTOR),
    Index("ix_vectors_changed", "changed"),
)  # fmt: skip

# The generation every vector write raises, so a cached index can tell it is current.
vector_state = Table(
    "vector_state",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("generation", BigInteger, nullable=False),
    CheckConstraint("id = 1", name="ck_vector_state_one_row"),
)
