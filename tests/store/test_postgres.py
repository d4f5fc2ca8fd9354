"""The PostgreSQL backend itself: in-place upgrades from revision 0001, many writer processes,
the query deadline, and bulk loads through COPY. Runs in the suite's PostgreSQL half only
(``QUIPU_TEST_DB``); every other test in the suite runs on both backends.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import ConfigError
from quipu.store.database import alembic_config, resolve
from quipu.store.schema import metadata
from tests.backends import on_postgres, store_location
from tests.fixtures.make_rev1_fixture import (
    NAME,
    TERMS,
    TX1,
    TX2,
    digest,
    enc_float,
    enc_int,
    enc_ref,
    enc_str,
    enc_typed,
)
from tests.store import sql

pytestmark = pytest.mark.skipif(not on_postgres(), reason="runs in the PostgreSQL half (QUIPU_TEST_DB)")

XSD = "http://www.w3.org/2001/XMLSchema#"
WRITERS, PER_WRITER = 4, 500

WRITER = """
import sys, quipu
kb = quipu.open(sys.argv[1])
w, n = int(sys.argv[2]), int(sys.argv[3])
ids = []
for i in range(n):
    # A valid time of its own per write: valid-time reads do not depend on the interleaving.
    day = 1 + (w * n + i) // 1440
    stamp = f"2026-01-{day:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z"
    ids.append(kb.knot(f"<http://ex.org/w{w}_{i}> <http://ex.org/n> {i} .", "turtle",
                       source=f"writer{w}", valid_from=stamp).tx_id)
