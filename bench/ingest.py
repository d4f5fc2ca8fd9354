"""The ingest benchmark: bulk load (W1) and small durable transactions (W2).

    python -m bench.ingest [--triples 100000 | --large] [--episodes 2000] [--seed 42] [--repeat N]
                           [--db postgresql://USER@HOST/DB]

W1 loads one LUBM-shaped N-Triples document (``bench.lubm``, cached under ``bench/.data/``) into
a fresh quipu file store with one atomic ``knot`` write, and into pyoxigraph's and rdflib's
in-memory stores for reference. W2 writes ``--episodes`` small documents (``bench.episodes``),
one durable quipu transaction each. The results table goes to stdout and progress to stderr.

Targets are informational: a MISS never changes the exit status. The one failing check is the
correctness gate: the number of live statements quipu stored must equal what pyoxigraph loaded.

``--db`` also runs W1 and W2 on a quipu store on that PostgreSQL server, each run in a fresh
scratch database (``bench.postgres``: the URL's own database is never written), adds a
"× SQLite" column and checks the bulk-load target: PostgreSQL within 2x of SQLite. Its live
statements go through the same correctness gate.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import platform
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from bench import episodes as episode_docs
from bench import lubm, postgres

DATA_DIR = Path(__file__).resolve().parent / ".data"
LARGE = 1_000_000
BULK_TARGET_RATIO = 2.0  # quipu bulk load at 1M <= 2x pyoxigraph in-memory
PG_BULK_TARGET_RATIO = 2.0  # quipu on PostgreSQL bulk load <= 2x quipu on SQLite
TX_TARGET = 2_000  # small durable transactions per second
ENGINES = ("pyoxigraph", "pyoxigraph-disk", "quipu", "rdflib")
LIVE_COUNT_SQL = "SELECT COUNT(*) FROM facts WHERE op = 1 AND valid_to IS NULL"


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# -- data ------------------------------------------------------------------------------------


def dataset(triples: int, seed: int, data_dir: Path = DATA_DIR) -> Path:
    """The cached LUBM-shaped file for (triples, seed), generated on first use."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"lubm-{triples}-seed{seed}.nt"
    if not path.exists():
        progress(f"generating {triples:,} LUBM-shaped triples (seed {seed}) into {path}")
        started = time.perf_counter()
        count = lubm.write_ntriples(path, triples, seed)
        progress(f"  {count:,} triples in {time.perf_counter() - started:.2f} s")
    return path


# -- quipu -----------------------------------------------------------------------------------


class QuipuStore:
    """A quipu file store opened through the public embedding API."""

    def __init__(self, path: Path | str, synchronous: str = "NORMAL") -> None:
        import quipu

        self._handle = quipu.open(str(path), synchronous=synchronous)
        self._knot: Callable[..., Any] = self._handle.knot
        self.api = "quipu.open(path).knot()"

    def knot(self, data: bytes | str, fmt: str, phases: dict[str, float] | None = None) -> Any:
        """One ``knot``; with ``phases``, record seconds per phase where quipu reports progress."""
        if phases is None:
            return self._knot(data, format=fmt)
        clock = time.perf_counter
        marks: dict[str, float] = {}

        def progress(phase: str, done: int, total: int) -> None:
            marks[phase] = clock()  # the last report of a phase marks its end

        started = clock()
        result = self._knot(data, format=fmt, progress=progress)
        ended = clock()
        previous = started
        for phase, at in sorted(marks.items(), key=lambda item: item[1]):
            phases[phase] = at - previous
            previous = at
        phases["commit"] = ended - previous
        return result

    def durability(self) -> str:
        """The SQLite journal mode and synchronous level the writer runs with, when visible."""
        db = getattr(self._handle, "db", self._handle)
        tuning = getattr(getattr(db, "dialect", None), "tuning", None)
        sync = getattr(tuning, "synchronous", None)
        return f"WAL, synchronous={sync}" if sync else "file store"

    def close(self) -> None:
        self._handle.close()


