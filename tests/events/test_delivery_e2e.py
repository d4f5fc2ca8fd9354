"""Webhook delivery end to end (tools-core §3.13): real ``quipu-server`` processes pushing to a
receiver in a process of its own (tests/events/receiver.py), with kills and restarts of both.

Events are made over REST: one ``POST /knot`` of 50 new linked subjects appends 100 events (an
``entity.added`` and an ``edge.added`` each; the first also a ``predicate.new``), so ten of them
make 1,001. Deliveries run every 0.2 s and a failed one is retried within a second
(``retry_max_s = 1``). Every wait is a generous deadline, never a timed assertion.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from quipu.events.delivery import PAGE
from tests.backends import on_postgres, store_location

pytestmark = pytest.mark.slow

QUIPU_SERVER: Final = Path(sys.executable).parent / "quipu-server"
RECEIVER: Final = Path(__file__).with_name("receiver.py")
STARTUP_S: Final = 60.0
DEADLINE_S: Final = 60.0
SECRET: Final = "e2e-secret-0123456789abcdef"
EX: Final = "http://ex.org/"
WRITES: Final = 10
SUBJECTS: Final = 50  # per write: 100 events
RECEIVER_DELAY: Final = 0.5  # the kill test's receiver answers this long after recording
SETTINGS: Final = {
    "QUIPU_EVENTS__DELIVERY_INTERVAL_S": "0.2",
    "QUIPU_EVENTS__RETRY_MAX_S": "1",
    "QUIPU_EVENTS__DELIVERY_TIMEOUT_S": "5",
    "QUIPU_EVENTS__WEBHOOK_ALLOW_PRIVATE": "true",
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIPU_")}
    return {**env, **SETTINGS, "OPENBLAS_NUM_THREADS": "1"}


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        response = httpx.get(self.url + path, params=params, timeout=30)
        assert response.status_code == 200, response.text
        out: dict[str, Any] = response.json()
        return out

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(self.url + path, json=body, timeout=30)
        assert response.status_code == 200, response.text
        out: dict[str, Any] = response.json()
        return out


@dataclass
class ReceiverProc:
    proc: subprocess.Popen[bytes]
    port: int
    out: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def lines(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        text = self.out.read_text(encoding="utf-8")
        # A receiver killed mid-write may leave half a line: it answered nothing for it.
        return [json.loads(line) for line in text.splitlines() if line.endswith("}")]

    def offsets(self) -> list[int]:
        return [line["offset"] for line in self.lines() if "offset" in line]


class Processes:
    """Starts servers and receivers, and kills whatever is left at the end (by process id)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.started: list[subprocess.Popen[bytes]] = []

    def server(self, db: str, name: str = "server") -> Server:
        port = free_port()
        log = self.directory / f"{name}-{len(self.started)}.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [str(QUIPU_SERVER), "--db", db, "--bind", f"127.0.0.1:{port}"],
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=child_env(),
            )
        self.started.append(proc)
        server = Server(proc, f"http://127.0.0.1:{port}", log)
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert proc.poll() is None, f"quipu-server exited {proc.returncode}:\n{log.read_text()}"
            try:
                if httpx.get(server.url + "/health", timeout=1.0).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"quipu-server not up in {STARTUP_S} s:\n{log.read_text()}"
            time.sleep(0.1)

    def receiver(self, port: int, out: Path, secret: str, delay: float = 0.0) -> ReceiverProc:
        argv = ["--port", str(port), "--out", str(out), "--secret", secret, "--delay", str(delay)]
        proc = subprocess.Popen(
            [sys.executable, str(RECEIVER), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=child_env(),
        )
        self.started.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready", "the receiver did not start"
        return ReceiverProc(proc, port, out)

    @staticmethod
    def kill(proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)

    def close(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                self.kill(proc)
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    running = Processes(tmp_path)
    try:
        yield running
    finally:
        running.close()


def write(server: Server, batch: int) -> None:
    start = batch * SUBJECTS
    turtle = "".join(f"<{EX}s{i}> <{EX}link> <{EX}o{i}> .\n" for i in range(start, start + SUBJECTS))
    server.post("/knot", {"turtle": turtle})


def subscribe(server: Server, url: str) -> None:
    server.post(
        "/subscriptions",
        {"action": "create", "consumer_id": "e2e", "webhook_url": url, "secret": SECRET},
    )


def every_offset(server: Server) -> list[int]:
    return [e["offset"] for e in server.get("/events", limit=10_000)["events"]]


def wait_for(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, f"not within {DEADLINE_S} s: {what}"
        time.sleep(0.1)


def first_seen(offsets: list[int]) -> list[int]:
    seen: set[int] = set()
    out = []
    for offset in offsets:
        if offset not in seen:
            seen.add(offset)
            out.append(offset)
    return out


def kill_mid_delivery(procs: Processes, victim: subprocess.Popen[bytes], receiver: ReceiverProc) -> int:
    """SIGKILL ``victim`` while a delivery is in flight: as soon as the receiver has recorded a
    new batch, during the ``RECEIVER_DELAY`` before it answers. Returns the lines recorded."""
    recorded = len(receiver.lines())
    wait_for(lambda: len(receiver.lines()) > recorded, "a delivery in flight")
    procs.kill(victim)
    return len(receiver.lines())


def test_a_thousand_events_survive_receiver_and_server_kills(tmp_path: Path, procs: Processes) -> None:
    started = time.monotonic()
    db = store_location(tmp_path, "s.db")
    out = tmp_path / "received.jsonl"
    receiver = procs.receiver(free_port(), out, SECRET, RECEIVER_DELAY)
    server = procs.server(db)
    subscribe(server, receiver.url)
    before_kills = 0
    for batch in range(WRITES):
        write(server, batch)
        if batch == 2:  # the receiver dies mid-stream, having recorded a batch it never answered ...
            before_kills = kill_mid_delivery(procs, receiver.proc, receiver)
        if batch == 4:  # ... and comes back on the same port
            receiver = procs.receiver(receiver.port, out, SECRET, RECEIVER_DELAY)
        if batch == 6:  # the server dies with SIGKILL while a POST waits for its answer
            kill_mid_delivery(procs, server.proc, receiver)
            server = procs.server(db)
        time.sleep(0.1)
    expected = every_offset(server)
    assert len(expected) == WRITES * SUBJECTS * 2 + 1
    wait_for(lambda: set(receiver.offsets()) >= set(expected), "every event delivered")
    got = receiver.offsets()
    assert set(got) == set(expected)  # nothing lost, nothing invented
    assert first_seen(got) == expected  # first arrivals in offset order
    assert before_kills > 0 and len(set(got[:before_kills])) == before_kills  # no duplicate before a kill
    duplicates = len(got) - len(set(got))
    print(
        f"\ne2e kills: {len(expected)} events, {len(got)} received, {duplicates} duplicates "
        f"(two kills), {time.monotonic() - started:.1f} s"
    )
    assert duplicates <= 2 * PAGE  # at most one batch re-sent per kill

    def caught_up() -> bool:  # the last answer commits the cursor after the receiver recorded
        shown = server.post("/subscriptions", {"action": "list"})["subscriptions"][0]
        return bool(shown["cursor"] == expected[-1] and shown["lag"] == 0)

    wait_for(caught_up, "the cursor at the last event")


def test_a_receiver_with_the_wrong_secret_rejects_until_it_has_the_right_one(
    tmp_path: Path, procs: Processes
) -> None:
    receiver = procs.receiver(free_port(), tmp_path / "received.jsonl", "the-wrong-secret-0123456789")
    server = procs.server(store_location(tmp_path, "s.db"))
    subscribe(server, receiver.url)
    write(server, 0)
    write(server, 1)

    def rejected_twice() -> bool:
        delivery = server.post("/subscriptions", {"action": "list"})["subscriptions"][0]["delivery"]
        rejections = [line for line in receiver.lines() if "rejected" in line]
        return len(rejections) >= 2 and delivery["last_status"] == 401 and delivery["state"] == "retrying"

    wait_for(rejected_twice, "two rejected deliveries, shown by list")
    assert receiver.offsets() == []  # the receiver accepted nothing unsigned by its secret
    procs.kill(receiver.proc)
    receiver = procs.receiver(receiver.port, receiver.out, SECRET)
    expected = every_offset(server)
    wait_for(lambda: set(receiver.offsets()) >= set(expected), "every event delivered")
    assert first_seen(receiver.offsets()) == expected
    delivery = server.post("/subscriptions", {"action": "list"})["subscriptions"][0]["delivery"]
    assert delivery["state"] == "ok" and delivery["last_status"] == 200


def test_two_servers_on_one_postgresql_database_never_deliver_twice(tmp_path: Path, procs: Processes) -> None:
    if not on_postgres():
        pytest.skip("two servers share a store on PostgreSQL; on SQLite only one of them delivers")
    started = time.monotonic()
    db = store_location(tmp_path, "s.db")
    # A slow receiver: each POST lasts long enough for the other server's passes to overlap it.
    receiver = procs.receiver(free_port(), tmp_path / "received.jsonl", SECRET, delay=0.3)
    first, second = procs.server(db, "first"), procs.server(db, "second")
    subscribe(first, receiver.url)
    for batch in range(WRITES):
        write(first if batch % 2 else second, batch)
        time.sleep(0.1)
    expected = every_offset(first)
    wait_for(lambda: set(receiver.offsets()) >= set(expected), "every event delivered")
    got = receiver.offsets()
    print(f"\ne2e two servers: {len(got)} received of {len(expected)}, {time.monotonic() - started:.1f} s")
    assert got == expected  # each exactly once, in offset order


def test_a_pull_consumer_reads_exactly_its_uncommitted_events_after_a_restart(
    tmp_path: Path, procs: Processes
) -> None:
    db = store_location(tmp_path, "s.db")
    server = procs.server(db)
    for batch in range(3):
        write(server, batch)
    page = server.get("/events", consumer="puller", limit=120)["events"]
    committed = page[-1]["offset"]
    assert server.post("/events/commit", {"consumer_id": "puller", "offset": committed}) == {
        "consumer_id": "puller",
        "committed_offset": committed,
    }
    everything = server.get("/events", limit=10_000)["events"]
    procs.kill(server.proc)
    server = procs.server(db)
    again = server.get("/events", consumer="puller", limit=10_000)
    assert again["committed_offset"] == committed
    assert again["events"] == [e for e in everything if e["offset"] > committed]
    assert len(again["events"]) == len(everything) - 120
