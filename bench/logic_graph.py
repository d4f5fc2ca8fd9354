"""The logic-over-the-graph benchmark: Prolog rules joining quipu's graph predicates, beside
SWI-Prolog's own in-memory triple store (semweb/rdf_db) answering the same joins in the same run.

    python -m bench.logic_graph [--services 25000] [--runs 3]

The store holds four triples per service (``--services`` 25,000 is 100k triples): its kind, its
test run, the run's status (every third one failed) and a label. Each goal is a ``query_logic``
call through ``LogicService`` (what ``POST /logic/query_logic`` runs), timed ``--runs`` times, the
median printed with the number of SQL statements that read the facts table during one run:

- **scan**: one pattern's every row (``rdf(_S, runs, _R)``), paged;
- **join 2**: ``rdf(S, runs, R), rdf(R, status, literal(failed))``, one lookup per outer row;
- **join 3**: the kind, the run and its status: a three-pattern rule.

The peer is SWI-Prolog's ``semweb/rdf_db`` with the same triples loaded from N-Triples (the load
not timed), the same goals with ``rdf/3``, timed in the engine. Counts must agree with the peer's,
or the run exits 1. Target (issue 26): each join under the logic memory's query limit (5 s), with
statements per call pattern, not per solution. HIT or MISS is printed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from sqlalchemy import event

from bench.ingest import environment, progress, table, verdict

EX: Final = "http://bench.quipu.dev/logic/"
LIMIT_S: Final = 5.0  # quipu.logic.engine's query limit
GOALS: Final = {
    "scan": f"rdf(_S, '{EX}runs', _R)",
    "join 2": f"rdf(_S, '{EX}runs', _R), rdf(_R, '{EX}status', literal(failed))",
    "join 3": (
        f"rdf(_S, '{EX}kind', '{EX}Service'), rdf(_S, '{EX}runs', _R), rdf(_R, '{EX}status', literal(failed))"
    ),
}  # variables start with _: query_logic leaves them out of the answer


def triples(services: int) -> Iterator[str]:
    for i in range(services):
        yield f"<{EX}s{i}> <{EX}kind> <{EX}Service> ."
        yield f"<{EX}s{i}> <{EX}runs> <{EX}r{i}> ."
        yield f'<{EX}r{i}> <{EX}status> "{"failed" if i % 3 == 0 else "passed"}" .'
        yield f'<{EX}s{i}> <{EX}label> "service {i}" .'


def counted(goal: str) -> str:
    return f"aggregate_all(count, ({goal}), N)"


@contextmanager
def fact_statements(db: Any) -> Iterator[list[str]]:
    log: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if re.search(r"\bfacts\b", statement):
            log.append(statement)

    engines = {id(e): e for e in (db.reader, db.writer)}.values()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield log
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)


def run_quipu(work: Path, nt: Path, runs: int) -> dict[str, tuple[float, int, int]]:
    """(median seconds, solutions, fact statements) per goal."""
    import quipu
    from quipu.logic import project
    from quipu.logic.graph_bridge import StoreGraph
    from quipu.logic.service import LogicHost

    root = work / "project"
    root.mkdir()
    project.init(root)
    kb = quipu.open(str(work / "graph.db"))
    host = None
    try:
        progress("loading the store")
        kb.knot(nt.read_text(encoding="utf-8"), "nt")
        host = LogicHost(root, graph=StoreGraph(lambda: kb.db))
        service = host.service()
        out: dict[str, tuple[float, int, int]] = {}
        for name, goal in GOALS.items():
            times: list[float] = []
            answer = -1
            statements = 0
            for _ in range(runs):
                with fact_statements(kb.db) as log:
                    started = time.perf_counter()
                    result = service.call("query_logic", {"goal": counted(goal)})
                    times.append(time.perf_counter() - started)
                if result.is_error:
                    raise SystemExit(f"{name}: {result.text}")
                answer = json.loads(result.text)[0]["N"]
                statements = len(log)
            out[name] = (statistics.median(times), answer, statements)
            progress(f"quipu {name}: {out[name][0]:.2f} s")
        return out
    finally:
        if host is not None:
            host.close()
        kb.close()


PEER: Final = """
:- use_module(library(semweb/rdf_db)).
:- use_module(library(semweb/rdf_ntriples)).
:- initialization(main, main).
main :-
    current_prolog_flag(argv, [File, RunsA | Goals]),
    atom_number(RunsA, Runs),
    rdf_load(File, [format(ntriples), silent(true)]),
    forall(member(GoalA, Goals),
           ( term_to_atom(G, GoalA),
             numlist(1, Runs, Ns),
             findall(T-N, ( member(_, Ns), get_time(T0), aggregate_all(count, G, N),
                            get_time(T1), T is T1 - T0 ), Ts),
             msort(Ts, Sorted), length(Sorted, L), M is L // 2, nth0(M, Sorted, Med-Count),
             format("~w ~w~n", [Med, Count]) )).
"""


def run_peer(work: Path, nt: Path, runs: int) -> dict[str, tuple[float, int]]:
    script = work / "peer.pl"
    script.write_text(PEER, encoding="utf-8")
    done = subprocess.run(
        ["swipl", str(script), str(nt), str(runs), *GOALS.values()],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.split("\n")
    out: dict[str, tuple[float, int]] = {}
    for name, line in zip(GOALS, lines, strict=False):
        seconds, count = line.split()
        out[name] = (float(seconds), int(count))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.logic_graph", description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=25_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if shutil.which("swipl") is None:
        print("SWI-Prolog (swipl) is needed: sh scripts/ensure-swipl.sh", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="quipu-bench-logic-graph-"))
    try:
        nt = work / "graph.nt"
        nt.write_text("\n".join(triples(args.services)) + "\n", encoding="utf-8")
        ours = run_quipu(work, nt, args.runs)
        progress("the peer: semweb/rdf_db")
        theirs = run_peer(work, nt, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    wrong = False
    for name in GOALS:
        seconds, answer, statements = ours[name]
        peer_seconds, peer_answer = theirs[name]
        wrong |= answer != peer_answer
        target = "-" if name == "scan" else f"< {LIMIT_S:.0f} s {verdict(seconds < LIMIT_S)}"
        rows.append(
            [
                name,
                f"{seconds:.2f} s",
                f"{answer:,}" + ("" if answer == peer_answer else f" (peer {peer_answer:,})"),
                f"{statements:,}",
                f"{peer_seconds * 1000:.0f} ms",
                f"{seconds / peer_seconds:.0f}x" if peer_seconds > 0 else "-",
                target,
            ]
        )
    print(f"## Logic over the graph, {args.services * 4:,} triples ({args.services:,} services)\n")
    print(environment())
    print(
        f"- SWI-Prolog: {subprocess.run(['swipl', '--version'], capture_output=True, text=True).stdout.strip()}"
    )
    print()
    headers = ["goal", "quipu", "solutions", "fact statements", "rdf_db", "ratio", "target"]
    print(table(headers, rows, [False, True, True, True, True, True, False]))
    if wrong:
        print("\nquipu's answers disagree with rdf_db's", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
