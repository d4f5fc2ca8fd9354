"""Acceptance: a real server commits every one of many concurrent clients' small writes.

uvicorn serves the app on a free loopback port from a background thread over a real SQLite file,
with a shared bearer token. Eight client threads, each with its own keep-alive connection, post
200 small ``/knot`` transactions each while two more clients query; no request may fail (no 500,
no "database is locked"), and all 1,600 writes must be readable afterwards, over ``/query`` and in
the store's transaction log (DM §12: one writer, transaction ids in commit order).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

import quipu
from quipu.config import load_settings
from tests.backends import store_location
from tests.rest.live_server import live_server

TOKEN = "concurrency-shared-token-0123456789"
CLIENTS = 8
PER_CLIENT = 200
EX = "http://ex.org/concurrency/"
READERS = 2
READS = 100  # queries per reader, each text distinct (a parse per request, no cache hit)
START_TIMEOUT = 30.0  # seconds for the client threads to line up
RUN_TIMEOUT = 180.0  # seconds for every client thread to finish


def doc(client: int, i: int) -> str:
    """Two triples about a subject no other request uses."""
    return f'<{EX}c{client}/w{i}> <{EX}client> {client} ; <{EX}label> "client {client} write {i}" .\n'


@dataclass
class ClientLog:
    statuses: list[int] = field(default_factory=list)
    tx_ids: list[int] = field(default_factory=list)  # a writer's, in the order answered
    counts: list[int] = field(default_factory=list)  # a reader's COUNTs, in the order answered
    failures: list[str] = field(default_factory=list)  # bodies of non-200 answers
    crash: str | None = None  # an exception that stopped the thread


def write_many(url: str, n: int, log: ClientLog, start: threading.Barrier) -> None:
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60.0) as client:
            start.wait(timeout=START_TIMEOUT)
            for i in range(PER_CLIENT):
                response = client.post("/knot", json={"turtle": doc(n, i), "actor": f"client-{n}"})
                log.statuses.append(response.status_code)
                if response.status_code != 200:
                    log.failures.append(response.text[:500])
                    continue
                body: dict[str, Any] = response.json()
                log.tx_ids.append(body["tx_id"])
    except Exception as exc:  # reported by the test
        log.crash = f"{type(exc).__name__}: {exc}"


def read_many(url: str, n: int, log: ClientLog, start: threading.Barrier) -> None:
    """Count the writes so far, again and again."""
    try:
        with httpx.Client(base_url=url, timeout=60.0) as client:
            start.wait(timeout=START_TIMEOUT)
            for i in range(READS):
                # A distinct text per request: FILTER on a number nothing matches.
                text = (
                    f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <{EX}client> ?c FILTER(?c != -{n * READS + i}) }}"
                )
                response = client.post("/query", json={"query": text})
                log.statuses.append(response.status_code)
                if response.status_code != 200:
                    log.failures.append(response.text[:500])
                    continue
                log.counts.append(response.json()["rows"][0]["n"])
    except Exception as exc:  # reported by the test
        log.crash = f"{type(exc).__name__}: {exc}"


def count(client: httpx.Client, pattern: str) -> Any:
    response = client.post("/query", json={"query": f"SELECT (COUNT(*) AS ?n) WHERE {{ {pattern} }}"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["variables"] == ["n"]
    return body["rows"][0]["n"]


@dataclass
class Load:
    """What the concurrent run produced, gathered once for the tests below."""

    logs: list[ClientLog]  # one per writer
    readers: list[ClientLog]
    counts: dict[str, Any]  # SPARQL COUNTs over /query after the run, by name
    log: list[dict[str, Any]]  # the store's transaction log, read after the server stopped


@pytest.fixture(scope="module")
def load(tmp_path_factory: pytest.TempPathFactory) -> Load:
    db = tmp_path_factory.mktemp("concurrency") / "server.db"
    settings = load_settings(store={"db": str(db)}, server={"auth_token": TOKEN})
    logs = [ClientLog() for _ in range(CLIENTS)]
    readers = [ClientLog() for _ in range(READERS)]
    with live_server(settings) as url:
        start = threading.Barrier(CLIENTS + READERS)
        threads = [
            threading.Thread(
                target=write_many, args=(url, n, logs[n], start), name=f"writer-{n}", daemon=True
            )
            for n in range(CLIENTS)
        ] + [
            threading.Thread(
                target=read_many, args=(url, n, readers[n], start), name=f"reader-{n}", daemon=True
            )
            for n in range(READERS)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + RUN_TIMEOUT
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive()]
        assert not stuck, f"clients still running after {RUN_TIMEOUT:g} s: {stuck}"
        with httpx.Client(base_url=url, timeout=60.0) as client:
            counts = {
                "client": count(client, f"?s <{EX}client> ?c"),
                "label": count(client, f"?s <{EX}label> ?l"),
                "last": count(client, f"<{EX}c{CLIENTS - 1}/w{PER_CLIENT - 1}> <{EX}client> {CLIENTS - 1}"),
            }
    # A second handle on the file, as another process would open it.
    kb = quipu.open(str(db))
    try:
        log = kb.transactions(limit=None)["transactions"]
    finally:
        kb.close()
    return Load(logs, readers, counts, log)


@pytest.mark.backend_independent  # its server's store is a SQLite file of its own
def test_no_client_thread_crashes(load: Load) -> None:
    assert [log.crash for log in load.logs + load.readers] == [None] * (CLIENTS + READERS)
    assert [len(log.statuses) for log in load.logs] == [PER_CLIENT] * CLIENTS
    assert [len(log.statuses) for log in load.readers] == [READS] * READERS


@pytest.mark.backend_independent  # its server's store is a SQLite file of its own
def test_every_concurrent_write_answers_200(load: Load) -> None:
    statuses = Counter(status for log in load.logs for status in log.statuses)
    failures = [text for log in load.logs for text in log.failures]
    assert not any("locked" in text.lower() for text in failures), failures[:3]
    assert statuses == {200: CLIENTS * PER_CLIENT}, (statuses, failures[:3])


@pytest.mark.backend_independent  # its server's store is a SQLite file of its own
def test_transaction_ids_are_unique_and_increase_per_client(load: Load) -> None:
    tx_ids = [tx for log in load.logs for tx in log.tx_ids]
    assert len(tx_ids) == len(set(tx_ids)) == CLIENTS * PER_CLIENT
    for log in load.logs:  # a client's next write starts after its previous one committed
        assert log.tx_ids == sorted(log.tx_ids)


@pytest.mark.backend_independent  # its server's store is a SQLite file of its own
def test_every_write_is_readable_over_query(load: Load) -> None:
    assert load.counts == {"client": CLIENTS * PER_CLIENT, "label": CLIENTS * PER_CLIENT, "last": 1}


@pytest.mark.backend_independent  # its server's store is a SQLite file of its own
def test_every_write_is_in_the_transaction_log(load: Load) -> None:
    ids = [row["id"] for row in load.log]
    assert len(ids) == len(set(ids)) >= CLIENTS * PER_CLIENT
    assert ids == sorted(ids)
    by_id = {row["id"]: row for row in load.log}
    written = {tx for log in load.logs for tx in log.tx_ids}
    assert written <= by_id.keys()
    assert {by_id[tx]["actor"] for tx in written} == {f"client-{n}" for n in range(CLIENTS)}
    # The verified caller is recorded on every write, also under contention.
    assert all(by_id[tx]["authenticated"] is not None for tx in written)


@pytest.mark.backend_independent  # its server's store is a SQLite file of its own
def test_queries_during_the_writes_answer_200_and_never_count_backwards(load: Load) -> None:
    statuses = Counter(status for log in load.readers for status in log.statuses)
    failures = [text for log in load.readers for text in log.failures]
    assert statuses == {200: READERS * READS}, (statuses, failures[:3])
    for log in load.readers:  # each read is one committed snapshot, and writes only add
        assert log.counts == sorted(log.counts)
        assert log.counts[0] >= 0 and log.counts[-1] <= CLIENTS * PER_CLIENT


# Run in a fresh interpreter: the race needs rdflib's SPARQL grammar cold, and this test process
# has parsed queries before.
_COLD_PARSE = """
import sys, threading
import quipu
kb = quipu.open(sys.argv[1])
shapes = [
    "SELECT (COUNT(*) AS ?n) WHERE {{ ?s <http://ex.org/{n}/{i}> ?o }}",
    "SELECT ?s WHERE {{ ?s ?p ?o FILTER(?o > {i}) }} ORDER BY DESC(?s) LIMIT {n}",
    "SELECT ?s ?l WHERE {{ ?s ?p ?o OPTIONAL {{ ?s <http://ex.org/l{n}> ?l }} BIND({i} AS ?k) }}",
    "ASK {{ VALUES ?s {{ <http://ex.org/{n}> }} ?s ?p 'v{i}' }}",
]
failures = []
start = threading.Barrier(8)
def run(n):
    start.wait()
    for i in range(40):
        try:
            kb.query_result(shapes[(n + i) % len(shapes)].format(n=n, i=i))
        except Exception as exc:
            failures.append(str(exc))
threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
for t in threads: t.start()
for t in threads: t.join(60)
kb.query_result("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1")  # the parser still works afterwards
kb.close()
print(len(failures), failures[:1])
"""


def test_concurrent_first_queries_leave_the_sparql_parser_working(tmp_path: Path) -> None:
    """rdflib's pyparsing grammar learns parse-action arities on first use; two threads doing
    that at once broke every later parse in the process (quipu.sparql.parse_lock)."""
    argv = [sys.executable, "-c", _COLD_PARSE, store_location(tmp_path, "cold.db")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0 []"
