"""Service routes (tools-core §4): /health never waits for the store, /version and /stats are strict."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import quipu
from quipu.config import load_settings
from quipu.rest.app import create_app
from quipu.version import version_info
from tests.backends import on_postgres, store_location


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(load_settings(store={"db": store_location(tmp_path, "svc.db")}))) as c:
        yield c


def test_health_answers_while_the_writer_is_held(client: TestClient) -> None:
    kb = client.app.state.kb  # type: ignore[attr-defined]
    held, release = threading.Event(), threading.Event()

    def hold_writer() -> None:
        with kb.db.write():
            held.set()
            release.wait(10)

    writer = threading.Thread(target=hold_writer)
    writer.start()
    try:
        assert held.wait(5)
        response = client.get("/health")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
    finally:
        release.set()
        writer.join(10)


@pytest.mark.parametrize("path", ["/health", "/stats", "/version"])
def test_service_routes_refuse_any_argument(client: TestClient, path: str) -> None:
    response = client.get(path, params={"x": "1"})
    assert response.status_code == 400
    assert response.json()["reason"] == "unknown_field"


def test_version_reports_the_build(client: TestClient) -> None:
    body = client.get("/version").json()
    assert body == version_info()
    assert body["version"] == quipu.__version__
    assert isinstance(body["git_sha"], str) and body["git_sha"]
    assert isinstance(body["git_dirty"], bool)
    assert isinstance(body["features"], dict)


def test_stats_count_statements_not_claims(client: TestClient) -> None:
    kb = client.app.state.kb  # type: ignore[attr-defined]
    doc = '<http://ex.org/a> <http://ex.org/b> "c" .'
    kb.knot(doc, "nt", source="one")
    kb.knot(doc, "nt", source="two")  # a second owner: one statement, two claims
    body = client.get("/stats").json()
    wal = body.pop("wal_bytes")
    span = body.pop("valid_time"), body.pop("head_tx")
    assert body == {"facts": 1, "entities": 1, "predicates": 1}
    assert span == ({"earliest": span[0]["earliest"], "latest": span[0]["earliest"]}, 2)
    assert (wal is None) if on_postgres() else (isinstance(wal, int) and wal >= 0)


def test_stats_give_the_valid_time_range_and_the_head(client: TestClient) -> None:
    """The explorer's time slider spans ROOT's history: the earliest valid_from, and the latest
    valid_from or closed valid_to; a retraction closing a window moves the latest."""
    kb = client.app.state.kb  # type: ignore[attr-defined]
    empty = client.get("/stats").json()
    assert (empty["head_tx"], empty["valid_time"]) == (0, {"earliest": None, "latest": None})
    kb.knot("<http://ex.org/a> <http://ex.org/b> <http://ex.org/c> .", "nt", timestamp="2026-11-01T00:00:00Z")
    kb.knot('<http://ex.org/a> <http://ex.org/d> "1" .', "nt", timestamp="2026-11-10T00:00:00Z")
    body = client.get("/stats").json()
    assert body["valid_time"] == {"earliest": "2026-11-01T00:00:00Z", "latest": "2026-11-10T00:00:00Z"}
    kb.retract("http://ex.org/a", predicate="http://ex.org/b", timestamp="2026-11-20T00:00:00Z")
    body = client.get("/stats").json()
    assert body["valid_time"] == {"earliest": "2026-11-01T00:00:00Z", "latest": "2026-11-20T00:00:00Z"}
    assert body["head_tx"] == kb.transactions()["transactions"][-1]["id"]
