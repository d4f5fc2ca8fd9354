"""The logic memory benchmark: tool latency over stdio MCP and in process, and restart time.

    python -m bench.logic [--calls 10000] [--queries 1000] [--facts 100000] [--journal 10000]

Each measurement runs in a fresh temporary project (``zpm init``'s layout, quipu.logic.project).

1. **Tool latency**, over two paths: in process (``LogicHost(project).service()``, the
   ``LogicService`` the REST routes call) and over the stdio MCP transport (a real ``zpm serve``
   subprocess, one JSON-RPC line out, wait for the response line, as an MCP client does; R-T3
   allows no pipelining anyway). Per path: ``--calls`` ``remember_fact`` calls, each durable (one
   journal batch, written and fsynced before the answer, R-W3), then ``--queries``
   ``query_logic`` calls of ``ancestor(n0, X)`` over a ``--chain``-long ``parent`` chain (two
   ``define_rule`` rules, a recursive one included). Every answer is checked: the exact
   ``Asserted: ...`` text, the exact solution list, and afterwards that the journal holds every
   fact written.
2. **Restart** with a ``--facts`` snapshot and a ``--journal``-entry journal on top of it, both
   written with the snapshot and journal modules (the bytes ``save_snapshot`` and
   ``remember_fact`` would write). Timed ``--restarts`` times each: ``LogicRuntime.open`` (start
   the engine, mount, load the snapshot, replay the journal) and a fresh ``zpm serve`` from
   ``Popen`` until its first answered ``tools/call`` (interpreter start, imports, ``initialize``,
   then the lazily opened runtime and one query). The query asks for the last snapshot fact and
   the last journal fact together, so a partial load fails the run.
3. **Start-up** (bench/startup.py): ``--startup-runs`` spawns each of ``zpm serve`` and ``quipu
   mcp``, timed to the ``initialize`` answer, the ``tools/list`` answer and a first tool call,
   beside the interpreter's own start as the floor.

Latencies are per call: median and nearest-rank p99, in ms; calls/s is calls over the loop's wall
time. Targets are informational (PASS/MISS never changes the exit status). The run exits 1 when an
answer is wrong, a write is missing from the journal, or a server does not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final

from bench import startup
from bench.ingest import TxResult, environment, progress, table, verdict
from bench.rest import finish, fmt_ms, timed, warm
from bench.startup import JsonRpcPipe

QUERY_TARGET_MS: Final = 1.0  # query_logic over stdio, median
RESTART_TARGET_S: Final = 2.0  # 100k-fact snapshot + 10k-entry journal
WAIT: Final = 120.0  # seconds for any one response (a first call includes the whole load)
SNAPSHOT_NAME: Final = "bench-restart"
INITIALIZE: Final = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "quipu-bench-logic", "version": "1"},
}


# -- facts and checks ------------------------------------------------------------------------


def bench_fact(prefix: str, i: int) -> str:
    return f"bench_fact({prefix}{i}, v{i})"


def chain_facts(length: int) -> list[str]:
    return [f"parent(n{i}, n{i + 1})" for i in range(length)]


RULES: Final = (("ancestor(X, Y)", "parent(X, Y)"), ("ancestor(X, Z)", "parent(X, Y), ancestor(Y, Z)"))
QUERY: Final = "ancestor(n0, X)"


def query_answer(length: int) -> str:
    """The exact ``query_logic`` text for ``QUERY`` over a chain of ``length`` (§4.3 encoding)."""
    return json.dumps([{"X": f"n{i}"} for i in range(1, length + 1)], separators=(",", ":"))


def restart_goal(facts: int, journal: int) -> str:
    return f"item({facts - 1}, A), jfact({journal - 1}, B)"


def restart_answer(facts: int, journal: int) -> str:
    return json.dumps([{"A": f"v{facts - 1}", "B": f"w{journal - 1}"}], separators=(",", ":"))


@dataclass
class Checks:
    failures: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.failures.append(message)

    def answer(self, what: str, got: tuple[str, bool], expected: str) -> None:
        text, is_error = got
        if is_error or text != expected:
            self.fail(f"{what}: answered {text!r} (isError {is_error}), expected {expected!r}")


def journal_clauses(root: Path) -> list[str]:
    from quipu.logic.journal import read_journal
    from quipu.logic.project import Project

    return [entry.clause for entry in read_journal(Project(root).journal_path).entries]


def new_project(parent: Path, name: str) -> Path:
    from quipu.logic.project import init

    root = parent / name
    root.mkdir()
    init(root)
    return root


# -- the two transports ----------------------------------------------------------------------

Call = Callable[[str, Mapping[str, Any]], tuple[str, bool]]  # tool, arguments -> (text, isError)


def zpm_command() -> list[str]:
    """The venv's ``zpm`` console script, else the same entry point through this interpreter."""
    script = Path(sys.executable).with_name("zpm")
    if script.is_file():
        return [str(script), "serve"]
    return [sys.executable, "-c", "import sys; from quipu.cli.zpm import main; sys.exit(main())", "serve"]


