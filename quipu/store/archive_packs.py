"""Archive packs: a frozen graph's whole bitemporal record in a standalone store file
(tools-graphs-governance §1.4-§1.5).

A pack is an ordinary quipu SQLite store (every table, at the current schema revision, in
rollback-journal mode so it is one file) holding the graph's fact rows (retracted ones
included), the transactions they reference, the terms they use, the graph's own entity
embeddings, a registry row labelled archive, and a one-row ``qpack_manifest``. Term and
transaction ids are the origin store's own, so a pack mounts without translating anything;
a thaw still maps by IRI, so it never depends on that.

The content hash is over the graph's canonical history text, which names IRIs and timestamps,
never internal ids: the live graph before the freeze, the pack, and the graph after a thaw hash
identically (rules FZ-7, TH-3).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection

from quipu.store.schema import facts, graphs, transactions, vectors
from quipu.store.terms import iri_hash

HISTORY_HEADER: Final = "## history v2\n"
PACK_FORMAT: Final = "2"
_FACT_COLUMNS: Final = tuple(c.name for c in facts.columns)
_TX_COLUMNS: Final = tuple(c.name for c in transactions.columns)
_VECTOR_COLUMNS: Final = tuple(c.name for c in vectors.columns)
_GRAPH_COLUMNS: Final = tuple(c.name for c in graphs.columns)

_HISTORY_SQL: Final = """
SELECT s.iri, p.iri, f.v, o.iri, t.timestamp, t.actor, t.source, f.valid_from, f.valid_to, f.op,
       r.timestamp
FROM facts f
JOIN terms s ON s.id = f.e
JOIN terms p ON p.id = f.a
LEFT JOIN terms o ON o.id = f.v_ref
JOIN transactions t ON t.id = f.tx
LEFT JOIN transactions r ON r.id = f.retracted_tx
WHERE f.g = ?
"""


def history_text(cursor: Any, gid: int) -> tuple[str, int]:
    """The canonical history of graph ``gid`` on a DB-API cursor, and its row count.

    One line per fact row, ten tab-separated fields: subject, predicate, value (``ref:<iri>``
    or ``val:`` + the stored encoding in lowercase hex), the writing transaction's timestamp,
    actor and source, valid_from, valid_to, the op code, and the retracting transaction's
    timestamp (``-`` for an absent value). Lines are sorted.
    """
    lines = []
    for s, p, v, ref, ts, actor, source, vf, vt, op, retracted in cursor.execute(_HISTORY_SQL, (gid,)):
        value = f"ref:{ref}" if ref is not None else "val:" + bytes(v).hex()
        fields = (s, p, value, ts, actor or "-", source or "-", vf, vt or "-", str(op), retracted or "-")
        lines.append("\t".join(fields))
    lines.sort()
    return HISTORY_HEADER + "\n".join(lines) + "\n", len(lines)


def content_hash(history: str) -> str:
    return "sha256:" + hashlib.sha256(history.encode("utf-8")).hexdigest()


def driver(conn: Connection) -> Any:
    raw = conn.connection.driver_connection
    assert raw is not None
    return raw


@dataclass(frozen=True, slots=True)
class PackCounts:
    facts: int
    transactions: int
    vectors: int


def _insert(target: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[Any]) -> None:
    if rows:
        marks = ", ".join("?" for _ in columns)
        target.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def copy_graph(
    source: Connection, target: sqlite3.Connection, gid: int, registry_row: dict[str, Any]
) -> PackCounts:
    """Copy graph ``gid``'s full record from the live store into an empty pack store."""
    src = driver(source)
    cols = ", ".join(_FACT_COLUMNS)
    rows = src.execute(f"SELECT {cols} FROM facts WHERE g = ? ORDER BY id", (gid,)).fetchall()
    tx_ids = sorted({r[_FACT_COLUMNS.index("tx")] for r in rows} | {
        r[_FACT_COLUMNS.index("retracted_tx")] for r in rows if r[_FACT_COLUMNS.index("retracted_tx")] is not None
    })  # fmt: skip
    tx_rows = _by_ids(src, "transactions", _TX_COLUMNS, tx_ids)
    term_ids = {gid} | {r[_FACT_COLUMNS.index(c)] for r in rows for c in ("e", "a")}
    term_ids |= {r[_FACT_COLUMNS.index("v_ref")] for r in rows if r[_FACT_COLUMNS.index("v_ref")] is not None}
    subjects = sorted({r[_FACT_COLUMNS.index("e")] for r in rows})
    vector_rows = _by_ids(src, "vectors", _VECTOR_COLUMNS, subjects, key="entity_id")
    term_rows = _by_ids(src, "terms", ("id", "iri", "iri_hash"), sorted(term_ids))
    existing = {r[0] for r in target.execute("SELECT id FROM terms")}
    _insert(target, "terms", ("id", "iri", "iri_hash"), [r for r in term_rows if r[0] not in existing])
    _insert(target, "transactions", _TX_COLUMNS, tx_rows)
    _insert(target, "facts", _FACT_COLUMNS, rows)
    _insert(target, "vectors", _VECTOR_COLUMNS, vector_rows)
    columns = tuple(k for k in _GRAPH_COLUMNS if k in registry_row)
    _insert(target, "graphs", columns, [tuple(registry_row[k] for k in columns)])
    return PackCounts(len(rows), len(tx_rows), len(vector_rows))


