"""The MCP benchmark: one point lookup as a REST call and as an MCP tool call, in process and over the wire.

    python -m bench.mcp [--triples 100000] [--seed 42] [--calls 2000] [--warmup 50]

The REST benchmark's data set and lookup (``bench.rest``: ``SELECT ?p ?o WHERE { <professor> ?p ?o }``
rotating over eight professors of Department0) are loaded into a fresh quipu file store with one
``knot``. Then the same lookup is timed, a fixed count each, as ``POST /query`` / ``quipu_query``:

1. ``kb.query_result`` on the loading ``KnowledgeBase`` (the floor: no HTTP, no MCP).
2. REST in process: ``httpx.AsyncClient(transport=httpx.ASGITransport(app))`` ``POST /query`` into
   ``quipu.rest.app.create_app`` with its lifespan entered.
3. MCP dispatch in process: ``quipu.mcp.dispatch.Dispatcher.call("quipu_query", ...)`` into that app
   (what both MCP transports run per call: type check, in-process REST request, result building),
   then the SDK's ``Client(Server)`` in memory around the same dispatcher (both sides' session
   machinery, no wire). These two rows split what stdio adds to the REST call into our dispatch,
   the SDK's per-call work and the wire.
4. MCP over stdio: the real ``quipu mcp --db PATH`` subprocess, driven by the SDK ``Client`` over one
   session.
5. The real server (``quipu.mcp.http.create_server_app``, what ``quipu-server`` serves) in a child
   process on a loopback socket, as ``bench.rest`` runs it: ``POST /query`` from one keep-alive
   ``httpx.Client``, and ``quipu_query`` over streamable HTTP ``/mcp`` from one SDK ``Client``.

Every server logs its JSON access lines to a file, as production does (``quipu mcp`` always logs
on stderr); the in-process rows log the same way, so every row pays for the lines it writes.
Latencies are per call (median and nearest-rank p99, ms); each row's ratio is its median over the
REST-in-process median. The target (informational, met/missed): an MCP stdio call adds under 1 ms
to the in-process REST call (stdio median minus REST-in-process median). The run exits 1 when a call
fails or a lookup's row count differs from the in-process count.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, TextIO

import anyio
import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from bench.ingest import DATA_DIR, TxResult, dataset, environment, progress, table, version
from bench.rest import (
    REPO,
    SUBJECTS,
    Checks,
    Row,
    Server,
    finish,
    fmt_ms,
    lookup_query,
    report_row,
    server_stack,
)
from bench.rest import timed as timed_sync
from bench.rest import warm as warm_sync
from bench.sparql import QuipuEngine, quipu_rows

STDIO_ADDED_TARGET_MS: Final = 1.0  # MCP stdio median minus REST-in-process median
TOOL: Final = "quipu_query"
SERVER_APP: Final = "quipu.mcp.http:create_server_app"
QUIET: Final = (
    "httpx",
    "alembic",
    "mcp",
)  # as quipu.rest.logs.configure: INFO lines that repeat the access log


# -- timing async calls ----------------------------------------------------------------------


async def atimed(calls: int, call: Callable[[int], Awaitable[object]]) -> tuple[list[float], float]:
    """``await call(0..calls-1)`` in turn: per-call latencies (s) and the wall time."""
    gc.collect()
    clock = time.perf_counter
    latencies: list[float] = []
    started = clock()
    for i in range(calls):
        t = clock()
        await call(i)
        latencies.append(clock() - t)
    return latencies, clock() - started


async def awarm(calls: int, call: Callable[[int], Awaitable[object]]) -> None:
    for i in range(calls):
        await call(i)


def tool_lookup(checks: Checks, what: str, result: CallToolResult, expected: int) -> None:
    if result.is_error:
        text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
        checks.fail(f"{what}: error result: {text[:300]}")
        return
    count = (result.structured_content or {}).get("count")
    if count != expected:
        checks.fail(f"{what}: count {count!r}, in process {expected}")


@contextmanager
def access_log_to(path: Path) -> Iterator[None]:
    """quipu's JSON access log into ``path`` for the in-process rows (as ``logs.configure`` on stderr)."""
    from quipu.rest.logs import JsonFormatter

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in QUIET}
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter())
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        for name, old in levels.items():
            logging.getLogger(name).setLevel(old)
        handler.close()


# -- the four ways ---------------------------------------------------------------------------


def lookup_args(i: int) -> dict[str, Any]:
    return {"query": lookup_query(i)}


