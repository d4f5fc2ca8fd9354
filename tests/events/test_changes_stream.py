"""``GET /changes/stream``: the change feed as server-sent events, read over real HTTP from a live
server (replay, follow, Last-Event-ID, heartbeat, the frame and stream caps, stopping)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from quipu.config import load_settings
from quipu.rest import sse as stream_module
from tests.backends import migrated_location
from tests.cli.test_server_cli import start, wait_healthy
from tests.events.sse_client import TIMEOUT, Frame, frames
from tests.rest.live_server import live_server

EX = "http://ex.org/"


def until_commit(stream: Iterator[Frame], tx: int) -> list[Frame]:
    """Frames up to and including the commit of ``tx``."""
    out: list[Frame] = []
    for frame in stream:
        out.append(frame)
        if frame.event == "commit" and frame.data["tx"] == tx:
            return out
    raise AssertionError(f"the stream ended before transaction {tx} committed: {out}")


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "POLL_SECONDS", 0.05)


@pytest.fixture
def base(tmp_path: Path, fast: None) -> Iterator[str]:
    with live_server(load_settings(store={"db": migrated_location(tmp_path)})) as url:
        yield url


def knot(base: str, turtle: str, **fields: Any) -> int:
    response = httpx.post(base + "/knot", json={"turtle": turtle, **fields}, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return int(response.json()["tx_id"])


@contextmanager
def stream(base: str, headers: dict[str, str] | None = None, **params: Any) -> Iterator[httpx.Response]:
    with httpx.stream(
        "GET", base + "/changes/stream", params=params, headers=headers, timeout=TIMEOUT
    ) as response:
        yield response


def test_replays_then_follows_a_write_made_after_it_opened(base: str) -> None:
    t1 = knot(base, f"<{EX}a> <{EX}p> 1 . <{EX}a> <{EX}q> 2 .")
    t2 = knot(base, f"<{EX}b> <{EX}p> <{EX}a> .")
    page = httpx.get(base + "/changes", params={"capture": "old_and_new_values"}, timeout=TIMEOUT).json()
    with stream(base, capture="old_and_new_values") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = frames(response)
        replay = until_commit(events, t2)
        assert [f.data for f in replay if f.event == "change"] == page["records"]
        commits = [(f.id, f.data) for f in replay if f.event == "commit"]
        assert commits == [(str(t1), {"tx": t1, "records": 2}), (str(t2), {"tx": t2, "records": 1})]
        assert all(f.id is None for f in replay if f.event == "change")  # only commits move Last-Event-ID
        t3 = knot(base, f"<{EX}c> <{EX}p> 3 .")  # after the stream caught up
        followed = until_commit(events, t3)
        assert [(f.event, f.data["tx"]) for f in followed if f.event] == [("change", t3), ("commit", t3)]
        assert followed[0].data["entity"] == EX + "c" and followed[0].data["value"] == 3


def test_last_event_id_resumes_after_that_transaction_and_wins_over_since(base: str) -> None:
    t1 = knot(base, f"<{EX}a> <{EX}p> 1 .")
    t2 = knot(base, f"<{EX}b> <{EX}p> 2 .")
    with stream(base, headers={"Last-Event-ID": str(t1)}, since=0, follow="false") as response:
        got = [(f.event, f.data["tx"]) for f in frames(response)]
    assert got == [("change", t2), ("commit", t2)]


def test_without_follow_the_replay_ends_when_caught_up(base: str) -> None:
    t1 = knot(base, f"<{EX}a> <{EX}p> 1 .")
    with stream(base, follow="false") as response:
        assert [(f.event, f.id) for f in frames(response)] == [("change", None), ("commit", str(t1))]
    with stream(base, follow="false", since=t1) as response:
        assert list(frames(response)) == []


@pytest.mark.parametrize(
    "params, headers, field",
    [
        ({"cursor": "1"}, {}, "cursor"),
        ({"limit": "5"}, {}, "limit"),  # the stream pages itself
        ({"capture": "everything"}, {}, "capture"),
        ({"graph": EX + "nowhere"}, {}, "graph"),
        ({"since": "-1"}, {}, "since"),
        ({}, {"Last-Event-ID": "abc"}, "Last-Event-ID"),
        ({}, {"Last-Event-ID": "-1"}, "Last-Event-ID"),
        ({}, {"Last-Event-ID": ""}, "Last-Event-ID"),
        ({}, {"Last-Event-ID": str(2**63)}, "Last-Event-ID"),
    ],
)
def test_a_bad_request_is_refused_before_the_stream_starts(
    base: str, params: dict[str, str], headers: dict[str, str], field: str
) -> None:
    response = httpx.get(base + "/changes/stream", params=params, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["field"] == field


def test_a_silent_stream_sends_heartbeats(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "HEARTBEAT_SECONDS", 0.2)
    with stream(base) as response:
        first = next(frames(response))
    assert first == Frame(comment="heartbeat")


def test_a_record_over_the_frame_cap_is_an_error_naming_it_and_ends_the_stream(
    base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "MAX_FRAME_BYTES", 1000)
    t1 = knot(base, f"<{EX}a> <{EX}p> 1 .")
    t2 = knot(base, f'<{EX}b> <{EX}p> 1 . <{EX}b> <{EX}text> "{"x" * 2000}" .')
    knot(base, f"<{EX}c> <{EX}p> 1 .")
    with stream(base) as response:
        got = list(frames(response))  # the stream ends by itself
    assert [(f.event, f.id) for f in got[:2]] == [("change", None), ("commit", str(t1))]
    assert [f.event for f in got[2:]] == ["change", "error"]  # t2's first record, then its second
    error = got[-1].data
    assert (error["tx"], error["sequence"], error["reason"]) == (t2, 1, "frame_too_large")
    assert f"transaction {t2}" in error["error"] and "GET /changes" in error["error"]


def test_at_most_max_streams_are_open_and_a_closed_one_frees_its_place(
    base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "MAX_STREAMS", 2)
    with stream(base) as one, stream(base) as two:
        assert one.status_code == two.status_code == 200
        refused = httpx.get(base + "/changes/stream", timeout=TIMEOUT)
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        body = refused.json()
        assert body["reason"] == "server_busy" and "too many event streams are open (2" in body["error"]
        assert httpx.get(base + "/changes", timeout=TIMEOUT).status_code == 200  # pages still answer
    deadline = time.monotonic() + 10
    while True:  # the server notices the disconnects within a poll
        with stream(base, follow="false") as again:
            if again.status_code == 200:
                break
        assert time.monotonic() < deadline, "a closed stream kept its place"
        time.sleep(0.05)


def test_open_streams_hold_no_read_slot(tmp_path: Path, fast: None) -> None:
    settings = load_settings(store={"db": migrated_location(tmp_path)}, server={"max_concurrent_queries": 1})
    with live_server(settings) as url:
        knot(url, f"<{EX}a> <{EX}p> 1 .")
        with stream(url) as one, stream(url) as two:
            assert one.status_code == two.status_code == 200
            began = time.monotonic()
            for _ in range(5):  # the one heavy slot is free between the streams' polls
                assert httpx.get(url + "/changes", timeout=TIMEOUT).status_code == 200
            assert time.monotonic() - began < 5


def test_sigterm_stops_a_server_with_an_open_stream(tmp_path: Path) -> None:
    server = wait_healthy(start(tmp_path / "srv"))
    try:
        # A read timeout well under the heartbeat: a stream left open fails here, never hangs.
        with httpx.stream(
            "GET", server.url + "/changes/stream", timeout=httpx.Timeout(20, read=5)
        ) as response:
            assert response.status_code == 200
            began = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            assert list(frames(response)) == []  # the stream ends: the server closed it
            assert server.proc.wait(10) == 0
            assert time.monotonic() - began < 5
    finally:
        server.stop()
