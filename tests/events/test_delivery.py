"""The webhook delivery worker (tools-core §3.13, docs/webhooks.md), one pass at a time.

Real parts throughout: an app over a real store (``POST /subscriptions`` creates and lists), a
real HTTP receiver on a loopback port in this process, and ``Delivery.tick`` driven by the test
with a clock it moves by hand (the backoff is in wall-clock seconds). The server process, kills
and restarts are in test_delivery_e2e.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import quipu
from quipu.api import KnowledgeBase
from quipu.config import EventsSettings
from quipu.events import signing
from quipu.events.delivery import PAGE, Delivery
from quipu.store import event_feed
from quipu.store import subscriptions as rows
from quipu.store.delivery_lock import open_lock
from tests.events.receiver import Receiver
from tests.rest.support import kb_of, serve

EX = "http://ex.org/"
SECRET = "a-secret-of-16-chars-or-more"
T0 = "2030-01-01T00:00:00Z"  # the declared time of the batch-mode test's writes
T0_EPOCH = datetime(2030, 1, 1, tzinfo=UTC).timestamp()


class Clock:
    """Wall-clock seconds that move only when the test says so."""

    def __init__(self, at: float | None = None) -> None:
        self.now = time.time() if at is None else at

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, events={"webhook_allow_private": True}) as c:
        yield c


@pytest.fixture
def kb(client: TestClient) -> KnowledgeBase:
    return kb_of(client)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(*answers: int, secret: str | None = None) -> Receiver:
        made.append(Receiver(answers or (200,), secret))
        return made[-1]

    yield make
    for r in made:
        r.close()


@pytest.fixture
def workers(kb: KnowledgeBase, clock: Clock) -> Iterator[Callable[..., Delivery]]:
    made: list[Delivery] = []

    def make(**settings: Any) -> Delivery:
        made.append(
            Delivery(
                kb.db, EventsSettings(**{"webhook_allow_private": True, **settings}), kb.feeds, clock=clock
            )
        )
        return made[-1]

    yield make
    for w in made:
        w.stop(timeout=10)


def subscribe(client: TestClient, url: str, consumer: str = "hooks", **fields: Any) -> int:
    response = client.post(
        "/subscriptions", json={"action": "create", "consumer_id": consumer, "webhook_url": url, **fields}
    )
    assert response.status_code == 200, response.text
    sub_id: int = response.json()["id"]
    return sub_id


def listed(client: TestClient, consumer: str = "hooks") -> dict[str, Any]:
    response = client.post("/subscriptions", json={"action": "list"})
    assert response.status_code == 200, response.text
    found: dict[str, Any] = next(s for s in response.json()["subscriptions"] if s["consumer_id"] == consumer)
    return found


def write(kb: KnowledgeBase, n: int, start: int = 0, timestamp: str | None = None) -> None:
    """One transaction of ``n`` new subjects, each linked to an object: per subject an
    ``entity.added`` and an ``edge.added`` (and ``predicate.new`` the first time)."""
    text = "".join(f"<{EX}s{i}> <{EX}link> <{EX}o{i}> .\n" for i in range(start, start + n))
    kb.knot(text, "turtle", timestamp=timestamp)


def log(kb: KnowledgeBase, **read: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = kb.feeds.events(limit=10_000, **read)["events"]
    return events


def cursor(kb: KnowledgeBase, consumer: str = "hooks") -> int:
    with kb.db.read() as conn:  # the store itself: GET /events may be refused by a label floor
        return event_feed.committed_offset(conn, rows.cursor_id(consumer)) or 0


def outcomes(worker: Delivery) -> list[str]:
    return [a.outcome for a in worker.tick()]


def state(kb: KnowledgeBase, sub_id: int) -> rows.Subscription:
    with kb.db.read() as conn:
        found = rows.by_id(conn, sub_id)
    assert found is not None
    return found


# -- delivering ------------------------------------------------------------------------------------


def test_realtime_delivers_the_pending_events_with_their_headers(
    client: TestClient,
    kb: KnowledgeBase,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    sub_id = subscribe(client, receiver.url)
    write(kb, 2)
    worker = workers()
    [attempt] = worker.tick()
    expected = log(kb)
    assert (attempt.outcome, attempt.events, attempt.status) == ("delivered", len(expected), 200)
    [got] = receiver.received
    assert got.path == "/hook"
    assert got.json() == {"subscription": "hooks", "events": expected}
    first, last = expected[0]["offset"], expected[-1]["offset"]
    assert got.headers["content-type"] == "application/json"
    assert got.headers["x-quipu-delivery"] == f"{sub_id}-{first}-{last}" == attempt.delivery_id
    assert got.headers["user-agent"] == f"quipu/{quipu.__version__}"
    assert got.headers["host"] == f"127.0.0.1:{receiver.port}"
    assert "x-quipu-signature" not in got.headers  # no secret, no signature
    assert cursor(kb) == last
    delivery = listed(client)["delivery"]
    assert (delivery["state"], delivery["delivered"], delivery["last_status"]) == ("ok", len(expected), 200)
    assert delivery["last_success_at"] is not None and delivery["last_error"] is None
    # Nothing new: the next pass sends nothing.
    assert outcomes(worker) == ["idle"]
    assert len(receiver.received) == 1


def test_the_cursor_moves_only_on_a_2xx_so_a_failed_batch_is_delivered_again(
    client: TestClient,
    kb: KnowledgeBase,
    clock: Clock,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers(500, 302, 200)
    sub_id = subscribe(client, receiver.url)
    write(kb, 3)
    worker = workers()
    failed = worker.tick()[0]
    assert (failed.outcome, failed.status, failed.error) == ("failed", 500, "HTTP 500 Internal Server Error")
    assert cursor(kb) == 0
    clock.now = state(kb, sub_id).retry_at or 0.0
    redirected = worker.tick()[0]
    assert (redirected.outcome, redirected.status) == ("failed", 302)
    assert redirected.error == "HTTP 302 Found (redirects are not followed)"
    assert cursor(kb) == 0
    assert len(receiver.received) == 2  # the redirect was not followed
    clock.now = state(kb, sub_id).retry_at or 0.0
    assert outcomes(worker) == ["delivered"]
    # At-least-once: the same events three times, under one delivery id.
    bodies = [r.body for r in receiver.received]
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]
    assert len({r.headers["x-quipu-delivery"] for r in receiver.received}) == 1
    assert cursor(kb) == log(kb)[-1]["offset"]
    assert state(kb, sub_id).failures == 0 and state(kb, sub_id).retry_at is None


def test_backoff_doubles_with_jitter_up_to_the_cap_and_is_kept_in_the_store(
    client: TestClient,
    kb: KnowledgeBase,
    clock: Clock,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers(503)
    ids = [subscribe(client, receiver.url, f"hooks{i}") for i in range(3)]
    write(kb, 1)
    worker = workers(retry_max_s=10)
    delays: list[list[float]] = [[] for _ in ids]  # per subscription, per failure
    for _ in range(6):
        started = clock.now
        assert outcomes(worker) == ["failed"] * 3
        for i, sub_id in enumerate(ids):
            delays[i].append((state(kb, sub_id).retry_at or 0.0) - started)
        # While the backoff lasts, a pass sends nothing, and neither does a new worker (a restart).
        sent = len(receiver.received)
        assert outcomes(worker) == ["waiting"] * 3
        assert outcomes(workers(retry_max_s=10)) == ["waiting"] * 3
        assert len(receiver.received) == sent
        clock.now = max(state(kb, sub_id).retry_at or 0.0 for sub_id in ids)
    for series in delays:
        for failure, delay in enumerate(series, start=1):
            full = min(10.0, 2.0 * 2 ** (failure - 1))  # 2, 4, 8, then the 10 s cap
            assert full / 2 <= delay <= full, (failure, delay)
    # Jitter: subscriptions failing together are not retried at the same instant.
    assert len({round(series[0], 6) for series in delays}) == 3
    shown = listed(client, "hooks0")["delivery"]
    retry_at = state(kb, ids[0]).retry_at or 0.0
    assert shown["state"] == "retrying" and shown["failures"] == 6
    assert shown["next_attempt_at"] == datetime.fromtimestamp(retry_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (shown["last_status"], shown["last_error"]) == (503, "HTTP 503 Service Unavailable")
    assert shown["last_success_at"] is None and shown["delivered"] == 0


def test_batch_mode_holds_until_batch_size_or_the_window(
    client: TestClient,
    kb: KnowledgeBase,
    clock: Clock,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    subscribe(client, receiver.url, mode="batch", batch_size=5, batch_window_s=60)
    worker = workers()
    clock.now = T0_EPOCH + 10
    write(kb, 1, timestamp=T0)  # predicate.new, entity.added, edge.added: 3 of 5
    [held] = worker.tick()
    assert (held.outcome, held.events) == ("held", 3)
    assert receiver.received == []
    write(kb, 1, start=1, timestamp=T0)  # 5 pending: the size is reached
    assert outcomes(worker) == ["delivered"]
    assert len(receiver.received[0].json()["events"]) == 5
    # One more event pair waits for the window: 59 s after its ts it is held, at 60 s it goes.
    write(kb, 1, start=2, timestamp=T0)
    clock.now = T0_EPOCH + 59
    assert outcomes(worker) == ["held"]
    clock.now = T0_EPOCH + 60
    assert outcomes(worker) == ["delivered"]
    assert [len(r.json()["events"]) for r in receiver.received] == [5, 2]
    assert cursor(kb) == log(kb)[-1]["offset"]


def test_realtime_ignores_the_batch_settings(
    client: TestClient,
    kb: KnowledgeBase,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    subscribe(client, receiver.url, batch_size=100, batch_window_s=3600)
    write(kb, 1)
    assert outcomes(workers()) == ["delivered"]


def test_types_filter_what_is_sent_and_the_cursor_skips_unmatched_events_once_a_minute(
    client: TestClient,
    kb: KnowledgeBase,
    clock: Clock,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    subscribe(client, receiver.url, types=["edge.added"])
    write(kb, 3)
    worker = workers()
    assert outcomes(worker) == ["delivered"]
    edges = log(kb, types="edge.added")
    assert receiver.received[0].json()["events"] == edges
    assert cursor(kb) == edges[-1]["offset"]
    # Events the filter never matches: nothing is sent, and the cursor moves past them (so they
    # do not hold back retention), at most once a minute.
    kb.knot(f"<{EX}t1> a <{EX}Thing> .", "turtle")
    assert outcomes(worker) == ["idle"]
    assert cursor(kb) == log(kb)[-1]["offset"]
    kb.knot(f"<{EX}t2> a <{EX}Thing> .", "turtle")
    assert outcomes(worker) == ["idle"]
    assert cursor(kb) < log(kb)[-1]["offset"]
    clock.now += 61
    assert outcomes(worker) == ["idle"]
    assert cursor(kb) == log(kb)[-1]["offset"]
    assert len(receiver.received) == 1


def test_a_signed_delivery_verifies_and_a_receiver_with_another_secret_makes_it_retry(
    client: TestClient,
    kb: KnowledgeBase,
    clock: Clock,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers(secret="not-the-secret-of-the-subscription")
    sub_id = subscribe(client, receiver.url, secret=SECRET)
    write(kb, 2)
    worker = workers()
    rejected = worker.tick()[0]
    assert (rejected.outcome, rejected.status, rejected.error) == ("failed", 401, "HTTP 401 Unauthorized")
    assert cursor(kb) == 0 and listed(client)["delivery"]["last_status"] == 401
    got = receiver.received[0]
    assert signing.verify(SECRET, got.body, got.headers["x-quipu-signature"])
    assert got.headers["x-quipu-signature"] == signing.signature(SECRET, got.body)
    assert not signing.verify(SECRET, got.body + b" ", got.headers["x-quipu-signature"])
    assert SECRET not in (rejected.error or "") and SECRET not in str(listed(client))
    receiver.secret = SECRET  # the receiver learns the right secret
    clock.now = state(kb, sub_id).retry_at or 0.0
    assert outcomes(worker) == ["delivered"]
    assert cursor(kb) == log(kb)[-1]["offset"]


def test_the_address_is_checked_again_at_delivery(
    client: TestClient,
    kb: KnowledgeBase,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    subscribe(client, receiver.url)  # created while private receivers were allowed
    write(kb, 1)
    worker = workers(webhook_allow_private=False)
    [refused] = worker.tick()
    assert (refused.outcome, refused.status) == ("failed", None)
    assert refused.error is not None and refused.error.startswith("refused: webhook_url host '127.0.0.1'")
    assert "non-public address" in refused.error
    assert receiver.received == []
    delivery = listed(client)["delivery"]
    assert delivery["state"] == "retrying" and delivery["last_error"] == refused.error
    assert delivery["last_status"] is None
    assert cursor(kb) == 0


def test_deleting_stops_delivery_and_recreating_resumes_from_the_kept_cursor(
    client: TestClient,
    kb: KnowledgeBase,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    subscribe(client, receiver.url)
    write(kb, 1)
    worker = workers()
    assert outcomes(worker) == ["delivered"]
    delivered = cursor(kb)
    assert client.post("/subscriptions", json={"action": "delete", "consumer_id": "hooks"}).json()["found"]
    write(kb, 2, start=10)
    assert worker.tick() == []
    assert len(receiver.received) == 1
    subscribe(client, receiver.url)
    assert outcomes(worker) == ["delivered"]
    assert receiver.received[1].json()["events"] == log(kb, since=delivered)
    assert cursor(kb) == log(kb)[-1]["offset"]


def test_one_post_carries_at_most_500_events(
    client: TestClient,
    kb: KnowledgeBase,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    sub_id = subscribe(client, receiver.url)
    write(kb, 300)  # 601 events in one transaction
    worker = workers()
    assert [(a.outcome, a.events) for a in worker.tick()] == [("delivered", PAGE)]
    assert [(a.outcome, a.events) for a in worker.tick()] == [("delivered", 101)]
    sent = [e["offset"] for r in receiver.received for e in r.json()["events"]]
    assert sent == [e["offset"] for e in log(kb)]
    ids = [r.headers["x-quipu-delivery"] for r in receiver.received]
    assert ids == [f"{sub_id}-{sent[0]}-{sent[499]}", f"{sub_id}-{sent[500]}-{sent[-1]}"]


def test_the_worker_thread_delivers_and_stops_promptly(
    client: TestClient,
    kb: KnowledgeBase,
    receivers: Callable[..., Receiver],
    workers: Callable[..., Delivery],
) -> None:
    receiver = receivers()
    subscribe(client, receiver.url)
    worker = workers(delivery_interval_s=60)  # a long sleep: stop must wake it
    worker.tick()  # nothing yet
    write(kb, 1)
    worker.start()  # the first pass runs at once
    deadline = time.monotonic() + 30
    while not receiver.received and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(receiver.received) == 1
    assert worker.stop(timeout=30) is True


def test_one_delivery_lock_holder_at_a_time(kb: KnowledgeBase) -> None:
    first, second = open_lock(kb.db), open_lock(kb.db)
    try:
        assert first.acquire(1)
        if kb.db.backend.kind == "postgresql":
            # Per subscription, until released.
            assert not second.acquire(1) and second.acquire(2)
            first.release(1)
            assert second.acquire(1)
        else:
            # Per worker, until closed: one process delivers from a SQLite file.
            assert not second.acquire(1) and not second.acquire(2)
            first.release(1)
            assert not second.acquire(1)
            first.close()
            assert second.acquire(1)
    finally:
        first.close()
        second.close()


def test_roots_label_floor_stops_delivery_until_the_label_meets_it_again(
    tmp_path: Path, receivers: Callable[..., Receiver], clock: Clock
) -> None:
    # Delivery reads ROOT like any reader: a floor that refuses ROOT holds the events back (a
    # failure with its backoff, shown by list), and delivery resumes once the label meets it.
    settings = {"webhook_allow_private": True}
    with serve(tmp_path, events=settings, labels={"min_freshness": "recomputing"}) as client:
        kb = kb_of(client)

        def label(freshness: str, timestamp: str) -> None:
            body = {"graph": "urn:quipu:graph:root", "freshness": freshness, "timestamp": timestamp}
            response = client.post("/graph/label", json=body)
            assert response.status_code == 200, response.text

        label("fresh", "2026-01-01T00:00:00Z")
        receiver = receivers()
        sub_id = subscribe(client, receiver.url)
        write(kb, 2)
        label("stale", "2026-02-01T00:00:00Z")
        worker = Delivery(kb.db, EventsSettings(**settings), kb.feeds, clock=clock)
        try:
            [refused] = worker.tick()
            assert refused.outcome == "failed" and refused.status is None
            assert (refused.error or "").startswith(
                "refused: label floor refused the read: graph <urn:quipu:graph:root>"
            )
            assert receiver.received == [] and cursor(kb) == 0
            assert listed(client)["delivery"]["state"] == "retrying"
            label("fresh", "2026-03-01T00:00:00Z")
            clock.now = state(kb, sub_id).retry_at or 0.0
            assert outcomes(worker) == ["delivered"]
            assert cursor(kb) == log(kb)[-1]["offset"]
        finally:
            worker.stop(timeout=10)
