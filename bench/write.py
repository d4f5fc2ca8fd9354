"""The write benchmark: durable episodes per second, without shapes and through the SHACL gate.

    python -m bench.write [--triples 100000 | --large] [--episodes 2000] [--gated 500] [--seed 42]

One LUBM-shaped data set (``bench.lubm``, cached under ``bench/.data/`` like the other benchmarks')
is loaded into a fresh quipu file store with one ``knot``, so every episode writes into a store of
that size. Then, every loop a fixed count, one durable transaction per call:

1. ``--episodes`` structured episodes through ``kb.episode`` without shapes: five typed nodes (a
   label, a description, a property or two) and four relation edges, with names drawn so that some
   nodes recur across episodes (``bench.episodes``' hot sets of services, teams, incidents ...).
2. ``--gated`` episodes' generated statements through ``kb.knot`` without shapes, so the cost of
   the episode layer and of the gate shows against it.
3. ``--gated`` further episodes with request shapes (``shapes()``: one node shape per node type
   and one for the activity). When ``kb.episode`` takes no ``shapes`` (an older build), the same
   statements go through ``kb.knot(..., shapes=...)`` (the /knot gate) and the row says so.
4. ``--gated`` further episodes with the same shapes stored (``kb.load_shapes``) and
   ``shacl.validate_on_write`` on, without request shapes: the production configuration, which
   the 5 ms target reads.
5. ``--episodes`` more episodes as in 1 while one realtime webhook subscription is delivered
   (``quipu.events.delivery``, the worker ``quipu-server`` runs, on the same store, with its
   default settings) to a receiver on loopback in a child process. 1 and 5 run in alternating
   blocks (ABBA ABBA), so the store's growth slows both alike; before each block of 5 the cursor
   moves to the log's head, so it measures keeping up, not a backlog. The target: under 10%
   fewer episodes/s than 1. The worker must have delivered every event of its blocks, without a
   failure, within a minute after each.

Latencies are per call (median and nearest-rank p99, ms); episodes/s is calls over the loop's wall
time. The Rust Quipu's documented 315-390 episodes/s is printed as the comparison line. Targets are
informational (PASS/MISS never changes the exit status). The run exits 1 when a write answers
``unchanged`` or reuses a tx id, or when a deliberately invalid episode is not refused by the gate.
"""

from __future__ import annotations

import argparse
import inspect
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.episodes import _EDGES, _KINDS, _STATUS, _WORDS, HOT_SHARE
from bench.ingest import DATA_DIR, LARGE, TxResult, dataset, environment, progress, table, verdict
from bench.rest import finish, fmt_ms, timed, warm
from bench.sparql import QuipuEngine

RATE_TARGET: Final = 2_000  # durable episodes per second without shapes
GATED_TARGET_MS: Final = 5.0  # median SHACL-gated episode write, at 1M triples
WEBHOOK_SLOWDOWN: Final = 0.10  # one realtime subscription costs under 10% of episodes/s
DRAIN_S: Final = 60.0  # how long the worker may take to deliver the rest after a block
BLOCKS: Final = 8  # alternating blocks, half of them with the subscription
RUST_RATE: Final = "315-390"  # episodes/s the original Rust Quipu documents
NODES: Final = 5
EDGES: Final = 4
SOURCE: Final = "bench-write"
GATE_NATIVE: Final = "request shapes on kb.episode, then the same shapes stored with shacl.validate_on_write"
GATE_FALLBACK: Final = "kb.knot request shapes (kb.episode takes no shapes in this build)"

PROV: Final = "http://www.w3.org/ns/prov#"
RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
XSD: Final = "http://www.w3.org/2001/XMLSchema#"


