"""The SPARQL benchmark: quipu against pyoxigraph and rdflib on one LUBM-shaped data set.

    python -m bench.sparql [--triples 100000 | --large] [--seed 42] [--repeat N]
                           [--only Q1,Q4,...] [--profile QNAME] [--skip-rdflib]
                           [--db postgresql://USER@HOST/DB [--explain]]

The data set (``bench.lubm``, cached under ``bench/.data/`` like the ingest benchmark's) is loaded
into a fresh quipu file store (one ``knot``), pyoxigraph's in-memory ``Store`` (``bulk_load``) and
an rdflib in-memory ``Graph``. Every query then runs on each engine: one unmeasured warm-up run,
then ``--repeat`` timed runs, of which the median is reported. What is timed:

- quipu: ``write_json(kb.query_result(text))``, the SPARQL JSON results document as a str
  (``quipu.sparql.results.write_json``; ``json.dumps(sparql_json(result))`` where that is not
  there yet). The plan column says how quipu answered: ``sql`` (one SQL statement), ``mixed``
  or ``rdflib`` (rdflib's evaluator over the store).
- pyoxigraph: ``store.query(text).serialize(format=QueryResultsFormat.JSON)``, i.e. the results
  serialised to SPARQL JSON by pyoxigraph's own serializer.
- rdflib: ``list(graph.query(text))``, the solutions materialised as rdflib terms (rdflib's JSON
  serializer would only add to its time). rdflib is slow: a warm-up run longer than ``--cap``
  seconds is taken as the measurement and the repeats are skipped (marked ``*``); the same cap
  applies to the other engines.

The loaded stores are moved out of the garbage collector's way (``gc.freeze()``) before timing, so
that rdflib's many objects do not slow down collections during the other engines' runs.

Q1-Q12 are read queries over the current state. Their expected row counts are pyoxigraph's in the
same run: the benchmark exits 1 when quipu's or rdflib's row count differs from pyoxigraph's (or an
engine fails a query). T1-T4 are quipu-only time-travel queries, run after Q1-Q12 over a few extra
writes with explicit timestamps (``kb.knot``/``kb.set``/``kb.retract``); their expected counts come
from replaying the same writes on the pyoxigraph store and querying it after each write:

- T1: Q1 (anchored join) ``as_of_tx`` the first extra write.
- T2: a 2-pattern join at a ``valid_at`` between the writes.
- T3: one subject's history, via ``kb.entity_history(iri)`` (claims plus retraction records).
- T4: the same SELECT at two ``as_of_tx`` read points; rows added and removed computed in Python.

Named graphs: Q1-Q6 run again on a second quipu store holding the same data split by subject over
three named graphs, read as one dataset (``graph=<dataset>``), first plain and then with a label
floor on (``[quipu.labels] min_freshness``, every member labelled fresh); the row counts must match
pyoxigraph's, and the target is each under 1.2x quipu's plain ROOT run.

Targets (informational, printed as HIT/MISS, never the exit status): at 1M triples every Q1-Q6
at most 1.0x pyoxigraph in memory (goal 0.8x), and no query slower than 3x pyoxigraph.

``--db`` also loads the data into a quipu store on that PostgreSQL server, in a scratch database
of its own (``bench.postgres``: created, used and dropped; the URL's database is never written),
and adds its columns: time, plan and the PG/SQLite ratio against the target (PostgreSQL within
2x of SQLite on Q1-Q6 at 1M triples). Its row counts are checked against pyoxigraph's too, and
T1-T4 run on it over the same extra writes. ``--explain`` then prints PostgreSQL's
``EXPLAIN (ANALYZE, BUFFERS)`` of the statement quipu runs for each of Q1-Q6.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Final

import pyoxigraph as ox

from bench import lubm, postgres
from bench.ingest import DATA_DIR, dataset, environment, progress, table
from quipu.sparql.engine import QueryResult
from quipu.sparql.results import write_json
from quipu.store.graph_labels import LabelFloor

LARGE: Final = 1_000_000
CORE_TARGET: Final = 1.0  # Q1-Q6 at 1M: <= 1.0x pyoxigraph in memory
CORE_GOAL: Final = 0.8
ANY_TARGET: Final = 3.0  # no query slower than 3x pyoxigraph
DEFAULT_CAP: Final = 10.0  # seconds: a slower warm-up run is the measurement
PG_TARGET: Final = 2.0  # Q1-Q6 at 1M: PostgreSQL <= 2x SQLite
GRAPHS_TARGET: Final = 1.2  # Q1-Q6 over a 3-graph dataset (and with a floor) <= 1.2x the ROOT run
GRAPH_NS: Final = "http://bench.quipu.dev/graph/"
DATASET: Final = GRAPH_NS + "all"

UB: Final = lubm.ONTOLOGY
PREFIX: Final = f"PREFIX ub: <{UB}>\n"
DEPT0: Final = "http://www.Department0.University0.edu"
PROFESSOR0: Final = f"{DEPT0}/FullProfessor0"


@dataclass(frozen=True)
class Query:
    name: str
    title: str
    text: str


QUERIES: Final = (
    Query(
        "Q1",
        "anchored 3-pattern join",
        PREFIX
        + f"SELECT ?s ?c ?t WHERE {{ ?s ub:memberOf <{DEPT0}> . ?s ub:takesCourse ?c . ?t ub:teacherOf ?c }}",
    ),
    Query(
        "Q2",
        "unanchored 2-hop chain",
        PREFIX
        + "SELECT ?s ?c ?t WHERE { ?s a ub:GraduateStudent . ?s ub:takesCourse ?c . ?t ub:teacherOf ?c }",
    ),
    Query(
        "Q3",
        "triangle (LUBM Q9 style)",
        PREFIX + "SELECT ?s ?a ?c WHERE { ?s ub:advisor ?a . ?a ub:teacherOf ?c . ?s ub:takesCourse ?c }",
    ),
    Query(
        "Q4",
        "FILTER(?age >= 24) + OPTIONAL email",
        PREFIX + "SELECT ?s ?n ?age ?e WHERE { ?s ub:memberOf ?d . ?s ub:name ?n . ?s ub:age ?age . "
        "FILTER(?age >= 24) OPTIONAL { ?s ub:emailAddress ?e } }",
    ),
    Query(
        "Q5",
        "GROUP BY dept COUNT",
        PREFIX + "SELECT ?d (COUNT(?s) AS ?members) WHERE { ?s ub:memberOf ?d } GROUP BY ?d",
    ),
    Query("Q6", "point lookup <s> ?p ?o", f"SELECT ?p ?o WHERE {{ <{PROFESSOR0}> ?p ?o }}"),
    Query(
        "Q7",
        "ORDER BY + LIMIT 10 (top-k)",
        PREFIX + "SELECT ?s ?age WHERE { ?s ub:age ?age } ORDER BY DESC(?age) ?s LIMIT 10",
    ),
    Query(
        "Q8",
        "UNION",
        PREFIX + "SELECT ?x ?n WHERE { { ?x a ub:FullProfessor } UNION { ?x a ub:AssociateProfessor } "
        "?x ub:name ?n }",
    ),
    Query(
        "Q9",
        "FILTER NOT EXISTS",
        PREFIX
        + "SELECT ?s WHERE { ?s a ub:UndergraduateStudent FILTER NOT EXISTS { ?s ub:emailAddress ?e } }",
    ),
    Query(
        "Q10",
        "property path subOrganizationOf+",
        PREFIX + "SELECT ?g ?o WHERE { ?g a ub:ResearchGroup . ?g ub:subOrganizationOf+ ?o }",
    ),
    Query("Q11", "DISTINCT", PREFIX + "SELECT DISTINCT ?c WHERE { ?s ub:takesCourse ?c }"),
    Query(
        "Q12",
        "string FILTER (CONTAINS on a name)",
        PREFIX + 'SELECT ?s ?n WHERE { ?s ub:name ?n FILTER(CONTAINS(?n, "Student12")) }',
    ),
)
CORE: Final = frozenset({"Q1", "Q2", "Q3", "Q4", "Q5", "Q6"})

# Time travel: members of Department0 and their ages (T2, T4), Q1 as of a transaction (T1).
T_MEMBERS: Final = PREFIX + f"SELECT ?s ?age WHERE {{ ?s ub:memberOf <{DEPT0}> . ?s ub:age ?age }}"
TIME_TRAVEL: Final = (
    ("T1", "Q1 as_of_tx an earlier transaction"),
    ("T2", "2-pattern join at a valid_at time"),
    ("T3", "one subject's history (entity_history)"),
    ("T4", "diff of one SELECT between two as_of_tx"),
)
ALL_NAMES: Final = tuple(q.name for q in QUERIES) + tuple(name for name, _ in TIME_TRAVEL)

LOAD_TIME: Final = "2024-01-01T00:00:00Z"  # the main data's transaction and valid-from time
T2_VALID_AT: Final = "2025-03-15T00:00:00Z"  # after steps A, B, C and before D
TT_STUDENT: Final = f"{DEPT0}/TimeTravelStudent"
AGE_IRI: Final = f"{UB}age"


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Measure:
    """One engine's numbers for one query."""

    ms: float | None = None  # median of the timed runs
    rows: int | None = None
    shown: str = ""  # the rows cell, when it is not just a count (T4)
    plan: str = ""
    capped: bool = False
    error: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What one (warm-up) run answered: its row count, and quipu's plan."""

    rows: int
    plan: str = ""
    shown: str = ""