async def in_process(
    db: Path, calls: int, warmup: int, checks: Checks, expected: list[int]
) -> tuple[TxResult, TxResult, TxResult]:
    """REST in process (ASGI transport, lifespan entered), the MCP dispatcher into the same app, and
    the SDK's client and server in memory around that dispatcher."""
    from quipu.config import load_settings
    from quipu.mcp.dispatch import IN_PROCESS, Dispatcher
    from quipu.mcp.http import served_registry
    from quipu.mcp.server import build_server
    from quipu.rest.app import create_app

    settings = load_settings(store={"db": str(db)})
    app = create_app(settings)
    dispatcher = Dispatcher(app, served_registry(app, settings))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url=IN_PROCESS, timeout=None) as client,
    ):
        answers: list[httpx.Response] = []

        async def rest(i: int) -> httpx.Response:
            return await client.post("/query", json=lookup_args(i))

        async def rest_kept(i: int) -> None:
            answers.append(await rest(i))

        await awarm(warmup, rest)
        rest_result = TxResult("rest", *await atimed(calls, rest_kept))
        for i, response in enumerate(answers):
            checks.lookup("REST in process", response, expected[i % len(SUBJECTS)])

        results: list[CallToolResult] = []

        async def dispatch(i: int) -> CallToolResult:
            return await dispatcher.call(TOOL, lookup_args(i), None)

        async def dispatch_kept(i: int) -> None:
            results.append(await dispatch(i))

        await awarm(warmup, dispatch)
        dispatch_result = TxResult("dispatch", *await atimed(calls, dispatch_kept))
        for i, result in enumerate(results):
            tool_lookup(checks, "MCP dispatch in process", result, expected[i % len(SUBJECTS)])

        server = build_server(dispatcher.registry, dispatcher, lambda _ctx: None)
        memory = await mcp_client(Client(server), "MCP SDK in memory", calls, warmup, checks, expected)
        await dispatcher.aclose()
    return rest_result, dispatch_result, memory


async def mcp_client(
    client: Client, what: str, calls: int, warmup: int, checks: Checks, expected: list[int]
) -> TxResult:
    """``calls`` tool calls over one connected SDK client, after ``warmup`` unmeasured ones."""
    results: list[CallToolResult] = []

    async def call(i: int) -> CallToolResult:
        return await client.call_tool(TOOL, lookup_args(i))

    async def kept(i: int) -> None:
        results.append(await call(i))

    async with client:
        await awarm(warmup, call)
        result = TxResult(what, *await atimed(calls, kept))
    for i, answer in enumerate(results):
        tool_lookup(checks, what, answer, expected[i % len(SUBJECTS)])
    return result


def quipu_command() -> str:
    """The ``quipu`` console script of this environment (beside the interpreter, else on PATH)."""
    beside = Path(sys.executable).with_name("quipu")
    found = str(beside) if beside.is_file() else shutil.which("quipu")
    if found is None:
        raise RuntimeError("the quipu console script is not installed: run `uv sync` first")
    return found


async def over_stdio(
    db: Path, errlog: TextIO, calls: int, warmup: int, checks: Checks, expected: list[int]
) -> TxResult:
    # The whole environment, as the REST server child gets it (the SDK passes only a few by default).
    params = StdioServerParameters(
        command=quipu_command(), args=["mcp", "--db", str(db)], env=dict(os.environ), cwd=str(REPO)
    )
    # The SDK's Client(StdioServerParameters) with the server's stderr (its logs) sent to a file.
    client = Client(stdio_client(params, errlog=errlog))
    return await mcp_client(client, "MCP over stdio", calls, warmup, checks, expected)


