"""The REST benchmark: quipu's HTTP service against the same calls made in process.

    python -m bench.rest [--triples 100000] [--seed 42] [--lookups 2000] [--knots 500]
                         [--clients 8] [--per-client 250] [--warmup 50] [--no-access-log]

One LUBM-shaped data set (``bench.lubm``, cached under ``bench/.data/`` like the other benchmarks')
is loaded into a fresh quipu file store with one ``knot``. Then, every loop a fixed count:

1. In process, on the loading ``KnowledgeBase``: ``kb.query_result`` of a point lookup
   (``SELECT ?p ?o WHERE { <professor> ?p ?o }``, rotating over eight professors of Department0:
   the SPARQL benchmark's Q6 shape) and ``kb.knot`` of a small fresh Turtle document (3 triples).
2. The store is closed and the real app (``quipu.rest.app.create_app``) is served by uvicorn in a
   child process on a loopback socket, with a shared bearer token and, unless
   ``--no-access-log``, quipu's JSON access log written to a file, as a production server logs.
   The server process has a core of its own, so the client's Python does not share its GIL.
3. Over HTTP, one keep-alive ``httpx.Client``: ``GET /health`` (the floor: transport, middleware
   and the route guard, no store work), ``POST /query`` with the same lookups and ``POST /knot``
   with the same kind of documents (each one fresh).
4. ``--clients`` threads, each with its own ``httpx.Client``, ``--per-client`` requests each:
   once lookups only, once mixed (every fifth request a ``/knot``, the rest lookups).

Latencies are per call (median and nearest-rank p99, ms); req/s is calls over the loop's wall
time. The ratio column is a row's median over the in-process median of the same operation, so
the HTTP overhead shows. The target (informational, printed as met/missed) is a point lookup over
HTTP with a median under 2 ms. The run exits 1 when a response is not 200 or a lookup's row count
over HTTP differs from the in-process count.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from bench.ingest import DATA_DIR, TxResult, _timed, dataset, environment, progress, table, version
from bench.sparql import DEPT0, UB, QuipuEngine, quipu_rows

LOOKUP_TARGET_MS: Final = 2.0  # point lookup over HTTP, median
SUBJECTS: Final = tuple(f"{DEPT0}/FullProfessor{i}" for i in range(4)) + tuple(
    f"{DEPT0}/AssociateProfessor{i}" for i in range(4)
)  # every generated department has at least 4 of each
MIXED_EVERY: Final = 5  # in the mixed load, every fifth request is a /knot
KNOT_TRIPLES: Final = 3
REPO: Final = Path(__file__).resolve().parent.parent
START_TIMEOUT: Final = 60.0  # seconds for the server to answer /health
JOIN_TIMEOUT: Final = 300.0  # seconds for the concurrent clients to finish
FAILURES_SHOWN: Final = 20
REST_APP: Final = "quipu.rest.app:create_app"  # what the server serves unless told otherwise


def lookup_query(i: int) -> str:
    return f"SELECT ?p ?o WHERE {{ <{SUBJECTS[i % len(SUBJECTS)]}> ?p ?o }}"


def knot_doc(tag: str, i: int) -> str:
    """A small document about a subject no other call uses."""
    return (
        f"@prefix ub: <{UB}> .\n"
        f'<http://quipu.bench/rest/{tag}/{i}> a ub:UndergraduateStudent ; ub:name "Bench {tag} {i}" ; '
        f"ub:memberOf <{DEPT0}> .\n"
    )


# -- the server ------------------------------------------------------------------------------


def serve_fd(fd: int, db: str, access_log: bool, factory: str = REST_APP) -> None:
    """Child-process entry: serve the app on an inherited listening socket until SIGTERM.

    ``factory`` names the app builder as ``module:function`` (``Settings -> app``). The token comes
    from ``QUIPU_SERVER__AUTH_TOKEN`` (kept out of the command line).
    """
    import importlib

    import uvicorn

    from quipu.config import load_settings
    from quipu.rest import logs

    module, _, function = factory.partition(":")
    app = getattr(importlib.import_module(module), function)(load_settings(store={"db": db}))
    config = uvicorn.Config(app, log_level="warning", access_log=False, log_config=None)
    if access_log:
        logs.configure("info")  # quipu.access JSON lines on stderr, which the parent sends to a file
    uvicorn.Server(config).run(sockets=[socket.socket(fileno=fd)])


class Server:
    """``serve_fd`` in a child process on a loopback port; stopped (SIGTERM, then kill) on exit."""

    def __init__(self, db: Path, token: str, log: Path, access_log: bool, factory: str = REST_APP) -> None:
        self.db, self.token, self.log, self.access_log, self.factory = db, token, log, access_log, factory
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Server:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        env = {**os.environ, "QUIPU_SERVER__AUTH_TOKEN": self.token}
        code = (
            "import sys; from bench.rest import serve_fd; "
            "serve_fd(int(sys.argv[1]), sys.argv[2], sys.argv[3] == '1', sys.argv[4])"
        )
        argv = [
            sys.executable,
            "-c",
            code,
            str(listener.fileno()),
            str(self.db),
            "1" if self.access_log else "0",
            self.factory,
        ]
        with self.log.open("wb") as err:
            self._proc = subprocess.Popen(
                argv, cwd=REPO, env=env, pass_fds=(listener.fileno(),), stdout=err, stderr=err
            )
        listener.close()  # the child holds its own copy
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self._proc.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(
            f"the server did not answer /health within {START_TIMEOUT:g} s:\n{self.log_tail()}"
        )

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()  # uvicorn shuts down gracefully; the lifespan closes the store
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def client(self) -> httpx.Client:
        """A keep-alive client that sends the token (reads ignore it, writes need it)."""
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30.0
        )


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Checks:
    """Everything a run got wrong; the benchmark exits 1 when there is any."""

    failures: list[str] = field(default_factory=list)
    tx_ids: list[int] = field(default_factory=list)

    def fail(self, message: str) -> None:
        if len(self.failures) < FAILURES_SHOWN:
            self.failures.append(message)
        elif len(self.failures) == FAILURES_SHOWN:
            self.failures.append("(further failures not listed)")

    def response(self, what: str, response: httpx.Response) -> dict[str, Any] | None:
        if response.status_code != 200:
            self.fail(f"{what}: HTTP {response.status_code}: {response.text[:300]}")
            return None
        body: dict[str, Any] = response.json()
        return body

    def lookup(self, what: str, response: httpx.Response, expected: int) -> None:
        body = self.response(what, response)
        if body is not None and body.get("count") != expected:
            self.fail(f"{what}: count {body.get('count')!r}, in process {expected}")

    def knot(self, what: str, response: httpx.Response) -> None:
        body = self.response(what, response)
        if body is None:
            return
        if body.get("conforms") is not True or body.get("count") != KNOT_TRIPLES:
            self.fail(f"{what}: unexpected body {json.dumps(body)[:300]}")
        elif isinstance(body.get("tx_id"), int):
            self.tx_ids.append(body["tx_id"])


def timed(calls: int, call: Callable[[int], object]) -> tuple[list[float], float]:
    """``call(0..calls-1)`` in turn: per-call latencies (s) and the wall time."""
    gc.collect()
    return _timed([str(i) for i in range(calls)], lambda i: call(int(i)))


def warm(calls: int, call: Callable[[int], object]) -> None:
    for i in range(calls):
        call(i)


@dataclass
class Row:
    label: str
    path: str
    result: TxResult
    base: TxResult | None  # the in-process measurement of the same operation


def concurrent(
    server: Server, clients: int, per_client: int, mixed: bool, checks: Checks, expected: Sequence[int]
) -> TxResult:
    """``clients`` threads, each its own keep-alive client, ``per_client`` requests each."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    responses: list[list[tuple[str, int, httpx.Response]]] = [[] for _ in range(clients)]
    barrier = threading.Barrier(clients + 1)
    tag = "mixed" if mixed else "lookups"

    def work(n: int) -> None:
        clock = time.perf_counter
        with server.client() as client:
            client.post("/query", json={"query": lookup_query(n)})  # opens the connection
            barrier.wait()
            for i in range(per_client):
                if mixed and i % MIXED_EVERY == MIXED_EVERY - 1:
                    body: dict[str, Any] = {"turtle": knot_doc(f"{tag}-{n}", i), "source": "bench-rest"}
                    t = clock()
                    response = client.post("/knot", json=body)
                    latencies[n].append(clock() - t)
                    responses[n].append(("knot", i, response))
                else:
                    k = n * per_client + i
                    t = clock()
                    response = client.post("/query", json={"query": lookup_query(k)})
                    latencies[n].append(clock() - t)
                    responses[n].append(("query", k, response))

    gc.collect()
    threads = [threading.Thread(target=work, args=(n,), name=f"bench-client-{n}") for n in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait(timeout=START_TIMEOUT)
    started = time.perf_counter()
    deadline = time.monotonic() + JOIN_TIMEOUT
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    wall = time.perf_counter() - started
    if any(thread.is_alive() for thread in threads):
        raise RuntimeError(f"{tag}: clients still running after {JOIN_TIMEOUT:g} s")
    for n in range(clients):
        if len(responses[n]) != per_client:
            checks.fail(f"{tag}: client {n} made {len(responses[n])} of {per_client} requests")
        for kind, k, response in responses[n]:
            if kind == "knot":
                checks.knot(f"{tag} /knot", response)
            else:
                checks.lookup(f"{tag} /query", response, expected[k % len(SUBJECTS)])
    return TxResult(tag, [x for per in latencies for x in per], wall)


# -- report ----------------------------------------------------------------------------------


def fmt_ms(seconds_ms: float) -> str:
    return f"{seconds_ms:.3f}" if seconds_ms < 1 else f"{seconds_ms:.2f}"


def report_row(row: Row) -> list[str]:
    r = row.result
    median = r.percentile(50)
    ratio = f"{median / row.base.percentile(50):.2f}×" if row.base is not None else "-"
    return [
        row.label,
        row.path,
        f"{len(r.latencies):,}",
        fmt_ms(median),
        fmt_ms(r.percentile(99)),
        f"{r.per_second:,.0f}",
        ratio,
    ]


def server_stack(access_log: bool) -> str:
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    log = "on (JSON lines to a file)" if access_log else "off"
    return (
        f"- server: uvicorn {version('uvicorn')} ({loop} loop, {http} parser), FastAPI {version('fastapi')}, "
        f"in a child process on 127.0.0.1; quipu access log {log}; client: httpx {version('httpx')}"
    )


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rest", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--triples", type=int, default=100_000, help="LUBM-shaped data set size (default 100000)"
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--lookups", type=int, default=2000, help="timed point lookups per path (default 2000)"
    )
    parser.add_argument("--knots", type=int, default=500, help="timed small knots per path (default 500)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent HTTP clients (default 8)")
    parser.add_argument(
        "--per-client", type=int, default=250, help="requests per concurrent client and load (default 250)"
    )
    parser.add_argument(
        "--warmup", type=int, default=50, help="unmeasured calls before each loop (default 50)"
    )
    parser.add_argument("--no-access-log", action="store_true", help="serve without quipu's access log")
    parser.add_argument(
        "--data-dir", type=Path, default=DATA_DIR, help="where generated data sets are cached (bench/.data)"
    )
    args = parser.parse_args(argv)
    if min(args.triples, args.lookups, args.knots, args.clients, args.per_client) < 1 or args.warmup < 0:
        parser.error("--triples, --lookups, --knots, --clients and --per-client must be positive")
    return args