def measure(
    first: Callable[[], Outcome],
    again: Callable[[], object],
    repeat: int,
    cap: float,
    profile: bool = False,
) -> Measure:
    """One unmeasured warm-up run (``first``, which also counts), then ``repeat`` timed runs."""
    clock = time.perf_counter
    gc.collect()
    started = clock()
    try:
        outcome = first()
    except Exception as exc:  # an engine failing a query is reported, not fatal
        return Measure(error=f"{type(exc).__name__}: {exc}"[:200])
    warm = clock() - started
    result = Measure(rows=outcome.rows, plan=outcome.plan, shown=outcome.shown)
    if warm > cap:
        result.ms, result.capped = warm * 1000, True
        return result
    profiler = cProfile.Profile() if profile else None
    times: list[float] = []
    for _ in range(repeat):
        if profiler is not None:
            profiler.enable()
        t = clock()
        again()
        times.append(clock() - t)
        if profiler is not None:
            profiler.disable()
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    result.ms = statistics.median(times) * 1000
    return result


def quipu_rows(result: QueryResult) -> int:
    if result.form == "ASK":
        return 1
    if result.form in ("CONSTRUCT", "DESCRIBE"):
        return len(result.triples)
    return len(result.table)


class QuipuEngine:
    def __init__(self, path: Path | str) -> None:
        import quipu

        self.kb = quipu.open(str(path))
        self.write_json, self.serializer = write_json, "quipu.sparql.results.write_json"

    def load(self, path: Path) -> int:
        """Read the file and knot it in one atomic write; returns the transaction id."""
        data = path.read_text(encoding="utf-8")
        return self.kb.knot(data, format="ntriples", timestamp=LOAD_TIME, valid_from=LOAD_TIME).tx_id

    graph: str | None = None  # the default graph every query reads (None: ROOT)

    def result(self, text: str, valid_at: str | None = None, as_of_tx: int | None = None) -> QueryResult:
        return self.kb.query_result(text, valid_at=valid_at, as_of_tx=as_of_tx, graph=self.graph)

    def run(self, text: str, valid_at: str | None = None, as_of_tx: int | None = None) -> str:
        return self.write_json(self.result(text, valid_at, as_of_tx))

    def first(self, text: str) -> Outcome:
        result = self.result(text)
        self.write_json(result)
        return Outcome(quipu_rows(result), result.plan)

    def close(self) -> None:
        self.kb.close()