def live_statements(path: Path | str) -> int:
    """Live statements in a closed quipu store (reopened, so this also checks durability)."""
    from quipu.store.database import Database

    db = Database(str(path))
    try:
        with db.read() as conn:
            return int(conn.exec_driver_sql(LIVE_COUNT_SQL).scalar() or 0)
    finally:
        db.close()


def store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


@dataclass
class BulkRun:
    seconds: float
    count: int | None = None
    detail: dict[str, float] = field(default_factory=dict)
    api: str = ""


def quipu_bulk(data: bytes, workdir: Path, run: int, profile: Path | None) -> tuple[BulkRun, Path]:
    path = workdir / f"bulk-{run}.db"
    t0 = time.perf_counter()
    store = QuipuStore(path)
    t1 = time.perf_counter()
    profiler = cProfile.Profile() if profile is not None else None
    if profiler is not None:
        profiler.enable()
    phases: dict[str, float] = {}
    store.knot(data, "nt", phases)
    t2 = time.perf_counter()
    store.close()
    t3 = time.perf_counter()
    if profiler is not None and profile is not None:
        profiler.disable()
        profiler.dump_stats(str(profile))
        progress(f"  cProfile of knot()+close() written to {profile}")
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    detail = {"open": t1 - t0, "knot": t2 - t1, "close": t3 - t2}
    detail.update({f"phase:{name}": secs for name, secs in phases.items()})
    return BulkRun(t3 - t1, detail=detail, api=store.api), path


def quipu_pg_bulk(data: bytes, scratch: postgres.ScratchDatabase) -> tuple[BulkRun, int, int]:
    """One bulk load into a fresh scratch database: the run, its live statements and its size."""
    url = scratch.fresh()
    store = QuipuStore(url)
    t1 = time.perf_counter()
    store.knot(data, "nt")
    t2 = time.perf_counter()
    store.close()
    t3 = time.perf_counter()
    run = BulkRun(t3 - t1, detail={"knot": t2 - t1, "close": t3 - t2}, api="quipu.open(url).knot()")
    return run, live_statements(url), database_bytes(url)


def database_bytes(url: str) -> int:
    from quipu.store.database import Database

    db = Database(url)
    try:
        with db.read() as conn:
            return int(conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar() or 0)
    finally:
        db.close()


def pyoxigraph_bulk(data: bytes) -> BulkRun:
    t0 = time.perf_counter()
    store = ox.Store()
    store.bulk_load(input=data, format=ox.RdfFormat.N_TRIPLES)
    seconds = time.perf_counter() - t0
    return BulkRun(seconds, len(store))


def pyoxigraph_disk_bulk(data: bytes, workdir: Path, run: int) -> BulkRun:
    """pyoxigraph's persistent (RocksDB) store: the like-for-like durable peer."""
    path = workdir / f"oxigraph-{run}"
    t0 = time.perf_counter()
    store = ox.Store(str(path))
    store.bulk_load(input=data, format=ox.RdfFormat.N_TRIPLES)
    store.flush()
    seconds = time.perf_counter() - t0
    count = len(store)
    del store
    return BulkRun(seconds, count)


def rdflib_bulk(data: bytes) -> BulkRun:
    import rdflib

    t0 = time.perf_counter()
    graph = rdflib.Graph()
    graph.parse(data=data, format="nt")
    seconds = time.perf_counter() - t0
    return BulkRun(seconds, len(graph))


# -- small transactions ----------------------------------------------------------------------


@dataclass
class TxResult:
    name: str
    latencies: list[float]  # seconds per commit
    wall: float
    note: str = ""

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.wall if self.wall > 0 else math.inf

    def percentile(self, p: float) -> float:
        """Nearest-rank percentile, in milliseconds."""
        ordered = sorted(self.latencies)
        rank = max(1, math.ceil(p / 100 * len(ordered)))
        return ordered[rank - 1] * 1000


