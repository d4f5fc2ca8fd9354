"""Fair, bounded reads (issue 15): heavy queries cannot starve point lookups, nor run away.

Reads need no credential, so anyone could send cross products: six of them once held every
reader connection and an unrelated ASK waited 58 s, each burning ~27 CPU-seconds before its 408.
Two real ``quipu-server`` processes start side by side for this module, over 3,000 facts each:

* ``lanes``: two slots per read lane, a 1 s queue, one pooled reader (``store.readers = 1``: a
  pool that two heavy queries would fill without the lanes' sizing), no work budget
  (``max_join_rows = 0``) and an 8 s deadline, so that a cross product is a steady heavy query
  that holds its slot until the deadline;
* ``guarded``: ``read_auth = "token"`` and a small work budget (``max_join_rows = 100000``:
  10^7 SQLite steps) under a deadline far longer than that work takes.

Nothing here is timed tightly: the lanes scenario asserts an ordering (the point lookups answer
before the heavy queries holding every slot do), the budget test bounds the server's CPU time
generously, and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import httpx
import pytest

import quipu
from quipu.config import load_settings
from quipu.errors import ConfigError, ServerBusy
from quipu.rest import route_table
from quipu.rest.lanes import HEAVY_NICE, Lanes
from quipu.rest.route_table import HEAVY, POINT
from tests.backends import on_postgres, store_location

QUIPU_SERVER: Final = Path(sys.executable).parent / "quipu-server"
EX: Final = "http://ex.org/fair/"
FACTS: Final = 3000
TOKEN: Final = "fair-reads-token-0123456789abcdef"
SLOTS: Final = 2
DEADLINE_MS: Final = 8000  # the lanes server's: how long a heavy query holds its slot
STARTUP_S: Final = 60.0  # a bound: a loaded machine takes far longer than the usual 2 s
WAIT_S: Final = 60.0  # the most any one request may take here (a bound, not an expectation)
CROSS: Final = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # 2.7 * 10^10 rows
POINT_ASK: Final = f"ASK {{ <{EX}e1> ?p ?o }}"
POINT_SELECT: Final = f"SELECT ?o WHERE {{ <{EX}e1> <{EX}p1> ?o }}"
MCP_HEADERS: Final = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


# -- servers ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def cpu_seconds(self) -> float | None:
        """User plus system CPU time of the server process so far (None where /proc is absent)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)


def _start(directory: Path, config: str) -> Server:
    directory.mkdir(parents=True, exist_ok=True)
    db = store_location(directory, "store.db")
    with quipu.open(db) as kb:
        kb.knot("".join(f'<{EX}e{i}> <{EX}p{i % 7}> "v{i}" .\n' for i in range(FACTS)), "nt")
    (directory / "quipu.toml").write_text(config, encoding="utf-8")
    port, log = free_port(), directory / "stderr.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIPU_")}
    env["XDG_CONFIG_HOME"] = str(directory)  # no user config file
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [str(QUIPU_SERVER), "--db", db, "--bind", f"127.0.0.1:{port}", "--config", "quipu.toml"],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    return Server(proc, f"http://127.0.0.1:{port}", log)


def _healthy(server: Server) -> Server:
    deadline = time.monotonic() + STARTUP_S
    while True:
        if server.proc.poll() is not None:
            raise AssertionError(f"quipu-server exited {server.proc.returncode}:\n{server.log.read_text()}")
        try:
            if httpx.get(server.url + "/health", timeout=1.0).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"quipu-server not healthy within {STARTUP_S} s:\n{server.log.read_text()}")
        time.sleep(0.1)


LANES_CONFIG: Final = f"""
[quipu.store]
readers = 1
[quipu.server]
max_concurrent_queries = {SLOTS}
queue_timeout_ms = 1000
[quipu.search]
query_timeout_ms = {DEADLINE_MS}
max_join_rows = 0
"""


def guarded_config(deadline_ms: int) -> str:
    return f"""
[quipu.server]
auth_token = "{TOKEN}"
read_auth = "token"
[quipu.search]
query_timeout_ms = {deadline_ms}
max_join_rows = 100000
"""