class OxEngine:
    def __init__(self, path: Path) -> None:
        self.store = ox.Store()
        self.store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)

    def run(self, text: str) -> bytes | None:
        result = self.store.query(text)
        if isinstance(result, ox.QueryTriples):
            return result.serialize(format=ox.RdfFormat.N_TRIPLES)
        return result.serialize(format=ox.QueryResultsFormat.JSON)

    def first(self, text: str) -> Outcome:
        result = self.store.query(text)
        if isinstance(result, ox.QueryBoolean):
            return Outcome(1)
        return Outcome(len(list(result)))

    def solutions(self, text: str) -> list[tuple[str, ...]]:
        result = self.store.query(text)
        assert isinstance(result, ox.QuerySolutions)
        return [tuple(str(term) for term in solution) for solution in result]


class RdflibEngine:
    def __init__(self, path: Path) -> None:
        import rdflib

        self.graph = rdflib.Graph()
        self.graph.parse(str(path), format="nt")

    def run(self, text: str) -> list[Any]:
        return list(self.graph.query(text))

    def first(self, text: str) -> Outcome:
        return Outcome(len(self.run(text)))


def load_graphs(engine: QuipuEngine, path: Path) -> None:
    """The data split by subject over three named graphs, and a dataset naming all three."""
    parts: list[list[str]] = [[], [], []]
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            parts[zlib.crc32(line.split(" ", 1)[0].encode()) % 3].append(line)
    members = [f"{GRAPH_NS}{i}" for i in range(3)]
    for graph, lines in zip(members, parts, strict=True):
        engine.kb.graphs.create(graph)
        data = "\n".join(lines) + "\n"
        engine.kb.knot(data, format="ntriples", timestamp=LOAD_TIME, valid_from=LOAD_TIME, graph=graph)
        engine.kb.graphs.label(graph, timestamp=LOAD_TIME, freshness="fresh")
    engine.kb.graphs.datasets(action="create", name=DATASET, members=members)
    engine.graph = DATASET