def shapes(base_ns: str) -> str:
    """SHACL shapes for every node type the episodes use, and for the episode's activity."""
    status = " ".join(f'"{s}"' for s in _STATUS)
    out = [
        f"@prefix sh: <http://www.w3.org/ns/shacl#> .\n@prefix q: <{base_ns}> .\n"
        f"@prefix prov: <{PROV}> .\n@prefix rdfs: <{RDFS}> .\n@prefix xsd: <{XSD}> .\n",
        "q:ActivityShape a sh:NodeShape ; sh:targetClass prov:Activity ;\n"
        "  sh:property [ sh:path rdfs:label ; sh:minCount 1 ; sh:maxCount 1 ; sh:datatype xsd:string ] ;\n"
        "  sh:property [ sh:path q:contentHash ; sh:minCount 1 ; sh:datatype xsd:string ] .\n",
    ]
    for kind, _hot in _KINDS:
        extra = ""
        if kind == "Service":
            extra = f"  sh:property [ sh:path q:status ; sh:maxCount 1 ; sh:in ( {status} ) ] ;\n"
        out.append(
            f"q:{kind}Shape a sh:NodeShape ; sh:targetClass q:{kind} ;\n"
            "  sh:property [ sh:path rdfs:label ; sh:minCount 1 ; sh:datatype xsd:string ] ;\n"
            "  sh:property [ sh:path rdfs:comment ; sh:maxCount 1 ; sh:datatype xsd:string ] ;\n"
            "  sh:property [ sh:path q:revision ; sh:datatype xsd:integer ; sh:minInclusive 0 ] ;\n"
            f"{extra}"
            "  sh:property [ sh:path prov:wasGeneratedBy ; sh:minCount 1 ; sh:nodeKind sh:IRI ] .\n"
        )
    return "\n".join(out)


def episode(index: int, seed: int, prefix: str = "") -> dict[str, Any]:
    """Episode ``index`` as ``kb.episode`` keyword arguments: 5 nodes, 4 edges (a pure function)."""
    rng = random.Random(seed * 10_000_019 + index)
    nodes: list[dict[str, Any]] = []
    used: set[str] = set()
    while len(nodes) < NODES:
        kind, hot = _KINDS[rng.randrange(len(_KINDS))]
        if rng.random() < HOT_SHARE:
            name = f"{kind.lower()}-{rng.randrange(hot)}"
        else:
            name = f"{kind.lower()}-{prefix}e{index}-{len(nodes)}"
        if name in used:
            continue
        used.add(name)
        words = " ".join(_WORDS[rng.randrange(len(_WORDS))] for _ in range(6))
        properties: dict[str, Any] = {"revision": rng.randrange(1, 500)}
        if kind == "Service":
            properties["status"] = _STATUS[rng.randrange(len(_STATUS))]
        nodes.append(
            {"name": name, "type": kind, "description": f"episode {index}: {words}", "properties": properties}
        )
    edges = [
        {
            "source": nodes[i]["name"],
            "target": nodes[i + 1]["name"],
            "relation": _EDGES[rng.randrange(len(_EDGES))],
        }
        for i in range(EDGES)
    ]
    return {
        "name": f"bench-{prefix}{seed}-{index}",
        "episode_body": f"agent note {index}",
        "source": SOURCE,
        "group_id": f"group-{index % 16}",
        "nodes": nodes,
        "edges": edges,
    }


def invalid_episode(seed: int) -> dict[str, Any]:
    """An episode whose Service has a status outside the shapes' ``sh:in`` list."""
    body = episode(0, seed, "invalid-")
    body["nodes"][0] = {
        "name": "service-invalid",
        "type": "Service",
        "properties": {"status": "on fire", "revision": 1},
    }
    body["edges"][0]["source"] = "service-invalid"
    return body


def statements_nt(kb: Any, body: dict[str, Any]) -> str:
    """The statements ``kb.episode(**body)`` would write, as N-Triples (for the /knot-gate fallback)."""
    from quipu.episodes import build

    parsed = build.parse_episode(**body)
    graph = build.build(parsed, kb.base_ns).graph()
    return str(graph.serialize(format="nt"))


