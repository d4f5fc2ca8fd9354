"""The reasoning benchmark: transitive closure by Datalog rules, beside pyoxigraph's ``p+``.

    python -m bench.reason [--edges 20000 | --large] [--chain 1000] [--seed 42]

Two graphs of one predicate are each loaded into a fresh quipu file store and into pyoxigraph in
memory, in the same run:

1. a random tree of ``--edges`` edges (every node's parent drawn from the nodes before it), whose
   closure is about ``edges × log(edges)`` pairs;
2. a chain of ``--chain`` edges, whose closure is ``chain² / 2`` pairs and which needs one
   semi-naive round per edge. (Issue 22 names a 100k-edge chain: its closure, 5·10⁹ pairs, is
   out of reach for both engines, so the chain here is short enough to finish.)

quipu runs ``kb.reasoning.reason`` with the two closure rules (base and step) and writes every
derivation into the companion graph; pyoxigraph counts ``?a :p+ ?b``. The derivation count must
equal pyoxigraph's pair count (exit 1 otherwise). Target: quipu within 2× of pyoxigraph;
informational, as every benchmark here.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyoxigraph as ox

from bench.ingest import environment, progress, table, verdict

EX: Final = "http://bench.quipu/"
LARGE: Final = 100_000
TARGET: Final = 2.0
RULES: Final = (
    "@prefix rule: <http://quipu.local/rule#> .\n"
    f'<{EX}rules/base> a rule:Rule ; rule:id "base" ; rule:head "reach(?x, ?y)" ; rule:body "p(?x, ?y)" .\n'
    f'<{EX}rules/step> a rule:Rule ; rule:id "step" ; rule:head "reach(?x, ?z)" ; '
    'rule:body "p(?x, ?y), reach(?y, ?z)" .'
)


@dataclass
class Case:
    name: str
    edges: int
    nt: str


@dataclass
class Run:
    case: Case
    pairs: int
    quipu_s: float
    ox_s: float


def tree(edges: int, seed: int) -> Case:
    rng = random.Random(seed)
    lines = (f"<{EX}n{i}> <{EX}p> <{EX}n{rng.randrange(i)}> .\n" for i in range(1, edges + 1))
    return Case(f"random tree, {edges:,} edges", edges, "".join(lines))


def chain(edges: int) -> Case:
    lines = (f"<{EX}c{i}> <{EX}p> <{EX}c{i + 1}> .\n" for i in range(edges))
    return Case(f"chain, {edges:,} edges", edges, "".join(lines))


def run_case(case: Case, workdir: Path) -> Run:
    import quipu

    progress(f"{case.name}: pyoxigraph")
    store = ox.Store()
    store.bulk_load(input=case.nt.encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
    started = time.perf_counter()
    answer = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ ?a <{EX}p>+ ?b }}")
    assert isinstance(answer, ox.QuerySolutions)
    solutions = list(answer)
    ox_s = time.perf_counter() - started
    pairs = int(solutions[0][0].value)
    progress(f"{case.name}: quipu")
    with quipu.open(str(store_path(case, workdir)), base_ns=EX) as kb:
        kb.knot(case.nt, format="nt")
        started = time.perf_counter()
        kb.reasoning.reason(rules=RULES)
        quipu_s = time.perf_counter() - started
    return Run(case, pairs, quipu_s, ox_s)


def store_path(case: Case, workdir: Path) -> Path:
    return workdir / f"{case.name.split(',')[0].replace(' ', '-')}.db"


def closure_count(path: Path) -> int:
    import quipu

    with quipu.open(str(path)) as kb:
        rows = kb.query(  # a current read sees each statement once, whichever rules own it
            f"SELECT (COUNT(*) AS ?n) FROM <urn:quipu:graph:root#inferred> WHERE {{ ?a <{EX}reach> ?b }}"
        )
    assert isinstance(rows, list)
    return int(str(rows[0]["n"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reason", description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=20_000, help="random tree edges (default 20000)")
    parser.add_argument("--large", action="store_true", help=f"use {LARGE:,} tree edges")
    parser.add_argument("--chain", type=int, default=1_000, help="chain edges (default 1000)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    edges = LARGE if args.large else args.edges
    status = 0
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="quipu-bench-reason-") as tmp:
        for case in (tree(edges, args.seed), chain(args.chain)):
            run = run_case(case, Path(tmp))
            counted = closure_count(store_path(case, Path(tmp)))
            if counted != run.pairs:
                progress(f"{case.name}: quipu's closure has {counted:,} pairs, pyoxigraph's {run.pairs:,}")
                status = 1
            runs.append(run)
    print("# quipu reasoning benchmark: transitive closure\n")
    print(environment())
    print()
    rows = [
        [
            r.case.name,
            f"{r.pairs:,}",
            f"{r.quipu_s:.2f}",
            f"{r.ox_s:.2f}",
            f"{r.quipu_s / r.ox_s:.1f}x" if r.ox_s else "-",
            verdict(r.quipu_s <= TARGET * r.ox_s),
        ]
        for r in runs
    ]
    headers = ["closure", "pairs", "quipu reason s", "pyoxigraph p+ s", "x pyoxigraph", "<= 2x"]
    print(table(headers, rows, [False, True, True, True, True, False]))
    print(
        "\nquipu: kb.reasoning.reason() with the base and step rules, every derivation written to the "
        "companion graph (one claim per rule that derives a pair); pyoxigraph: COUNT of ?a :p+ ?b, "
        "in memory. Targets are informational."
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