def timed_load(label: str, build: Callable[[], Any]) -> tuple[Any, float]:
    progress(f"loading {label}")
    gc.collect()
    started = time.perf_counter()
    engine = build()
    seconds = time.perf_counter() - started
    progress(f"  {label} loaded in {seconds:.2f} s")
    return engine, seconds


# -- time travel -----------------------------------------------------------------------------


def _student_triples(i: int, age: int) -> str:
    s = f"<{TT_STUDENT}{i}>"
    return "".join(
        [
            f"{s} {lubm.RDF_TYPE} {lubm.UNDERGRADUATE} .\n",
            f'{s} {lubm.NAME} "TimeTravelStudent{i}" .\n',
            f"{s} {lubm.MEMBER_OF} <{DEPT0}> .\n",
            f'{s} {lubm.AGE} "{age}"^^<{lubm.XSD_INTEGER}> .\n',
            f"{s} {lubm.TAKES_COURSE} <{DEPT0}/Course0> .\n",
            f"{s} {lubm.TAKES_COURSE} <{DEPT0}/Course1> .\n",
        ]
    )


TRIPLES_PER_STUDENT: Final = 6


def _set_age_update(iri: str, age: int) -> str:
    return (
        f"DELETE {{ <{iri}> <{AGE_IRI}> ?a }} INSERT {{ <{iri}> <{AGE_IRI}> {age} }} "
        f"WHERE {{ <{iri}> <{AGE_IRI}> ?a }}"
    )


@dataclass(frozen=True)
class Step:
    """One extra write, made on quipu with explicit times and replayed on pyoxigraph."""

    label: str
    timestamp: str
    quipu: Callable[[Any], int]  # the KnowledgeBase -> the write's transaction id
    ox_update: str
    history: int  # fact-log rows this write adds to TimeTravelStudent0's history


def time_travel_steps() -> list[Step]:
    """A: 10 students join; B: s0's age set; C: s1 retracted; D: 5 more join; E: s0's age set."""
    s0, s1 = f"{TT_STUDENT}0", f"{TT_STUDENT}1"
    first = "".join(_student_triples(i, 20) for i in range(10))
    later = "".join(_student_triples(i, 21) for i in range(10, 15))
    ta, tb, tc, td, te = (f"2025-0{m}-01T00:00:00Z" for m in range(1, 6))
    return [
        Step(
            "A",
            ta,
            lambda kb: int(kb.knot(first, format="ntriples", timestamp=ta, valid_from=ta).tx_id),
            f"INSERT DATA {{ {first} }}",
            TRIPLES_PER_STUDENT,
        ),
        # set: one retraction record for the old age plus the new claim
        Step(
            "B",
            tb,
            lambda kb: int(kb.set(s0, AGE_IRI, {"int": 30}, timestamp=tb).tx_id),
            _set_age_update(s0, 30),
            2,
        ),
        Step(
            "C", tc, lambda kb: int(kb.retract(s1, timestamp=tc).tx_id), f"DELETE WHERE {{ <{s1}> ?p ?o }}", 0
        ),
        Step(
            "D",
            td,
            lambda kb: int(kb.knot(later, format="ntriples", timestamp=td, valid_from=td).tx_id),
            f"INSERT DATA {{ {later} }}",
            0,
        ),
        Step(
            "E",
            te,
            lambda kb: int(kb.set(s0, AGE_IRI, {"int": 31}, timestamp=te).tx_id),
            _set_age_update(s0, 31),
            2,
        ),
    ]


@dataclass
class TimeTravel:
    """Transaction ids of the extra writes and pyoxigraph's answers after each of them."""

    tx: dict[str, int]
    q1_rows: dict[str, int]
    members: dict[str, set[tuple[str, ...]]]
    member_rows: dict[str, int]
    history: int


def make_time_travel_writes(
    quipu: QuipuEngine, oxs: OxEngine, q1: str, pg: QuipuEngine | None = None
) -> tuple[TimeTravel, TimeTravel | None]:
    """The writes on quipu (and the PostgreSQL store, whose transaction ids are its own)."""
    tt = TimeTravel({}, {}, {}, {}, 0)
    pg_tx: dict[str, int] = {}
    for step in time_travel_steps():
        progress(f"time travel: write {step.label} at {step.timestamp}")
        tt.tx[step.label] = step.quipu(quipu.kb)
        if pg is not None:
            pg_tx[step.label] = step.quipu(pg.kb)
        oxs.store.update(step.ox_update)
        tt.q1_rows[step.label] = len(oxs.solutions(q1))
        members = oxs.solutions(T_MEMBERS)
        tt.members[step.label], tt.member_rows[step.label] = set(members), len(members)
        tt.history += step.history
    return tt, (replace(tt, tx=pg_tx) if pg is not None else None)


