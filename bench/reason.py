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

Then reactive maintenance (``[quipu.reasoning] reactive``): a store of ``--reactive-facts`` facts
(a random tree of ``--reactive-tree`` edges under the closure rules, the rest other facts) gets a
full ``reason`` run, then single-edge writes: a new leaf, and the retraction of one, each
maintained right after it commits. The median write with its maintenance is set beside the full
run (target: under 1% of it) and beside the same write with reactive off. Afterwards a full run
must find nothing to change (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
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
    parser.add_argument("--reactive-facts", type=int, default=1_000_000, help="store size (default 1M)")
    parser.add_argument("--reactive-tree", type=int, default=100_000, help="closure edges in it (100k)")
    parser.add_argument("--writes", type=int, default=15, help="single-edge writes timed (default 15)")
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
    with tempfile.TemporaryDirectory(prefix="quipu-bench-reactive-") as tmp:
        reactive = run_reactive(Path(tmp) / "reactive.db", args)
    print(f"\n## reactive maintenance: {args.reactive_facts:,} facts, {args.reactive_tree:,} closure edges\n")
    print(reactive.table())
    if reactive.leftover:
        progress(f"a full run after maintenance changed {reactive.leftover} claims")
        status = 1
    return status


@dataclass
class Reactive:
    full_s: float
    derived: int
    plain_ms: float  # a single-edge write, reactive off
    catch_up_ms: float  # one maintain() over the writes made with reactive off
    add_ms: float  # a new leaf edge, maintained right after
    retract_ms: float  # its retraction, maintained right after
    leftover: int

    def table(self) -> str:
        one = self.full_s * 1000 / 100
        rows = [
            ["full reason run", f"{self.full_s * 1000:,.0f}", f"{self.derived:,} pairs", "-"],
            ["single-edge write, reactive off", f"{self.plain_ms:.1f}", "no maintenance", "-"],
            ["catch-up: maintain() after those writes", f"{self.catch_up_ms:.1f}", "one call", "-"],
            ["new leaf edge + maintenance (median)", f"{self.add_ms:.1f}",
             f"{self.add_ms / one:.3f}% of full", verdict(self.add_ms < one)],
            ["its retraction + maintenance (median)", f"{self.retract_ms:.1f}",
             f"{self.retract_ms / one:.3f}% of full", verdict(self.retract_ms < one)],
        ]  # fmt: skip
        return table(["step", "ms", "note", "< 1% of full"], rows, [False, True, True, False])


def run_reactive(path: Path, args: argparse.Namespace) -> Reactive:
    import statistics

    import quipu

    rng = random.Random(args.seed)
    tree_edges = min(args.reactive_tree, args.reactive_facts)
    nodes = tree_edges + 1
    lines = [f"<{EX}n{i}> <{EX}p> <{EX}n{rng.randrange(i)}> .\n" for i in range(1, nodes)]
    lines += [f'<{EX}x{i}> <{EX}label> "thing {i}" .\n' for i in range(args.reactive_facts - tree_edges)]
    progress(f"reactive: loading {len(lines):,} facts")
    fresh = iter(range(nodes, nodes + 10 * args.writes))

    def leaf() -> str:
        return f"<{EX}n{next(fresh)}> <{EX}p> <{EX}n{rng.randrange(nodes)}> ."

    def timed(write: Callable[[], object]) -> float:
        started = time.perf_counter()
        write()
        return (time.perf_counter() - started) * 1000

    with quipu.open(str(path), base_ns=EX) as kb:
        kb.knot("".join(lines), format="nt")
        del lines
        progress("reactive: full reason run")
        started = time.perf_counter()
        full = kb.reasoning.reason(rules=RULES)
        full_s = time.perf_counter() - started
        kb.load_shapes("rules", RULES)  # reactive mode maintains the stored rules
        kb.reasoning.reason()  # the same rules: the companion's notes now name the stored set
        plain = [timed(lambda: kb.knot(leaf(), format="nt")) for _ in range(args.writes)]
        catch_up = timed(kb.reasoning.maintain)
    progress("reactive: single-edge writes, maintained")
    with quipu.open(str(path), base_ns=EX, reactive=True) as kb:
        added, retracted = [], []
        for _ in range(args.writes):
            edge = leaf()
            added.append(timed(partial(kb.knot, edge, format="nt")))
            retracted.append(timed(partial(kb.update, f"DELETE DATA {{ {edge} }}")))
        final = kb.reasoning.reason()
    return Reactive(
        full_s=full_s,
        derived=full.asserted,
        plain_ms=statistics.median(plain),
        catch_up_ms=catch_up,
        add_ms=statistics.median(added),
        retract_ms=statistics.median(retracted),
        leftover=final.asserted + final.retracted,
    )


if __name__ == "__main__":
    sys.exit(main())
