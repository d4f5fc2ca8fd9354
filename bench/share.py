"""The sharing benchmark: share, import and promote a graph with blank nodes, beside its peers.

    python -m bench.share [--entities 20000 | --large] [--seed 42]

A named graph of ``--entities`` entities (each with a type, a label, two language-tagged notes
and a blank-node address holding another blank node: 9 triples and 2 blank nodes per entity) is
loaded into a fresh quipu file store A. In the same run:

1. **share** — A's ``producing.members`` (the CLI path: store export, RDFC-1.0 canonicalisation
   with the work-limit replay, hashing, manifest), against **pyoxigraph** canonicalising the
   same triples in memory (``Dataset.canonicalize(RDFC_1_0)`` and sorted serialisation), the
   library quipu's canonicaliser drives. Target: within 4× of pyoxigraph.
2. **import** — a fresh store B stages the share (seals, canonical check, resolution, staging
   write), against the same triples loaded into a fresh store by ``kb.knot`` (the plain write
   path). Target: within 3× of knot.
3. **promote** — B promotes the staged share into ROOT, against the same knot. Target: within 2×.
4. **re-import** — B imports the same share again: every entity now has a local label with the
   same IRI, so resolution scores each incoming label against all of them (one label index,
   scored in C), and the import answers ``unchanged``. Target: within 3× of knot.

The promoted ROOT must canonicalise to the share's ``graph_hash`` (exit 1 otherwise). Timings
are wall clock on a shared, noisy machine; informational, as every benchmark here.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import pyoxigraph as ox

from bench.ingest import environment, progress, table, verdict
from quipu.api import KnowledgeBase
from quipu.config import SharingSettings
from quipu.sharing import canonical, producing
from quipu.sharing import manifest as mf

EX: Final = "http://bench.quipu/"
GRAPH: Final = EX + "graph/shared"
LARGE: Final = 50_000  # about 35 MB of export.nt: under the largest share a store accepts
CAP: Final = 64 * 1024 * 1024  # [quipu.sharing] max_share_bytes at its ceiling
TARGETS: Final = {"share": 4.0, "import": 3.0, "promote": 2.0, "re-import": 3.0}
T = TypeVar("T")


def document(entities: int, seed: int) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    for i in range(entities):
        e = f"<{EX}e{i}>"
        lines += [
            f"{e} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}C{i % 7}> .",
            f'{e} <http://www.w3.org/2000/01/rdf-schema#label> "entity {i}" .',
            f'{e} <{EX}note> "note {rng.randrange(10**6)}"@en .',
            f'{e} <{EX}note> "nota {rng.randrange(10**6)}"@es .',
            f"{e} <{EX}address> _:a{i} .",
            f'_:a{i} <{EX}city> "city {rng.randrange(500)}" .',
            f"_:a{i} <{EX}geo> _:g{i} .",
            f'_:g{i} <{EX}lat> "{rng.uniform(-90, 90):.5f}" .',
            f"{e} <{EX}knows> <{EX}e{rng.randrange(entities)}> .",
        ]
    return "\n".join(lines) + "\n"


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def pyoxigraph_canonical(text: str) -> str:
    dataset = ox.Dataset(ox.parse(text, format=ox.RdfFormat.N_TRIPLES))
    dataset.canonicalize(ox.CanonicalizationAlgorithm.RDFC_1_0)
    return "".join(sorted(f"{q} .\n" for q in dataset))


def knot_into_fresh(directory: Path, text: str) -> float:
    with KnowledgeBase(str(directory / "knot.db")) as kb:
        kb.create_graph(GRAPH)
        seconds, _ = timed(lambda: kb.knot(text, format="nt", graph=GRAPH))
    return seconds


def run(entities: int, seed: int, directory: Path) -> int:
    text = document(entities, seed)
    triples = text.count("\n")
    progress(f"{entities:,} entities, {triples:,} triples")
    with KnowledgeBase(str(directory / "a.db")) as a:
        a.create_graph(GRAPH)
        a.knot(text, format="nt", graph=GRAPH)
        progress("sharing from A")
        share_s, (manifest, files) = timed(
            lambda: producing.members(a.sharing.env, scope={"kind": "graph", "value": GRAPH}, no_shapes=True)
        )
    progress("pyoxigraph canonicalising the same triples")
    peer_s, peer_text = timed(lambda: pyoxigraph_canonical(text))
    same = peer_text == files["export.nt"]
    wire: dict[str, Any] = {
        "manifest": manifest,
        "export_ntriples": files["export.nt"],
        "shapes_turtle": files["shapes.ttl"],
        "source": "bench",
    }
    with KnowledgeBase(str(directory / "b.db"), sharing=SharingSettings(max_share_bytes=CAP)) as b:
        progress("importing into B")
        import_s, staged = timed(lambda: b.sharing.import_share(**wire))
        progress("promoting in B")
        promote_s, promoted = timed(lambda: b.sharing.promote(share_id=manifest["share_id"]))
        progress("importing the same share again, every entity now labelled locally")
        again_s, again = timed(lambda: b.sharing.import_share(**wire))
        landed = mf.sha256_id(canonical.canonical_nquads(b.export("ntriples")))
    progress("knot of the same triples into a fresh store")
    knot_s = knot_into_fresh(directory, text)
    correct = (
        same
        and staged["outcome"] == "staged"
        and landed == manifest["graph_hash"]
        and again["outcome"] == "unchanged"
    )
    rows = []
    for name, mine, peer, peer_name in (
        ("share", share_s, peer_s, "pyoxigraph RDFC-1.0"),
        ("import", import_s, knot_s, "quipu knot"),
        ("promote", promote_s, knot_s, "quipu knot"),
        ("re-import", again_s, knot_s, "quipu knot"),
    ):
        ratio = mine / peer
        rows.append(
            [
                name,
                f"{mine:.2f}",
                f"{triples / mine:,.0f}",
                peer_name,
                f"{peer:.2f}",
                f"{ratio:.2f}×",
                f"≤ {TARGETS[name]:g}×",
                verdict(ratio <= TARGETS[name]),
            ]
        )
    print(f"## Sharing: {triples:,} triples, {2 * entities:,} blank nodes\n")
    print(environment() + "\n")
    print(
        table(
            ["step", "quipu s", "triples/s", "peer", "peer s", "ratio", "target", "verdict"],
            rows,
            [False, True, True, False, True, True, False, False],
        )
    )
    print(
        f"\nexport.nt equals pyoxigraph's canonical form: {same}; promoted ROOT hashes to the share's "
        f"graph_hash: {landed == manifest['graph_hash']}; triples promoted: {promoted['triples']:,}"
    )
    return 0 if correct else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.share", description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--large", action="store_true", help=f"{LARGE:,} entities")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="quipu-bench-share-") as tmp:
        return run(LARGE if args.large else args.entities, args.seed, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