def quipu_episodes(
    docs: Sequence[str], fmt: str, workdir: Path, synchronous: str = "NORMAL"
) -> tuple[TxResult, int]:
    path = workdir / f"episodes-{synchronous.lower()}.db"
    store = QuipuStore(path, synchronous)
    latencies, wall = _timed(docs, lambda doc: store.knot(doc, fmt))
    note = f"durable: {store.durability()}"
    store.close()
    label = "quipu file, one knot() per episode" + ("" if synchronous == "NORMAL" else f" ({synchronous})")
    result = TxResult(label, latencies, wall, note)
    return result, live_statements(path)


def quipu_pg_episodes(
    docs: Sequence[str], fmt: str, scratch: postgres.ScratchDatabase
) -> tuple[TxResult, int]:
    url = scratch.fresh()
    store = QuipuStore(url)
    latencies, wall = _timed(docs, lambda doc: store.knot(doc, fmt))
    store.close()
    result = TxResult("quipu PostgreSQL, one knot() per episode", latencies, wall, "server's commit settings")
    return result, live_statements(url)


def _timed(docs: Sequence[str], write: Callable[[str], object]) -> tuple[list[float], float]:
    """Per-document latencies and the wall time of writing every document in turn."""
    clock = time.perf_counter
    latencies: list[float] = []
    started = clock()
    for doc in docs:
        t = clock()
        write(doc)
        latencies.append(clock() - t)
    return latencies, clock() - started


def _ox_format(fmt: str) -> Any:
    return ox.RdfFormat.TURTLE if fmt == "turtle" else ox.RdfFormat.N_TRIPLES


def pyoxigraph_memory_episodes(docs: Sequence[str], fmt: str) -> tuple[TxResult, int]:
    store = ox.Store()
    rdf_format = _ox_format(fmt)
    latencies, wall = _timed(docs, lambda doc: store.load(input=doc, format=rdf_format))
    return TxResult("pyoxigraph in-memory, load() per episode", latencies, wall, "not durable"), len(store)


def pyoxigraph_disk_episodes(docs: Sequence[str], fmt: str, workdir: Path) -> tuple[TxResult, int]:
    store = ox.Store(str(workdir / "oxigraph"))
    rdf_format = _ox_format(fmt)

    def durable_load(doc: str) -> None:
        store.load(input=doc, format=rdf_format)
        store.flush()

    latencies, wall = _timed(docs, durable_load)
    return TxResult("pyoxigraph on-disk, load()+flush() per episode", latencies, wall, "RocksDB"), len(store)