print(" ".join(map(str, ids)))
kb.close()
"""


def _rev1_rows(url: str) -> None:
    """A store frozen at revision 0001 holding tests/fixtures/rev1.db's rows, as that revision
    wrote them (its sequences moved past the ids in use)."""
    engine = create_engine(resolve(url).url)
    with engine.begin() as conn:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        for tid, iri in TERMS.items():
            conn.execute(
                text("INSERT INTO terms (id, iri, iri_hash) VALUES (:i, :r, :h)"),
                {"i": tid, "r": iri, "h": digest(iri.encode())},
            )
        for tx, stamp, source in ((1, TX1, "knot:fixture"), (2, TX2, "set:fixture")):
            conn.execute(
                text(
                    "INSERT INTO transactions (id, timestamp, actor, source, graph, recorded_at)"
                    " VALUES (:i, :t, 'fixture', :s, 0, :t)"
                ),
                {"i": tx, "t": stamp, "s": source},
            )
        rows = [
            (1, 2, 3, enc_int(4), None, 1, TX1, None, None, 1),
            (2, 2, 4, enc_float(0.75), None, 1, TX1, None, None, 1),
            (3, 2, 5, enc_str(NAME), None, 1, TX1, None, None, 1),
            (4, 2, 6, enc_ref(7), 7, 1, TX1, TX2, 2, 1),
            (5, 2, 9, enc_typed("1.50", XSD + "decimal"), None, 1, TX1, None, None, 1),
            (6, 2, 10, enc_int(-42), None, 1, TX1, None, None, 1),
            (7, 2, 6, enc_ref(7), 7, 2, TX1, TX2, 2, 0),
            (8, 2, 6, enc_ref(8), 8, 2, TX2, None, None, 1),
        ]
        for r in rows:
            conn.execute(
                text(
                    "INSERT INTO facts (id, e, a, v, vh, v_ref, g, tx, valid_from, valid_to, retracted_tx, op)"
                    " VALUES (:id, :e, :a, :v, :vh, :vr, 0, :tx, :vf, :vt, :rt, :op)"
                ),
                dict(
                    zip(("id", "e", "a", "v", "vr", "tx", "vf", "vt", "rt", "op"), r, strict=True),
                    vh=digest(r[3]),
                ),
            )
        for table in ("terms", "transactions", "facts"):
            conn.execute(
                text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
            )
    engine.dispose()


@pytest.fixture
def rev1(tmp_path: Path) -> Iterator[KnowledgeBase]:
    url = store_location(tmp_path, "rev1.db", fresh=True)
    _rev1_rows(url)
    with quipu.open(url) as kb:
        yield kb


def test_a_revision_0001_database_is_upgraded_in_place(rev1: KnowledgeBase) -> None:
    assert rev1.db.schema_revision() == "0012"
    assert sql(rev1, "SELECT id, v_num FROM facts ORDER BY id") == [
        (1, 4.0),
        (2, 0.75),
        (3, None),
        (4, None),
        (5, 1.5),
        (6, -42.0),
        (7, None),
        (8, None),
    ]
    assert sql(rev1, "SELECT DISTINCT dup FROM facts") == [(0,)]
    rows = rev1.query("SELECT ?o WHERE { <http://ex.org/svc> <http://ex.org/owner> ?o }")
    assert isinstance(rows, list) and [str(r["o"]) for r in rows] == ["http://ex.org/bob"]
    past = rev1.query("SELECT ?o WHERE { <http://ex.org/svc> <http://ex.org/owner> ?o }", as_of_tx=1)
    assert isinstance(past, list) and [str(r["o"]) for r in past] == ["http://ex.org/alice"]


def test_an_upgraded_database_takes_new_writes_after_the_old_ids(rev1: KnowledgeBase) -> None:
    out = rev1.knot("<http://ex.org/new> <http://ex.org/cores> 5 .", "turtle")
    assert out.tx_id == 3
    assert sql(rev1, "SELECT id FROM terms WHERE iri = ?", "http://ex.org/new") == [(11,)]
    assert sql(rev1, "SELECT v_num FROM facts WHERE tx = 3") == [(5.0,)]


def test_the_migrated_schema_matches_the_code_on_postgresql(rev1: KnowledgeBase, tmp_path: Path) -> None:
    fresh = store_location(tmp_path, "fresh.db", fresh=True)
    quipu.open(fresh).close()
    for kb_url in (rev1.db.backend.url, resolve(fresh).url):
        engine = create_engine(kb_url)
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        engine.dispose()
        # The revision-1 layout's extra index differences are SQLite history; tables and columns agree.
        assert [d for d in diff if d[0] in ("add_table", "remove_table", "add_column", "remove_column")] == []


def _run_writers(location: str) -> list[list[int]]:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, location, str(w), str(PER_WRITER)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    out = []
    for child in children:
        stdout, _ = child.communicate(timeout=600)
        assert child.returncode == 0
        out.append([int(x) for x in stdout.split()])
    return out


def test_four_writer_processes_lose_nothing_and_agree_with_sqlite(tmp_path: Path) -> None:
    postgres = store_location(tmp_path, "writers.db")
    with quipu.open(postgres):
        pass  # created and migrated before the writers race
    ids = _run_writers(postgres)
    every = [tx for writer in ids for tx in writer]
    assert len(every) == WRITERS * PER_WRITER and len(set(every)) == len(every)
    for writer in ids:
        assert writer == sorted(writer)  # each process sees its own writes in commit order
    sqlite = str(tmp_path / "writers-sqlite.db")
    quipu.open(sqlite).close()
    _run_writers(sqlite)
    with quipu.open(postgres) as pg, quipu.open(sqlite) as lite:
        assert sql(pg, "SELECT COUNT(*), MIN(id), MAX(id) FROM transactions") == [(2000, 1, 2000)]
        count = "SELECT (COUNT(*) AS ?n) WHERE { ?s <http://ex.org/n> ?o }"
        for day in ("2026-01-01T12:00:00Z", "2026-01-02T00:00:00Z", "2026-01-02T09:30:00Z", None):
            assert pg.query(count, valid_at=day) == lite.query(count, valid_at=day)
        every_fact = "SELECT ?s ?o WHERE { ?s <http://ex.org/n> ?o } ORDER BY ?s"
        assert pg.query(every_fact, valid_at="2026-01-01T20:00:00Z") == lite.query(
            every_fact, valid_at="2026-01-01T20:00:00Z"
        )
        # The state as of each writer's last transaction holds that writer's 500 facts.
        for w, writer in enumerate(ids):
            mine = f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <http://ex.org/n> ?o FILTER(STRSTARTS(STR(?s), 'http://ex.org/w{w}_')) }}"
            rows = pg.query(mine, as_of_tx=writer[-1])
            assert isinstance(rows, list) and int(str(rows[0]["n"])) == PER_WRITER


def test_a_large_load_goes_through_copy_and_reads_back(kb: KnowledgeBase) -> None:
    lines = "".join(f'<http://ex.org/s{i}> <http://ex.org/n> "{i}" .\n' for i in range(60_000))
    out = kb.knot(lines, "nt")
    assert out.claims == 60_000
    rows = kb.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert isinstance(rows, list) and int(str(rows[0]["n"])) == 60_000
    # The deferred indexes were rebuilt: the planner has them to use.
    names = {r[0] for r in sql(kb, "SELECT indexname FROM pg_indexes WHERE tablename = 'facts'")}
    assert {index.name for index in metadata.tables["facts"].indexes} <= names


def test_an_unreachable_server_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot open store postgresql\+psycopg://nobody@/none"):
        quipu.open(f"postgresql://nobody@/none?host={tmp_path}")
