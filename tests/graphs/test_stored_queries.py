"""quipu_queries (tools-search §5.18): load validation, versioning and the write classification of
POST /queries, over a real store (SQLite, or PostgreSQL under QUIPU_TEST_DB)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import raw, serve

from .support import EX, T0, T1, T2, knot, ok, refused

TYPED = "SELECT ?s WHERE { ?s a <{type}> } LIMIT {limit}"
TYPE = {"name": "type", "type": "iri", "required": True, "description": "a class"}
LIMIT = {"name": "limit", "type": "int", "default": "5"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        knot(c, f"<{EX}a> a <{EX}T> .\n<{EX}b> a <{EX}T> .\n<{EX}c> a <{EX}U> .")
        yield c


def load(client: TestClient, name: str = "typed", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"action": "load", "name": name, "template": TYPED, "params": [TYPE, LIMIT]}
    return ok(client, "/queries", **{**body, **fields})


def versions(client: TestClient, name: str) -> list[tuple[Any, ...]]:
    return raw(
        client,
        "SELECT valid_from, valid_to, template FROM stored_queries WHERE name = ? ORDER BY valid_from",
        name,
    )


def registry(client: TestClient) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    queries = raw(client, "SELECT * FROM stored_queries ORDER BY name, valid_from")
    params = raw(client, "SELECT * FROM stored_query_params ORDER BY name, valid_from, ord")
    return queries, params


# -- responses ---------------------------------------------------------------------------------------


def test_load_list_get_and_remove_answer_the_spec_shapes(client: TestClient) -> None:
    assert ok(client, "/queries") == {"queries": []}  # list is the default action
    assert load(client, description="instances of a class", dataset=EX + "ds") == {
        "loaded": "typed",
        "params": 2,
    }
    entry = {
        "name": "typed",
        "description": "instances of a class",
        "params": [
            {"name": "type", "type": "iri", "required": True, "default": None, "description": "a class"},
            {"name": "limit", "type": "int", "required": False, "default": "5", "description": ""},
        ],
        "source": "stored",
        "dataset": EX + "ds",
    }
    assert ok(client, "/queries", action="list") == {"queries": [entry]}
    assert ok(client, "/queries", action="get", name="typed") == {"query": entry, "template": TYPED}
    assert ok(client, "/queries", action="remove", name="typed") == {"removed": True}
    assert ok(client, "/queries", action="remove", name="typed") == {"removed": False}


def test_list_is_sorted_by_name(client: TestClient) -> None:
    for name in ("zeta", "alpha", "mid"):
        load(client, name)
    assert [q["name"] for q in ok(client, "/queries")["queries"]] == ["alpha", "mid", "zeta"]


def test_kind_is_accepted_as_the_spelling_of_type_and_text_is_the_default(client: TestClient) -> None:
    template = "SELECT ?s WHERE { ?s <{p}> '{v}' }"
    params = [{"name": "p", "kind": "iri", "required": True}, {"name": "v", "required": True}]
    load(client, "kinds", template=template, params=params)
    kinds = [p["type"] for p in ok(client, "/queries", action="get", name="kinds")["query"]["params"]]
    assert kinds == ["iri", "text"]


def test_unknown_action_is_refused_naming_the_actions(client: TestClient) -> None:
    refused(client, "/queries", "unknown queries action 'drop' (load|list|get|remove)", action="drop")


def test_unknown_keys_come_back_as_ignored_fields(client: TestClient) -> None:
    out = ok(client, "/queries", action="list", zeta=1, alpha=2)
    assert out == {"queries": [], "ignored_fields": ["alpha", "zeta"]}


# -- load validation: all 400, nothing written --------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "phrase"),
    [
        ({"name": None}, "missing 'name'"),
        ({"template": None}, "missing 'template'"),
        ({"template": "   "}, "missing 'template'"),
        ({"params": ["limit"]}, "each param must be an object"),
        ({"params": [TYPE, {"type": "int", "default": "5"}]}, "param needs 'name'"),
        ({"params": [TYPE, {**LIMIT, "type": "float"}]}, "unknown type 'float'"),
        ({"params": [TYPE, LIMIT, LIMIT]}, "param 'limit' is declared twice"),
        ({"params": [TYPE, {**LIMIT, "type": "int", "kind": "text"}]}, "'type' and 'kind' disagree"),
        ({"params": [TYPE, {**LIMIT, "required": "yes"}]}, "'required' must be true or false"),
        ({"params": [TYPE, {**LIMIT, "default": "many"}]}, "param 'limit': 'many' is not an integer"),
        ({"params": [TYPE]}, "template placeholder {limit} has no param spec"),
        (
            {"params": [TYPE, LIMIT, {"name": "unused", "default": "x"}]},
            "param 'unused' never appears in the template as {unused}",
        ),
        ({"template": "SELECT ?s WHERE { ?s a <{type}> LIMIT {limit}"}, "does not parse as a SPARQL query"),
        ({"template": "INSERT DATA { <{type}> <x:p> {limit} }"}, "does not parse as a SPARQL query"),
        ({"template": "ASK { ?s a <{type}> } LIMIT {limit}"}, "must be a SELECT query"),
        (
            {"template": "SELECT ?s WHERE { ?s a '{type}' } LIMIT {limit}"},
            "param 'type' (iri) must be written inside angle brackets",
        ),
        (
            {"template": "SELECT ?s WHERE { ?s a <{type}> } # {limit}"},
            "placeholder {limit} never reaches the query",
        ),
        ({"dataset": "not an iri"}, "'dataset' is not an absolute IRI"),
        ({"timestamp": "yesterday"}, "timestamp"),
    ],
)
def test_a_refused_load_is_a_400_naming_the_problem_and_writes_nothing(
    client: TestClient, fields: dict[str, Any], phrase: str
) -> None:
    before = registry(client)
    body: dict[str, Any] = {"action": "load", "name": "typed", "template": TYPED, "params": [TYPE, LIMIT]}
    body.update(fields)
    refused(client, "/queries", phrase, **{k: v for k, v in body.items() if v is not None})
    assert registry(client) == before


def test_a_text_param_may_not_stand_outside_a_string(client: TestClient) -> None:
    template = "PREFIX ex: <http://ex.org/> SELECT ?s WHERE { ?s a ex:{cls} }"
    params = [{"name": "cls", "required": True}]
    refused(client, "/queries", "param 'cls' (text) must be written inside a quoted string",
            action="load", name="bare", template=template, params=params)  # fmt: skip


def test_a_template_holding_probe_text_is_refused(client: TestClient) -> None:
    template = "SELECT ?s WHERE { ?s a <{type}> FILTER(?s != <urn:x-quipu-probe:iri-000->) }"
    refused(client, "/queries", "reserved for parameter probes",
            action="load", name="probe", template=template, params=[TYPE])  # fmt: skip


def test_rule3_an_optional_param_without_a_default_is_refused_at_load(client: TestClient) -> None:
    refused(
        client,
        "/queries",
        "param 'limit' is optional but has no default",
        action="load",
        name="typed",
        template=TYPED,
        params=[TYPE, {"name": "limit", "type": "int"}],
    )
    assert registry(client) == ([], [])


def test_a_non_string_default_is_treated_as_absent(client: TestClient) -> None:
    refused(
        client,
        "/queries",
        "param 'limit' is optional but has no default",
        action="load",
        name="typed",
        template=TYPED,
        params=[TYPE, {"name": "limit", "type": "int", "default": 5}],
    )
    load(client, params=[TYPE, {"name": "limit", "type": "int", "required": True, "default": 5}])
    spec = ok(client, "/queries", action="get", name="typed")["query"]["params"][1]
    assert spec["default"] is None and spec["required"] is True


def test_rule5_an_unused_param_or_an_undeclared_placeholder_is_refused(client: TestClient) -> None:
    refused(client, "/queries", "never appears in the template",
            action="load", name="x", template="SELECT * WHERE { ?s ?p ?o }", params=[TYPE])  # fmt: skip
    refused(client, "/queries", "template placeholder {type} has no param spec",
            action="load", name="x", template="SELECT * WHERE { ?s a <{type}> }")  # fmt: skip
    assert registry(client) == ([], [])


def test_sparql_group_braces_are_not_placeholders(client: TestClient) -> None:
    template = "SELECT ?s WHERE { { ?s a <{type}> } UNION {?s a <{type}>} }"
    assert load(client, "groups", template=template, params=[TYPE]) == {"loaded": "groups", "params": 1}


# -- versioning -----------------------------------------------------------------------------------------


def test_rule1_loading_twice_at_different_instants_keeps_one_current_and_one_closed_version(
    client: TestClient,
) -> None:
    load(client, timestamp=T0)
    newer = "SELECT ?s WHERE { ?s a <{type}> } ORDER BY DESC(?s) LIMIT {limit}"
    load(client, template=newer, timestamp=T1)
    assert versions(client, "typed") == [(T0, T1, TYPED), (T1, None, newer)]
    assert ok(client, "/queries", action="get", name="typed")["template"] == newer
    out = ok(client, "/ask", name="typed", params={"type": EX + "T"})
    assert out["sparql"] == f"SELECT ?s WHERE {{ ?s a <{EX}T> }} ORDER BY DESC(?s) LIMIT 5"
    assert [r["s"] for r in out["rows"]] == [EX + "b", EX + "a"]


def test_rule2_loading_twice_at_the_same_instant_leaves_exactly_one_version(client: TestClient) -> None:
    load(client, timestamp=T1, params=[TYPE, LIMIT])
    load(client, timestamp=T1, params=[TYPE, {**LIMIT, "default": "1"}], description="again")
    assert versions(client, "typed") == [(T1, None, TYPED)]
    params = raw(client, "SELECT param, default_value FROM stored_query_params ORDER BY ord")
    assert params == [("type", None), ("limit", "1")]
    assert ok(client, "/queries", action="get", name="typed")["query"]["description"] == "again"


def test_a_load_older_than_the_current_version_is_refused(client: TestClient) -> None:
    load(client, timestamp=T1)
    before = registry(client)
    refused(client, "/queries", "is before the current version", action="load", name="typed",
            template=TYPED, params=[TYPE, LIMIT], timestamp=T0)  # fmt: skip
    assert registry(client) == before


def test_rule4_remove_then_get_is_400_and_the_closed_rows_remain(client: TestClient) -> None:
    load(client, timestamp=T0)
    assert ok(client, "/queries", action="remove", name="typed", timestamp=T1) == {"removed": True}
    refused(client, "/queries", "no such stored query: typed", action="get", name="typed")
    assert versions(client, "typed") == [(T0, T1, TYPED)]
    assert len(raw(client, "SELECT * FROM stored_query_params")) == 2
    assert ok(client, "/queries") == {"queries": []}
    refused(client, "/ask", "unknown named query 'typed'", name="typed", params={"type": EX + "T"})
    load(client, timestamp=T2)  # a later load opens a new version beside the history
    assert versions(client, "typed") == [(T0, T1, TYPED), (T2, None, TYPED)]


def test_a_version_records_the_latest_transaction_as_its_watermark(client: TestClient) -> None:
    load(client)
    head = raw(client, "SELECT MAX(id) FROM transactions")[0][0]
    assert raw(client, "SELECT tx FROM stored_queries") == [(head,)]


def test_loading_opens_no_transaction(client: TestClient) -> None:
    before = raw(client, "SELECT COUNT(*) FROM transactions")
    load(client)
    ok(client, "/queries", action="remove", name="typed")
    assert raw(client, "SELECT COUNT(*) FROM transactions") == before


# -- the write classification -------------------------------------------------------------------------


def test_rule6_a_read_only_server_refuses_every_action_even_list(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as client:
        for body in ({"action": "list"}, {}, {"action": "get", "name": "x"}):
            response = client.post("/queries", json=body)
            assert response.status_code == 403, response.text
            assert response.json()["reason"] == "server_is_read_only"
        assert ok(client, "/ask")["queries"]  # the catalog stays readable without a token


def test_list_needs_the_bearer_token_when_one_is_configured(tmp_path: Path) -> None:
    token = "stored-queries-token-0123456789"
    with serve(tmp_path, server={"auth_token": token}) as client:
        response = client.post("/queries", json={"action": "list"})
        assert response.status_code == 401, response.text
        granted = client.post(
            "/queries", json={"action": "list"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert granted.status_code == 200, granted.text
