"""The soak benchmark: a real ``quipu-server`` under mixed load, then killed and restarted.

    python -m bench.soak [--seconds 60] [--writers 8] [--readers 2] [--heavy 4]
                         [--seed-entities 3000] [--kill-after SECONDS] [--json]

A fresh SQLite store is served by the ``quipu-server`` console script in a child process, with
the settings a user gets by default. One ``/knot`` loads ``--seed-entities`` entities with three
statements each. Then, for ``--seconds``:

- ``--writers`` threads write small documents (three statements about a fresh subject) through
  ``POST /knot``, each on its own keep-alive connection, and keep every acknowledged subject;
- ``--readers`` threads run point lookups (``SELECT ?p ?o WHERE { <seed entity> ?p ?o }``) and
  record each one's latency;
- ``--heavy`` threads run, back to back, a cartesian ``COUNT(*)`` over three patterns, which no
  budget lets finish: each ends in a 4xx refusal, and each holds a read snapshot while it runs;
- a sampler reads the size of ``<db>-wal`` every 20 ms.

The server is then stopped cleanly (SIGTERM) and the log's size read again. A second, shorter
run (``--kill-after``) is ended by SIGKILL. The server restarts on the same file, and the run
checks two things: every subject acknowledged before the kill is there (``/query``), and the log
was emptied at open.

Targets (issue 15): the log stays under 64 MiB throughout and is under 4 MiB after a clean
shutdown; point lookups have a p99 under 50 ms while the heavy queries run; no response is 5xx;
no acknowledged write is lost. No peer server runs this load, so the reference column is the
target, and the ratio is the measurement over it (under 1 meets a ceiling). Exit status 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from bench.ingest import environment, progress, table

MIB: Final = 1024 * 1024
WAL_PEAK_TARGET: Final = 64 * MIB
WAL_AFTER_TARGET: Final = 4 * MIB
LOOKUP_P99_TARGET_MS: Final = 50.0
EX: Final = "urn:quipu:soak:"
HEAVY_QUERY: Final = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"
START_TIMEOUT: Final = 180.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``quipu-server --db DB`` in a child process; ``stop`` is SIGTERM, ``kill`` SIGKILL."""

    def __init__(self, db: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.db = db
        self.url = f"http://127.0.0.1:{_free_port()}"
        script = Path(sys.executable).parent / "quipu-server"
        with log.open("ab") as err:
            self.proc = subprocess.Popen(
                [str(script), "--db", str(db), "--bind", self.url.removeprefix("http://")],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "QUIPU_CONFIG": os.devnull, **(env or {})},
            )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"quipu-server did not start (its log: {log})")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


def wal_size(db: Path) -> int:
    try:
        return os.stat(f"{db}-wal").st_size
    except FileNotFoundError:
        return 0


def seed_document(entities: int) -> str:
    return "\n".join(
        f'<{EX}seed/e{i}> <{EX}p{i % 3}> <{EX}seed/e{(i + 1) % entities}> ; <{EX}name> "seed entity {i}" ;'
        f" <{EX}rank> {i} ."
        for i in range(entities)
    )


def write_document(writer: int, i: int) -> tuple[str, str]:
    subject = f"{EX}w{writer}/s{i}"
    turtle = f'<{subject}> a <{EX}Written> ; <{EX}name> "writer {writer} item {i}" ; <{EX}rank> {i} .'
    return subject, turtle


@dataclass
class Load:
    """What the client threads saw."""

    statuses: Counter[int] = field(default_factory=Counter)
    acknowledged: list[str] = field(default_factory=list)
    lookups_ms: list[float] = field(default_factory=list)
    heavy_statuses: Counter[int] = field(default_factory=Counter)
    transport_errors: int = 0
    wal_peak: int = 0
    writes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _loop(stop: threading.Event, body: Callable[[httpx.Client, int], None], url: str, load: Load) -> None:
    i = 0
    with httpx.Client(base_url=url, timeout=120) as client:
        while not stop.is_set():
            try:
                body(client, i)
            except httpx.TransportError:
                with load.lock:
                    load.transport_errors += 1
            i += 1