def cells(result: QueryResult) -> set[tuple[Any, ...]]:
    return {tuple(row) for row in result.table}


def run_time_travel(
    name: str, quipu: QuipuEngine, tt: TimeTravel, repeat: int, cap: float, profile: bool
) -> tuple[Measure, str]:
    """quipu's measurement of one T query and the expected rows (as shown in the table)."""
    a, e = tt.tx["A"], tt.tx["E"]
    if name == "T1":
        q1 = QUERIES[0].text
        expected = str(tt.q1_rows["A"])

        def t1() -> Outcome:
            result = quipu.result(q1, as_of_tx=a)
            quipu.write_json(result)
            return Outcome(quipu_rows(result), result.plan)

        return measure(t1, lambda: quipu.run(q1, as_of_tx=a), repeat, cap, profile), expected
    if name == "T2":
        expected = str(tt.member_rows["C"])

        def t2() -> Outcome:
            result = quipu.result(T_MEMBERS, valid_at=T2_VALID_AT)
            quipu.write_json(result)
            return Outcome(quipu_rows(result), result.plan)

        return (
            measure(t2, lambda: quipu.run(T_MEMBERS, valid_at=T2_VALID_AT), repeat, cap, profile),
            expected,
        )
    if name == "T3":
        s0 = f"{TT_STUDENT}0"

        def t3() -> Outcome:
            return Outcome(int(quipu.kb.entity_history(s0)["count"]), "api")

        return measure(t3, lambda: quipu.kb.entity_history(s0), repeat, cap, profile), str(tt.history)
    before, after = tt.members["A"], tt.members["E"]
    expected = f"+{len(after - before)}/-{len(before - after)}"

    def t4() -> Outcome:
        old, new = quipu.result(T_MEMBERS, as_of_tx=a), quipu.result(T_MEMBERS, as_of_tx=e)
        was, now = cells(old), cells(new)
        added, removed = now - was, was - now
        plan = old.plan if old.plan == new.plan else f"{old.plan}/{new.plan}"
        return Outcome(len(added) + len(removed), plan, f"+{len(added)}/-{len(removed)}")

    return measure(t4, t4, repeat, cap, profile), expected


# -- report ----------------------------------------------------------------------------------


def fmt_ms(m: Measure | None) -> str:
    if m is None:
        return "-"
    if m.error is not None or m.ms is None:
        return "error"
    ms = m.ms
    text = f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 else f"{ms:,.0f}"
    return text + ("*" if m.capped else "")


def ratio(a: Measure | None, b: Measure | None) -> float | None:
    if a is None or b is None or a.ms is None or b.ms is None or a.error or b.error or b.ms <= 0:
        return None
    return a.ms / b.ms


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}×"


def pg_verdict(name: str, r: float | None) -> str:
    if r is None:
        return "-"
    if name not in CORE:
        return "-"
    return f"{'MISS' if r > PG_TARGET else 'HIT'} (≤ {PG_TARGET:.1f}×)"


