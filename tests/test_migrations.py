"""Schema migrations: old store files upgrade in place; the migrated schema is the code's schema.

``tests/fixtures/rev1.db`` is a store frozen at Alembic revision ``0001`` (see
``tests/fixtures/make_rev1_fixture.py`` for how it was made and what it holds).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from rdflib import Literal, URIRef
from rdflib.term import Node
from sqlalchemy import create_engine

import quipu
from quipu.api import KnowledgeBase
from quipu.store.database import Database, alembic_config
from quipu.store.schema import SCHEMA_REVISION, metadata

# SQLite files, read with sqlite3; tests/store/test_postgres.py upgrades a revision-1 PostgreSQL store.
pytestmark = pytest.mark.sqlite_only

FIXTURE = Path(__file__).parent / "fixtures" / "rev1.db"
EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
SVC = EX + "svc"
TX1 = "2026-04-01T00:00:00Z"
TX2 = "2026-05-01T00:00:00Z"
NAME = 'Service ☃ "one"'

EXPECTED_NT = (
    f'<{SVC}> <{EX}cores> "4"^^<{XSD}integer> .\n'
    f'<{SVC}> <{EX}load> "0.75"^^<{XSD}double> .\n'
    f'<{SVC}> <{EX}name> "Service ☃ \\"one\\"" .\n'
    f'<{SVC}> <{EX}offset> "-42"^^<{XSD}integer> .\n'
    f"<{SVC}> <{EX}owner> <{EX}bob> .\n"
    f'<{SVC}> <{EX}ratio> "1.50"^^<{XSD}decimal> .\n'
)


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def test_the_store_knows_the_newest_revision_without_loading_alembic() -> None:
    # A store at SCHEMA_REVISION opens without Alembic: it must be the scripts' head.
    assert head_revision() == SCHEMA_REVISION


def number(node: Node) -> float:
    assert isinstance(node, Literal)
    return float(node.toPython())


def _raw(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def rev1_copy(tmp_path: Path) -> Path:
    target = tmp_path / "rev1.db"
    shutil.copyfile(FIXTURE, target)
    return target


@pytest.fixture
def upgraded(rev1_copy: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(str(rev1_copy)) as kb:
        yield kb


# -- the fixture itself -------------------------------------------------------------------------


def test_fixture_is_at_revision_1() -> None:
    assert FIXTURE.exists(), "run: uv run python tests/fixtures/make_rev1_fixture.py"
    assert _raw(FIXTURE, "SELECT version_num FROM alembic_version") == [("0001",)]
    columns = {row[1] for row in _raw(FIXTURE, "PRAGMA table_info(facts)")}
    assert "v_num" not in columns
    assert "v" in columns
    assert FIXTURE.stat().st_size < 64 * 1024
    assert not Path(str(FIXTURE) + "-wal").exists()


# -- upgrading a revision-1 file ---------------------------------------------------------------


def test_opening_rev1_upgrades_to_head(upgraded: KnowledgeBase, rev1_copy: Path) -> None:
    assert head_revision() == "0012"
    assert upgraded.db.schema_revision() == "0012"
    assert _raw(rev1_copy, "SELECT version_num FROM alembic_version") == [("0012",)]
    assert _raw(rev1_copy, "SELECT id, generation FROM vector_state") == [(1, 0)]  # revision 6
    columns = {row[1] for row in _raw(rev1_copy, "PRAGMA table_info(facts)")}
    assert "v_num" in columns
    assert "dup" in columns
    assert _raw(rev1_copy, "SELECT DISTINCT dup FROM facts") == [(0,)]  # one owner per statement


def test_v_num_backfilled(upgraded: KnowledgeBase, rev1_copy: Path) -> None:
    v_num = dict(_raw(rev1_copy, "SELECT id, v_num FROM facts ORDER BY id"))
    assert v_num == {
        1: 4.0,  # Int 4
        2: 0.75,  # Float
        3: None,  # Str
        4: None,  # Ref (closed claim)
        5: 1.5,  # "1.50"^^xsd:decimal (Typed, numeric)
        6: -42.0,  # Int -42
        7: None,  # Ref (retraction record)
        8: None,  # Ref
    }


def test_other_columns_untouched_by_upgrade(upgraded: KnowledgeBase, rev1_copy: Path) -> None:
    sql = (
        "SELECT id, e, a, v, vh, v_ref, g, tx, valid_from, valid_to, retracted_tx, op FROM facts ORDER BY id"
    )
    assert _raw(rev1_copy, sql) == _raw(FIXTURE, sql)
    terms_sql = "SELECT id, iri, iri_hash FROM terms ORDER BY id"
    assert _raw(rev1_copy, terms_sql) == _raw(FIXTURE, terms_sql)


def test_rev1_data_reads_back_current(upgraded: KnowledgeBase) -> None:
    assert upgraded.export() == EXPECTED_NT
    rows = upgraded.query(f"SELECT ?p ?o WHERE {{ <{SVC}> ?p ?o }} ORDER BY ?p")
    assert isinstance(rows, list)
    got = {str(r["p"]): r["o"] for r in rows}
    assert got == {
        EX + "cores": Literal("4", datatype=URIRef(XSD + "integer")),
        EX + "load": Literal("0.75", datatype=URIRef(XSD + "double")),
        EX + "name": Literal(NAME),
        EX + "offset": Literal("-42", datatype=URIRef(XSD + "integer")),
        EX + "owner": URIRef(EX + "bob"),
        EX + "ratio": Literal("1.50", datatype=URIRef(XSD + "decimal")),
    }
    assert upgraded.stats() == {"facts": 6, "entities": 1, "predicates": 6}


def test_rev1_time_travel(upgraded: KnowledgeBase) -> None:
    owner = f"SELECT ?o WHERE {{ <{SVC}> <{EX}owner> ?o }}"
    assert upgraded.query(owner) == [{"o": URIRef(EX + "bob")}]
    assert upgraded.query(owner, as_of_tx=1) == [{"o": URIRef(EX + "alice")}]
    assert upgraded.query(owner, valid_at="2026-04-15T00:00:00Z") == [{"o": URIRef(EX + "alice")}]
    assert upgraded.query(owner, valid_at="2026-05-15T00:00:00Z") == [{"o": URIRef(EX + "bob")}]
    assert upgraded.query(owner, valid_at="2026-03-01T00:00:00Z") == []


def test_rev1_numeric_filter_uses_backfilled_values(upgraded: KnowledgeBase) -> None:
    rows = upgraded.query(
        f"SELECT ?p WHERE {{ <{SVC}> ?p ?o FILTER(isNumeric(?o) && ?o > 0.5) }} ORDER BY ?p"
    )
    assert isinstance(rows, list)
    assert [str(r["p"]) for r in rows] == [EX + "cores", EX + "load", EX + "ratio"]
    ordered = upgraded.query(f"SELECT ?o WHERE {{ <{SVC}> ?p ?o FILTER(isNumeric(?o)) }} ORDER BY ?o")
    assert isinstance(ordered, list)
    assert [number(r["o"]) for r in ordered] == [-42, 0.75, 1.5, 4]


def _fact(predicate: str, value: object, *, valid_to: str | None = None, retracted: int | None = None) -> Any:
    return {
        "entity": SVC,
        "predicate": EX + predicate,
        "value": value,
        "valid_from": TX1,
        "valid_to": valid_to,
        "tx": 1,
        "retracted_tx": retracted,
    }


def test_rev1_unravel(upgraded: KnowledgeBase) -> None:
    at_1 = upgraded.unravel(tx=1)
    assert at_1 == {
        "facts": [
            _fact("cores", 4),
            _fact("load", 0.75),
            _fact("name", NAME),
            _fact("offset", -42),
            _fact("owner", EX + "alice", valid_to=TX2, retracted=2),
            _fact("ratio", {"value": "1.50", "datatype": XSD + "decimal"}),
        ],
        "count": 6,
    }
    at_2 = upgraded.unravel(tx=2)
    owners = [f for f in at_2["facts"] if f["predicate"] == EX + "owner"]
    assert owners == [
        {
            "entity": SVC,
            "predicate": EX + "owner",
            "value": EX + "bob",
            "valid_from": TX2,
            "valid_to": None,
            "tx": 2,
            "retracted_tx": None,
        }
    ]
    assert at_2["count"] == 6
    history = upgraded.entity_history(SVC)["history"]
    # Ordered by tx, predicate, row id: the op=0 record (row 7) precedes bob's claim (row 8).
    assert [
        (h["op"], h["tx"], h["value"], h["valid_to"]) for h in history if h["predicate"] == EX + "owner"
    ] == [
        ("assert", 1, EX + "alice", TX2),
        ("retract", 2, EX + "alice", TX2),
        ("assert", 2, EX + "bob", None),
    ]


def test_rev1_store_accepts_new_writes(upgraded: KnowledgeBase, rev1_copy: Path) -> None:
    result = upgraded.knot(f"<{SVC}> <{EX}cores> 5 .", "turtle", valid_from="2026-06-01T00:00:00Z")
    assert result.tx_id == 3
    result = upgraded.knot(f'<{EX}new> <{EX}name> "n" .', "nt", timestamp="2026-06-02T00:00:00Z")
    assert result.tx_id == 4
    # Existing terms are reused (their iri_hash matches); the new ones continue after id 10.
    assert _raw(rev1_copy, f"SELECT id FROM terms WHERE iri = '{EX}new'") == [(11,)]
    cores = upgraded.query(f"SELECT ?o WHERE {{ <{SVC}> <{EX}cores> ?o }} ORDER BY ?o")
    assert isinstance(cores, list)
    assert [number(r["o"]) for r in cores] == [4, 5]
    assert _raw(rev1_copy, "SELECT v_num FROM facts WHERE tx = 3") == [(5.0,)]
    set_result = upgraded.set(SVC, EX + "owner", {"iri": EX + "alice"}, timestamp="2026-07-01T00:00:00Z")
    assert (set_result.retracted, set_result.asserted) == (1, 1)
    # The retract path matches the rev-1 Ref encoding and digest byte for byte.
    retract = upgraded.retract(SVC, EX + "ratio", {"value": "1.50", "datatype": XSD + "decimal"})
    assert retract.retracted == 1


def _schema_diff(path: Path) -> list[Any]:
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": True}
            )
            return list(compare_metadata(ctx, metadata))
    finally:
        engine.dispose()


def test_upgraded_rev1_schema_matches_metadata(upgraded: KnowledgeBase, rev1_copy: Path) -> None:
    assert _schema_diff(rev1_copy) == []


def test_bulk_load_into_an_empty_graph_of_an_upgraded_rev1_store(upgraded: KnowledgeBase) -> None:
    upgraded.create_graph(EX + "bulk")
    doc = "".join(f'<{EX}s{i}> <{EX}p> "{i}" .\n' for i in range(50_000))
    result = upgraded.knot(doc, "nt", graph=EX + "bulk")
    assert result.count == 50_000
    assert upgraded.export(graph=EX + "bulk").count("\n") == 50_000


# -- fresh stores and re-opening ----------------------------------------------------------------


def test_fresh_store_is_at_head(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    with quipu.open(str(path)) as kb:
        assert kb.db.schema_revision() == head_revision()
    assert _raw(path, "SELECT version_num FROM alembic_version") == [(head_revision(),)]


def test_memory_store_is_at_head() -> None:
    with quipu.open(":memory:") as kb:
        assert kb.db.schema_revision() == head_revision()


def test_reopening_is_a_noop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "twice.db"
    with quipu.open(str(path)) as kb:
        kb.knot(f"<{SVC}> <{EX}cores> 4 .", valid_from=TX1)
    schema_sql = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
    before_schema = _raw(path, schema_sql)
    before_facts = _raw(path, "SELECT * FROM facts ORDER BY id")

    def no_migrate(self: Database, *args: object) -> None:
        raise AssertionError("a store already at head must not run migrations")

    monkeypatch.setattr(Database, "migrate", no_migrate)
    with quipu.open(str(path)) as kb:
        assert kb.db.schema_revision() == head_revision()
        assert kb.stats() == {"facts": 1, "entities": 1, "predicates": 1}
    assert _raw(path, schema_sql) == before_schema
    assert _raw(path, "SELECT * FROM facts ORDER BY id") == before_facts
    assert _raw(path, "SELECT version_num FROM alembic_version") == [(head_revision(),)]


def test_reopening_an_upgraded_rev1_file_is_a_noop(rev1_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with quipu.open(str(rev1_copy)) as kb:
        first = kb.export()
    monkeypatch.setattr(Database, "migrate", lambda self, *a: pytest.fail("migrated twice"))
    with quipu.open(str(rev1_copy)) as kb:
        assert kb.export() == first == EXPECTED_NT


# -- the migrations build exactly the schema the code queries -----------------------------------


def test_migrated_schema_matches_metadata(tmp_path: Path) -> None:
    path = tmp_path / "schema.db"
    quipu.open(str(path)).close()
    # Nothing needed filtering: types, nullability, server defaults, indexes and unique
    # constraints all agree on SQLite (index WHERE clauses are checked separately below).
    assert _schema_diff(path) == []


def test_partial_indexes_match_metadata(tmp_path: Path) -> None:
    """compare_metadata ignores index WHERE clauses on SQLite, so check them directly."""
    path = tmp_path / "schema.db"
    quipu.open(str(path)).close()
    stored = dict(_raw(path, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"))
    for table in metadata.tables.values():
        for index in table.indexes:
            assert index.name in stored, index.name
            where = index.dialect_options["sqlite"]["where"]
            sql = stored[index.name]
            if where is None:
                assert " WHERE " not in sql.upper(), index.name
            else:
                assert sql.split(" WHERE ", 1)[1].strip() == str(where), index.name
            columns = sql.split("(", 1)[1].split(")", 1)[0]
            assert [c.strip() for c in columns.split(",")] == [c.name for c in index.columns], index.name


def test_dup_backfill_marks_all_live_claims_but_the_oldest(tmp_path: Path) -> None:
    path = tmp_path / "owners.db"
    ex = "http://example.org/"
    with quipu.open(str(path)) as kb:
        for source in ("a", "b", "c"):
            kb.knot(f"<{ex}s> <{ex}p> <{ex}o> .", "nt", source=source)
        kb.knot(f"<{ex}s> <{ex}q> 1 .", "turtle", source="a")
    expected = _raw(path, "SELECT id, dup FROM facts ORDER BY id")
    assert [dup for _id, dup in expected] == [0, 1, 1, 0]
    # back to revision 2 without the column, as a file from before it would be
    conn = sqlite3.connect(path)
    for index in ("ix_live_gea", "ix_live_gav", "ix_live_ref"):  # revision 10
        conn.execute(f"DROP INDEX {index}")
    conn.execute("ALTER TABLE facts DROP COLUMN dup")
    conn.execute("DROP TABLE shapes")  # revision 4
    for table in ("events", "schema_terms", "snapshot_upload_parts", "snapshot_uploads"):  # revision 5
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DROP TABLE snapshot_promotions")
    conn.execute("DROP TABLE proposals")
    conn.execute("DROP TABLE vectors")  # revision 6
    conn.execute("DROP TABLE vector_state")
    for table in ("dataset_members", "datasets", "frozen_packs"):  # revision 7
        conn.execute(f"DROP TABLE {table}")
    for table in ("stored_query_params", "stored_queries"):  # revision 8
        conn.execute(f"DROP TABLE {table}")
    for table in ("subscriptions", "consumers"):  # revision 9
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DROP TABLE ontologies")  # revision 11
    for table in ("store_identity", "share_imports", "share_sessions", "share_nonces"):  # revision 12
        conn.execute(f"DROP TABLE {table}")
    for column in ("source", "lifecycle", "data_kind", "fresh_rank", "durability_rank", "trust_iri"):
        conn.execute(f"ALTER TABLE graphs DROP COLUMN {column}")
    for column in ("trust_rank", "trust_chain", "policy", "labels_tx", "labels_valid_to"):
        conn.execute(f"ALTER TABLE graphs DROP COLUMN {column}")
    conn.execute("UPDATE alembic_version SET version_num = '0002'")
    conn.commit()
    conn.close()
    with quipu.open(str(path)) as kb:
        assert kb.db.schema_revision() == "0012"
        rows = kb.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        assert isinstance(rows, list) and str(rows[0]["n"]) == "2"
    assert _raw(path, "SELECT id, dup FROM facts ORDER BY id") == expected