def run_load(
    url: str, db: Path, load: Load, seconds: float, writers: int, readers: int, heavy: int, seeds: int
) -> float:
    """Drive the load for ``seconds``; returns the wall time the writers had."""
    stop = threading.Event()

    def writer(n: int) -> Callable[[httpx.Client, int], None]:
        def body(client: httpx.Client, i: int) -> None:
            subject, turtle = write_document(n, i)
            r = client.post("/knot", json={"turtle": turtle})
            with load.lock:
                load.statuses[r.status_code] += 1
                if r.status_code == 200:
                    load.acknowledged.append(subject)
                    load.writes += 1

        return body

    def heavy_body(client: httpx.Client, i: int) -> None:
        r = client.post("/query", json={"query": HEAVY_QUERY})
        with load.lock:
            load.heavy_statuses[r.status_code] += 1
            load.statuses[r.status_code] += 1

    def sampler() -> None:
        while not stop.is_set():
            load.wal_peak = max(load.wal_peak, wal_size(db))
            time.sleep(0.02)

    threads = [threading.Thread(target=sampler, daemon=True)]
    threads += [
        threading.Thread(target=_loop, args=(stop, writer(n), url, load), daemon=True) for n in range(writers)
    ]
    threads += [
        threading.Thread(target=_loop, args=(stop, heavy_body, url, load), daemon=True) for _ in range(heavy)
    ]
    # The readers run in a process of their own: in this one, fourteen busy client threads share
    # one GIL, and a lookup's measured latency would be mostly the client waiting for it.
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    lookup_process = spawn.Process(target=_lookups, args=(url, readers, seeds, seconds, results))
    began = time.monotonic()
    lookup_process.start()
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    wall = time.monotonic() - began
    statuses, latencies, transport_errors = results.get(timeout=300)
    lookup_process.join(timeout=60)
    with load.lock:
        load.statuses.update(statuses)
        load.lookups_ms.extend(latencies)
        load.transport_errors += transport_errors
    for t in threads:
        t.join(timeout=180)
    return wall


def _lookups(url: str, readers: int, seeds: int, seconds: float, results: Any) -> None:
    """``readers`` threads of point lookups for ``seconds`` (in the child process); puts
    (statuses, latencies in ms, transport errors) on ``results``."""
    load = Load()
    stop = threading.Event()

    def reader(n: int) -> Callable[[httpx.Client, int], None]:
        def body(client: httpx.Client, i: int) -> None:
            query = f"SELECT ?p ?o WHERE {{ <{EX}seed/e{(i * 7 + n) % seeds}> ?p ?o }}"
            began = time.perf_counter()
            r = client.post("/query", json={"query": query})
            took = (time.perf_counter() - began) * 1000
            with load.lock:
                load.statuses[r.status_code] += 1
                if r.status_code == 200:
                    load.lookups_ms.append(took)
            time.sleep(0.01)

        return body

    threads = [
        threading.Thread(target=_loop, args=(stop, reader(n), url, load), daemon=True) for n in range(readers)
    ]
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=180)
    results.put((dict(load.statuses), load.lookups_ms, load.transport_errors))


def present_subjects(url: str) -> set[str]:
    query = f"SELECT ?s WHERE {{ ?s a <{EX}Written> }}"
    r = httpx.post(
        url + "/query",
        json={"query": query},
        headers={"Accept": "application/sparql-results+json"},
        timeout=120,
    )
    r.raise_for_status()
    return {b["s"]["value"] for b in r.json()["results"]["bindings"]}


def wal_log_lines(log: Path) -> tuple[int, int]:
    """How often the server's log says the WAL was truncated under load, and was not yet."""
    truncations = retries = 0
    for line in log.read_text(errors="replace").splitlines():
        if '"quipu.store.wal"' in line or "write-ahead log at" in line:
            truncations += "checkpointed and truncated" in line
            retries += "retrying" in line
    return truncations, retries


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]  # nearest rank


def _mib(n: int) -> str:
    return f"{n / MIB:.1f} MiB"


@dataclass
class Result:
    soak_seconds: float
    writes_per_s: float
    wal_peak: int
    wal_after_shutdown: int
    lookup_p50_ms: float
    lookup_p99_ms: float
    lookups: int
    heavy_statuses: dict[int, int]
    server_errors: int
    busy_refusals: int
    transport_errors: int
    wal_truncations: int
    wal_retries: int
    kill_acknowledged: int
    kill_lost: int
    wal_at_kill: int
    wal_after_restart: int

    def checks(self) -> list[tuple[str, str, str, str, bool]]:
        """(metric, quipu, target, ratio, met) rows."""
        return [
            (
                "WAL peak during the soak",
                _mib(self.wal_peak),
                "< 64 MiB",
                f"{self.wal_peak / WAL_PEAK_TARGET:.2f}",
                self.wal_peak < WAL_PEAK_TARGET,
            ),
            (
                "WAL after clean shutdown",
                _mib(self.wal_after_shutdown),
                "< 4 MiB",
                f"{self.wal_after_shutdown / WAL_AFTER_TARGET:.2f}",
                self.wal_after_shutdown < WAL_AFTER_TARGET,
            ),
            (
                "point lookup p99 (heavy queries running)",
                f"{self.lookup_p99_ms:.1f} ms",
                "< 50 ms",
                f"{self.lookup_p99_ms / LOOKUP_P99_TARGET_MS:.2f}",
                self.lookup_p99_ms < LOOKUP_P99_TARGET_MS,
            ),
            (
                "5xx responses (503 busy refusals apart)",
                str(self.server_errors),
                "0",
                "-",
                self.server_errors == 0,
            ),
            (
                "acknowledged writes lost to kill -9",
                f"{self.kill_lost} of {self.kill_acknowledged}",
                "0",
                "-",
                self.kill_lost == 0 and self.kill_acknowledged > 0,
            ),
            (
                "WAL after restart (left at kill: " + _mib(self.wal_at_kill) + ")",
                _mib(self.wal_after_restart),
                "< 4 MiB",
                f"{self.wal_after_restart / WAL_AFTER_TARGET:.2f}",
                self.wal_after_restart < WAL_AFTER_TARGET,
            ),
        ]