# On SQLite the work budget stops the cross product in well under a CPU-second, and the deadline
# is there only to bound a failure; PostgreSQL counts no work, so its deadline is the refusal.
GUARDED_DEADLINE_MS: Final = 3000 if on_postgres() else 60_000


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    root = tmp_path_factory.mktemp("fair-reads")
    started: dict[str, Server] = {}
    try:
        started["lanes"] = _start(root / "lanes", LANES_CONFIG)
        started["guarded"] = _start(root / "guarded", guarded_config(GUARDED_DEADLINE_MS))
        with ThreadPoolExecutor(2) as pool:  # interpreter start-up takes seconds: overlap them
            list(pool.map(_healthy, started.values()))
        yield started
    finally:
        for server in started.values():
            server.stop()


# -- the lanes scenario ----------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]
    done: float  # time.monotonic() when the answer was in


def _answer(response: httpx.Response) -> Answer:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    return Answer(response.status_code, body, dict(response.headers), time.monotonic())


def _mcp_call(client: httpx.Client, tool: str, arguments: dict[str, Any]) -> Answer:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return _answer(client.post("/mcp", json=message, headers=MCP_HEADERS))


@dataclass
class Busy:
    """What the lanes server answered while heavy queries held both heavy slots."""

    heavy: list[Answer] = field(default_factory=list)  # every cross product, in answer order
    points: dict[str, Answer] = field(default_factory=dict)  # sent after the lane was seen full
    mcp_heavy: Answer | None = None
    mcp_point: Answer | None = None
    nices: list[int] = field(default_factory=list)  # the server's threads' nice values then


@pytest.fixture(scope="module")
def busy(servers: dict[str, Server]) -> Busy:
    """Three cross products at once into two heavy slots: one must be refused, after its queue
    wait; once that refusal is in, the other two hold both slots, and the point lookups go."""
    url = servers["lanes"].url
    out = Busy()
    refused = threading.Event()
    lock = threading.Lock()

    def heavy() -> None:
        with httpx.Client(base_url=url, timeout=WAIT_S) as client:
            answer = _answer(client.post("/query", json={"query": CROSS}))
        with lock:
            out.heavy.append(answer)
        refused.set()  # the first answer: a refusal, with lanes (else a deadline, 8 s later)

    threads = [threading.Thread(target=heavy, name=f"heavy-{n}", daemon=True) for n in range(SLOTS + 1)]
    for thread in threads:
        thread.start()
    assert refused.wait(WAIT_S), "no heavy query was answered"
    out.nices = _thread_nices(servers["lanes"].proc.pid)
    with httpx.Client(base_url=url, timeout=WAIT_S) as client:
        out.points["ask"] = _answer(client.post("/query", json={"query": POINT_ASK}))
        out.points["select"] = _answer(client.get("/query", params={"query": POINT_SELECT}))
        out.points["entity"] = _answer(client.get("/entity", params={"iri": f"{EX}e1"}))
        out.points["history"] = _answer(client.post("/entity_history", json={"iri": f"{EX}e1"}))
        out.points["stats"] = _answer(client.get("/stats"))
        out.points["health"] = _answer(client.get("/health"))
        out.mcp_point = _mcp_call(client, "quipu_query", {"query": POINT_ASK})
        out.mcp_heavy = _mcp_call(client, "quipu_query", {"query": CROSS})
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(t.is_alive() for t in threads), "a heavy query never answered"
    return out


