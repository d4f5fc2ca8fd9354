"""quipu_impact (tools-core §1.12): the downstream walk and its counterfactual, over REST and a
real store (SQLite, and PostgreSQL when the suite runs there). Each numbered rule has a test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import BOT_SERVER, BOT_TOKEN, serve

from .support import EX, knot, ok, refused, store_snapshot

PREFIX = f"@prefix ex: <{EX}> .\n"
# svc -> db -> disk; svc -> cache -> disk (disk reached once, from db); svc has a literal
CHAIN = PREFIX + (
    'ex:svc ex:uses ex:db ; ex:uses ex:cache ; ex:name "svc" . ex:db ex:storesOn ex:disk . '
    "ex:cache ex:storesOn ex:disk . ex:disk ex:in ex:rack . ex:rack ex:in ex:room ."
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def impact(client: TestClient, **body: object) -> dict[str, Any]:
    return ok(client, "/impact", **body)


def walk(out: dict[str, Any]) -> list[tuple[str | None, int, str | None, str | None]]:
    def local(iri: str | None) -> str | None:
        return None if iri is None else iri[len(EX) :]

    return [
        (local(r["iri"]), r["depth"], local(r["via_predicate"]), local(r["via_subject"]))
        for r in out["reached"]
    ]


def test_rules_1_to_3_breadth_first_each_reached_once_with_its_first_edge(client: TestClient) -> None:
    knot(client, CHAIN)
    out = impact(client, entity=EX + "svc")
    assert walk(out) == [
        ("svc", 0, None, None),
        ("db", 1, "uses", "svc"),
        ("cache", 1, "uses", "svc"),
        ("disk", 2, "storesOn", "db"),
        ("rack", 3, "in", "disk"),
        ("room", 4, "in", "rack"),
    ]
    assert out["root"] == EX + "svc" and out["reached_count"] == 5
    # rule 3: cache -> disk is examined though disk was already reached; the literal is not an edge
    assert out["edges"] == 6
    assert out["hops"] == 5 and out["counterfactual"] is False and out["ranked_by_ppr"] is False


def test_rule_4_hops_bound_the_depth_and_zero_is_the_root_only(client: TestClient) -> None:
    knot(client, CHAIN)
    assert [r[0] for r in walk(impact(client, entity=EX + "svc", hops=2))] == ["svc", "db", "cache", "disk"]
    only = impact(client, entity=EX + "svc", hops=0)
    assert walk(only) == [("svc", 0, None, None)] and only["reached_count"] == 0 and only["edges"] == 0


def test_rule_4_predicates_filter_and_unknown_ones_contribute_nothing(client: TestClient) -> None:
    knot(client, CHAIN)
    out = impact(client, entity=EX + "svc", predicates=[EX + "uses", EX + "never-seen"])
    assert [r[0] for r in walk(out)] == ["svc", "db", "cache"] and out["edges"] == 2
    assert walk(impact(client, entity=EX + "svc", predicates=[EX + "never-seen"])) == [("svc", 0, None, None)]
    assert len(impact(client, entity=EX + "svc", predicates=[])["reached"]) == 6  # empty: every predicate


def test_rule_5_remove_walks_the_counterfactual_and_reaches_only_the_root(client: TestClient) -> None:
    knot(client, CHAIN)
    out = impact(client, entity=EX + "svc", remove=True)
    assert walk(out) == [("svc", 0, None, None)] and out["counterfactual"] is True
    # the speculative retraction of db's statements cuts disk off from db, not from cache
    through_db = impact(client, entity=EX + "cache", remove=True)
    assert walk(through_db) == [("cache", 0, None, None)]
    assert [r[0] for r in walk(impact(client, entity=EX + "db"))] == ["db", "disk", "rack", "room"]


def test_rule_7_the_counterfactual_leaves_the_store_unchanged(client: TestClient) -> None:
    knot(client, CHAIN)
    export = client.post("/export", json={"format": "nquads"}).content
    before = store_snapshot(client)
    transactions = client.get("/transactions").json()
    impact(client, entity=EX + "svc", remove=True, timestamp="2030-01-01T00:00:00Z")
    impact(client, entity=EX + "disk", remove=True, rank_by_ppr=True)
    assert client.post("/export", json={"format": "nquads"}).content == export
    assert client.get("/transactions").json() == transactions
    assert store_snapshot(client) == before  # facts, transactions, terms, events: all as they were
    # and the store still writes normally afterwards
    knot(client, PREFIX + "ex:svc ex:uses ex:queue .")
    assert EX + "queue" in [r["iri"] for r in impact(client, entity=EX + "svc")["reached"]]


def test_rule_6_rank_by_ppr_orders_by_score_then_iri(client: TestClient) -> None:
    knot(client, CHAIN + " ex:island ex:to ex:isle .")
    out = impact(client, entity=EX + "svc", rank_by_ppr=True)
    assert out["ranked_by_ppr"] is True
    scores = [(-r["ppr"], r["iri"]) for r in out["reached"]]
    assert scores == sorted(scores)
    assert {r["iri"] for r in out["reached"]} == {
        EX + x for x in ("svc", "db", "cache", "disk", "rack", "room")
    }
    assert all(r["ppr"] > 0 for r in out["reached"])


def test_an_entity_outside_the_projection_scores_zero(client: TestClient) -> None:
    knot(client, PREFIX + 'ex:lonely ex:name "x" .')
    out = impact(client, entity=EX + "lonely", rank_by_ppr=True)
    assert out["reached"] == [
        {"iri": EX + "lonely", "depth": 0, "via_predicate": None, "via_subject": None, "ppr": 0.0}
    ]


def test_errors_name_the_field(client: TestClient) -> None:
    knot(client, CHAIN)
    refused(client, "/impact", "entity not found: http://ex.org/ghost", entity=EX + "ghost")
    for body in (
        {"entity": EX + "svc", "hops": -1},
        {"entity": EX + "svc", "hops": "2"},
        {},
        {"entity": 5},
        {"entity": EX + "svc", "predicates": "x"},
    ):
        response = client.post("/impact", json=body)
        assert response.status_code == 400, (body, response.text)
    response = client.post("/impact", json={"entity": "not an iri"})
    assert response.status_code == 400 and "entity" in response.text


def test_impact_is_a_write_route(tmp_path: Path) -> None:
    with serve(tmp_path, server=BOT_SERVER) as c:
        knot_ok = c.post("/knot", json={"turtle": CHAIN}, headers={"Authorization": f"Bearer {BOT_TOKEN}"})
        assert knot_ok.status_code == 200
        assert c.post("/impact", json={"entity": EX + "svc"}).status_code == 401
        authorised = c.post(
            "/impact", json={"entity": EX + "svc"}, headers={"Authorization": f"Bearer {BOT_TOKEN}"}
        )
        assert authorised.status_code == 200