def verdict(name: str, r: float | None) -> str:
    if r is None:
        return "-"
    target = CORE_TARGET if name in CORE else ANY_TARGET
    if r > target:
        return "MISS"
    return "HIT (goal)" if name in CORE and r <= CORE_GOAL else "HIT"


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.sparql", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--triples", type=int, default=100_000, help="LUBM-shaped data set size (default 100000)"
    )
    parser.add_argument("--large", action="store_true", help=f"use {LARGE:,} triples")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per engine and query (median)")
    parser.add_argument("--only", default="", help="comma-separated query names, e.g. Q1,Q4,T2")
    parser.add_argument("--profile", metavar="QNAME", help="cProfile quipu's timed runs of this query")
    parser.add_argument("--skip-rdflib", action="store_true", help="do not load or query rdflib")
    parser.add_argument(
        "--cap",
        type=float,
        default=DEFAULT_CAP,
        help="seconds: a warm-up run slower than this is the measurement, no repeats (default 10)",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=DATA_DIR, help="where generated data sets are cached (bench/.data)"
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="also run on this PostgreSQL server (postgresql://USER@HOST/DB), in a scratch database",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="with --db: print EXPLAIN (ANALYZE, BUFFERS) of quipu's SQL for Q1-Q6 after the runs",
    )
    args = parser.parse_args(argv)
    if args.explain and not args.db:
        parser.error("--explain needs --db")
    if args.large:
        args.triples = LARGE
    if args.repeat < 1 or args.triples < 1 or args.cap <= 0:
        parser.error("--repeat, --triples and --cap must be positive")
    wanted = [n.strip().upper() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(wanted) - set(ALL_NAMES))
    if unknown:
        parser.error(f"unknown queries: {', '.join(unknown)} (known: {', '.join(ALL_NAMES)})")
    args.only = set(wanted) or set(ALL_NAMES)
    if args.profile is not None:
        args.profile = args.profile.strip().upper()
        if args.profile not in ALL_NAMES:
            parser.error(f"unknown query for --profile: {args.profile}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.db is None:
        return run(args, None)
    try:
        with postgres.ScratchDatabase(args.db) as scratch:
            progress(f"PostgreSQL: scratch database {scratch.name} on {scratch.where}")
            return run(args, scratch.url)
    except postgres.ScratchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, pg_url: str | None) -> int:
    """The benchmark; with ``pg_url`` (an empty database) also on PostgreSQL."""
    path = dataset(args.triples, args.seed, args.data_dir)
    lines = path.read_bytes().count(b"\n")
    failures: list[str] = []
    rows_out: list[list[str]] = []
    plans: list[tuple[str, postgres.Explained]] = []
    plain: dict[str, tuple[Measure, Measure]] = {}  # CORE query -> (quipu, pyoxigraph)
    graph_rows: list[list[str]] = []

    with tempfile.TemporaryDirectory(prefix="quipu-bench-sparql-") as tmp:

        def load_quipu() -> QuipuEngine:
            engine = QuipuEngine(Path(tmp) / "kb.db")
            engine.load(path)
            return engine

        quipu: QuipuEngine
        quipu, quipu_load = timed_load("quipu (file store, one knot)", load_quipu)
        pg: QuipuEngine | None = None
        pg_load: float | None = None
        if pg_url is not None:
            url = pg_url

            def load_pg() -> QuipuEngine:
                engine = QuipuEngine(url)
                engine.load(path)
                return engine

            pg, pg_load = timed_load("quipu (PostgreSQL, one knot)", load_pg)
        oxs: OxEngine
        oxs, ox_load = timed_load("pyoxigraph (in memory, bulk_load)", lambda: OxEngine(path))
        rdf: RdflibEngine | None = None
        rdf_load: float | None = None
        if not args.skip_rdflib:
            rdf, rdf_load = timed_load("rdflib (in-memory Graph)", lambda: RdflibEngine(path))

        # The loaded stores (rdflib's above all) would make every full collection slow, during
        # any engine's timed runs: move them to the permanent generation.
        gc.collect()
        gc.freeze()

        # Q1-Q12: current state, all engines, row counts checked against pyoxigraph
        for q in QUERIES:
            if q.name not in args.only:
                continue
            progress(f"{q.name} {q.title}")
            qm = measure(
                partial(quipu.first, q.text),
                partial(quipu.run, q.text),
                args.repeat,
                args.cap,
                args.profile == q.name,
            )
            pm: Measure | None = None
            if pg is not None:
                pm = measure(partial(pg.first, q.text), partial(pg.run, q.text), args.repeat, args.cap)
            om = measure(partial(oxs.first, q.text), partial(oxs.run, q.text), args.repeat, args.cap)
            rm: Measure | None = None
            if rdf is not None:
                rm = measure(partial(rdf.first, q.text), partial(rdf.run, q.text), args.repeat, args.cap)
            progress(
                f"  quipu {fmt_ms(qm)} ms ({qm.plan or qm.error}), "
                + (f"PostgreSQL {fmt_ms(pm)} ms ({pm.plan or pm.error}), " if pm is not None else "")
                + f"pyoxigraph {fmt_ms(om)} ms"
                + (f", rdflib {fmt_ms(rm)} ms" if rm is not None else "")
            )
            checked = (("quipu", qm), ("quipu-pg", pm), ("rdflib", rm))
            for label, m in (*checked, ("pyoxigraph", om)):
                if m is not None and m.error is not None:
                    failures.append(f"{q.name}: {label} failed: {m.error}")
            if om.rows is not None:
                for label, m in checked:
                    if m is not None and m.rows is not None and m.rows != om.rows:
                        failures.append(f"{q.name}: {label} returned {m.rows:,} rows, pyoxigraph {om.rows:,}")
            if q.name in CORE:
                plain[q.name] = (qm, om)
            r_quipu, r_rdflib = ratio(qm, om), ratio(rm, om)
            rows = f"{om.rows:,}" if om.rows is not None else "?"
            for label, m in checked:
                if m is not None and m.rows is not None and om.rows is not None and m.rows != om.rows:
                    rows += f" ({label} {m.rows:,})"
            row = [f"{q.name} {q.title}", rows, fmt_ms(qm), qm.plan or "-"]
            if pg is not None:
                row += [fmt_ms(pm), (pm.plan if pm is not None else "") or "-"]
            row += [
                fmt_ms(om),
                fmt_ms(rm),
                fmt_ratio(r_quipu),
                fmt_ratio(r_rdflib),
                f"{verdict(q.name, r_quipu)} (≤ {CORE_TARGET if q.name in CORE else ANY_TARGET:.1f}×)",
            ]
            if pg is not None:
                r_pg = ratio(pm, qm)
                row += [fmt_ratio(r_pg), pg_verdict(q.name, r_pg)]
            rows_out.append(row)

        # EXPLAIN after the timed runs and before the extra writes: the same data and plans
        if pg is not None and args.explain:
            for q in QUERIES:
                if q.name in CORE and q.name in args.only:
                    progress(f"EXPLAIN ANALYZE {q.name} on PostgreSQL")
                    try:
                        plans.append((q.name, postgres.explain(pg.kb, q.text)))
                    except Exception as exc:  # a plan we cannot get is reported, not fatal
                        plans.append((q.name, postgres.Explained(None, f"EXPLAIN failed: {exc}")))
                        failures.append(f"{q.name}: EXPLAIN on PostgreSQL failed: {exc}")

        # T1-T4: quipu only, over extra writes replayed on pyoxigraph for the expected counts
        wanted_t = [(name, title) for name, title in TIME_TRAVEL if name in args.only]
        if wanted_t:
            tt, pg_tt = make_time_travel_writes(quipu, oxs, QUERIES[0].text, pg)
            for name, title in wanted_t:
                progress(f"{name} {title}")
                tm, expected = run_time_travel(name, quipu, tt, args.repeat, args.cap, args.profile == name)
                shown = tm.shown or ("?" if tm.rows is None else f"{tm.rows:,}")
                progress(
                    f"  quipu {fmt_ms(tm)} ms ({tm.plan or tm.error}), rows {shown}, expected {expected}"
                )
                runs = [("quipu", tm, shown)]
                pgm: Measure | None = None
                if pg is not None and pg_tt is not None:
                    pgm, _ = run_time_travel(name, pg, pg_tt, args.repeat, args.cap, False)
                    pg_shown = pgm.shown or ("?" if pgm.rows is None else f"{pgm.rows:,}")
                    progress(f"  PostgreSQL {fmt_ms(pgm)} ms ({pgm.plan or pgm.error}), rows {pg_shown}")
                    runs.append(("quipu-pg", pgm, pg_shown))
                for label, m, got in runs:
                    if m.error is not None:
                        failures.append(f"{name}: {label} failed: {m.error}")
                    elif got.replace(",", "") != expected:
                        failures.append(f"{name}: {label} returned {got} rows, expected {expected}")
                row = [f"{name} {title}", shown, fmt_ms(tm), tm.plan or "-"]
                if pg is not None:
                    row += [fmt_ms(pgm), (pgm.plan if pgm is not None else "") or "-"]
                row += ["-", "-", "-", "-", "-"]
                if pg is not None:
                    row += [fmt_ratio(ratio(pgm, tm)), "-"]
                rows_out.append(row)
        if plain:
            quipu.close()  # one quipu store open at a time: the second has the same data
            graphs, graphs_load = timed_load(
                "quipu (3 named graphs + a dataset)", lambda: _loaded_graphs(Path(tmp) / "graphs.db", path)
            )
            graph_rows = run_graph_cases(graphs, plain, args, failures)
            graphs.close()
            progress(f"named graphs loaded in {graphs_load:.2f} s")
        serializer = quipu.serializer
        quipu.close()
        if pg is not None:
            pg.close()
        gc.unfreeze()

    headers = ["query", "rows", "quipu ms", "plan"]
    right = [False, True, True, False]
    if pg_url is not None:
        headers = ["query", "rows", "SQLite ms", "plan", "PG ms", "PG plan"]
        right += [True, False]
    headers += [
        "pyoxigraph ms",
        "rdflib ms",
        "SQLite/pyox" if pg_url else "quipu/pyox",
        "rdflib/pyox",
        "target",
    ]
    right += [True, True, True, True, False]
    if pg_url is not None:
        headers += ["PG/SQLite", "PG target"]
        right += [True, False]
    loads = f"quipu {quipu_load:.2f}, " + (f"PostgreSQL {pg_load:.2f}, " if pg_load is not None else "")
    out = [
        f"# quipu SPARQL benchmark: {lines:,} LUBM-shaped triples (seed {args.seed})",
        "",
        environment(),
        f"- data set: {path.name}; load s: {loads}pyoxigraph {ox_load:.2f}"
        + (f", rdflib {rdf_load:.2f}" if rdf_load is not None else ", rdflib skipped"),
        f"- timed: quipu {serializer}; pyoxigraph query().serialize(JSON); rdflib list(graph.query())",
        f"- one warm-up run per engine and query, then the median of {args.repeat} timed runs (ms); "
        f"* = the warm-up alone took over {args.cap:g} s and is the measurement",
    ]
    if pg_url is not None:
        out.append(f"- PostgreSQL: {pg_server_version(pg_url)}; quipu on it in a scratch database")
    out += [
        "",
        table(headers, rows_out, right),
        "",
        f"Targets (informational): at 1M triples every Q1-Q6 ≤ {CORE_TARGET:.1f}× pyoxigraph in memory "
        f"(goal {CORE_GOAL:.1f}×), and no query slower than {ANY_TARGET:.0f}× pyoxigraph"
        + (f"; PostgreSQL ≤ {PG_TARGET:.0f}× SQLite on Q1-Q6" if pg_url is not None else "")
        + ("." if lines >= LARGE else f"; this run has {lines:,} triples."),
    ]
    if not failures:
        out.append(
            "Row counts: quipu"
            + (" (SQLite and PostgreSQL)" if pg_url is not None else "")
            + " and rdflib agree with pyoxigraph; T1-T4 match the replayed writes."
        )
    if graph_rows:
        out += [
            "",
            "## Q1-Q6 over a dataset of 3 named graphs, and with a label floor on",
            "",
            table(
                ["query", "rows", "ROOT ms", "dataset ms", "plan", "dataset/ROOT", "floor ms", "plan",
                 "floor/ROOT", "target"],
                graph_rows,
                [False, True, True, True, False, True, True, False, True, False],
            ),
            "",
            f"Target: each under {GRAPHS_TARGET:.1f}× the plain ROOT run (ROOT ms, from the table above).",
        ]  # fmt: skip
    for name, explained in plans:
        out += ["", f"## EXPLAIN (ANALYZE, BUFFERS) {name} on PostgreSQL", ""]
        if explained.sql is not None:
            out += ["SQL:", "", explained.sql, "", f"Parameters: {explained.params}", "", "Plan:", ""]
        out.append(explained.plan)
    print("\n".join(out), flush=True)
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