def _thread_nices(pid: int) -> list[int]:
    """The nice value of each thread of process ``pid`` (empty where /proc is absent)."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out.append(int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]))
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile
    return out


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread priorities are Linux's")
def test_heavy_queries_run_on_threads_of_lower_priority(busy: Busy) -> None:
    # Both admitted cross products were running: each on a heavy-pool thread at nice 10, and
    # nothing else was lowered (the event loop and the point lookups' threads keep the cores).
    assert sorted(busy.nices).count(HEAVY_NICE) == SLOTS, busy.nices
    assert set(busy.nices) == {0, HEAVY_NICE}, busy.nices


def test_a_query_over_the_lanes_limit_gets_503_with_retry_after(busy: Busy) -> None:
    first, *admitted = busy.heavy
    assert first.status == 503, first.body
    assert first.headers["retry-after"] == "1"
    assert first.headers["content-type"].startswith("application/problem+json")
    assert first.body["reason"] == "server_busy" and first.body["retry_after"] == 1
    assert "server.queue_timeout_ms" in first.body["error"]
    # The two it queued behind held their slots until their deadline.
    assert [a.status for a in admitted] == [408] * SLOTS, [a.body for a in admitted]


def test_point_lookups_answer_while_heavy_queries_hold_every_heavy_slot(busy: Busy) -> None:
    statuses = {name: answer.status for name, answer in busy.points.items()}
    assert statuses == dict.fromkeys(busy.points, 200), {n: a.body for n, a in busy.points.items()}
    assert busy.points["ask"].body["result"] is True
    assert busy.points["select"].body["rows"] == [{"o": "v1"}]
    # Ordering, not timing: every lookup was answered before either heavy query let go of its slot.
    heavy_done = min(a.done for a in busy.heavy[1:])
    late = [name for name, answer in busy.points.items() if answer.done >= heavy_done]
    assert late == [], f"waited behind the heavy queries: {late}"


def test_mcp_tool_calls_wait_in_the_same_lanes(busy: Busy) -> None:
    assert busy.mcp_point is not None and busy.mcp_heavy is not None
    point = busy.mcp_point.body["result"]
    assert point["isError"] is False and json.loads(point["content"][0]["text"])["result"] is True
    heavy = busy.mcp_heavy.body["result"]
    assert heavy["isError"] is True, heavy
    problem = json.loads(heavy["content"][0]["text"])
    assert problem["status"] == 503 and problem["reason"] == "server_busy" and problem["retry_after"] == 1
    assert busy.mcp_point.done < min(a.done for a in busy.heavy[1:])


# -- the work budget -------------------------------------------------------------------------------


def test_a_cross_product_is_stopped_by_the_work_budget(servers: dict[str, Server]) -> None:
    server = servers["guarded"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=WAIT_S) as client:
        cpu_before, started = server.cpu_seconds(), time.monotonic()
        response = client.post("/query", json={"query": CROSS})
        elapsed, cpu_after = time.monotonic() - started, server.cpu_seconds()
        body = response.json()
        if on_postgres():  # no work count there: statement_timeout refuses it, within the deadline
            assert response.status_code == 408 and body["reason"] == "query_timeout", body
            assert elapsed < GUARDED_DEADLINE_MS / 1000 + 20  # generous: the deadline, not a minute
        else:
            assert response.status_code == 422, body
            assert body["reason"] == "query_too_expensive"
            assert "work budget of 10,000,000 SQLite steps" in body["error"]
            assert "search.max_join_rows (100000)" in body["error"]
            assert body["budget_steps"] == 10_000_000
            if cpu_before is not None and cpu_after is not None:
                # ~0.3 CPU-s measured; the deadline would have let it burn 60.
                assert cpu_after - cpu_before < 10
        # The server and its pooled connection are fine afterwards.
        after = client.post("/query", json={"query": POINT_ASK})
        assert after.status_code == 200 and after.json()["result"] is True


# -- read_auth = "token" ---------------------------------------------------------------------------


READS: Final[list[tuple[str, str, dict[str, Any]]]] = [
    ("GET", "/query", {"params": {"query": POINT_ASK}}),
    ("POST", "/query", {"json": {"query": POINT_ASK}}),
    ("POST", "/query", {"content": POINT_ASK, "headers": {"Content-Type": "application/sparql-query"}}),
    ("POST", "/query", {"data": {"query": POINT_ASK}}),
    ("GET", "/entity", {"params": {"iri": f"{EX}e1"}}),
    ("POST", "/entity_history", {"json": {"iri": f"{EX}e1"}}),
    ("GET", "/fragments", {"params": {"subject": f"{EX}e1"}}),
    ("GET", "/stats", {}),
    ("GET", "/version", {}),
    ("POST", "/export", {"json": {}, "headers": {"Accept": "application/json"}}),
    ("GET", "/openapi.json", {}),
]


def _read(client: httpx.Client, method: str, path: str, kwargs: dict[str, Any], token: str | None) -> int:
    headers = dict(kwargs.get("headers", {}))
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return client.request(method, path, **{**kwargs, "headers": headers}).status_code


def test_read_auth_token_refuses_reads_without_a_valid_token_and_serves_them_with_one(
    servers: dict[str, Server],
) -> None:
    with httpx.Client(base_url=servers["guarded"].url, timeout=WAIT_S) as client:
        for token, expected in ((None, 401), ("wrong-token-0123456789abcdef", 401), (TOKEN, 200)):
            got = {f"{m} {p} {sorted(k)}": _read(client, m, p, k, token) for m, p, k in READS}
            assert got == dict.fromkeys(got, expected), (token, got)
        refused = client.get("/query", params={"query": POINT_ASK}).json()
        assert refused["reason"] == "missing_or_invalid_bearer_token" and refused["endpoint"] == "/query"
        assert client.get("/health").status_code == 200  # probes stay open
        assert client.get("/docs").status_code == 404  # a browser could not send the bearer


def test_read_auth_token_covers_mcp_over_http(servers: dict[str, Server]) -> None:
    with httpx.Client(base_url=servers["guarded"].url, timeout=WAIT_S) as client:
        anonymous = _mcp_call(client, "quipu_query", {"query": POINT_ASK})
        assert anonymous.status == 401 and anonymous.body["reason"] == "missing_or_invalid_bearer_token"
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        answer = _mcp_call(client, "quipu_query", {"query": POINT_ASK})
        result = answer.body["result"]
        assert answer.status == 200 and result["isError"] is False, result
        assert json.loads(result["content"][0]["text"])["result"] is True


# -- in process ------------------------------------------------------------------------------------


@pytest.mark.backend_independent
def test_read_auth_token_needs_a_credential_to_start() -> None:
    with pytest.raises(ConfigError, match='read_auth = "token" needs a credential'):
        load_settings(os.devnull, server={"read_auth": "token"})
    assert (
        load_settings(os.devnull, server={"read_auth": "token", "auth_token": TOKEN}).server.read_auth
        == "token"
    )


@pytest.mark.backend_independent
def test_a_full_lane_waits_in_arrival_order_then_refuses_and_never_leaks_a_slot() -> None:
    async def main() -> None:
        lanes = Lanes(1, 5000)
        served: list[int] = []

        async def wait(n: int) -> None:
            async with lanes.slot(HEAVY):
                served.append(n)

        async with anyio.create_task_group() as tasks, lanes.slot(HEAVY):
            async with lanes.slot(POINT):  # the other lane is not held up
                pass
            for n in range(3):
                tasks.start_soon(wait, n)
                await anyio.wait_all_tasks_blocked()  # queued in this order
            # released here: the waiters take the slot one by one
        assert served == [0, 1, 2]
        with pytest.raises(RuntimeError):  # a failing handler gives its slot back
            async with lanes.slot(HEAVY):
                raise RuntimeError
        impatient = Lanes(1, 0)  # queue_timeout_ms = 0: refused at once when full
        async with impatient.slot(HEAVY):
            with pytest.raises(ServerBusy) as caught:
                async with impatient.slot(HEAVY):
                    pass
        assert caught.value.status == 503 and caught.value.headers() == {"Retry-After": "1"}
        async with lanes.slot(HEAVY), impatient.slot(HEAVY):  # both free again
            pass

    anyio.run(main)


@pytest.mark.backend_independent
def test_the_lanes_table_names_only_read_routes() -> None:
    for (method, path), lane in route_table.LANES.items():
        assert route_table.route_class(method, path) == route_table.READ, (method, path)
        assert route_table.lane(method, path) == lane
    assert route_table.lane("POST", "/knot") is None  # writes queue on the writer instead
    assert route_table.lane("POST", "/cord") == route_table.HEAVY  # unlisted reads are heavy
    assert route_table.lane("GET", "/openapi.json") is None