async def over_http(server: Server, calls: int, warmup: int, checks: Checks, expected: list[int]) -> TxResult:
    headers = {"Authorization": f"Bearer {server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30.0) as http:  # the SDK's HTTP client
        client = Client(streamable_http_client(f"{server.url}/mcp", http_client=http))
        return await mcp_client(client, "MCP over HTTP", calls, warmup, checks, expected)


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--triples", type=int, default=100_000, help="LUBM-shaped data set size (default 100000)"
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--calls", type=int, default=2000, help="timed point lookups per way (default 2000)")
    parser.add_argument(
        "--warmup", type=int, default=50, help="unmeasured calls before each loop (default 50)"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=DATA_DIR, help="where generated data sets are cached (bench/.data)"
    )
    args = parser.parse_args(argv)
    if min(args.triples, args.calls) < 1 or args.warmup < 0:
        parser.error("--triples and --calls must be positive, --warmup not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    path = dataset(args.triples, args.seed, args.data_dir)
    lines = path.read_bytes().count(b"\n")
    checks = Checks()
    token = secrets.token_urlsafe(24)
    calls, warmup = args.calls, args.warmup

    with tempfile.TemporaryDirectory(prefix="quipu-bench-mcp-") as tmp:
        work = Path(tmp)
        db = work / "kb.db"
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
        progress(f"in process: {calls:,} lookups each through kb, the REST app, the dispatcher, the SDK")
        warm_sync(warmup, lambda i: kb.query_result(lookup_query(i)))
        floor = TxResult("kb", *timed_sync(calls, lambda i: kb.query_result(lookup_query(i))))
        engine.close()

        with access_log_to(work / "in-process.log"):
            rest_local, dispatch_local, memory = anyio.run(in_process, db, calls, warmup, checks, expected)

        progress(f"MCP over stdio: {calls:,} tool calls through `quipu mcp --db`")
        with (work / "stdio.log").open("w", encoding="utf-8") as errlog:
            stdio = anyio.run(over_stdio, db, errlog, calls, warmup, checks, expected)

        progress("starting the server (REST + /mcp)")
        with Server(db, token, work / "server.log", True, factory=SERVER_APP) as server:
            progress(f"HTTP: {calls:,} POST /query, {calls:,} tool calls over /mcp")
            with server.client() as client:
                answers: list[httpx.Response] = []

                def lookup(i: int) -> httpx.Response:
                    return client.post("/query", json=lookup_args(i))

                warm_sync(warmup, lookup)
                loopback = TxResult("loopback", *timed_sync(calls, lambda i: answers.append(lookup(i))))
                for i, response in enumerate(answers):
                    checks.lookup("REST on loopback", response, expected[i % len(SUBJECTS)])
            http = anyio.run(over_http, server, calls, warmup, checks, expected)

    rows = [
        Row("floor", "in process, kb.query_result (no HTTP, no MCP)", floor, rest_local),
        Row("REST in process", "ASGI transport, POST /query, lifespan entered", rest_local, rest_local),
        Row(
            "MCP dispatch in process",
            f"Dispatcher.call({TOOL}) into the same app",
            dispatch_local,
            rest_local,
        ),
        Row("MCP SDK in memory", f"SDK Client(Server) in process, no wire, {TOOL}", memory, rest_local),
        Row("REST on loopback", "HTTP POST /query, 1 keep-alive client", loopback, rest_local),
        Row("MCP over stdio", f"`quipu mcp --db` subprocess, 1 SDK session, {TOOL}", stdio, rest_local),
        Row("MCP over HTTP", f"POST /mcp (stateless, JSON), 1 SDK client, {TOOL}", http, rest_local),
    ]
    added = stdio.percentile(50) - rest_local.percentile(50)
    verdict = "met" if added < STDIO_ADDED_TARGET_MS else "missed"
    out = [
        f"# quipu MCP benchmark: {lines:,} LUBM-shaped triples (seed {args.seed})",
        "",
        environment(),
        server_stack(True),
        f"- MCP: mcp {version('mcp')} (SDK client and server, protocol era chosen by the client's "
        f"default mode); every row writes quipu's JSON access log to a file",
        f"- data set: {path.name}; quipu load {load_seconds:.2f} s; point lookups return "
        f"{min(expected)}-{max(expected)} rows; {warmup} unmeasured calls before each loop",
        "",
        table(
            ["way", "path", "calls", "median ms", "p99 ms", "calls/s", "× REST in process"],
            [report_row(row) for row in rows],
            [False, False, True, True, True, True, True],
        ),
        "",
        "× REST in process: the row's median over the REST-in-process median; "
        "calls/s: calls over the loop's wall time.",
        "",
        table(
            ["target", "measured", "verdict"],
            [
                [
                    f"an MCP stdio call adds under {STDIO_ADDED_TARGET_MS:g} ms to the in-process REST call",
                    f"{fmt_ms(stdio.percentile(50))} − {fmt_ms(rest_local.percentile(50))} = "
                    f"{fmt_ms(added)} ms",
                    verdict,
                ]
            ],
            [False, True, False],
        ),
    ]
    return finish(
        out, checks.failures, "Checks: every call succeeded and every row count equals the in-process count."
    )


if __name__ == "__main__":
    sys.exit(main())
