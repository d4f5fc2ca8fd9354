"""quipu_cooccurrence (tools-search §5.16): the provenance chain under both vocabularies, distinct
shared entities, the order, the bitemporal bounds, errors and the query budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.config import load_settings
from quipu.rest.app import create_app
from tests.backends import store_location
from tests.rest.support import raw, serve

from .question_support import chain, commit, edge, reads_nothing
from .support import EX, T0, T1, T2, ok, refused

W1 = EX + "w1"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def cooccurring(client: TestClient, work_item: str = W1, **fields: Any) -> list[tuple[str, int]]:
    out = ok(client, "/cooccurrence", work_item=work_item, **fields)
    assert out["work_item"] == work_item and out["count"] == len(out["cooccurring"])
    return [(row["work_item"].removeprefix(EX), row["shared_entities"]) for row in out["cooccurring"]]


def test_the_response_has_the_spec_shape(client: TestClient) -> None:
    chain(client, *commit("c1", "w1", "e1"), *commit("c2", "w2", "e1"))
    assert ok(client, "/cooccurrence", work_item=W1) == {
        "work_item": W1,
        "count": 1,
        "cooccurring": [{"work_item": EX + "w2", "shared_entities": 1}],
    }


def test_rule1_the_input_work_item_never_appears_in_its_own_result(client: TestClient) -> None:
    # Two commits of w1 touch the same entity: w1 co-occurs with itself in the raw chain.
    chain(client, *commit("c1", "w1", "e1"), *commit("c1b", "w1", "e1"), *commit("c2", "w2", "e1"))
    assert cooccurring(client) == [("w2", 1)]


def test_rule2_an_edge_under_both_vocabularies_does_not_double_the_count(client: TestClient) -> None:
    chain(
        client,
        *commit("c1", "w1", "e1", "e2"),
        edge("c1", "modifies", "e1", "quechua"),
        edge("c1", "implements", "w1", "quechua"),
        *commit("c2", "w2", "e1", "e2", modifies="quechua"),
        edge("c2", "modifies", "e1", "legacy"),
        edge("c2", "implements", "w2", "quechua"),
    )
    assert cooccurring(client) == [("w2", 2)]


def test_each_edge_may_use_either_vocabulary_independently(client: TestClient) -> None:
    for n, (impl, mod, other_mod, other_impl) in enumerate(
        [
            ("legacy", "quechua", "legacy", "quechua"),
            ("quechua", "legacy", "quechua", "legacy"),
            ("quechua", "quechua", "quechua", "quechua"),
        ]
    ):
        chain(client, *commit(f"a{n}", f"x{n}", f"e{n}", implements=impl, modifies=mod))
        chain(client, *commit(f"b{n}", f"y{n}", f"e{n}", implements=other_impl, modifies=other_mod))
        assert cooccurring(client, EX + f"x{n}") == [(f"y{n}", 1)]


def test_shared_entities_counts_distinct_entities_over_many_commits(client: TestClient) -> None:
    chain(
        client,
        *commit("c1", "w1", "e1", "e2"),
        *commit("c1b", "w1", "e2", "e3"),
        *commit("c2", "w2", "e1"),
        *commit("c2b", "w2", "e1", "e2"),
        *commit("c2c", "w2", "e3"),
    )
    assert cooccurring(client) == [("w2", 3)]


def test_order_is_shared_entities_descending_then_iri_ascending(client: TestClient) -> None:
    chain(
        client,
        *commit("c1", "w1", "e1", "e2", "e3"),
        *commit("cb", "wb", "e1"),
        *commit("ca", "wa", "e2"),
        *commit("cz", "wz", "e1", "e2", "e3"),
        *commit("cm", "wm", "e1", "e3"),
    )
    assert cooccurring(client) == [("wz", 3), ("wm", 2), ("wa", 1), ("wb", 1)]


def test_rule3_valid_at_before_a_modifies_fact_was_asserted_leaves_that_overlap_out(
    client: TestClient,
) -> None:
    chain(client, *commit("c1", "w1", "e1", "e2"), *commit("c2", "w2", "e1"), valid_from=T0)
    chain(client, edge("c2", "modifies", "e2"), valid_from=T2)
    assert cooccurring(client) == [("w2", 2)]
    assert cooccurring(client, valid_at=T1) == [("w2", 1)]
    assert cooccurring(client, valid_at="2025-12-31T00:00:00Z") == []


def test_tx_bounds_the_chain_to_the_transactions_up_to_it(client: TestClient) -> None:
    chain(client, *commit("c1", "w1", "e1"), *commit("c2", "w2", "e1"))
    first = raw(client, "SELECT MAX(id) FROM transactions")[0][0]
    chain(client, *commit("c3", "w3", "e1"))
    assert cooccurring(client) == [("w2", 1), ("w3", 1)]
    assert cooccurring(client, tx=first) == [("w2", 1)]
    assert cooccurring(client, tx=0) == []


def test_rule4_no_chain_data_answers_count_zero(client: TestClient) -> None:
    assert ok(client, "/cooccurrence", work_item=W1) == {"work_item": W1, "count": 0, "cooccurring": []}
    chain(client, f'<{W1}> <{EX}title> "a work item with no commits" .')
    assert cooccurring(client) == []


def test_a_third_namespace_never_counts(client: TestClient) -> None:
    other = "http://other.example/ns#"
    chain(
        client,
        *commit("c1", "w1", "e1"),
        f"<{EX}c2> <{other}implements> <{EX}w2> .",
        f"<{EX}c2> <{other}modifies> <{EX}e1> .",
    )
    assert cooccurring(client) == []


def test_a_missing_work_item_is_refused(client: TestClient) -> None:
    body = refused(client, "/cooccurrence", "missing 'work_item' parameter")
    assert body["field"] == "work_item"


@pytest.mark.parametrize(
    "bad", [f"{EX}a b", f"<{EX}a>", f'{EX}a"', f"{EX}{{x}}", f"{EX}a\\b", f"{EX}a\nb", ""]
)
def test_a_work_item_that_is_not_a_bare_iri_is_refused(client: TestClient, bad: str) -> None:
    body = refused(client, "/cooccurrence", "'work_item' must be a bare IRI", work_item=bad)
    assert body["field"] == "work_item"


def test_bad_bounds_are_refused_naming_the_field(client: TestClient) -> None:
    assert refused(client, "/cooccurrence", "valid_at", work_item=W1, valid_at="soon")["field"] == "valid_at"
    assert refused(client, "/cooccurrence", "tx", work_item=W1, tx=-1)["field"] == "tx"


def test_unknown_keys_come_back_as_ignored_fields(client: TestClient) -> None:
    out = ok(client, "/cooccurrence", work_item=W1, limit=3)
    assert out["ignored_fields"] == ["limit"]


def test_it_writes_nothing_and_answers_on_a_read_only_server(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        chain(client, *commit("c1", "w1", "e1"), *commit("c2", "w2", "e1"))
        before = reads_nothing(client)
        cooccurring(client)
        assert reads_nothing(client) == before
    settings = load_settings(store={"db": store_location(tmp_path, "r.db")}, server={"read_only": True})
    with TestClient(create_app(settings)) as client:  # the same store, served read-only
        assert cooccurring(client) == [("w2", 1)]


def _crowd(client: TestClient) -> None:
    """Forty commits of w1 and forty of w2 over the same forty entities."""
    lines = [line for c in range(40) for line in commit(f"k{c}", "w1", *(f"f{e}" for e in range(40)))]
    lines += [line for c in range(40) for line in commit(f"m{c}", "w2", *(f"f{e}" for e in range(40)))]
    chain(client, *lines)


def test_past_the_join_bound_it_is_422(tmp_path: Path) -> None:
    # 150 other work items share e1: more grouped rows than max_join_rows, on every backend.
    with serve(tmp_path, search={"max_join_rows": 100}) as client:
        chain(
            client,
            *commit("c1", "w1", "e1"),
            *(line for n in range(150) for line in commit(f"o{n}", f"v{n}", "e1")),
        )
        response = client.post("/cooccurrence", json={"work_item": W1})
        assert response.status_code == 422, response.text


def test_past_the_deadline_it_is_408(tmp_path: Path) -> None:
    with serve(tmp_path, search={"query_timeout_ms": 1}) as client:
        _crowd(client)
        response = client.post("/cooccurrence", json={"work_item": W1})
        assert response.status_code == 408, response.text
        assert response.json()["reason"] == "query_timeout"
