"""The sharing round trip between two stores, each behind its own ``quipu-server`` process: A
shares a graph with blank nodes and language-tagged literals, B imports, promotes and exports
it, and the canonical hash of B's graph equals A's (tools-graphs-governance §4, issue 24).

In the suite's PostgreSQL half both stores are PostgreSQL databases, so the same test is the
round trip with B on PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import httpx

from quipu.sharing import canonical
from quipu.sharing import manifest as mf
from tests.backends import store_location
from tests.rest.live_server import free_port

SERVER: Final = Path(sys.executable).parent / "quipu-server"
EX: Final = "http://ex.org/"
GRAPH: Final = "http://ex.org/g/travel"
DATA: Final = f"""@prefix ex: <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:trip a ex:Trip ; rdfs:label "Andes"@en, "Los Andes"@es ;
  ex:leg [ ex:from "Cusco" ; ex:to [ ex:name "Puno" ; ex:alt "3827"^^<http://www.w3.org/2001/XMLSchema#integer> ] ] ,
         [ ex:from "Puno" ; ex:to "La Paz" ] ;
  ex:note "line one\\nline two" .
"""


class Server:
    """A ``quipu-server`` child process over one store; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, db: str, log: Path) -> None:
        for attempt in range(3):  # a port taken between free_port() and the bind: try another
            self.base = f"http://127.0.0.1:{free_port()}"
            self.log = log.with_suffix(f".{attempt}.log")
            with self.log.open("wb") as out:
                self.proc = subprocess.Popen(
                    [str(SERVER), "--db", db, "--bind", self.base.removeprefix("http://")],
                    stdout=subprocess.DEVNULL,
                    stderr=out,
                    env={**os.environ, "QUIPU_CONFIG": os.devnull},
                )
            if self._ready():
                return
        raise RuntimeError(f"quipu-server did not start: {self.log.read_text(errors='replace')[-2000:]}")

    def _ready(self) -> bool:
        deadline = time.monotonic() + 60  # a loaded CI machine, not a speed target
        while self.proc.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(self.base + "/health", timeout=1).status_code == 200:
                    return True
            except httpx.TransportError:
                time.sleep(0.05)
        self.stop()
        return False

    def post(self, path: str, body: dict[str, Any], **headers: str) -> Any:
        response = httpx.post(self.base + path, json=body, headers=headers, timeout=60)
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text}"
        return (
            response.json()
            if response.headers["content-type"].startswith("application/json")
            else response.text
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@contextmanager
def server(root: Path, name: str) -> Iterator[Server]:
    root.mkdir(parents=True, exist_ok=True)
    process = Server(store_location(root, f"{name}.db"), root / name)
    try:
        yield process
    finally:
        process.stop()


def test_a_graph_travels_between_two_servers_and_keeps_its_canonical_hash(tmp_path: Path) -> None:
    with server(tmp_path / "a", "a") as a, server(tmp_path / "b", "b") as b:
        a.post("/graph/create", {"graph": GRAPH})
        a.post("/knot", {"turtle": DATA, "graph": GRAPH})
        shared = a.post("/share", {"scope": {"kind": "graph", "value": GRAPH}, "no_shapes": True})
        manifest, files = shared["manifest"], shared["files"]
        assert "_:c14n" in files["export.nt"] and '"Los Andes"@es' in files["export.nt"]
        staged = b.post(
            "/import",
            {
                "manifest": manifest,
                "export_ntriples": files["export.nt"],
                "shapes_turtle": files["shapes.ttl"],
                "source": a.base + "/share",
            },
        )
        assert staged["outcome"] == "staged", staged
        promoted = b.post("/import/promote", {"share_id": manifest["share_id"]})
        assert promoted["triples"] == files["export.nt"].count("\n")
        exported = b.post("/export", {"format": "ntriples"}, Accept="application/json")["rdf"]
        assert mf.sha256_id(canonical.canonical_nquads(exported)) == manifest["graph_hash"]
        # B shares what it received, as a root share: the same graph, the same hash, B's own lineage.
        again = b.post("/share", {"scope": {"kind": "root", "value": None}, "no_shapes": True})
        assert again["manifest"]["graph_hash"] == manifest["graph_hash"]
        assert again["manifest"]["store_id"] != manifest["store_id"]
