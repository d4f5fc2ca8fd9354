"""Overlays (tools-graphs-governance §2): create (OC-1..OC-3), write (OW-1..OW-4) and compose in
both precedence modes (CP-1..CP-4), against a hand-worked table."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import raw, serve

from .support import EX, G1, META_IRI, ROOT_IRI, knot, ok, refused, store_snapshot, subjects

OV = EX + "overlay"
S, P, Q = EX + "s", EX + "p", EX + "q"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def write(client: TestClient, op: str, obj: Any, *, overlay: str = OV, s: str = S, p: str = P) -> int:
    out = ok(client, "/overlay/write", overlay=overlay, op=op, subject=s, predicate=p, object=obj)
    return int(out["tx_id"])


def compose(
    client: TestClient, precedence: str | None = None, overlay: str = OV
) -> list[tuple[str, str, Any]]:
    body: dict[str, Any] = {"overlay": overlay}
    if precedence is not None:
        body["precedence"] = precedence
    out = ok(client, "/overlay/compose", **body)
    assert out["count"] == len(out["triples"]) and out["precedence"] == (precedence or "nearest")
    return [(t["subject"], t["predicate"], t["object"]) for t in out["triples"]]


# -- create -------------------------------------------------------------------------------------------


def test_oc1_bind_once(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    first = ok(client, "/overlay/create", overlay=OV)
    assert first["parent_branch"] == 0  # ROOT when absent
    assert ok(client, "/overlay/create", overlay=OV, parent_branch=None) == first
    assert ok(client, "/overlay/create", overlay=OV, parent_branch=ROOT_IRI) == first
    before = store_snapshot(client)
    refused(client, "/overlay/create", "cannot rebind", overlay=OV, parent_branch=G1)
    assert store_snapshot(client) == before


def test_an_overlay_over_a_named_graph(client: TestClient) -> None:
    g1 = ok(client, "/graph/create", graph=G1)["g"]
    out = ok(client, "/overlay/create", overlay=OV, parent_branch=G1)
    assert out["parent_branch"] == g1 and out["g"] != g1


def test_oc2_overlays_never_nest(client: TestClient) -> None:
    ok(client, "/overlay/create", overlay=OV)
    refused(
        client,
        "/overlay/create",
        "an overlay must extend a committed graph",
        overlay=EX + "o2",
        parent_branch=OV,
    )


def test_oc3_registration_time_is_the_servers(client: TestClient) -> None:
    ok(client, "/overlay/create", overlay=OV)
    ((created_at,),) = raw(client, "SELECT created_at FROM graphs WHERE class = 'overlay'")
    assert created_at.startswith("20") and created_at.endswith("Z") and len(created_at) == 20


@pytest.mark.parametrize(
    "body, field, phrase",
    [
        ({}, "overlay", "overlay"),
        ({"overlay": OV, "parent_branch": EX + "nope"}, "parent_branch", "is not a registered graph"),
        ({"overlay": OV, "parent_branch": OV}, "parent_branch", "its own parent"),
        ({"overlay": OV, "parent_branch": META_IRI}, "parent_branch", "meta-graph"),
        ({"overlay": ROOT_IRI}, "overlay", "reserved"),
        ({"overlay": G1 + "#inferred"}, "overlay", "reserved"),
    ],
)
def test_create_refusals(client: TestClient, body: dict[str, Any], field: str, phrase: str) -> None:
    before = store_snapshot(client)
    response = client.post("/overlay/create", json=body)
    assert response.status_code == 400 and response.json()["field"] == field, response.text
    assert phrase in response.json()["error"]
    assert store_snapshot(client) == before


def test_a_committed_graph_cannot_become_an_overlay(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    refused(client, "/overlay/create", "already registered as a committed graph", overlay=G1)


# -- write --------------------------------------------------------------------------------------------


def test_ow1_a_bare_string_is_a_literal_and_iri_needs_the_object_form(client: TestClient) -> None:
    ok(client, "/overlay/create", overlay=OV)
    write(client, "assert", "http://x.org/looks-like-an-iri")
    write(client, "assert", {"iri": "http://x.org/edge"})
    write(client, "assert", {"int": 5})
    write(client, "assert", {"value": "chat", "lang": "fr"})
    found = raw(client, "SELECT v_ref IS NOT NULL FROM facts WHERE op = 1 ORDER BY id")
    assert [bool(r[0]) for r in found] == [False, True, False, False]
    assert compose(client) == [
        (S, P, "http://x.org/edge"),
        (S, P, "http://x.org/looks-like-an-iri"),
        (S, P, 5),
        (S, P, {"value": "chat", "lang": "fr"}),
    ]


def test_ow2_sources_and_ow4_the_parent_is_never_written(client: TestClient) -> None:
    knot(client, f'<{S}> <{P}> "v1" .')
    ok(client, "/overlay/create", overlay=OV)
    before = raw(client, "SELECT * FROM facts WHERE g = 0 ORDER BY id")
    t1 = write(client, "assert", "v2")
    t2 = write(client, "retract", "v2")
    t3 = write(client, "tombstone", "v1")
    sources = raw(
        client, "SELECT id, source, actor FROM transactions WHERE id IN (?, ?, ?) ORDER BY id", t1, t2, t3
    )
    assert sources == [(t1, "overlay", None), (t2, "overlay", None), (t3, "overlay-tombstone", None)]
    assert raw(client, "SELECT * FROM facts WHERE g = 0 ORDER BY id") == before


def test_ow3_a_second_tombstone_adds_no_row_but_a_transaction(client: TestClient) -> None:
    ok(client, "/overlay/create", overlay=OV)
    first = write(client, "tombstone", "v1")
    second = write(client, "tombstone", "v1")
    assert second > first
    assert raw(client, "SELECT COUNT(*) FROM facts WHERE op = 2") == [(1,)]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"op": "assert", "subject": S, "predicate": P, "object": "x"}, "overlay"),
        ({"overlay": OV, "subject": S, "predicate": P, "object": "x"}, "op"),
        ({"overlay": OV, "op": "delete", "subject": S, "predicate": P, "object": "x"}, "op"),
        ({"overlay": OV, "op": "assert", "predicate": P, "object": "x"}, "subject"),
        ({"overlay": OV, "op": "assert", "subject": S, "object": "x"}, "predicate"),
        ({"overlay": OV, "op": "assert", "subject": S, "predicate": P}, "object"),
        ({"overlay": OV, "op": "assert", "subject": S, "predicate": P, "object": {"weird": 1}}, "object"),
        ({"overlay": OV, "op": "assert", "subject": S, "predicate": P, "object": [1]}, "object"),
        ({"overlay": G1, "op": "assert", "subject": S, "predicate": P, "object": "x"}, "overlay"),
        ({"overlay": EX + "never", "op": "assert", "subject": S, "predicate": P, "object": "x"}, "overlay"),
    ],
)
def test_write_refusals_name_the_field(client: TestClient, body: dict[str, Any], field: str) -> None:
    ok(client, "/overlay/create", overlay=OV)
    ok(client, "/graph/create", graph=G1)
    before = store_snapshot(client)
    response = client.post("/overlay/write", json=body)
    assert response.status_code == 400 and response.json()["field"] == field, response.text
    assert store_snapshot(client) == before


def test_knot_into_an_overlay_is_refused(client: TestClient) -> None:
    ok(client, "/overlay/create", overlay=OV)
    refused(client, "/knot", "overlay_write", turtle=f"<{S}> <{P}> 1 .", graph=OV)


# -- compose ------------------------------------------------------------------------------------------
#
# The hand-worked table. The parent (ROOT) holds s p "v1" and s q "w1"; each case applies the
# overlay operations in order and lists what each mode composes.

V1, V2, W1 = (S, P, "v1"), (S, P, "v2"), (S, Q, "w1")
CASES: list[tuple[str, list[tuple[str, str, str]], list[tuple[str, str, Any]], list[tuple[str, str, Any]]]] = [
    ("empty overlay: the parent shows", [], [V1, W1], [V1, W1]),
    ("assert over assert on the same slot (CP-1, CP-2)", [("assert", P, "v2")], [V1, V2, W1], [V1, W1]),
    ("re-asserting the parent's triple appears once", [("assert", P, "v1")], [V1, W1], [V1, W1]),
    ("tombstone hides the parent's triple in nearest only", [("tombstone", P, "v1")], [W1], [V1, W1]),
    ("single-valued replace: tombstone old + assert new (CP-2)",
     [("tombstone", P, "v1"), ("assert", P, "v2")], [V2, W1], [V1, W1]),
    ("retract over assert: the overlay's own assert goes", [("assert", P, "v2"), ("retract", P, "v2")], [V1, W1], [V1, W1]),
    ("retracting a parent triple changes nothing", [("retract", P, "v1")], [V1, W1], [V1, W1]),
    ("an overlay assert on a slot the parent does not claim (CP-3)",
     [("assert", EX + "r", "x")], [V1, (S, EX + "r", "x"), W1], [V1, (S, EX + "r", "x"), W1]),
    ("tombstoning the overlay's own assert: nearest keeps it, governed drops it (CP-3)",
     [("assert", EX + "r", "x"), ("tombstone", EX + "r", "x")], [V1, (S, EX + "r", "x"), W1], [V1, W1]),
    ("a tombstone for a triple nobody asserts", [("tombstone", P, "v9")], [V1, W1], [V1, W1]),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_compose_matches_the_hand_worked_table(client: TestClient, case: Any) -> None:
    _, ops, nearest, governed = case
    knot(client, f'<{S}> <{P}> "v1" . <{S}> <{Q}> "w1" .')
    ok(client, "/overlay/create", overlay=OV)
    for op, predicate, obj in ops:
        write(client, op, obj, p=predicate)
    before = store_snapshot(client)
    assert compose(client) == sorted(nearest)
    assert compose(client, "nearest") == sorted(nearest)
    assert compose(client, "governed") == sorted(governed)
    assert store_snapshot(client) == before  # CP-4: compose never writes


def test_sibling_overlays_do_not_see_each_other(client: TestClient) -> None:
    knot(client, f'<{S}> <{P}> "v1" .')
    ok(client, "/overlay/create", overlay=OV)
    ok(client, "/overlay/create", overlay=EX + "other")
    write(client, "tombstone", "v1")
    write(client, "assert", "mine", overlay=EX + "other")
    assert compose(client) == []
    assert compose(client, overlay=EX + "other") == [(S, P, "mine"), V1]


def test_an_overlay_over_a_named_graph_composes_that_graph(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    knot(client, f'<{S}> <{P}> "in-g1" .', graph=G1)
    knot(client, f'<{S}> <{P}> "in-root" .')
    ok(client, "/overlay/create", overlay=OV, parent_branch=G1)
    assert compose(client) == [(S, P, "in-g1")]


def test_overlay_rows_stay_out_of_ordinary_reads(client: TestClient) -> None:
    knot(client, f'<{S}> <{P}> "v1" .')
    ok(client, "/overlay/create", overlay=OV)
    write(client, "assert", "v2", s=EX + "scratch")
    write(client, "tombstone", "v1")
    assert subjects(client) == [S]  # ROOT is untouched and sees no overlay row
    assert subjects(client, graph=OV) == [EX + "scratch"]  # asserts only; tombstones are not facts


@pytest.mark.parametrize(
    "body, field, phrase",
    [
        ({}, "overlay", "missing 'overlay'"),
        ({"overlay": EX + "never"}, "overlay", "is not interned"),
        ({"overlay": G1}, "overlay", "is not a registered overlay"),
        ({"overlay": OV, "precedence": "oldest"}, "precedence", "nearest or governed"),
    ],
)
def test_compose_refusals(client: TestClient, body: dict[str, Any], field: str, phrase: str) -> None:
    ok(client, "/overlay/create", overlay=OV)
    ok(client, "/graph/create", graph=G1)
    out = refused(client, "/overlay/compose", phrase, **body)
    assert out["field"] == field
