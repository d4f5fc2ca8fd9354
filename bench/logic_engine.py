"""Per-call latency of the logic engine over its Unix-domain socket (spec §10.1 anchor: ~0.13 ms
for a trivial raw MQI query). Prints medians; no assertions.

    uv run python -m bench.logic_engine [N]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from quipu.logic.engine import Engine


def _measure(label: str, n: int, call: Callable[[], object]) -> None:
    samples: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    print(f"{label:<44} median {statistics.median(samples) * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with Engine() as engine:
        engine.ensure_memory("default")
        engine.load_clauses(
            "default",
            [
                "parent(tom, bob)",
                "parent(bob, sue)",
                "anc(X, Y) :- parent(X, Y)",
                "anc(X, Z) :- parent(X, Y), anc(Y, Z)",
            ],
        )
        raw = engine._call  # the helper-free round trip: MQI framing and JSON only
        _measure("raw MQI round trip (R = ok)", n, lambda: raw("R = ok", 5.0))
        _measure("query 'true' (parse, check, run, encode)", n, lambda: engine.query("default", "true"))
        _measure("query 'anc(tom, X)'", n, lambda: engine.query("default", "anc(tom, X)"))
        _measure("assertz one fact", n, lambda: engine.assertz("default", "f(1)"))
        clauses = [f"item({i}, 'name {i}')" for i in range(100_000)]
        t0 = time.perf_counter()
        engine.load_clauses("default", clauses)
        print(f"{'load_clauses 100,000 facts':<44} {time.perf_counter() - t0:7.3f} s")
        t0 = time.perf_counter()
        engine.restart()
        print(f"{'restart (new process, no reload)':<44} {time.perf_counter() - t0:7.3f} s")


if __name__ == "__main__":
    main()
