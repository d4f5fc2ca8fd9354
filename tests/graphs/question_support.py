"""Helpers of the named-question tests (quipu_ask, quipu_queries, quipu_cooccurrence): provenance
chains in either vocabulary, and what a read must leave unchanged."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.rest.support import raw

from .support import EX, knot

LEGACY = "http://aegis.gastown.local/ontology/"
QUECHUA = "https://scbrown.github.io/quechua/ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
NS = {"legacy": LEGACY, "quechua": QUECHUA}


def edge(subject: str, local: str, obj: str, vocab: str = "legacy") -> str:
    """One N-Triples line ``<ex:subject> <vocab:local> <ex:obj>``."""
    return f"<{EX}{subject}> <{NS[vocab]}{local}> <{EX}{obj}> ."


def chain(client: TestClient, *lines: str, valid_from: str | None = None) -> None:
    body = "\n".join(lines)
    if valid_from is None:
        knot(client, body)
    else:
        response = client.post("/knot", json={"turtle": body, "valid_from": valid_from})
        assert response.status_code == 200, response.text


def commit(
    name: str, item: str, *entities: str, implements: str = "legacy", modifies: str = "legacy"
) -> list[str]:
    """A commit implementing ``item`` and modifying ``entities`` (each edge in its vocabulary)."""
    return [
        edge(name, "implements", item, implements),
        *(edge(name, "modifies", e, modifies) for e in entities),
    ]


def reads_nothing(client: TestClient) -> tuple[Any, ...]:
    """What a read must leave as it was: the transaction log, the stored queries, the events."""
    return tuple(
        sorted(map(tuple, raw(client, f"SELECT * FROM {table}")), key=repr)
        for table in ("transactions", "stored_queries", "stored_query_params", "events", "facts")
    )