# -- report ----------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
            )
            + " |"
        )

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> str:
    return "\n".join(
        [
            f"- Python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}",
            f"- SQLite {sqlite3.sqlite_version}, SQLAlchemy {version('sqlalchemy')}",
            f"- pyoxigraph {version('pyoxigraph')}, rdflib {version('rdflib')}, quipu {version('quipu')}",
            f"- CPU cores: {os.cpu_count()} (affinity {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'})",
        ]
    )


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--triples", type=int, default=100_000, help="LUBM-shaped data set size (default 100000)"
    )
    parser.add_argument("--large", action="store_true", help=f"use {LARGE:,} triples")
    parser.add_argument("--episodes", type=int, default=2000, help="small transactions to time (0 skips W2)")
    parser.add_argument("--episode-format", choices=("turtle", "nt"), default="turtle")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=None, help="bulk-load runs per engine (median taken)")
    parser.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help="comma-separated bulk-load engines out of " + ",".join(ENGINES) + " (default all)",
    )
    parser.add_argument("--no-ox-disk", action="store_true", help="skip the pyoxigraph on-disk episode run")
    parser.add_argument(
        "--data-dir", type=Path, default=DATA_DIR, help="where generated data sets are cached (bench/.data)"
    )
    parser.add_argument("--profile", type=Path, help="cProfile the first quipu bulk load into this file")
    parser.add_argument(
        "--db",
        metavar="URL",
        help="also run on this PostgreSQL server (postgresql://USER@HOST/DB), in scratch databases",
    )
    args = parser.parse_args(argv)
    if args.large:
        args.triples = LARGE
    if args.repeat is None:
        args.repeat = 1 if args.triples >= LARGE else 3
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engines: {', '.join(unknown)}")
    args.engines = [e for e in ENGINES if e in engines]
    if args.repeat < 1 or args.triples < 1 or args.episodes < 0:
        parser.error("--repeat and --triples must be positive and --episodes not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.db is None:
        return run(args, None)
    try:
        with postgres.ScratchDatabase(args.db) as scratch:
            progress(f"PostgreSQL: scratch database {scratch.name} on {scratch.where}")
            return run(args, scratch)
    except postgres.ScratchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, scratch: postgres.ScratchDatabase | None) -> int:
    """The benchmark; with ``scratch`` (a database on a PostgreSQL server) also on PostgreSQL."""
    path = dataset(args.triples, args.seed, args.data_dir)
    data = path.read_bytes()
    lines = data.count(b"\n")
    failures: list[str] = []
    out: list[str] = []
    out.append(f"# quipu ingest benchmark: {lines:,} LUBM-shaped triples (seed {args.seed})")
    out.append("")
    out.append(environment())
    out.append(f"- data set: {path.name}, {len(data) / 1e6:.1f} MB N-Triples")
    out.append("")

    # W1: bulk load
    bulk: dict[str, list[BulkRun]] = {}
    quipu_file: Path | None = None
    pg_live: int | None = None
    pg_size = 0
    engines = [*args.engines, *(["quipu-pg"] if scratch is not None else [])]
    with tempfile.TemporaryDirectory(prefix="quipu-bench-") as tmp:
        workdir = Path(tmp)
        for engine in engines:
            runs: list[BulkRun] = []
            for i in range(args.repeat):
                progress(f"W1 {engine}: run {i + 1} of {args.repeat}")
                gc.collect()
                if engine == "pyoxigraph":
                    runs.append(pyoxigraph_bulk(data))
                elif engine == "pyoxigraph-disk":
                    runs.append(pyoxigraph_disk_bulk(data, workdir, i))
                elif engine == "rdflib":
                    runs.append(rdflib_bulk(data))
                elif engine == "quipu-pg":
                    assert scratch is not None
                    pg_run, pg_live, pg_size = quipu_pg_bulk(data, scratch)
                    runs.append(pg_run)
                else:
                    run, db_path = quipu_bulk(data, workdir, i, args.profile if i == 0 else None)
                    runs.append(run)
                    if quipu_file is not None:
                        quipu_file.unlink(missing_ok=True)
                    quipu_file = db_path
                progress(f"  {runs[-1].seconds:.2f} s")
                gc.collect()
            bulk[engine] = runs

        quipu_size = store_bytes(quipu_file) if quipu_file is not None else 0
        quipu_live = live_statements(quipu_file) if quipu_file is not None else None

        medians = {engine: statistics.median(r.seconds for r in runs) for engine, runs in bulk.items()}
        ox_time = medians.get("pyoxigraph")
        ox_count = bulk["pyoxigraph"][0].count if "pyoxigraph" in bulk else None
        sqlite_time = medians.get("quipu")
        rows = []
        for engine in engines:
            runs = bulk[engine]
            med = medians[engine]
            count = quipu_live if engine == "quipu" else pg_live if engine == "quipu-pg" else runs[0].count
            label = {
                "quipu": "quipu, SQLite file, one knot()",
                "quipu-pg": "quipu, PostgreSQL, one knot()",
                "pyoxigraph": "pyoxigraph in-memory bulk_load",
                "pyoxigraph-disk": "pyoxigraph on-disk bulk_load",
                "rdflib": "rdflib in-memory Graph.parse",
            }[engine]
            rows.append(
                [
                    label,
                    f"{med:.2f}",
                    fmt_rate(lines / med),
                    f"{med / ox_time:.2f}×" if ox_time else "—",
                    f"{count:,}" if count is not None else "—",
                    ", ".join(f"{r.seconds:.2f}" for r in runs),
                ]
            )
            if scratch is not None:
                rows[-1].insert(4, f"{med / sqlite_time:.2f}×" if sqlite_time else "—")
        headers = ["engine", "seconds", "triples/s", "× pyoxigraph", "statements", "runs (s)"]
        right = [False, True, True, True, True, False]
        if scratch is not None:
            headers.insert(4, "× SQLite")
            right.insert(4, True)
        out.append(f"## W1 bulk load ({lines:,} triples, median of {args.repeat})")
        out.append("")
        out.append(table(headers, rows, right))
        out.append("")
        if "quipu" in bulk:
            detail = bulk["quipu"]
            out.append(
                f"- quipu via {detail[0].api}; its time is knot() + close(); also measured: open+migrate "
                f"{statistics.median(r.detail['open'] for r in detail):.2f} s, knot "
                f"{statistics.median(r.detail['knot'] for r in detail):.2f} s, close "
                f"{statistics.median(r.detail['close'] for r in detail):.2f} s (medians)"
            )
            phase_names = [k for k in detail[0].detail if k.startswith("phase:")]
            if phase_names:
                out.append(
                    "- quipu knot() phases, from its progress reports (medians; each ends at the report "
                    "named): "
                    + ", ".join(
                        f"{name[6:]} {statistics.median(r.detail.get(name, 0.0) for r in detail):.2f} s"
                        for name in phase_names
                    )
                )
            out.append(
                f"- quipu store size after load: {quipu_size / 1e6:.1f} MB, "
                f"{quipu_size / max(1, quipu_live or lines):.0f} bytes per triple"
            )
            if ox_count is not None and quipu_live != ox_count:
                failures.append(
                    f"correctness gate: quipu stored {quipu_live:,} live statements but pyoxigraph loaded {ox_count:,}"
                )
            elif ox_count is not None:
                out.append(
                    f"- correctness gate: quipu live statements = pyoxigraph count = {ox_count:,} (ok)"
                )
            else:
                out.append("- correctness gate skipped: pyoxigraph was not run")
        if "quipu-pg" in bulk:
            out.append(
                f"- quipu on PostgreSQL: knot {statistics.median(r.detail['knot'] for r in bulk['quipu-pg']):.2f} s, "
                f"close {statistics.median(r.detail['close'] for r in bulk['quipu-pg']):.2f} s (medians); "
                f"database size after load {pg_size / 1e6:.1f} MB, "
                f"{pg_size / max(1, pg_live or lines):.0f} bytes per triple"
            )
            if ox_count is not None and pg_live != ox_count:
                failures.append(
                    f"correctness gate: quipu on PostgreSQL stored {pg_live:,} live statements "
                    f"but pyoxigraph loaded {ox_count:,}"
                )
            elif ox_count is not None:
                out.append(
                    f"- correctness gate: quipu on PostgreSQL live statements = pyoxigraph count = {ox_count:,} (ok)"
                )
        out.append("")

        # W2: small durable transactions
        tx_results: list[tuple[TxResult, int]] = []
        if args.episodes:
            docs = list(episode_docs.episodes(args.episodes, args.seed, args.episode_format))
            progress(f"W2 quipu: {args.episodes:,} episode transactions")
            tx_results.append(quipu_episodes(docs, args.episode_format, workdir))
            progress(f"  {tx_results[-1][0].per_second:,.0f} tx/s")
            progress("W2 pyoxigraph in-memory")
            tx_results.append(pyoxigraph_memory_episodes(docs, args.episode_format))
            if not args.no_ox_disk:
                progress("W2 pyoxigraph on-disk")
                try:
                    tx_results.append(pyoxigraph_disk_episodes(docs, args.episode_format, workdir))
                except (OSError, RuntimeError) as exc:
                    progress(f"  pyoxigraph on-disk store failed: {exc}")
            progress("W2 quipu, synchronous=FULL (a quarter of the episodes)")
            # FULL fsyncs the WAL at every commit: durable against power loss, not just crashes.
            tx_results.append(
                quipu_episodes(docs[: max(1, len(docs) // 4)], args.episode_format, workdir, "FULL")
            )
            if scratch is not None:
                progress(f"W2 quipu on PostgreSQL: {args.episodes:,} episode transactions")
                tx_results.append(quipu_pg_episodes(docs, args.episode_format, scratch))
                progress(f"  {tx_results[-1][0].per_second:,.0f} tx/s")
                if tx_results[-1][1] != tx_results[1][1]:
                    failures.append(
                        f"correctness gate: quipu on PostgreSQL kept {tx_results[-1][1]:,} live episode "
                        f"statements but pyoxigraph has {tx_results[1][1]:,}"
                    )
            out.append(
                f"## W2 small transactions ({args.episodes:,} episodes of "
                f"{episode_docs.TRIPLES_PER_EPISODE} triples, {args.episode_format})"
            )
            out.append("")
            out.append(
                table(
                    ["store", "tx/s", "triples/s", "p50 ms", "p99 ms", "max ms", "statements", "note"],
                    [
                        [
                            r.name,
                            fmt_rate(r.per_second),
                            fmt_rate(r.per_second * episode_docs.TRIPLES_PER_EPISODE),
                            f"{r.percentile(50):.2f}",
                            f"{r.percentile(99):.2f}",
                            f"{max(r.latencies) * 1000:.2f}",
                            f"{count:,}",
                            r.note,
                        ]
                        for r, count in tx_results
                    ],
                    [False, True, True, True, True, True, True, False],
                )
            )
            out.append("")
            if len(tx_results) >= 2 and tx_results[0][1] != tx_results[1][1]:
                failures.append(
                    f"correctness gate: quipu kept {tx_results[0][1]:,} live episode statements "
                    f"but pyoxigraph has {tx_results[1][1]:,}"
                )

    # Targets
    target_rows = []
    if "quipu" in medians and ox_time:
        ratio = medians["quipu"] / ox_time
        scope = "" if lines >= LARGE else f" (target is set at 1M; this run is {lines:,})"
        target_rows.append(
            [
                f"bulk load ≤ {BULK_TARGET_RATIO:.0f}× pyoxigraph in-memory at 1M",
                f"{ratio:.2f}×{scope}",
                verdict(ratio <= BULK_TARGET_RATIO),
            ]
        )
    if "quipu-pg" in medians and "quipu" in medians:
        pg_ratio = medians["quipu-pg"] / medians["quipu"]
        scope = "" if lines >= LARGE else f" (target is set at 1M; this run is {lines:,})"
        target_rows.append(
            [
                f"PostgreSQL bulk load ≤ {PG_BULK_TARGET_RATIO:.0f}× SQLite's",
                f"{pg_ratio:.2f}×{scope}",
                verdict(pg_ratio <= PG_BULK_TARGET_RATIO),
            ]
        )
    if tx_results:
        rate = tx_results[0][0].per_second
        target_rows.append(
            [f"≥ {TX_TARGET:,} small durable transactions/s", f"{rate:,.0f} tx/s", verdict(rate >= TX_TARGET)]
        )
    if target_rows:
        out.append("## Targets (informational)")
        out.append("")
        out.append(table(["target", "measured", "verdict"], target_rows, [False, True, False]))
        out.append("")

    print("\n".join(out), flush=True)
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
