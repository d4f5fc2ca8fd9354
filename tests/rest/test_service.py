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
    assert body == {"facts": 1, "entities": 1, "predicates": 1}
    assert (wal is None) if on_postgres() else (isinstance(wal, int) and wal >= 0)