# A receiver that answers 200 to every POST, in a process of its own (as a real one would be): it
# prints its port, then serves.
RECEIVER: Final = """
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@dataclass
class Drain:
    seconds: float = 0.0  # the longest wait after a block until the cursor reached the log's head
    delivered: int = 0  # events acknowledged by the receiver
    problem: str | None = None


class Webhook:
    """One realtime subscription to a loopback receiver. ``block()`` runs the delivery worker
    around one timed block, the cursor first moved to the log's head (so the worker keeps up with
    that block's writes rather than a backlog), and after it waits, untimed, until everything
    written was delivered."""

    def __init__(self, kb: Any) -> None:
        from quipu.events import subscriptions

        self.kb = kb
        self.drain = Drain()
        self.receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
        assert self.receiver.stdout is not None
        port = int(self.receiver.stdout.readline())
        url = f"http://127.0.0.1:{port}/hook"
        subscriptions.run(kb.db, allow_private=True, action="create", consumer_id="bench", webhook_url=url)

    @contextmanager
    def block(self) -> Iterator[None]:
        from quipu.config import EventsSettings
        from quipu.events.delivery import Delivery
        from quipu.store import event_feed
        from quipu.store import subscriptions as rows

        with self.kb.db.read() as conn:
            head = event_feed.latest_offset(conn)
        self.kb.feeds.commit(consumer_id=rows.cursor_id("bench"), offset=head)
        worker = Delivery(self.kb.db, EventsSettings(webhook_allow_private=True), self.kb.feeds)
        worker.start()
        try:
            yield
            started = time.perf_counter()
            while self.drain.problem is None:
                with self.kb.db.read() as conn:
                    [sub] = rows.every(conn)
                    cursor = event_feed.committed_offset(conn, rows.cursor_id("bench"))
                    caught_up = cursor == event_feed.latest_offset(conn)
                waited = time.perf_counter() - started
                self.drain.delivered = sub.delivered
                if sub.failures or sub.last_error:
                    self.drain.problem = f"a delivery failed: {sub.last_error}"
                elif caught_up:
                    self.drain.seconds = max(self.drain.seconds, waited)
                    break
                elif waited > DRAIN_S:
                    self.drain.problem = f"events still undelivered {DRAIN_S:g} s after a block"
                time.sleep(0.05)
        finally:
            worker.stop(timeout=30)

    def close(self) -> None:
        self.receiver.kill()
        self.receiver.wait()
        assert self.receiver.stdout is not None
        self.receiver.stdout.close()


def episode_takes_shapes(kb: Any) -> bool:
    return "shapes" in inspect.signature(kb.episode).parameters


@dataclass
class Checks:
    failures: list[str] = field(default_factory=list)
    tx_ids: set[int] = field(default_factory=set)

    def written(self, what: str, result: Any) -> None:
        tx_id = int(result.tx_id)
        if getattr(result, "outcome", "created") == "unchanged" or tx_id <= 0:
            self.failures.append(f"{what}: wrote nothing (tx_id {tx_id})")
        elif tx_id in self.tx_ids:
            self.failures.append(f"{what}: tx_id {tx_id} answered twice")
        self.tx_ids.add(tx_id)


@dataclass
class Row:
    label: str
    path: str
    result: TxResult


def report_row(row: Row) -> list[str]:
    r = row.result
    return [
        row.label,
        row.path,
        f"{len(r.latencies):,}",
        f"{r.per_second:,.0f}",
        fmt_ms(r.percentile(50)),
        fmt_ms(r.percentile(99)),
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.write", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--triples", type=int, default=100_000, help="LUBM-shaped store size (default 100000)"
    )
    parser.add_argument("--large", action="store_true", help=f"use {LARGE:,} triples")
    parser.add_argument(
        "--episodes", type=int, default=2000, help="timed episodes without shapes (default 2000)"
    )
    parser.add_argument("--gated", type=int, default=500, help="timed SHACL-gated episodes (default 500)")
    parser.add_argument(
        "--warmup", type=int, default=20, help="unmeasured writes before each loop (default 20)"
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--data-dir", type=Path, default=DATA_DIR, help="where generated data sets are cached (bench/.data)"
    )
    args = parser.parse_args(argv)
    if args.large:
        args.triples = LARGE
    if min(args.triples, args.episodes, args.gated) < 1 or args.warmup < 0:
        parser.error("--triples, --episodes and --gated must be positive, --warmup not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    path = dataset(args.triples, args.seed, args.data_dir)
    lines = path.read_bytes().count(b"\n")
    checks = Checks()

    with tempfile.TemporaryDirectory(prefix="quipu-bench-write-") as tmp:
        db = Path(tmp) / "kb.db"
        progress(f"loading {lines:,} triples into {db}")
        started = time.perf_counter()
        engine = QuipuEngine(db)
        engine.load(path)
        load_seconds = time.perf_counter() - started
        progress(f"  loaded in {load_seconds:.2f} s")
        kb = engine.kb
        shape_text = shapes(kb.base_ns)
        native = episode_takes_shapes(kb)
        seed = args.seed

        def write_episode(
            prefix: str, gated: bool, calls: int, stored_shapes: bool = False
        ) -> Callable[[int], object]:
            # Bodies are built before the loop, so the timing holds only the write.
            bodies = [episode(i, seed, prefix) for i in range(calls)]
            if gated:
                for body in bodies:
                    body["shapes"] = shape_text

            def call(i: int) -> object:
                body = bodies[i]
                # stored_shapes: the stored sets gate it too (shacl.validate_on_write).
                result = kb.episode(**body, validate_on_write=stored_shapes)
                checks.written(f"episode {body['name']}", result)
                return result

            return call

        def write_knot(prefix: str, docs: list[str], gated: bool) -> Callable[[int], object]:
            def call(i: int) -> object:
                shapes = shape_text if gated else None
                result = kb.knot(docs[i], format="ntriples", source=SOURCE, shapes=shapes)
                checks.written(f"knot {prefix}{i}", result)
                return result

            return call

        rows: list[Row] = []
        # Without and with the subscription in alternating blocks, ABBA ABBA: each write makes
        # the store larger and the next one slower, so one loop after the other would charge
        # that drift to whichever ran second (about 10% per 2,000 episodes here).
        progress(f"{args.episodes:,} episodes each without and with one realtime webhook subscription")
        warm(args.warmup, write_episode("warm-", False, args.warmup))
        webhook = Webhook(kb)
        plain = TxResult("plain", [], 0.0)
        hooked = TxResult("webhook", [], 0.0)
        pairs = BLOCKS // 2
        sizes = [args.episodes // pairs + (i < args.episodes % pairs) for i in range(pairs)]
        try:
            for index in range(BLOCKS):
                with_hook = index % 4 in (1, 2)
                size = sizes[index // 2]
                into = hooked if with_hook else plain
                call = write_episode(f"b{index}-", False, size)
                with webhook.block() if with_hook else nullcontext():
                    latencies, wall = timed(size, call)
                into.latencies.extend(latencies)
                into.wall += wall
        finally:
            webhook.close()
        drain = webhook.drain
        if drain.problem is not None:
            checks.failures.append(f"webhook delivery: {drain.problem}")
        rows.append(Row("episode, no shapes", "kb.episode(), one transaction each", plain))
        rows.append(
            Row(
                "episode, no shapes, 1 webhook",
                "kb.episode() while the delivery worker pushes to a loopback receiver",
                hooked,
            )
        )

        count = args.gated
        progress(f"{count:,} episodes' statements through kb.knot, no shapes (the gate's cost)")
        same = [statements_nt(kb, episode(i, seed, "knot-")) for i in range(count)]
        ungated = TxResult("knot", *timed(count, write_knot("knot-", same, False)))
        knot_row = Row("same statements, no shapes", "kb.knot() of the episode's statements", ungated)

        if native:
            progress(f"{count:,} episodes, request shapes")
            warm(args.warmup, write_episode("warm-gated-", True, args.warmup))
            gated = TxResult("gated", *timed(count, write_episode("gated-", True, count)))
            gated_path = "kb.episode(shapes=…), one transaction each"
        else:
            progress(f"{count:,} episodes' statements through kb.knot(shapes=…) (episode gate not wired)")
            warm_docs = [statements_nt(kb, episode(i, seed, "warm-gated-")) for i in range(args.warmup)]
            docs = [statements_nt(kb, episode(i, seed, "gated-")) for i in range(count)]
            warm(args.warmup, write_knot("warm-gated-", warm_docs, True))
            gated = TxResult("gated", *timed(count, write_knot("gated-", docs, True)))
            gated_path = "kb.knot(shapes=…) of the episode's statements (episode gate not wired yet)"
        rows.append(Row("episode, SHACL gate", gated_path, gated))
        if native:
            # The production configuration: a stored shape set and shacl.validate_on_write.
            kb.load_shapes("bench-write", shape_text)
            progress(f"{count:,} episodes, stored shapes with validate_on_write")
            warm(args.warmup, write_episode("warm-stored-", False, args.warmup, True))
            stored = TxResult("stored", *timed(count, write_episode("stored-", False, count, True)))
            rows.append(
                Row("episode, SHACL gate", "stored shapes + shacl.validate_on_write, kb.episode()", stored)
            )
        rows.append(knot_row)

        # The gate must be on: an invalid episode is refused and changes nothing.
        before = kb.stats()
        bad = invalid_episode(seed)
        try:
            if native:
                kb.episode(**bad, shapes=shape_text)
            else:
                kb.knot(statements_nt(kb, bad), format="ntriples", source=SOURCE, shapes=shape_text)
            checks.failures.append("the SHACL gate accepted an episode whose status the shapes refuse")
        except Exception as exc:  # the refusal's class is the gate's business; its reason is checked
            if getattr(exc, "reason", None) != "shacl_violation":
                checks.failures.append(f"the invalid episode failed for another reason: {exc!r}")
        if kb.stats() != before:
            checks.failures.append("the refused episode changed the store")
        statements = kb.stats()
        engine.close()

    # The target reads the production configuration when it was measured, else request shapes.
    stored_rows = [row for row in rows if row.result.name == "stored"]
    target_row = stored_rows[0] if stored_rows else next(row for row in rows if row.result.name == "gated")
    ratio = hooked.per_second / plain.per_second
    gated_median = target_row.result.percentile(50)
    target_via = "stored shapes" if target_row.result.name == "stored" else "request shapes"
    scope = "" if lines >= LARGE else f"; measured at {lines:,}, the target is at 1M"
    out = [
        f"# quipu write benchmark: episodes into {lines:,} LUBM-shaped triples (seed {args.seed})",
        "",
        environment(),
        f"- data set: {path.name}; quipu load {load_seconds:.2f} s; {args.warmup} unmeasured writes "
        f"before each loop; store after the run: {statements}",
        f"- an episode: {NODES} typed nodes (label, description, properties), {EDGES} edges, "
        "an activity with provenance; one durable transaction (WAL, synchronous=NORMAL)",
        f"- SHACL gate: {GATE_NATIVE if native else GATE_FALLBACK}, "
        f"{len(_KINDS) + 1} node shapes covering every node type and the activity",
        f"- webhook: one realtime subscription, default [quipu.events] settings, a receiver on "
        f"loopback in a child process, in alternating blocks (ABBA ABBA); it acknowledged "
        f"{drain.delivered:,} events, the last at most {drain.seconds:.2f} s after its block",
        "",
        table(
            ["write", "path", "calls", "episodes/s", "p50 ms", "p99 ms"],
            [
                *(report_row(row) for row in rows),
                ["Rust Quipu (documented)", "the original implementation", "-", RUST_RATE, "-", "-"],
            ],
            [False, False, True, True, True, True],
        ),
        "",
        "episodes/s: calls over the loop's wall time; p50/p99: nearest-rank per-call latency.",
        "",
        "## Targets (informational)",
        "",
        table(
            ["target", "measured", "verdict"],
            [
                [
                    f"≥ {RATE_TARGET:,} episodes/s without shapes",
                    f"{plain.per_second:,.0f} episodes/s",
                    verdict(plain.per_second >= RATE_TARGET),
                ],
                [
                    f"one realtime webhook subscription < {WEBHOOK_SLOWDOWN:.0%} slower",
                    f"{ratio:.2f}x the episodes/s without it ({hooked.per_second:,.0f} vs "
                    f"{plain.per_second:,.0f})",
                    "HIT" if ratio > 1 - WEBHOOK_SLOWDOWN else "MISS",
                ],
                [
                    f"median SHACL-gated episode write ≤ {GATED_TARGET_MS:g} ms at 1M triples",
                    f"{fmt_ms(gated_median)} ms ({target_via}){scope}",
                    verdict(gated_median <= GATED_TARGET_MS),
                ],
            ],
            [False, True, False],
        ),
    ]
    return finish(
        out,
        checks.failures[:20],
        "Checks: every write committed a new transaction; the gate refused the invalid episode; "
        "the webhook received every event.",
    )


if __name__ == "__main__":
    sys.exit(main())
