"""The REST app (``quipu.rest.app.create_app``) and the ``quipu-server`` console script.

The app opens its store in the lifespan, so every client here is used as a context manager.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import quipu
from quipu.config import Settings, load_settings
from quipu.rest.app import create_app
from tests.backends import store_location

EX = "http://ex.org/"
DOC = (
    f'<{EX}svc> <{EX}cores> "4"^^<http://www.w3.org/2001/XMLSchema#integer> .\n<{EX}svc> <{EX}name> "svc" .\n'
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(store={"db": store_location(tmp_path, "s.db")})


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


def test_settings_point_at_the_temp_store(settings: Settings, tmp_path: Path) -> None:
    assert settings.store.db == store_location(tmp_path, "s.db")


def test_health(client: TestClient) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.sqlite_only  # a file appears only when the lifespan opens the store
def test_the_store_opens_in_the_lifespan_not_at_creation(settings: Settings) -> None:
    app = create_app(settings)
    assert not Path(settings.store.db).exists()
    with TestClient(app) as c:
        assert c.get("/health").status_code == 200
        assert Path(settings.store.db).exists()


def counts(stats: dict[str, Any]) -> dict[str, Any]:
    """/stats without the write-ahead log's size (tests/reliability/test_wal.py checks it) and
    the time span (tests/rest/test_service.py)."""
    assert {"wal_bytes", "head_tx", "valid_time"} <= set(stats)
    return {k: v for k, v in stats.items() if k not in ("wal_bytes", "head_tx", "valid_time")}


def test_stats_of_an_empty_store(client: TestClient) -> None:
    response = client.get("/stats")
    assert response.status_code == 200
    assert counts(response.json()) == {"facts": 0, "entities": 0, "predicates": 0}


def test_stats_of_data_written_before_start(settings: Settings) -> None:
    with quipu.open(settings.store.db) as kb:
        kb.knot(DOC, "nt", valid_from="2026-04-01T00:00:00Z")
    with TestClient(create_app(settings)) as c:
        assert counts(c.get("/stats").json()) == {"facts": 2, "entities": 1, "predicates": 2}


def test_stats_follow_writes_by_another_handle(client: TestClient, settings: Settings) -> None:
    assert client.get("/stats").json()["facts"] == 0
    with quipu.open(settings.store.db) as kb:
        kb.knot(DOC, "nt")
    assert counts(client.get("/stats").json()) == {"facts": 2, "entities": 1, "predicates": 2}
    with quipu.open(settings.store.db) as kb:
        kb.retract(EX + "svc", EX + "name")
    # The cache is keyed by the transaction head, so a retraction is never served stale.
    assert counts(client.get("/stats").json()) == {"facts": 1, "entities": 1, "predicates": 1}


def test_health_and_stats_refuse_arguments(client: TestClient) -> None:
    assert client.get("/health", params={"verbose": "1"}).status_code == 400
    assert client.get("/stats", params={"graph": "x"}).status_code == 400


def test_quipu_server_version() -> None:
    script = Path(sys.executable).parent / "quipu-server"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == quipu.__version__ + "\n"
    assert proc.stdout.strip() == "0.1.0"
