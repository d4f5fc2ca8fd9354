"""Issue 15: time values on REST (and an MCP tool) are checked, never compared or stored as free text.

A ``valid_at`` read point or a write ``timestamp`` is an RFC 3339 instant or the bare date DM §6.1
allows, with a year from 0001 to 9999; anything else is a 400 naming the field, and a refused
write leaves the store as it was. ``"zzz"`` used to be compared as text (it sorts after every
year, so a fact valid from 2020 came back), and a transaction timestamp with a 10-digit year
was stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from tests.rest.support import EX, kb_of, refused_write, serve

pytestmark = pytest.mark.anyio

MALFORMED: Final = [
    "zzz",
    "yesterday",
    "",  # as a read point: no instant at all
    "12345678901-01-01T00:00:00Z",  # a 10-digit year
    "10000-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "0000-01-01",
    "9999-12-31T23:59:59-01:00",  # year 10000 in UTC
    "2026-02-30",
    "2026-13-01T00:00:00Z",
    "2026-04-02T24:00:00Z",
    "2026-04-02T00:00:00",  # no offset
    "2026-04-02 00:00:00Z",
    "2026-04-02T00:00:00Z trailing",
    " 2026-04-02",
]
# A write timestamp may be empty: that is "now", as an absent one.
MALFORMED_STAMPS: Final = [t for t in MALFORMED if t != ""]
SEED: Final = f"<{EX}s> <{EX}p> <{EX}o> ."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        kb_of(c).knot(SEED, "nt", valid_from="2020-01-01T00:00:00Z", timestamp="2020-01-01T00:00:00Z")
        yield c


def _refused(response: Any, field: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    body: dict[str, Any] = response.json()
    assert body["field"] == field, body
    assert body["reason"] == "invalid_field", body
    return body


# -- read points ----------------------------------------------------------------------------------


@pytest.mark.parametrize("valid_at", MALFORMED)
def test_a_malformed_valid_at_is_refused_by_query(client: TestClient, valid_at: str) -> None:
    query = f"SELECT ?o WHERE {{ <{EX}s> <{EX}p> ?o }}"
    _refused(client.post("/query", json={"query": query, "valid_at": valid_at}), "valid_at")
    _refused(client.get("/query", params={"query": query, "valid_at": valid_at}), "valid_at")


@pytest.mark.parametrize("valid_at", ["zzz", "12345678901-01-01T00:00:00Z", "2026-02-30"])
def test_a_malformed_valid_at_is_refused_by_unravel_and_validate(client: TestClient, valid_at: str) -> None:
    _refused(client.post("/unravel", json={"valid_at": valid_at}), "valid_at")
    _refused(client.post("/validate", json={"data": SEED, "valid_at": valid_at}), "valid_at")


def test_zzz_no_longer_finds_a_fact_valid_from_2020_while_read_points_do(client: TestClient) -> None:
    query = f"SELECT ?o WHERE {{ <{EX}s> <{EX}p> ?o }}"
    # "zzz" sorts after every year: compared as text, it found the fact valid from 2020.
    _refused(client.post("/query", json={"query": query, "valid_at": "zzz"}), "valid_at")

    def rows(valid_at: str) -> int:
        response = client.post("/query", json={"query": query, "valid_at": valid_at})
        assert response.status_code == 200, response.text
        count: int = response.json()["count"]
        return count

    assert rows("2021-06-01T00:00:00Z") == 1
    assert rows("2021-06-01T02:00:00.75+02:00") == 1  # normalised before comparison
    assert rows("2019-06-01T00:00:00Z") == 0
    # A bare date is allowed and compared as written (DM §6.1): "2020-01-01T…" sorts after it.
    assert rows("2021-06-01") == 1
    assert rows("2020-01-01") == 0
    assert client.post("/unravel", json={"valid_at": "2021-06-01"}).json()["count"] == 1


# -- write timestamps -----------------------------------------------------------------------------

WRITES: Final[list[tuple[str, dict[str, Any]]]] = [
    ("/knot", {"turtle": f"<{EX}s> <{EX}q> 1 ."}),
    ("/set", {"entity": EX + "s", "predicate": EX + "q", "value": {"int": 2}}),
    ("/retract", {"entity": EX + "s"}),
    ("/retract/source", {"source": "knot:anonymous", "repair": "ticket-1", "apply": True, "expect": 1}),
    ("/episode/retract", {"episode": "nothing-yet"}),
    ("/episodes/complete", {"name": "ep-1", "episode_body": "a body"}),
    ("/shapes", {"action": "load", "name": "s1", "turtle": "@prefix sh: <http://www.w3.org/ns/shacl#> ."}),
    (
        "/propose",
        {
            "kind": "shape",
            "target": "t",
            "diff": "@prefix sh: <http://www.w3.org/ns/shacl#> .",
            "proposer": "p",
        },
    ),
]


@pytest.mark.parametrize(("route", "body"), WRITES, ids=[route for route, _ in WRITES])
@pytest.mark.parametrize("stamp", ["zzz", "12345678901-01-01T00:00:00Z", "0000-01-01"])
def test_a_malformed_write_timestamp_is_refused_and_nothing_is_written(
    client: TestClient, route: str, body: dict[str, Any], stamp: str
) -> None:
    refused_write(client, route, json={**body, "timestamp": stamp}, field="timestamp")


@pytest.mark.parametrize("stamp", MALFORMED_STAMPS)
def test_every_malformed_knot_timestamp_is_refused(client: TestClient, stamp: str) -> None:
    body = refused_write(
        client, "/knot", json={"turtle": f"<{EX}s> <{EX}q> 1 .", "timestamp": stamp}, field="timestamp"
    )
    assert "RFC 3339" in body["error"] and "0001 to 9999" in body["error"]


def test_a_staged_upload_refuses_a_malformed_timestamp_before_promotion(client: TestClient) -> None:
    from quipu.uploads.manifest import derive_upload_id, sha256

    payload = f"<{EX}s> <{EX}q> 1 .\n"
    content_hash = sha256(payload.encode())
    body = {
        "upload_id": derive_upload_id("snap", content_hash),
        "snapshot": "snap",
        "content_hash": content_hash,
        "part_hash": content_hash,
        "payload": payload,
        "part_number": 0,
        "total_parts": 1,
        "total_bytes": len(payload.encode()),
        "timestamp": "12345678901-01-01T00:00:00Z",
    }
    refused_write(client, "/knot/stage", json=body, field="timestamp")


def test_a_10_digit_year_is_refused_while_instants_and_dates_are_kept(client: TestClient) -> None:
    kb: KnowledgeBase = kb_of(client)
    stamp = "12345678901-01-01T00:00:00Z"
    refused_write(
        client, "/knot", json={"turtle": f"<{EX}s> <{EX}q> 0 .", "timestamp": stamp}, field="timestamp"
    )
    for stamp, stored in [
        ("2026-04-02T10:00:00.9+02:00", "2026-04-02T08:00:00Z"),
        ("2026-04-02", "2026-04-02"),  # a bare date is kept as written
        ("", None),  # empty: now
    ]:
        response = client.post(
            "/knot", json={"turtle": f"<{EX}s> <{EX}q> {len(stamp)} .", "timestamp": stamp}
        )
        assert response.status_code == 200, response.text
        if stored is not None:
            assert response.json()["valid_from"] == stored
            assert kb.transactions()["transactions"][-1]["timestamp"] == stored


# -- MCP ------------------------------------------------------------------------------------------


async def test_an_mcp_read_with_a_malformed_valid_at_is_a_tool_error_naming_the_field(tmp_path: Path) -> None:
    from tests.reliability.mcp_support import call_tool

    result = await call_tool(tmp_path, "quipu_unravel", {"valid_at": "zzz"})
    assert result["status"] == 400 and result["body"]["field"] == "valid_at", result