def _loaded_graphs(db: Path, path: Path) -> QuipuEngine:
    """The named-graph store, closed once after loading and reopened: three loads into three
    graphs are each too small for the bulk path's ANALYZE, and closing runs the store's
    ``PRAGMA optimize``, which gathers the planner statistics a used store has."""
    engine = QuipuEngine(db)
    load_graphs(engine, path)
    engine.close()
    reopened = QuipuEngine(db)
    reopened.graph = DATASET
    return reopened


def run_graph_cases(
    engine: QuipuEngine,
    plain: dict[str, tuple[Measure, Measure]],
    args: argparse.Namespace,
    failures: list[str],
) -> list[list[str]]:
    """Q1-Q6 over the dataset, then again with a label floor every member passes."""
    measured: dict[str, list[Measure]] = {name: [] for name in plain}
    for floor in (None, LabelFloor(min_freshness="fresh")):
        engine.kb.db.label_floor = floor
        for q in QUERIES:
            if q.name not in plain:
                continue
            progress(f"{q.name} over the dataset" + (" with a label floor" if floor else ""))
            m = measure(partial(engine.first, q.text), partial(engine.run, q.text), args.repeat, args.cap)
            measured[q.name].append(m)
            expected = plain[q.name][1].rows
            if m.error is not None:
                failures.append(f"{q.name} (named graphs): failed: {m.error}")
            elif expected is not None and m.rows != expected:
                failures.append(f"{q.name} (named graphs): {m.rows} rows, pyoxigraph {expected}")
    engine.kb.db.label_floor = None
    rows: list[list[str]] = []
    for name, (root, oxm) in plain.items():
        ds, floored = measured[name]
        r_ds, r_floor = ratio(ds, root), ratio(floored, root)
        worst = max((r for r in (r_ds, r_floor) if r is not None), default=None)
        hit = "-" if worst is None else ("HIT" if worst <= GRAPHS_TARGET else "MISS")
        rows.append(
            [name, f"{oxm.rows:,}" if oxm.rows is not None else "?", fmt_ms(root), fmt_ms(ds), ds.plan or "-",
             fmt_ratio(r_ds), fmt_ms(floored), floored.plan or "-", fmt_ratio(r_floor),
             f"{hit} (≤ {GRAPHS_TARGET:.1f}×)"]
        )  # fmt: skip
    return rows


def pg_server_version(url: str) -> str:
    from sqlalchemy import create_engine

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.exec_driver_sql("SHOW server_version").scalar())
    finally:
        engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
