"""Start-up of the stdio MCP servers: spawn to ``initialize``, to ``tools/list`` and to a first call.

    python -m bench.startup [--runs 10]

Each run spawns a fresh process and times, from ``Popen``:

- **initialize**: the ``initialize`` request written at once, until its answer is read;
- **tools/list**: then ``notifications/initialized`` and ``tools/list``, until that answer;
- **first call**: then one tool call (``query_logic`` for ``zpm serve``, a point query for
  ``quipu mcp``), until its answer: the import of the REST stack, the engine or store, and the
  call itself.

The floor is ``python -c 'import sys'`` from ``Popen`` to its exit, with the same interpreter.
``zpm serve`` runs in a fresh project (``zpm init``), ``quipu mcp`` on a fresh SQLite file.
The quick commands (``quipu --help``, ``quipu version``, ``quipu-server --help``, ``zpm --help``)
are timed from ``Popen`` to their exit. Targets (issue 16): the handshake (initialize, and
tools/list after it) and each quick command at most 300 ms above the floor, and the first
``query_logic`` answer within 1 s of spawn. The run exits 1 when a server does not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.ingest import environment, progress, table

HANDSHAKE_MARGIN_S: Final = 0.300  # above the floor
FIRST_QUERY_TARGET_S: Final = 1.0
WAIT: Final = 120.0
INITIALIZE: Final = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "quipu-bench-startup", "version": "1"},
}


@dataclass
class Timings:
    """Seconds from spawn, one entry per run."""

    name: str
    initialize: list[float] = field(default_factory=list)
    tools_list: list[float] = field(default_factory=list)
    first_call: list[float] = field(default_factory=list)


def _script(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.is_file() else name


QUICK_COMMANDS: Final = (
    ("quipu", "--help"),
    ("quipu", "version"),
    ("quipu-server", "--help"),
    ("zpm", "--help"),
)


def spawn_to_exit(argv: Sequence[str], runs: int, env: Mapping[str, str] | None = None) -> list[float]:
    out = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(list(argv), check=True, env=env, stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - began)
    return out


def floor(runs: int) -> list[float]:
    return spawn_to_exit([sys.executable, "-c", "import sys"], runs)


def quick_commands(runs: int, env: Mapping[str, str]) -> dict[str, list[float]]:
    """Spawn to exit of each quick command, interleaved run by run (the machine's noise spreads)."""
    out: dict[str, list[float]] = {" ".join(command): [] for command in QUICK_COMMANDS}
    for _ in range(runs):
        for script, *args in QUICK_COMMANDS:
            out[" ".join([script, *args])] += spawn_to_exit([_script(script), *args], 1, env)
    return out


class JsonRpcPipe:
    """A child process driven over its pipes, one JSON-RPC line at a time. Reads the raw pipe
    with ``select`` (no reader thread, so timings hold no thread hand-off); every wait is
    bounded by WAIT. ``began``: when the process was spawned."""

    def __init__(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], stderr: Any = subprocess.DEVNULL
    ) -> None:
        self.began = time.perf_counter()
        self.process = subprocess.Popen(
            list(argv), cwd=cwd, env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin = self.process.stdin
        self._fd = self.process.stdout.fileno()
        self._buffer = b""

    def send(self, message: Mapping[str, Any]) -> None:
        self._stdin.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
        self._stdin.flush()

    def answer(self, request_id: int) -> tuple[dict[str, Any], float]:
        """The response to ``request_id`` (notifications before it are skipped) and the
        seconds since spawn when it was read."""
        deadline = time.monotonic() + WAIT
        while True:
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                    raise RuntimeError(f"no answer to request {request_id} within {WAIT:g} s")
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    raise RuntimeError(f"the server closed stdout (exit status {self.process.poll()})")
                self._buffer += chunk
            line, _, self._buffer = self._buffer.partition(b"\n")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == request_id:
                return message, time.perf_counter() - self.began

    def close(self) -> int:
        """End of file on stdin: the server answers what it read, then exits."""
        self._stdin.close()
        try:
            return self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=WAIT)
            return -9


