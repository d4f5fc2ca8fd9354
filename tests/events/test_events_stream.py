"""``GET /events/stream``: the event log as server-sent events, read over real HTTP from a live
server (replay, follow, the start rules of GET /events, Last-Event-ID, filters, the frame cap and
the stream cap it shares with /changes/stream). Polling and heartbeats are quipu.rest.sse's,
covered by test_changes_stream.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from quipu.config import load_settings
from quipu.rest import sse
from tests.backends import migrated_location
from tests.events.sse_client import TIMEOUT, Frame, frames
from tests.rest.live_server import live_server

EX = "http://ex.org/"


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(sse, "POLL_SECONDS", 0.05)
    with live_server(load_settings(store={"db": migrated_location(tmp_path)})) as url:
        yield url


def knot(base: str, turtle: str) -> None:
    response = httpx.post(base + "/knot", json={"turtle": turtle}, timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def log(base: str, **params: Any) -> list[dict[str, Any]]:
    response = httpx.get(base + "/events", params={"limit": 10_000, **params}, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


@contextmanager
def stream(base: str, headers: dict[str, str] | None = None, **params: Any) -> Iterator[httpx.Response]:
    with httpx.stream("GET", base + "/events/stream", params=params, headers=headers, timeout=TIMEOUT) as r:
        yield r


def replay(base: str, headers: dict[str, str] | None = None, **params: Any) -> list[Frame]:
    """A stream without follow, read to its end."""
    with stream(base, headers, follow="false", **params) as response:
        assert response.status_code == 200, response.read()
        return list(frames(response))


def until_offset(stream_frames: Iterator[Frame], offset: int) -> list[Frame]:
    out: list[Frame] = []
    for f in stream_frames:
        out.append(f)
        if f.event == "event" and f.data["offset"] == offset:
            return out
    raise AssertionError(f"the stream ended before event {offset}: {out}")


def test_replays_then_follows_with_the_offset_as_each_frames_id(base: str) -> None:
    knot(base, f"<{EX}a> <{EX}p> <{EX}b> .")
    before = log(base)
    with stream(base) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        received = frames(response)
        replayed = until_offset(received, before[-1]["offset"])
        assert [f.data for f in replayed] == before  # the envelopes of GET /events, in offset order
        assert [f.id for f in replayed] == [str(e["offset"]) for e in before]
        assert {f.event for f in replayed} == {"event"}
        knot(base, f"<{EX}c> <{EX}p> <{EX}d> .")  # after the stream caught up
        after = [e for e in log(base) if e["offset"] > before[-1]["offset"]]
        followed = until_offset(received, after[-1]["offset"])
        assert [f.data for f in followed] == after


def test_the_start_follows_the_rules_of_get_events(base: str) -> None:
    for i in range(3):
        knot(base, f"<{EX}s{i}> <{EX}p> <{EX}o{i}> .")
    everything = log(base)
    middle = everything[len(everything) // 2]["offset"]
    commit = {"consumer_id": "reader", "offset": middle}
    assert httpx.post(base + "/events/commit", json=commit, timeout=TIMEOUT).status_code == 200

    def offsets(got: list[Frame]) -> list[int]:
        return [f.data["offset"] for f in got]

    later = [e["offset"] for e in everything if e["offset"] > middle]
    assert offsets(replay(base, since=middle)) == later  # exclusive start
    assert offsets(replay(base, consumer="reader")) == later  # after the committed offset
    assert offsets(replay(base, consumer="reader", since=0)) == [e["offset"] for e in everything]
    assert offsets(replay(base, consumer="nobody")) == [e["offset"] for e in everything]
    # Last-Event-ID (a reconnecting client's progress) wins over since and consumer
    resumed = replay(base, {"Last-Event-ID": str(later[0])}, since=0, consumer="reader")
    assert offsets(resumed) == later[1:]
    # reading never commits
    page = httpx.get(base + "/events", params={"consumer": "reader"}, timeout=TIMEOUT).json()
    assert page["committed_offset"] == middle
    assert replay(base, since=everything[-1]["offset"]) == []


def test_types_and_group_filter_the_stream(base: str) -> None:
    knot(base, f"<{EX}a> <{EX}p> <{EX}b> .")
    episode = {
        "name": "standup",
        "episode_body": "x",
        "source": "chat",
        "group_id": "team-a",
        "nodes": [{"name": "Alice", "type": "Person"}],
    }
    assert httpx.post(base + "/episode", json=episode, timeout=TIMEOUT).status_code == 200
    edges = replay(base, types=" edge.added , ,predicate.new")
    assert [f.data for f in edges] == log(base, types="edge.added,predicate.new")
    assert edges and {f.data["type"] for f in edges} == {"edge.added", "predicate.new"}
    grouped = replay(base, group="team-a")
    assert grouped and [f.data for f in grouped] == log(base, group="team-a")


@pytest.mark.parametrize(
    "params, headers, field",
    [
        ({"limit": "5"}, {}, "limit"),  # the stream pages itself
        ({"offset": "1"}, {}, "offset"),
        ({"since": "-1"}, {}, "since"),
        ({"consumer": "  "}, {}, "consumer"),
        ({}, {"Last-Event-ID": "x1"}, "Last-Event-ID"),
        ({}, {"Last-Event-ID": str(2**63)}, "Last-Event-ID"),
    ],
)
def test_a_bad_request_is_refused_before_the_stream_starts(
    base: str, params: dict[str, str], headers: dict[str, str], field: str
) -> None:
    response = httpx.get(base + "/events/stream", params=params, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["field"] == field


def test_an_event_over_the_frame_cap_is_an_error_naming_it_and_ends_the_stream(
    base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    knot(base, f"<{EX}a> <{EX}p> <{EX}b> .")
    small = log(base)
    knot(base, f"<{EX}{'x' * 1500}> <{EX}p> <{EX}b> .")  # its envelopes name the long subject
    big = log(base)[len(small)]
    monkeypatch.setattr(sse, "MAX_FRAME_BYTES", 1000)
    with stream(base) as response:
        got = list(frames(response))  # the stream ends by itself
    assert [f.data for f in got[:-1]] == small
    error = got[-1]
    assert error.event == "error" and error.id is None  # Last-Event-ID stays at the last event sent
    assert (error.data["offset"], error.data["reason"]) == (big["offset"], "frame_too_large")
    assert f"event {big['offset']} is" in error.data["error"] and "GET /events" in error.data["error"]


def test_both_streams_share_one_server_wide_cap(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_STREAMS", 2)
    with (
        stream(base) as events,
        httpx.stream("GET", base + "/changes/stream", timeout=TIMEOUT) as changes,
    ):
        assert events.status_code == changes.status_code == 200
        refused = httpx.get(base + "/events/stream", timeout=TIMEOUT)
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        body = refused.json()
        assert body["reason"] == "server_busy" and "poll GET /events" in body["error"]
        assert httpx.get(base + "/events", timeout=TIMEOUT).status_code == 200  # pages still answer