def _by_ids(src: Any, table: str, columns: tuple[str, ...], ids: list[int], key: str = "id") -> list[Any]:
    out: list[Any] = []
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        marks = ", ".join("?" for _ in chunk)
        sql = f"SELECT {', '.join(columns)} FROM {table} WHERE {key} IN ({marks}) ORDER BY {key}"
        out += src.execute(sql, chunk).fetchall()
    return out


def write_manifest(target: sqlite3.Connection, manifest: dict[str, Any]) -> None:
    target.execute(
        "CREATE TABLE qpack_manifest (id INTEGER PRIMARY KEY CHECK (id = 1), manifest TEXT NOT NULL)"
    )
    target.execute(
        "INSERT INTO qpack_manifest (id, manifest) VALUES (1, ?)", (json.dumps(manifest, sort_keys=True),)
    )


@contextmanager
def open_pack(path: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a pack file (never creates one)."""
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        yield conn


def pack_graph_id(pack: sqlite3.Connection, graph_iri: str) -> int | None:
    row = pack.execute("SELECT id FROM terms WHERE iri_hash = ?", (iri_hash(graph_iri),)).fetchone()
    return None if row is None else int(row[0])


def pack_history(path: str, graph_iri: str) -> tuple[str, int]:
    """The canonical history of ``graph_iri`` as the pack at ``path`` holds it."""
    with open_pack(path) as pack:
        gid = pack_graph_id(pack, graph_iri)
        if gid is None:
            return history_text(pack, -1)
        return history_text(pack, gid)


def manifest(path: str) -> dict[str, Any]:
    with open_pack(path) as pack:
        row = pack.execute("SELECT manifest FROM qpack_manifest WHERE id = 1").fetchone()
    out: dict[str, Any] = json.loads(row[0])
    return out


@dataclass(frozen=True, slots=True)
class PackRecord:
    """What a thaw reads back: rows keyed by IRI, ready to be interned into the live store."""

    facts: list[dict[str, Any]]  # e, a, v_ref as IRIs; v re-encoded by the caller for refs
    transactions: dict[int, tuple[str, str | None, str | None, int, str]]  # pack tx id -> row
    vectors: list[dict[str, Any]]  # entity as IRI


def read_record(path: str, graph_iri: str) -> PackRecord:
    with open_pack(path) as pack:
        gid = pack_graph_id(pack, graph_iri)
        iri_of = dict(pack.execute("SELECT id, iri FROM terms").fetchall())
        cols = ", ".join(_FACT_COLUMNS)
        fact_rows = (
            [] if gid is None else pack.execute(f"SELECT {cols} FROM facts WHERE g = ? ORDER BY id", (gid,))
        )
        found = []
        for row in fact_rows:
            rec = dict(zip(_FACT_COLUMNS, row, strict=True))
            rec["e"], rec["a"] = iri_of[rec["e"]], iri_of[rec["a"]]
            rec["v_ref"] = None if rec["v_ref"] is None else iri_of[rec["v_ref"]]
            found.append(rec)
        txs = {
            int(r[0]): (r[1], r[2], r[3], int(r[4]), r[5])
            for r in pack.execute("SELECT id, timestamp, actor, source, graph, recorded_at FROM transactions")
        }
        vcols = ", ".join(_VECTOR_COLUMNS)
        vecs = []
        for row in pack.execute(f"SELECT {vcols} FROM vectors ORDER BY entity_id, valid_from"):
            rec = dict(zip(_VECTOR_COLUMNS, row, strict=True))
            rec["entity_id"] = iri_of[rec["entity_id"]]
            vecs.append(rec)
    return PackRecord(found, txs, vecs)


def prepare_pack_file(path: str) -> None:
    """Switch a freshly built pack to one self-contained file (no write-ahead log)."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.commit()
