"""Shared helpers of the read-route tests: an app over a real store file, and problem checks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from quipu.config import load_settings
from quipu.rest.app import create_app

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
PREFIXES = (
    f"@prefix ex: <{EX}> .\n@prefix xsd: <{XSD}> .\n"
    "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
)


@contextmanager
def serve(tmp_path: Path, **settings: Any) -> Iterator[TestClient]:
    """A client of an app over ``tmp_path/r.db``; ``settings`` are config sections."""
    with TestClient(create_app(load_settings(store={"db": str(tmp_path / "r.db")}, **settings))) as c:
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