def run(
    seconds: float = 60.0,
    writers: int = 8,
    readers: int = 2,
    heavy: int = 4,
    seeds: int = 3000,
    kill_after: float | None = None,
    workdir: Path | None = None,
    server_env: dict[str, str] | None = None,
) -> Result:
    """The soak, then the killed run and the restart; ``server_env`` adds ``QUIPU_*`` settings."""
    with tempfile.TemporaryDirectory(prefix="quipu-soak-", dir=workdir) as tmp:
        db = Path(tmp) / "soak.db"
        log = Path(tmp) / "server.log"
        server = ServerProcess(db, log, server_env)
        try:
            r = httpx.post(server.url + "/knot", json={"turtle": seed_document(seeds)}, timeout=300)
            r.raise_for_status()
            progress(f"seeded {seeds:,} entities; soaking for {seconds:g} s")
            load = Load()
            wall = run_load(server.url, db, load, seconds, writers, readers, heavy, seeds)
        finally:
            server.stop()
        after = wal_size(db)
        truncations, retries = wal_log_lines(log)
        progress(f"stopped cleanly; {load.writes:,} writes; WAL {after / MIB:.1f} MiB")

        kill_load = Load()
        server = ServerProcess(db, log, server_env)
        try:
            kill_seconds = kill_after if kill_after is not None else max(3.0, seconds / 4)
            progress(f"second run, ended by SIGKILL after {kill_seconds:g} s")
            stopper = threading.Timer(kill_seconds, server.kill)
            stopper.start()
            run_load(server.url, db, kill_load, kill_seconds + 0.5, writers, readers, heavy, seeds)
            stopper.join()
        finally:
            server.kill()
        at_kill = wal_size(db)
        server = ServerProcess(db, log, server_env)
        try:
            after_restart = wal_size(db)
            present = present_subjects(server.url)
        finally:
            server.stop()
        lost = len(set(kill_load.acknowledged) - present) + len(set(load.acknowledged) - present)
        seen = load.statuses + kill_load.statuses
        # 503 server_busy with Retry-After is the designed answer to more heavy queries than
        # slots (server.max_concurrent_queries), not a failure: it is counted on its own.
        errors = sum(n for status, n in seen.items() if status >= 500 and status != 503)
        if errors:
            progress("server log tail:\n" + log.read_text(errors="replace")[-3000:])
        return Result(
            soak_seconds=wall,
            writes_per_s=load.writes / wall,
            wal_peak=load.wal_peak,
            wal_after_shutdown=after,
            lookup_p50_ms=percentile(load.lookups_ms, 50),
            lookup_p99_ms=percentile(load.lookups_ms, 99),
            lookups=len(load.lookups_ms),
            heavy_statuses=dict(load.heavy_statuses),
            server_errors=errors,
            busy_refusals=seen[503],
            transport_errors=load.transport_errors + 0,
            wal_truncations=truncations,
            wal_retries=retries,
            kill_acknowledged=len(kill_load.acknowledged),
            kill_lost=lost,
            wal_at_kill=at_kill,
            wal_after_restart=after_restart,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--heavy", type=int, default=4)
    parser.add_argument("--seed-entities", type=int, default=3000)
    parser.add_argument(
        "--kill-after",
        type=float,
        default=None,
        help="seconds of the SIGKILL run (default: a quarter of --seconds, at least 3)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = run(args.seconds, args.writers, args.readers, args.heavy, args.seed_entities, args.kill_after)
    rows = result.checks()
    if args.json:
        print(json.dumps({**result.__dict__, "met": all(r[4] for r in rows)}))
    else:
        print("## quipu soak\n")
        print(environment())
        print(
            f"- {args.writers} writers, {args.readers} point readers, {args.heavy} heavy queries, {result.soak_seconds:.0f} s;"
            f" {result.writes_per_s:.0f} writes/s; {result.lookups:,} lookups (p50 {result.lookup_p50_ms:.1f} ms);"
            f" heavy query answers {dict(sorted(result.heavy_statuses.items()))}; 503 busy refusals {result.busy_refusals};"
            f" transport errors {result.transport_errors};"
            f" WAL truncations under load {result.wal_truncations} ({result.wal_retries} waits that ran out)\n"
        )
        print(
            table(
                ["metric", "quipu", "target (reference)", "ratio", "verdict"],
                [[m, q, t, ratio, "HIT" if ok else "MISS"] for m, q, t, ratio, ok in rows],
                [False, True, True, True, False],
            )
        )
    return 0 if all(r[4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