def zpm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("QUIPU_CONFIG", None)
    return env


class StdioClient(JsonRpcPipe):
    """A ``zpm serve`` subprocess driven one request at a time (bench.startup.JsonRpcPipe)."""

    def __init__(self, cwd: Path, stderr: IO[bytes]) -> None:
        super().__init__(zpm_command(), cwd, zpm_env(), stderr)
        self._next_id = 1

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.process.poll() is None:
            self.close()

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        self.send(message)
        return self.answer(request_id)[0]

    def initialize(self) -> None:
        reply = self.request("initialize", INITIALIZE)
        if "result" not in reply:
            raise RuntimeError(f"initialize failed: {reply}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
        reply = self.request("tools/call", {"name": tool, "arguments": dict(arguments)})
        result = reply.get("result")
        if not isinstance(result, dict):
            return f"protocol error: {reply.get('error')}", True
        return str(result["content"][0]["text"]), bool(result["isError"])


# -- tool latency ----------------------------------------------------------------------------


@dataclass
class Latency:
    path: str
    remember: TxResult
    query: TxResult
    echo: TxResult
    ping: TxResult | None = None  # stdio only: the JSON-RPC loop without a tool


def measure_tools(path: str, root: Path, call: Call, args: argparse.Namespace, checks: Checks) -> Latency:
    """Warm-up, the timed ``remember_fact`` loop, the chain and rules, the timed query loop."""
    tag = "s" if path == "stdio" else "p"

    def remember(prefix: str) -> Callable[[int], object]:
        def run(i: int) -> object:
            fact = bench_fact(prefix, i)
            answer = call("remember_fact", {"fact": fact})
            checks.answer(f"{path} remember_fact", answer, f"Asserted: {fact}")
            return answer

        return run

    progress(f"{path}: {args.calls:,} remember_fact, {args.queries:,} query_logic")
    warm(args.warmup, remember(f"w{tag}"))
    latencies, wall = timed(args.calls, remember(tag))
    remembered = TxResult("remember_fact", latencies, wall)
    for fact in chain_facts(args.chain):
        checks.answer(f"{path} chain", call("remember_fact", {"fact": fact}), f"Asserted: {fact}")
    for head, body in RULES:
        expected = f"Asserted rule: {head} :- {body}"
        checks.answer(f"{path} define_rule", call("define_rule", {"head": head, "body": body}), expected)
    solutions = query_answer(args.chain)

    def query(i: int) -> object:
        answer = call("query_logic", {"goal": QUERY})
        checks.answer(f"{path} query_logic", answer, solutions)
        return answer

    warm(args.warmup, query)
    latencies, wall = timed(args.queries, query)
    queried = TxResult("query_logic", latencies, wall)

    def echo(i: int) -> object:
        answer = call("echo", {"message": f"m{i}"})
        checks.answer(f"{path} echo", answer, f"m{i}")
        return answer

    warm(args.warmup, echo)
    latencies, wall = timed(args.queries, echo)
    return Latency(path, remembered, queried, TxResult("echo", latencies, wall))


def check_journal(path: str, root: Path, args: argparse.Namespace, checks: Checks) -> None:
    """Every timed fact is in the journal, in order (the writes were durable before the answer)."""
    tag = "s" if path == "stdio" else "p"
    wanted = [bench_fact(tag, i) for i in range(args.calls)]
    written = [clause for clause in journal_clauses(root) if clause.startswith(f"bench_fact({tag}")]
    if written != wanted:
        checks.fail(f"{path}: the journal holds {len(written):,} of the {len(wanted):,} timed facts")


def in_process_tools(root: Path, args: argparse.Namespace, checks: Checks) -> Latency:
    from quipu.logic.service import LogicHost

    host = LogicHost(root)
    try:
        service = host.service()

        def call(tool: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
            result = service.call(tool, arguments)
            return result.text, result.is_error

        latency = measure_tools("in process", root, call, args, checks)
    finally:
        host.close()
    check_journal("in process", root, args, checks)
    return latency


def stdio_tools(root: Path, args: argparse.Namespace, checks: Checks, log: IO[bytes]) -> Latency:
    with StdioClient(root, log) as client:
        client.initialize()
        latency = measure_tools("stdio", root, client.call, args, checks)

        def ping(i: int) -> object:
            reply = client.request("ping")
            if reply.get("result") != {}:
                checks.fail(f"stdio ping answered {reply}")
            return reply

        warm(args.warmup, ping)
        latency.ping = TxResult("ping", *timed(args.queries, ping))
        status = client.close()
    if status != 0:
        checks.fail(f"zpm serve exited with status {status} after the latency loops")
    check_journal("stdio", root, args, checks)
    return latency


# -- restart ---------------------------------------------------------------------------------


def build_restart_project(root: Path, facts: int, journal: int) -> tuple[int, int]:
    """A ``facts``-fact snapshot and a ``journal``-entry journal (one batch per entry, as
    ``remember_fact`` writes them). Returns the two files' sizes in bytes."""
    from quipu.logic.journal import Entry, encode_batch
    from quipu.logic.project import Project
    from quipu.logic.snapshots import write_snapshot

    project = Project(root)
    epoch = int(time.time())
    items = [f"item({i}, v{i})" for i in range(facts)]
    snapshot = write_snapshot(project.kb_dir, SNAPSHOT_NAME, epoch, [("item", 2)], [items])
    entries = (Entry(epoch, "assert", f"jfact({i}, w{i})") for i in range(journal))
    data = b"".join(encode_batch([entry]) for entry in entries)
    with open(project.journal_path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return snapshot.stat().st_size, len(data)


@dataclass
class Restart:
    path: str
    seconds: list[float]
    first: list[float] = field(default_factory=list)  # in process: open + first query

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def restart_in_process(root: Path, args: argparse.Namespace, checks: Checks) -> Restart:
    from quipu.logic.runtime import LogicRuntime
    from quipu.logic.service import LogicService

    goal, expected = restart_goal(args.facts, args.journal), restart_answer(args.facts, args.journal)
    result = Restart("in process: LogicRuntime.open", [])
    for run in range(args.restarts):
        warnings: list[str] = []
        started = time.perf_counter()
        runtime = LogicRuntime.open(root, warn=warnings.append)
        opened = time.perf_counter() - started
        try:
            service = LogicService(runtime)
            answer = service.call("query_logic", {"goal": goal})
            first = time.perf_counter() - started
            checks.answer(f"restart {run}: first query", (answer.text, answer.is_error), expected)
            mounted = runtime.memories.get("default")
            stats = None if mounted is None else mounted.stats
            # The loader counts the snapshot's one dynamic declaration with its clauses.
            loaded = (SNAPSHOT_NAME, args.facts + 1, args.journal)
            if stats is None or (stats.snapshot, stats.snapshot_clauses, stats.journal_entries) != loaded:
                checks.fail(f"restart {run}: loaded {stats}, expected {loaded}")
            for predicate, count in (("item", args.facts), ("jfact", args.journal)):
                counted = service.call("query_logic", {"goal": f"aggregate_all(count, {predicate}(_, _), N)"})
                want = json.dumps([{"N": count}], separators=(",", ":"))
                checks.answer(f"restart {run}: {predicate}/2 count", (counted.text, counted.is_error), want)
            if warnings:
                checks.fail(f"restart {run}: warnings while loading: {warnings[:3]}")
        finally:
            runtime.close()
        result.seconds.append(opened)
        result.first.append(first)
    return result


def restart_stdio(root: Path, args: argparse.Namespace, checks: Checks, log: IO[bytes]) -> Restart:
    goal, expected = restart_goal(args.facts, args.journal), restart_answer(args.facts, args.journal)
    result = Restart("stdio: zpm serve Popen → first tools/call answer", [])
    for run in range(args.restarts):
        started = time.perf_counter()
        with StdioClient(root, log) as client:
            client.initialize()
            ready = time.perf_counter() - started
            answer = client.call("query_logic", {"goal": goal})
            first = time.perf_counter() - started
            checks.answer(f"zpm serve restart {run}: first call", answer, expected)
            status = client.close()
        if status != 0:
            checks.fail(f"zpm serve restart {run} exited with status {status}")
        result.seconds.append(first)
        result.first.append(ready)  # here: Popen until the initialize answer
    return result


# -- report ----------------------------------------------------------------------------------


def latency_row(operation: str, path: str, r: TxResult, base: TxResult | None) -> list[str]:
    median = r.percentile(50)
    ratio = f"{median / base.percentile(50):.2f}×" if base is not None else "-"
    return [
        operation,
        path,
        f"{len(r.latencies):,}",
        fmt_ms(median),
        fmt_ms(r.percentile(99)),
        f"{r.per_second:,.0f}",
        ratio,
    ]


def seconds(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}"


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}"


def swipl_version() -> str:
    from quipu.logic.engine import find_swipl

    try:
        done = subprocess.run(
            [find_swipl(), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"
    return done.stdout.strip() or done.stderr.strip()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.logic", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="timed remember_fact calls (default 10000)")
    parser.add_argument("--queries", type=int, default=1_000, help="timed query_logic calls (default 1000)")
    parser.add_argument(
        "--chain", type=int, default=10, help="parent chain length for the query (default 10)"
    )
    parser.add_argument("--facts", type=int, default=100_000, help="snapshot facts for restart (100000)")
    parser.add_argument("--journal", type=int, default=10_000, help="journal entries for restart (10000)")
    parser.add_argument("--restarts", type=int, default=3, help="timed restarts per path (default 3)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured calls before each loop (50)")
    parser.add_argument(
        "--startup-runs", type=int, default=10, help="spawns per server for the start-up table (default 10)"
    )
    args = parser.parse_args(argv)
    if (
        min(args.calls, args.queries, args.chain, args.facts, args.journal, args.restarts, args.startup_runs)
        < 1
    ):
        parser.error(
            "--calls, --queries, --chain, --facts, --journal, --restarts and --startup-runs must be positive"
        )
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="quipu-bench-logic-") as tmp:
        base = Path(tmp)
        log_path = base / "zpm-serve.stderr"
        with open(log_path, "wb") as log:
            try:
                local = in_process_tools(new_project(base, "in-process"), args, checks)
                stdio = stdio_tools(new_project(base, "stdio"), args, checks, log)
                root = new_project(base, "restart")
                progress(
                    f"restart: writing a {args.facts:,}-fact snapshot and a {args.journal:,}-entry journal"
                )
                snapshot_bytes, journal_bytes = build_restart_project(root, args.facts, args.journal)
                progress(f"restart: {args.restarts} × LogicRuntime.open, {args.restarts} × zpm serve")
                opened = restart_in_process(root, args, checks)
                served = restart_stdio(root, args, checks, log)
                startup_dir = base / "startup"
                startup_dir.mkdir()
                floors, zpm_start, mcp_start, quick = startup.measure(args.startup_runs, startup_dir)
            except Exception as exc:  # a dead server or engine: report it as a failure, not a trace
                log.flush()
                tail = log_path.read_text("utf-8", "replace")[-2000:]
                return finish([], [f"{type(exc).__name__}: {exc}", f"zpm serve stderr: {tail}"], "")

    query_median = stdio.query.percentile(50)
    scope = "" if (args.facts, args.journal) == (100_000, 10_000) else "; the target is at 100k + 10k"
    out = [
        f"# quipu logic memory benchmark: {args.calls:,} remember_fact, {args.queries:,} query_logic, "
        f"restart with {args.facts:,} snapshot facts + {args.journal:,} journal entries",
        "",
        environment(),
        f"- engine: {swipl_version()}, over MQI on a Unix socket; zpm serve: {' '.join(zpm_command())}",
        "- remember_fact: one journal batch written and fsynced before each answer (R-W3); "
        f"query_logic: {QUERY!r} over a {args.chain}-link parent chain, two define_rule rules, "
        f"{args.chain} solutions; {args.warmup} unmeasured calls before each loop",
        "- echo and ping: as many calls as query_logic; they show what the path costs without the engine\n"
        f"- stdio: one JSON-RPC line per call, the response read before the next request; "
        f"restart files: snapshot {snapshot_bytes:,} bytes, journal {journal_bytes:,} bytes "
        "(warm page cache)",
        "",
        table(
            ["operation", "path", "calls", "median ms", "p99 ms", "calls/s", "× in process"],
            [
                *(
                    [latency_row("ping", "stdio, JSON-RPC only (the transport floor)", stdio.ping, None)]
                    if stdio.ping is not None
                    else []
                ),
                latency_row("echo", "in process, LogicService.call (no engine)", local.echo, None),
                latency_row("echo", "stdio, zpm serve → LogicService.call", stdio.echo, local.echo),
                latency_row("remember_fact", "in process, LogicService.call", local.remember, None),
                latency_row("remember_fact", "stdio, zpm serve", stdio.remember, local.remember),
                latency_row("query_logic", "in process, LogicService.call", local.query, None),
                latency_row("query_logic", "stdio, zpm serve", stdio.query, local.query),
            ],
            [False, False, True, True, True, True, True],
        ),
        "",
        "× in process: the row's median over the in-process median; calls/s: calls over the loop's "
        "wall time; p99: nearest rank.",
        "",
        table(
            ["restart", "runs", "median s", "min-max s", "with", "median s"],
            [
                [
                    opened.path,
                    str(len(opened.seconds)),
                    seconds(opened.seconds),
                    spread(opened.seconds),
                    "+ first query_logic",
                    seconds(opened.first),
                ],
                [
                    served.path,
                    str(len(served.seconds)),
                    seconds(served.seconds),
                    spread(served.seconds),
                    "initialize answered",
                    seconds(served.first),
                ],
            ],
            [False, True, True, True, False, True],
        ),
        "",
        "## Start-up (bench/startup.py, issue 16)",
        "",
        *startup.report(floors, [zpm_start, mcp_start], quick)[0],
        "",
        "## Targets (informational)",
        "",
        table(
            ["target", "measured", "verdict"],
            [
                [
                    f"query_logic over stdio median < {QUERY_TARGET_MS:g} ms",
                    f"{fmt_ms(query_median)} ms",
                    verdict(query_median < QUERY_TARGET_MS),
                ],
                [
                    f"restart < {RESTART_TARGET_S:g} s (LogicRuntime.open)",
                    f"{opened.median:.3f} s{scope}",
                    verdict(opened.median < RESTART_TARGET_S),
                ],
                [
                    f"restart < {RESTART_TARGET_S:g} s (zpm serve to first answer)",
                    f"{served.median:.3f} s{scope}",
                    verdict(served.median < RESTART_TARGET_S),
                ],
            ],
            [False, True, False],
        ),
    ]
    return finish(
        out,
        checks.failures[:20],
        "Checks: every answer was the exact expected text, every timed fact is in its journal, "
        "each restart loaded every snapshot fact and journal entry.",
    )


if __name__ == "__main__":
    sys.exit(main())