def finish(report: list[str], failures: list[str], passed: str) -> int:
    """Print the report (with ``passed`` when nothing failed), failures on stderr; the exit status."""
    lines = [*report, "", passed] if not failures else report
    print("\n".join(lines), flush=True)
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    path = dataset(args.triples, args.seed, args.data_dir)
    lines = path.read_bytes().count(b"\n")
    checks = Checks()
    token = secrets.token_urlsafe(24)
    knot_label = f"small knot ({KNOT_TRIPLES} triples)"

    with tempfile.TemporaryDirectory(prefix="quipu-bench-rest-") as tmp:
        db = Path(tmp) / "kb.db"
        progress(f"loading {lines:,} triples into {db}")
        started = time.perf_counter()
        engine = QuipuEngine(db)
        engine.load(path)
        load_seconds = time.perf_counter() - started
        progress(f"  loaded in {load_seconds:.2f} s")
        kb = engine.kb
        expected = [quipu_rows(kb.query_result(lookup_query(i))) for i in range(len(SUBJECTS))]
        if min(expected) == 0:
            checks.fail(f"a lookup subject has no statements: {expected}")

        progress(f"in process: {args.lookups:,} lookups, {args.knots:,} knots")
        warm(args.warmup, lambda i: kb.query_result(lookup_query(i)))
        local_lookup = TxResult("lookup", *timed(args.lookups, lambda i: kb.query_result(lookup_query(i))))
        warm(args.warmup, lambda i: kb.knot(knot_doc("warm-local", i), source="bench-rest"))
        local_knot = TxResult(
            "knot", *timed(args.knots, lambda i: kb.knot(knot_doc("local", i), source="bench-rest"))
        )
        engine.close()
        rows = [Row("point lookup", "in process, kb.query_result", local_lookup, local_lookup)]
        knot_rows = [Row(knot_label, "in process, kb.knot", local_knot, local_knot)]

        progress("starting the server")
        with Server(db, token, Path(tmp) / "server.log", not args.no_access_log) as server:
            with server.client() as client:

                def lookup(i: int) -> httpx.Response:
                    return client.post("/query", json={"query": lookup_query(i)})

                def knot(tag: str) -> Callable[[int], httpx.Response]:
                    def send(i: int) -> httpx.Response:
                        body = {"turtle": knot_doc(tag, i), "source": "bench-rest"}
                        return client.post("/knot", json=body)

                    return send

                progress(f"HTTP, one client: {args.lookups:,} /health, lookups, {args.knots:,} knots")
                warm(args.warmup, lambda i: client.get("/health"))
                pings: list[httpx.Response] = []
                floor = TxResult(
                    "health", *timed(args.lookups, lambda i: pings.append(client.get("/health")))
                )
                for response in pings:
                    checks.response("/health", response)
                rows.append(Row("HTTP floor", "HTTP GET /health, 1 keep-alive client", floor, None))
                warm(args.warmup, lookup)
                answers: list[httpx.Response] = []
                http_lookup = TxResult("lookup", *timed(args.lookups, lambda i: answers.append(lookup(i))))
                for i, response in enumerate(answers):
                    checks.lookup("/query", response, expected[i % len(SUBJECTS)])
                rows.append(
                    Row("point lookup", "HTTP POST /query, 1 keep-alive client", http_lookup, local_lookup)
                )

                warm(args.warmup, knot("warm-http"))
                written: list[httpx.Response] = []
                send = knot("http")
                http_knot = TxResult("knot", *timed(args.knots, lambda i: written.append(send(i))))
                for response in written:
                    checks.knot("/knot", response)
                knot_rows.append(
                    Row(knot_label, "HTTP POST /knot, 1 keep-alive client", http_knot, local_knot)
                )

            loads = []
            for mixed in (False, True):
                load = f"mixed, 1 /knot in {MIXED_EVERY}" if mixed else "lookups only"
                progress(f"HTTP, {args.clients} clients × {args.per_client}: {load}")
                result = concurrent(server, args.clients, args.per_client, mixed, checks, expected)
                path_label = f"HTTP, {args.clients} clients × {args.per_client}, {load}"
                loads.append(
                    Row(
                        "mixed" if mixed else "point lookup",
                        path_label,
                        result,
                        None if mixed else local_lookup,
                    )
                )
        rows = [*rows, *knot_rows, *loads]

    if len(set(checks.tx_ids)) != len(checks.tx_ids):
        checks.fail("/knot answered the same tx_id twice")
    median = http_lookup.percentile(50)
    verdict = "met" if median < LOOKUP_TARGET_MS else "missed"
    out = [
        f"# quipu REST benchmark: {lines:,} LUBM-shaped triples (seed {args.seed})",
        "",
        environment(),
        server_stack(not args.no_access_log),
        f"- data set: {path.name}; quipu load {load_seconds:.2f} s; point lookups return "
        f"{min(expected)}-{max(expected)} rows; {args.warmup} unmeasured calls before each single-client loop",
        "",
        table(
            ["operation", "path", "calls", "median ms", "p99 ms", "req/s", "× in process"],
            [report_row(row) for row in rows],
            [False, False, True, True, True, True, True],
        ),
        "",
        "× in process: the row's median over the in-process median of the same operation; "
        "req/s: calls over the loop's wall time.",
        "",
        table(
            ["target", "measured", "verdict"],
            [[f"point lookup over HTTP median < {LOOKUP_TARGET_MS:g} ms", f"{fmt_ms(median)} ms", verdict]],
            [False, True, False],
        ),
    ]
    return finish(
        out,
        checks.failures,
        "Checks: every response was 200, HTTP row counts equal the in-process counts, tx ids unique.",
    )


if __name__ == "__main__":
    sys.exit(main())