def run_once(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], call: Mapping[str, Any], out: Timings
) -> None:
    pipe = JsonRpcPipe(argv, cwd, env)
    try:
        pipe.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
        reply, took = pipe.answer(1)
        if "result" not in reply:
            raise RuntimeError(f"{out.name}: initialize failed: {reply}")
        out.initialize.append(took)
        pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        reply, took = pipe.answer(2)
        if not reply.get("result", {}).get("tools"):
            raise RuntimeError(f"{out.name}: tools/list failed: {reply}")
        out.tools_list.append(took)
        pipe.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": dict(call)})
        reply, took = pipe.answer(3)
        result = reply.get("result")
        if not isinstance(result, dict) or result.get("isError"):
            raise RuntimeError(f"{out.name}: the first call failed: {reply}")
        out.first_call.append(took)
    finally:
        pipe.close()


def measure(runs: int, workdir: Path) -> tuple[list[float], Timings, Timings, dict[str, list[float]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIPU_")}
    project = workdir / "project"
    project.mkdir()
    subprocess.run([_script("zpm"), "init"], cwd=project, env=env, check=True, capture_output=True)
    zpm = Timings("zpm serve")
    quipu = Timings("quipu mcp")
    query_logic = {"name": "query_logic", "arguments": {"goal": "member(X, [a])"}}
    point_query = {"name": "quipu_query", "arguments": {"query": "ASK { <urn:bench:a> ?p ?o }"}}
    progress(f"start-up: {runs} runs each of the floor, zpm serve and quipu mcp")
    floors = floor(runs)
    for n in range(runs):
        run_once([_script("zpm"), "serve"], project, env, query_logic, zpm)
        db = workdir / f"kb{n}.db"
        run_once([_script("quipu"), "mcp", "--db", str(db)], workdir, env, point_query, quipu)
    progress(f"start-up: {runs} runs of each quick command")
    return floors, zpm, quipu, quick_commands(runs, env)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _verdict(ok: bool) -> str:
    return "HIT" if ok else "MISS"


def report(
    floors: list[float], servers: Sequence[Timings], quick: Mapping[str, list[float]] | None = None
) -> tuple[list[str], bool]:
    """The table and verdict lines; the bool is whether every target was met."""
    base = _median(floors)
    rows = [["python -c 'import sys' (the floor)", _ms(base), "-", "-", "-"]]
    verdicts = []
    met = True
    for t in servers:
        rows.append(
            [t.name, _ms(_median(t.initialize)), _ms(_median(t.initialize) - base),
             _ms(_median(t.tools_list)), _ms(_median(t.first_call))]
        )  # fmt: skip
        for step, values in (("initialize", t.initialize), ("tools/list", t.tools_list)):
            above = _median(values) - base
            ok = above <= HANDSHAKE_MARGIN_S
            met &= ok
            verdicts.append(
                f"- {t.name}: {step} {_ms(above)} ms above the floor (target at most "
                f"{_ms(HANDSHAKE_MARGIN_S)} ms): {_verdict(ok)}"
            )
    zpm = next(t for t in servers if t.name == "zpm serve")
    ok = _median(zpm.first_call) < FIRST_QUERY_TARGET_S
    met &= ok
    verdicts.append(
        f"- zpm serve: first query_logic answered {_ms(_median(zpm.first_call))} ms after spawn "
        f"(target under {_ms(FIRST_QUERY_TARGET_S)} ms): {_verdict(ok)}"
    )
    quick_rows = []
    for command, values in (quick or {}).items():
        above = _median(values) - base
        ok = above <= HANDSHAKE_MARGIN_S
        met &= ok
        quick_rows.append([command, _ms(_median(values)), _ms(above), _verdict(ok)])
    lines = [
        table(
            ["process", "initialize ms", "above floor ms", "tools/list ms", "first call ms"],
            rows,
            [False, True, True, True, True],
        ),
        "",
        f"Medians of {len(floors)} runs, in ms from spawn. quipu mcp's first call is quipu_query (a point ASK).",
        "",
        *verdicts,
    ]
    if quick_rows:
        lines += [
            "",
            table(["quick command", "spawn to exit ms", "above floor ms", "at most 300 ms above"], quick_rows,
                  [False, True, True, False]),
        ]  # fmt: skip
    return lines, met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quipu-bench-startup-") as tmp:
        try:
            floors, zpm, quipu, quick = measure(args.runs, Path(tmp))
        except RuntimeError as exc:
            print(f"start-up benchmark failed: {exc}", file=sys.stderr)
            return 1
    lines, _ = report(floors, [zpm, quipu], quick)
    print(f"# quipu start-up benchmark: {args.runs} runs\n\n{environment()}\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
