"""Pulling events and committing cursors over REST (tools-core §1.11 quipu_events, §3.12
quipu_events_commit; DM §11.2), on a real store of either backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import quipu
from tests.backends import migrated_location
from tests.rest.support import kb_of, problem, serve
from tests.rest.test_refusal_events import SHAPES  # :age must be an integer

EX = "http://ex.org/"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def knot(client: TestClient, turtle: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/knot", json={"turtle": turtle, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def page(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/events", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def offsets(body: dict[str, Any]) -> list[int]:
    return [e["offset"] for e in body["events"]]


def edges(client: TestClient, n: int, start: int = 0) -> None:
    """``n`` transactions, each one edge between fresh subjects: entity.added + edge.added."""
    for i in range(start, start + n):
        knot(client, f"<{EX}s{i}> <{EX}link> <{EX}o{i}> .")


# -- quipu_events --------------------------------------------------------------------------------


def test_a_page_is_in_offset_order_with_envelopes_and_lag(client: TestClient) -> None:
    edges(client, 3)
    body = page(client, limit=2)
    assert len(body["events"]) == 2
    first = body["events"][0]
    assert first["schema"] == "quipu.event/v1"
    assert set(first) == {"schema", "offset", "type", "ts", "subject", "group_id", "tx_id", "payload"}
    everything = page(client, limit=10_000)
    latest = everything["events"][-1]["offset"]
    assert offsets(everything) == sorted(offsets(everything))
    assert body["next_offset"] == body["events"][-1]["offset"]
    assert body["lag"] == latest - body["next_offset"]  # rule 4: distance behind the whole log
    assert "committed_offset" not in body  # no consumer was used


def test_since_overrides_consumer_and_committed_offset_is_absent_then(client: TestClient) -> None:
    edges(client, 2)
    assert client.post("/events/commit", json={"consumer_id": "c", "offset": 3}).status_code == 200
    by_consumer = page(client, consumer="c")
    assert by_consumer["committed_offset"] == 3 and offsets(by_consumer)[0] == 4  # rule 1
    by_since = page(client, consumer="c", since=1)
    assert offsets(by_since)[0] == 2  # since wins
    assert "committed_offset" not in by_since


def test_an_unknown_consumer_replays_from_the_start(client: TestClient) -> None:
    edges(client, 1)
    body = page(client, consumer="never-seen")
    assert body["committed_offset"] == 0
    assert offsets(body)[0] == 1


def test_the_start_is_exclusive_and_next_offset_never_moves_backwards(client: TestClient) -> None:
    edges(client, 2)
    body = page(client, since=2)
    assert offsets(body)[0] == 3  # rule 2: offset > since
    latest = page(client, limit=10_000)["events"][-1]["offset"]
    empty = page(client, since=latest)
    assert empty["events"] == [] and empty["next_offset"] == latest and empty["lag"] == 0  # rule 3
    beyond = page(client, since=latest + 50)
    assert beyond["next_offset"] == latest + 50 and beyond["lag"] == 0  # lag floored at 0


def test_reading_never_commits(client: TestClient) -> None:
    edges(client, 2)
    client.post("/events/commit", json={"consumer_id": "reader", "offset": 1})
    for _ in range(3):
        body = page(client, consumer="reader", limit=1)
        assert body["committed_offset"] == 1 and offsets(body) == [2]  # rule 6


def test_types_are_trimmed_and_empty_entries_ignored(client: TestClient) -> None:
    edges(client, 3)
    only_edges = page(client, types=" edge.added , ,")
    assert {e["type"] for e in only_edges["events"]} == {"edge.added"}
    assert len(only_edges["events"]) == 3
    two = page(client, types="edge.added,predicate.new")
    assert {e["type"] for e in two["events"]} == {"edge.added", "predicate.new"}
    # lag stays unfiltered (rule 4): measured against every event, matching or not
    latest = page(client, limit=10_000)["events"][-1]["offset"]
    assert only_edges["lag"] == latest - only_edges["next_offset"]
    assert page(client, types="no.such.type")["events"] == []


def test_group_is_an_episode_group_not_a_graph(client: TestClient) -> None:
    episode = {
        "name": "standup",
        "episode_body": "x",
        "source": "chat",
        "group_id": "team-a",
        "nodes": [{"name": "Alice", "type": "Person"}],
    }
    response = client.post("/episode", json=episode)
    assert response.status_code == 200, response.text
    edges(client, 1)
    grouped = page(client, group="team-a")
    assert grouped["events"] and {e["group_id"] for e in grouped["events"]} == {"team-a"}
    assert page(client, group="urn:quipu:graph:root")["events"] == []  # rule 5: not a graph selector


def test_only_root_emits_semantic_events_and_refusals_appear(tmp_path: Path) -> None:
    with serve(tmp_path, shacl={"validate_on_write": True}) as client:
        client.post("/graph/create", json={"graph": f"{EX}g"})
        before = page(client, limit=10_000)["next_offset"]
        knot(client, f"<{EX}a> <{EX}p> <{EX}b> .", graph=f"{EX}g")
        assert page(client, since=before)["events"] == []  # rule 7: a named graph emits nothing
        loaded = client.post("/shapes", json={"action": "load", "name": "people", "turtle": SHAPES})
        assert loaded.status_code == 200
        refused = client.post("/knot", json={"turtle": f'<{EX}c> a <{EX}Person> ; <{EX}age> "x" .'})
        assert refused.status_code == 200 and refused.json()["conforms"] is False
        types = [e["type"] for e in page(client, since=before)["events"]]
        assert types == ["shapes.loaded", "write.refused"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"since": -1}, "since"),
        ({"consumer": "  "}, "consumer"),
        ({"cursor": 3}, "cursor"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(
    client: TestClient, params: dict[str, Any], field: str
) -> None:
    body = client.get("/events", params=params).json()
    assert body["status"] == 400 and body["field"] == field, body


def test_a_large_limit_is_clamped_to_10000(client: TestClient) -> None:
    edges(client, 1)
    assert len(page(client, limit=10**9)["events"]) == 3


# -- quipu_events_commit -------------------------------------------------------------------------


def test_commit_upserts_rewinds_and_accepts_offsets_past_the_log(client: TestClient) -> None:
    edges(client, 2)
    first = client.post("/events/commit", json={"consumer_id": " c1 ", "offset": 4})
    assert first.json() == {"consumer_id": "c1", "committed_offset": 4}  # trimmed (rule 1)
    assert page(client, consumer="c1")["committed_offset"] == 4
    client.post("/events/commit", json={"consumer_id": "c1", "offset": 1})  # rule 2: rewind
    assert offsets(page(client, consumer="c1"))[0] == 2
    client.post("/events/commit", json={"consumer_id": "c1", "offset": 10**6})  # past the log
    assert page(client, consumer="c1")["events"] == []
    again = client.post("/events/commit", json={"consumer_id": "c1", "offset": 10**6})
    assert again.json() == {"consumer_id": "c1", "committed_offset": 10**6}  # idempotent


@pytest.mark.parametrize(
    ("body", "reason", "message", "field"),
    [
        ({"offset": 1}, "missing_field", "consumer_id is required", "consumer_id"),
        ({"consumer_id": "   ", "offset": 1}, "missing_field", "consumer_id is required", "consumer_id"),
        ({"consumer_id": "c"}, "missing_field", "offset (integer) is required", "offset"),
        ({"consumer_id": "c", "offset": -1}, "invalid_field", "offset must be >= 0", "offset"),
        ({"consumer_id": "c", "offset": "3"}, "wrong_type", None, "offset"),
        ({"consumer_id": "c", "offset": 1, "extra": 1}, "unknown_field", None, "extra"),
    ],
)
def test_commit_refuses_bad_input_and_writes_nothing(
    client: TestClient, body: dict[str, Any], reason: str, message: str | None, field: str
) -> None:
    out = problem(client.post("/events/commit", json=body), reason)
    assert out["field"] == field
    if message is not None:
        assert out["error"] == message
    assert page(client, consumer="c")["committed_offset"] == 0


def test_a_consumer_that_commits_and_reopens_reads_exactly_the_uncommitted_events(tmp_path: Path) -> None:
    location = migrated_location(tmp_path, "c.db")
    with quipu.open(location) as kb:
        for i in range(4):
            kb.knot(f"<{EX}s{i}> <{EX}link> <{EX}o{i}> .", "turtle")
        everything = kb.feeds.events(limit=10_000)["events"]
        kb.feeds.commit(consumer_id="worker", offset=everything[4]["offset"])
    with quipu.open(location) as kb:
        again = kb.feeds.events(consumer="worker", limit=10_000)
    assert [e["offset"] for e in again["events"]] == [e["offset"] for e in everything[5:]]
    assert again["committed_offset"] == everything[4]["offset"]


def test_events_read_and_commit_need_no_transaction(client: TestClient) -> None:
    edges(client, 1)
    kb = kb_of(client)
    before = kb.transactions(limit=None)["count"]
    client.post("/events/commit", json={"consumer_id": "c", "offset": 1})
    page(client, consumer="c")
    assert kb.transactions(limit=None)["count"] == before


def test_the_delivery_envelopes_built_by_the_database_equal_the_read_envelopes(client: TestClient) -> None:
    # The webhook worker's envelopes are JSON text built in SQL (json_object / json_build_object):
    # they must parse to exactly what GET /events answers, awkward strings included.
    from quipu.store import event_feed

    awkward = 'quote " backslash \\ newline \n tab \t é 😀 \u2028'
    episode = {
        "name": "odd",
        "episode_body": "x",
        "source": "chat",
        "group_id": awkward,
        "nodes": [{"name": "Zoë 😀", "type": "Person", "description": awkward}],
    }
    response = client.post("/episode", json=episode)
    assert response.status_code == 200, response.text
    knot(client, f"<{EX}caf%C3%A9-é> <{EX}link> <{EX}o> .")
    expected = page(client, limit=1000)["events"]
    assert any(e["group_id"] == awkward for e in expected)
    kb = kb_of(client)
    with kb.db.read() as conn:
        wire = event_feed.read_wire_page(conn, after=0, limit=1000)
        typed = event_feed.read_wire_page(conn, after=1, limit=1000, types=["edge.added", "entity.added"])
    assert [json.loads(event.json) for event in wire] == expected
    assert [(event.offset, event.ts) for event in wire] == [(e["offset"], e["ts"]) for e in expected]
    assert [json.loads(event.json) for event in typed] == [
        e for e in expected if e["offset"] > 1 and e["type"] in {"edge.added", "entity.added"}
    ]
