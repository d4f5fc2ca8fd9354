"""The demo graph (``quipu.demo_graph``) read back at valid-time instants, and ``quipu demo``.

The checkpoints ``load`` returns are checked through real reads: SPARQL with ``valid_at`` on a
store the demo was loaded into (a SQLite file, or a PostgreSQL database in that half of the
suite). The console script runs for real as a subprocess on SQLite files of its own.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import quipu
from quipu import demo_graph
from quipu.api import KnowledgeBase
from quipu.cli.main import app
from quipu.demo_graph import DEPENDS_ON, MEMBER_OF, OWNED_BY, RDFS_LABEL, STATUS, Demo
from tests import backends

QUIPU = Path(sys.executable).parent / "quipu"
PROV_ACTIVITY = "http://www.w3.org/ns/prov#Activity"
# What the explorer's node-link view draws: every subject of a ROOT fact that is not an episode.
DRAWABLE = (
    f"SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ ?s ?p ?o FILTER NOT EXISTS {{ ?s a <{PROV_ACTIVITY}> }} }}"
)


def before(instant: str) -> str:
    """The instant one second earlier."""
    moment = datetime.strptime(instant, "%Y-%m-%dT%H:%M:%SZ") - timedelta(seconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def objects(kb: KnowledgeBase, s: str, p: str, valid_at: str) -> list[str]:
    rows = kb.query(f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}", valid_at=valid_at)
    assert isinstance(rows, list)
    return sorted(str(row["o"]) for row in rows)


def count(kb: KnowledgeBase, query: str, valid_at: str | None) -> int:
    rows = kb.query(query, valid_at=valid_at)
    assert isinstance(rows, list)
    return int(str(rows[0]["n"]))


def _load(directory: Path) -> tuple[KnowledgeBase, Demo]:
    kb = quipu.open(backends.migrated_location(directory, "demo.db"))
    return kb, demo_graph.load(kb)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KnowledgeBase, Demo]]:
    kb, demo = _load(tmp_path_factory.mktemp("demo"))
    try:
        yield kb, demo
    finally:
        kb.close()


# -- the demo graph --------------------------------------------------------------------------------


def test_every_change_is_one_transaction_in_chronological_order(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    assert demo.transactions == len(demo_graph.TIMELINE)
    log = kb.transactions(limit=None)["transactions"]
    assert len(log) == demo.transactions
    assert {(tx["actor"], tx["source"]) for tx in log} == {("demo", "quipu demo")}
    stamps = [tx["timestamp"] for tx in log]
    assert stamps == sorted(stamps)
    assert stamps[0] == demo.start and stamps[-1] <= demo.end
    assert demo.namespace == "http://demo.quipu.dev/"


def test_entity_counts_grow_through_the_month(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    assert count(kb, DRAWABLE, before(demo.start)) == 0
    assert count(kb, DRAWABLE, demo.start) == demo.entities_at_start
    assert count(kb, DRAWABLE, demo.mid) == demo.entities_at_mid
    assert count(kb, DRAWABLE, demo.end) == demo.entities_at_end
    assert demo.entities_at_start < demo.entities_at_mid < demo.entities_at_end
    # The node-link view of the current store draws the end of the month.
    view = kb.analytics.graph()
    assert view["truncated"]["of"] == demo.entities_at_end


def test_every_entity_has_a_type_and_a_label(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    bare = (
        "SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s ?p ?o "
        "FILTER NOT EXISTS { ?s a ?t . ?s <http://www.w3.org/2000/01/rdf-schema#label> ?l } }"
    )
    assert count(kb, bare, demo.end) == 0
    census = kb.query(
        "SELECT ?t (COUNT(?s) AS ?n) WHERE { ?s a ?t } GROUP BY ?t ORDER BY ?t", valid_at=demo.end
    )
    assert isinstance(census, list)
    ops = demo.namespace + "ops#"
    assert {str(r["t"]): int(str(r["n"])) for r in census} == {
        ops + "Incident": 5,
        ops + "Person": 6,
        ops + "Service": 10,
        ops + "Team": 3,
    }


def test_a_service_moves_to_another_team(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    assert objects(kb, demo.moved_service, OWNED_BY, demo.start) == [demo.old_team]
    assert objects(kb, demo.moved_service, OWNED_BY, before(demo.moved_at)) == [demo.old_team]
    assert objects(kb, demo.moved_service, OWNED_BY, demo.moved_at) == [demo.new_team]
    assert objects(kb, demo.moved_service, OWNED_BY, demo.end) == [demo.new_team]


def test_an_incident_opens_and_is_resolved(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    assert objects(kb, demo.incident, STATUS, before(demo.incident_opened_at)) == []
    assert objects(kb, demo.incident, STATUS, demo.incident_opened_at) == ["open"]
    assert objects(kb, demo.incident, STATUS, before(demo.incident_resolved_at)) == ["open"]
    assert objects(kb, demo.incident, STATUS, demo.incident_resolved_at) == ["resolved"]
    assert objects(kb, demo.incident, STATUS, demo.end) == ["resolved"]


def test_a_service_appears_mid_month(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    exists = f"ASK {{ <{demo.new_service}> ?p ?o }}"
    assert demo.start < demo.appears_at <= demo.end
    assert kb.query(exists, valid_at=before(demo.appears_at)) is False
    assert kb.query(exists, valid_at=demo.appears_at) is True
    assert count(kb, DRAWABLE, demo.appears_at) == count(kb, DRAWABLE, before(demo.appears_at)) + 1


def test_a_dependency_is_removed_late_in_the_month(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    assert demo.removed_at > demo.mid
    assert demo.removed_to in objects(kb, demo.removed_from, DEPENDS_ON, before(demo.removed_at))
    assert demo.removed_to not in objects(kb, demo.removed_from, DEPENDS_ON, demo.removed_at)
    assert demo.removed_to not in objects(kb, demo.removed_from, DEPENDS_ON, demo.end)
    current = kb.query(f"ASK {{ <{demo.removed_from}> <{DEPENDS_ON}> <{demo.removed_to}> }}")
    assert current is False  # closed, not deleted: the reads above still find its past


def test_someone_changes_team_and_a_service_is_renamed(loaded: tuple[KnowledgeBase, Demo]) -> None:
    kb, demo = loaded
    assert objects(kb, demo.moved_person, MEMBER_OF, before(demo.person_moved_at)) == [demo.person_old_team]
    assert objects(kb, demo.moved_person, MEMBER_OF, demo.person_moved_at) == [demo.person_new_team]
    assert objects(kb, demo.renamed, RDFS_LABEL, before(demo.renamed_at)) == [demo.old_label]
    assert objects(kb, demo.renamed, RDFS_LABEL, demo.renamed_at) == [demo.new_label]


def test_loading_is_deterministic(loaded: tuple[KnowledgeBase, Demo], tmp_path: Path) -> None:
    kb, demo = loaded
    again, second = _load(tmp_path)
    try:
        assert second == demo

        def history(store: KnowledgeBase) -> list[tuple[Any, ...]]:
            log = store.transactions(limit=None)["transactions"]
            return [(tx["timestamp"], tx["actor"], tx["source"]) for tx in log]

        assert history(again) == history(kb)
        everything = "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"
        for instant in sorted({step.at for step in demo_graph.TIMELINE}):
            first, other = kb.query(everything, valid_at=instant), again.query(everything, valid_at=instant)
            assert not isinstance(first, list | bool) and not isinstance(other, list | bool)
            assert sorted(first.serialize(format="nt").splitlines()) == sorted(
                other.serialize(format="nt").splitlines()
            ), instant
        assert again.export() == kb.export()
    finally:
        again.close()


# -- quipu demo --------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("QUIPU_")}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(QUIPU), *args], cwd=cwd, capture_output=True, text=True, env=_env(), timeout=120, check=False
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(result: Any, *needles: str) -> None:
    """Exit 2, nothing on stdout, one plain ``error:`` line naming what was wrong."""
    code = result.exit_code if hasattr(result, "exit_code") else result.returncode
    assert code == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.backend_independent
def test_quipu_demo_no_serve_creates_a_store_and_refuses_to_overwrite_it(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    made = run("demo", "--db", str(db), "--no-serve", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout == ""
    (line,) = made.stderr.splitlines()
    assert f"into {db}" in line and "http://127.0.0.1:3030/ui/" in line, line
    with quipu.open(str(db)) as kb:
        assert count(kb, DRAWABLE, demo_graph.END) == demo_graph.entities_at(demo_graph.END)
        transactions = kb.transactions(limit=None)["count"]
    assert transactions == len(demo_graph.TIMELINE)

    before_refusal = digest(db)
    refused(run("demo", "--db", str(db), "--no-serve", cwd=tmp_path), str(db), "--force")
    assert digest(db) == before_refusal

    replaced = run("demo", "--db", str(db), "--no-serve", "--force", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    with quipu.open(str(db)) as kb:  # a fresh store again, not the demo loaded twice
        assert kb.transactions(limit=None)["count"] == len(demo_graph.TIMELINE)


@pytest.mark.backend_independent
def test_quipu_demo_refuses_before_writing_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    refused(runner.invoke(app, ["demo", "--db", "postgresql://h/db", "--no-serve"]), "file path")
    refused(runner.invoke(app, ["demo", "--db", ":memory:", "--no-serve"]), "file path")
    refused(runner.invoke(app, ["demo", "--bind", "127.0.0.1:http", "--no-serve"]), "--bind")
    (tmp_path / "dir.db").mkdir()
    refused(runner.invoke(app, ["demo", "--db", "dir.db", "--no-serve", "--force"]), "directory")
    (tmp_path / "orphan.db-wal").write_bytes(b"")  # a sidecar alone is a store's leftover too
    refused(runner.invoke(app, ["demo", "--db", "orphan.db", "--no-serve"]), "orphan.db-wal")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.db", "orphan.db-wal"]


@pytest.mark.backend_independent
def test_quipu_demo_serves_on_loopback_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``quipu demo`` hands the store to quipu-server's own ``serve``, with an explicit loopback
    bind so that no configured server.host widens it."""
    from quipu.cli import server

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(server, "serve", lambda **kwargs: calls.append(kwargs))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["demo"])
    assert first.exit_code == 0, first.stderr
    assert "http://127.0.0.1:3030/ui/" in first.stderr
    second = runner.invoke(app, ["demo", "--db", "b.db", "--bind", ":4040"])
    assert second.exit_code == 0, second.stderr
    assert "http://127.0.0.1:4040/ui/" in second.stderr
    assert calls == [
        {"db": "quipu-demo.db", "bind": "127.0.0.1:3030"},
        {"db": "b.db", "bind": "127.0.0.1:4040"},
    ]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.backend_independent
def test_quipu_demo_serves_the_demo_over_http(tmp_path: Path) -> None:
    port, log = _free_port(), tmp_path / "stderr.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [str(QUIPU), "demo", "--db", str(tmp_path / "served.db"), "--bind", f"127.0.0.1:{port}"],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env=_env(),
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60.0
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        answer = httpx.post(
            url + "/query", json={"query": DRAWABLE, "valid_at": demo_graph.MID}, timeout=30.0
        ).json()
        assert answer["rows"] == [{"n": demo_graph.entities_at(demo_graph.MID)}]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0, log.read_text()
    assert out == b""  # stdout stays clean; the loaded line and the server's log go to stderr
    assert log.read_text().splitlines()[0].startswith("quipu demo: loaded ")
