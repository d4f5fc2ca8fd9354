"""Shared helpers of the REST tests: an app over a real store file, what its store holds, problem checks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from quipu.config import load_settings
from quipu.rest.app import create_app
from quipu.rest.auth import hash_token
from tests.backends import migrated_location
from tests.store import driver_sql

from ..store import snapshot

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
PREFIXES = (
    f"@prefix ex: <{EX}> .\n@prefix xsd: <{XSD}> .\n"
    "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
)

BOT_TOKEN = "bot-token-0123456789abcdef"
# A ``server`` config section with one named credential: principal "bot", holding BOT_TOKEN.
BOT_SERVER = {"credentials": [{"principal": "bot", "token_hash": hash_token(BOT_TOKEN)}]}


@contextmanager
def serve(tmp_path: Path, **settings: Any) -> Iterator[TestClient]:
    """A client of an app over ``tmp_path/r.db``; ``settings`` are config sections."""
    with TestClient(
        create_app(load_settings(store={"db": migrated_location(tmp_path, "r.db")}, **settings))
    ) as c:
        yield c


def kb_of(client: TestClient) -> KnowledgeBase:
    """The app's open store, for writing test data through the embedding API."""
    kb: KnowledgeBase = client.app.state.kb  # type: ignore[attr-defined]
    return kb


def problem(response: Any, reason: str, status: int = 400) -> dict[str, Any]:
    """The problem body of a refused request, after checking its status and reason."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["reason"] == reason, body
    return body


# -- what the store holds -------------------------------------------------------------------------


def state(client: TestClient) -> tuple[str, dict[str, Any], dict[str, list[tuple[Any, ...]]]]:
    """What a failed write must leave unchanged: the export, the transaction log, every table."""
    kb = kb_of(client)
    return kb.export("ntriples"), kb.transactions(), snapshot(kb)


def refused_write(
    client: TestClient, route: str, *, status: int = 400, field: str | None = None, **request: Any
) -> dict[str, Any]:
    """The problem body of a refused POST to ``route`` (``request`` are ``client.post`` arguments),
    after checking its status, its ``field`` when given, and that the store is unchanged."""
    before = state(client)
    response = client.post(route, **request)
    assert response.status_code == status, response.text
    if field is not None:
        assert response.json().get("field") == field, response.json()
    assert state(client) == before
    body: dict[str, Any] = response.json()
    return body


def objects(client: TestClient, s: str, p: str, graph: str | None = None) -> list[str]:
    """The current objects of (s, p) in ``graph`` (the root graph by default), sorted."""
    rows = kb_of(client).query(f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}", graph=graph)
    assert isinstance(rows, list)
    return sorted(str(r["o"]) for r in rows)


def transaction(client: TestClient, tx_id: int) -> dict[str, Any]:
    """The transaction log entry of ``tx_id``."""
    found: list[dict[str, Any]] = [
        t for t in kb_of(client).transactions()["transactions"] if t["id"] == tx_id
    ]
    assert len(found) == 1, found
    return found[0]


def raw(client: TestClient, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of a read-only SQL statement against the store's tables."""
    with kb_of(client).db.read() as conn:
        return [tuple(r) for r in conn.exec_driver_sql(driver_sql(conn, sql), params).all()]


def all_claims(client: TestClient, s: str, p: str) -> list[tuple[Any, ...]]:
    """(valid_from, valid_to, tx, retracted_tx, source) of every claim row of (s, p, *), oldest first."""
    return raw(
        client,
        "SELECT f.valid_from, f.valid_to, f.tx, f.retracted_tx, t.source FROM facts f "
        "JOIN transactions t ON t.id = f.tx JOIN terms e ON e.id = f.e JOIN terms a ON a.id = f.a "
        "WHERE f.op = 1 AND e.iri = ? AND a.iri = ? ORDER BY f.id",
        s,
        p,
    )
