"""POST /update: SPARQL 1.1 Update over the SPARQL Protocol (tools-core §3.10).

The SHACL gate (rule 8) is tested in test_update_gate.py and the events of rule 12 in
tests/store/test_events.py. Not here: the workflow guard (rule 9), which arrives with a later issue.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from quipu.rest.middleware import MAX_BODY
from quipu.sparql.update import MAX_NESTING, MAX_OPERATIONS

from .support import (
    BOT_SERVER,
    BOT_TOKEN,
    all_claims,
    kb_of,
    objects,
    raw,
    refused_write,
    serve,
    state,
    transaction,
)

EX = "http://example.org/"
SPARQL_UPDATE = {"Content-Type": "application/sparql-update"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def update(
    client: TestClient, text: str, *, status: int = 200, params: dict[str, str] | None = None, **query: str
) -> dict[str, Any]:
    """The update as an application/sparql-update body; ``params`` and ``query`` go in the query string."""
    query_string = {**(params or {}), **query}
    response = client.post(
        "/update", content=text.encode("utf-8"), headers=SPARQL_UPDATE, params=query_string
    )
    assert response.status_code == status, response.text
    out: dict[str, Any] = response.json()
    return out


def form(
    client: TestClient, fields: list[tuple[str, str]], *, status: int = 200, **params: Any
) -> dict[str, Any]:
    response = client.post("/update", content=urlencode(fields).encode(), headers=FORM, params=params)
    assert response.status_code == status, response.text
    out: dict[str, Any] = response.json()
    return out


def refused(client: TestClient, status: int = 400, **request: Any) -> dict[str, Any]:
    """A refused /update (``client.post`` arguments) that leaves the store unchanged."""
    return refused_write(client, "/update", status=status, **request)


def bad_update(client: TestClient, text: str, **params: Any) -> dict[str, Any]:
    return refused(client, content=text.encode(), headers=SPARQL_UPDATE, params=params)


INSERT_A = f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}"


def test_update_answers_the_documented_shape(client: TestClient) -> None:
    out = update(client, INSERT_A)
    assert out == {
        "tx": out["tx"],
        "asserted": 1,
        "retracted": 0,
        "graphs": [{"graph": None, "tx": out["tx"], "asserted": 1, "retracted": 0}],
    }
    assert out["tx"] > 0
    assert objects(client, EX + "a", EX + "p") == ["1"]


# -- protocol ------------------------------------------------------------------------------------


def test_a_form_body_with_one_update_field(client: TestClient) -> None:
    out = form(client, [("update", INSERT_A)])
    assert out["asserted"] == 1


def test_the_content_type_may_carry_a_utf8_charset(client: TestClient) -> None:
    response = client.post(
        "/update",
        content=INSERT_A.encode(),
        headers={"Content-Type": "Application/SPARQL-Update; charset=UTF-8"},
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "text/plain",
        "application/sparql-query",
        "application/sparql-update; charset=latin-1",
        None,
    ],
)
def test_another_content_type_is_415(client: TestClient, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    problem = refused(client, 415, content=INSERT_A.encode(), headers=headers)
    assert problem["reason"] == "unsupported_media_type"


def test_a_json_body_is_415(client: TestClient) -> None:
    assert refused(client, 415, json={"update": INSERT_A})["reason"] == "unsupported_media_type"


def test_a_form_without_an_update_field_is_400(client: TestClient) -> None:
    problem = refused(client, content=urlencode({"actor": "ann"}).encode(), headers=FORM)
    assert (problem["reason"], problem["field"]) == ("missing_field", "update")


def test_a_form_with_two_update_fields_is_400(client: TestClient) -> None:
    body = urlencode([("update", INSERT_A), ("update", INSERT_A)]).encode()
    problem = refused(client, content=body, headers=FORM)
    assert problem["field"] == "update"
    assert "exactly one" in problem["error"]


def test_an_empty_update_is_400(client: TestClient) -> None:
    assert bad_update(client, "   ")["reason"] == "missing_field"


def test_an_unknown_form_field_is_400(client: TestClient) -> None:
    body = urlencode([("update", INSERT_A), ("timestamp", "2026-01-01T00:00:00Z")]).encode()
    problem = refused(client, content=body, headers=FORM)
    assert (problem["reason"], problem["field"]) == ("unknown_field", "timestamp")


@pytest.mark.parametrize("name", ["timestamp", "update", "graph"])
def test_an_unknown_query_parameter_is_400(client: TestClient, name: str) -> None:
    problem = bad_update(client, INSERT_A, **{name: "x"})
    assert (problem["reason"], problem["field"]) == ("unknown_field", name)


@pytest.mark.parametrize("name", ["default-graph-uri", "named-graph-uri"])
def test_query_dataset_parameters_are_400(client: TestClient, name: str) -> None:
    problem = bad_update(client, INSERT_A, **{name: EX + "g"})
    assert problem["field"] == name
    assert "using-graph-uri" in problem["error"]


@pytest.mark.parametrize("name", ["actor", "source"])
def test_a_declaration_given_twice_is_400(client: TestClient, name: str) -> None:
    twice = refused(
        client, content=INSERT_A.encode(), headers=SPARQL_UPDATE, params=[(name, "x"), (name, "y")]
    )
    assert twice["field"] == name
    both = refused(
        client,
        content=urlencode([("update", INSERT_A), (name, "x")]).encode(),
        headers=FORM,
        params={name: "x"},
    )
    assert both["field"] == name
    assert "2 times" in both["error"]


@pytest.mark.parametrize("value", ["", "x" * 257, "bad\x07bell"])
@pytest.mark.parametrize("name", ["actor", "source"])
def test_an_empty_overlong_or_control_declaration_is_400(client: TestClient, name: str, value: str) -> None:
    problem = refused(client, content=urlencode([("update", INSERT_A), (name, value)]).encode(), headers=FORM)
    assert problem["field"] == name


def test_a_sparql_syntax_error_is_400_and_writes_nothing(client: TestClient) -> None:
    update(client, INSERT_A)
    problem = bad_update(client, f"INSERT DATA {{ <{EX}b> <{EX}p> 2 }} ; DELETE WHERE {{ ?s ?p }}")
    assert problem["reason"] == "sparql_update_error"
    assert "SPARQL update error" in problem["error"]


def test_a_failing_later_operation_writes_nothing_of_the_earlier_ones(client: TestClient) -> None:
    update(client, INSERT_A)
    text = (
        f"INSERT DATA {{ <{EX}b> <{EX}p> 2 }} ; "
        f'INSERT DATA {{ <{EX}c> <{EX}p> "ten"^^<http://www.w3.org/2001/XMLSchema#integer> }}'
    )
    assert bad_update(client, text)["reason"] == "bad_literal"


def test_structural_precheck_refuses_deep_nesting(client: TestClient) -> None:
    depth = MAX_NESTING + 1
    where = "{ " * depth + "?s ?p ?o " + "} " * depth
    problem = bad_update(client, f"DELETE {{ ?s ?p ?o }} WHERE {where}")
    assert "nesting too deep" in problem["error"]


def test_structural_precheck_refuses_too_many_operations(client: TestClient) -> None:
    problem = bad_update(client, " ; ".join([INSERT_A] * (MAX_OPERATIONS + 1)))
    assert "too long" in problem["error"]


def test_brackets_and_semicolons_in_strings_iris_and_comments_do_not_count(client: TestClient) -> None:
    noise = "{" * 40 + ";" * 70
    text = f'# {noise}\nINSERT DATA {{ <{EX}a> <{EX}p> "{noise}" ; <{EX}q> """{noise}""" }}'
    assert update(client, text)["asserted"] == 2


def test_a_parser_recursion_limit_is_a_400_not_a_500(client: TestClient) -> None:
    unions = " UNION ".join(["{ ?s ?p ?o }"] * 1500)
    problem = bad_update(client, f"DELETE {{ ?s ?p ?o }} WHERE {{ {unions} }}")
    assert problem["reason"] == "sparql_update_error"


# -- using-graph-uri / using-named-graph-uri --------------------------------------------------


@pytest.fixture
def graphs(client: TestClient) -> TestClient:
    kb = kb_of(client)
    kb.create_graph(EX + "g")
    kb.knot(f"<{EX}a> <{EX}p> 1 .")
    kb.knot(f"<{EX}a> <{EX}q> 2 .", graph=EX + "g")
    return client


COPY = f"INSERT {{ ?s <{EX}copied> ?o }} WHERE {{ ?s ?p ?o }}"
COPY_NAMED = f"INSERT {{ ?s <{EX}copied> ?o }} WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"


def test_without_parameters_the_where_reads_root(graphs: TestClient) -> None:
    update(graphs, COPY)
    assert objects(graphs, EX + "a", EX + "copied") == ["1"]


def test_using_graph_uri_scopes_the_where(graphs: TestClient) -> None:
    out = update(graphs, COPY, params={"using-graph-uri": EX + "g"})
    assert objects(graphs, EX + "a", EX + "copied") == ["2"]  # read from g, written to ROOT
    assert [g["graph"] for g in out["graphs"]] == [None]


def test_using_graph_uri_activates_no_named_graph(graphs: TestClient) -> None:
    out = update(graphs, COPY_NAMED, params={"using-graph-uri": EX + "g"})
    assert out["tx"] is None


def test_using_named_graph_uri_scopes_graph_patterns(graphs: TestClient) -> None:
    update(graphs, COPY_NAMED, params={"using-named-graph-uri": EX + "g"})
    assert objects(graphs, EX + "a", EX + "copied") == ["2"]
    # Alone, it leaves the default graph of the WHERE empty.
    assert (
        update(graphs, COPY.replace("copied", "again"), params={"using-named-graph-uri": EX + "g"})["tx"]
        is None
    )


def test_using_graph_uri_may_also_come_in_the_form(graphs: TestClient) -> None:
    form(graphs, [("update", COPY), ("using-graph-uri", EX + "g")])
    assert objects(graphs, EX + "a", EX + "copied") == ["2"]


@pytest.mark.parametrize(
    "text",
    [
        f"INSERT {{ ?s <{EX}copied> ?o }} USING <{EX}g> WHERE {{ ?s ?p ?o }}",
        f"INSERT {{ ?s <{EX}copied> ?o }} USING NAMED <{EX}g> WHERE {{ ?s ?p ?o }}",
        f"WITH <{EX}g> INSERT {{ ?s <{EX}copied> ?o }} WHERE {{ ?s ?p ?o }}",
    ],
)
def test_using_graph_uri_with_using_or_with_in_the_text_is_400(graphs: TestClient, text: str) -> None:
    problem = bad_update(graphs, text, **{"using-graph-uri": EX + "g"})
    assert problem["field"] == "using-graph-uri"


def test_using_graph_uri_without_a_where_is_400(graphs: TestClient) -> None:
    problem = bad_update(graphs, INSERT_A, **{"using-named-graph-uri": EX + "g"})
    assert problem["field"] == "using-named-graph-uri"
    assert "DELETE/INSERT" in problem["error"]


def test_using_graph_uri_must_be_an_iri(graphs: TestClient) -> None:
    assert bad_update(graphs, COPY, **{"using-graph-uri": "not an iri"})["field"] == "using-graph-uri"


# -- rules ---------------------------------------------------------------------------------------


def test_rule1_unscoped_data_goes_to_root_and_graph_reaches_a_named_graph(client: TestClient) -> None:
    kb_of(client).create_graph(EX + "g")
    out = update(client, f"INSERT DATA {{ <{EX}a> <{EX}p> 1 . GRAPH <{EX}g> {{ <{EX}a> <{EX}p> 2 }} }}")
    assert [g["graph"] for g in out["graphs"]] == [None, EX + "g"]
    assert objects(client, EX + "a", EX + "p") == ["1"]
    assert objects(client, EX + "a", EX + "p", graph=EX + "g") == ["2"]


def test_rule2_the_store_writes_the_difference(client: TestClient) -> None:
    update(client, INSERT_A)
    before = state(client)
    out = update(client, f"DELETE DATA {{ <{EX}a> <{EX}p> 1 }} ; {INSERT_A}")
    assert (out["tx"], out["asserted"], out["retracted"]) == (None, 0, 0)
    assert state(client) == before


def test_rule2_each_where_sees_the_earlier_operations(client: TestClient) -> None:
    out = update(client, f"{INSERT_A} ; INSERT {{ ?s <{EX}seen> ?o }} WHERE {{ ?s <{EX}p> ?o }}")
    assert out["asserted"] == 2
    assert objects(client, EX + "a", EX + "seen") == ["1"]


def test_rule3_deletes_are_unscoped_and_stamped_now_inserts_valid_from_now(client: TestClient) -> None:
    kb_of(client).knot(f"<{EX}a> <{EX}p> 1 .", source="A", timestamp="2026-01-01T00:00:00Z")
    kb_of(client).knot(f"<{EX}a> <{EX}p> 1 .", source="B", timestamp="2026-01-01T00:00:00Z")
    out = update(client, f"DELETE {{ ?s <{EX}p> ?o }} INSERT {{ ?s <{EX}q> ?o }} WHERE {{ ?s <{EX}p> ?o }}")
    stamp = transaction(client, out["tx"])["timestamp"]
    assert INSTANT.fullmatch(stamp)
    assert [(r[1], r[3]) for r in all_claims(client, EX + "a", EX + "p")] == [(stamp, out["tx"])] * 2
    assert all_claims(client, EX + "a", EX + "q") == [(stamp, None, out["tx"], None, "sparql-update")]


def test_rule4_inserting_a_visible_statement_is_no_change(client: TestClient) -> None:
    kb_of(client).knot(f"<{EX}a> <{EX}p> 1 .", source="A")
    before = state(client)
    out = update(client, INSERT_A, source="other")
    assert (out["tx"], out["asserted"]) == (None, 0)
    assert state(client) == before  # not even an ownership claim


def test_rule5_one_transaction_per_graph_root_first_then_graph_id(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(EX + "g1")
    kb.create_graph(EX + "g2")
    out = update(
        client,
        f"INSERT DATA {{ GRAPH <{EX}g2> {{ <{EX}a> <{EX}p> 2 }} GRAPH <{EX}g1> {{ <{EX}a> <{EX}p> 1 }} <{EX}a> <{EX}p> 0 }}",
    )
    assert [g["graph"] for g in out["graphs"]] == [None, EX + "g1", EX + "g2"]
    txs = [g["tx"] for g in out["graphs"]]
    assert txs == sorted(txs) and len(set(txs)) == 3
    assert out["tx"] == txs[-1]
    gids = [raw(client, "SELECT graph FROM transactions WHERE id = ?", tx)[0][0] for tx in txs]
    assert gids[0] == 0 and gids[1] < gids[2]


def test_rule6_nothing_matched_writes_no_transaction(client: TestClient) -> None:
    update(client, INSERT_A)
    before = state(client)
    out = update(client, f"DELETE {{ ?s ?p ?o }} WHERE {{ ?s <{EX}nothing> ?o }}")
    assert out == {"tx": None, "asserted": 0, "retracted": 0, "graphs": []}
    assert state(client) == before


def test_rule6_counts_are_changed_statements(client: TestClient) -> None:
    update(client, f"INSERT DATA {{ <{EX}a> <{EX}p> 1, 2, 3 }}")
    out = update(client, f"DELETE WHERE {{ <{EX}a> <{EX}p> ?o }}")
    assert (out["asserted"], out["retracted"]) == (0, 3)


def test_rule7_a_named_graph_receiving_inserts_is_registered(client: TestClient) -> None:
    out = update(client, f"INSERT DATA {{ GRAPH <{EX}fresh> {{ <{EX}a> <{EX}p> 1 }} }}")
    assert out["graphs"][0]["graph"] == EX + "fresh"
    # Registered: /knot may now write there.
    kb_of(client).knot(f"<{EX}b> <{EX}p> 2 .", graph=EX + "fresh")
    assert objects(client, EX + "b", EX + "p", graph=EX + "fresh") == ["2"]


def test_rule10_actor_and_source_are_recorded_and_undeclared_actor_is_null(client: TestClient) -> None:
    plain = update(client, INSERT_A)
    declared = update(client, f"INSERT DATA {{ <{EX}b> <{EX}p> 1 }}", actor="ann", source="feed")
    assert (transaction(client, plain["tx"])["actor"], transaction(client, plain["tx"])["source"]) == (
        None,
        "sparql-update",
    )
    assert (transaction(client, declared["tx"])["actor"], transaction(client, declared["tx"])["source"]) == (
        "ann",
        "feed",
    )


def test_rule10_the_mcp_form_encoding_is_taken_exactly_as_given(client: TestClient) -> None:
    """The MCP adapter form-encodes update, actor and source exactly as the tool got them."""
    actor, source = "Ann & Bob = 100% +sure ✓", "feed:a/b?c=d&e"
    text = f'INSERT DATA {{ <{EX}a> <{EX}label> "a & b = c + d ✓" }}'
    out = form(client, [("update", text), ("actor", actor), ("source", source)])
    tx = transaction(client, out["tx"])
    assert (tx["actor"], tx["source"]) == (actor, source)
    assert objects(client, EX + "a", EX + "label") == ["a & b = c + d ✓"]


def test_rule11_blank_nodes_are_skolemised_per_update_text_and_graph(client: TestClient) -> None:
    kb_of(client).create_graph(EX + "g")
    text = f'INSERT DATA {{ <{EX}a> <{EX}has> [ <{EX}name> "n" ] . GRAPH <{EX}g> {{ <{EX}a> <{EX}has> [ <{EX}name> "n" ] }} }}'
    first = update(client, text)
    assert first["asserted"] == 4
    assert update(client, text)["tx"] is None  # the same text makes the same nodes
    root, named = objects(client, EX + "a", EX + "has"), objects(client, EX + "a", EX + "has", graph=EX + "g")
    assert len(root) == len(named) == 1 and root != named
    update(client, text + " # another text")
    assert len(objects(client, EX + "a", EX + "has")) == 2


# -- identity and failed writes ----------------------------------------------------------------


def test_the_named_principal_is_recorded_on_every_graphs_transaction(tmp_path: Path) -> None:
    with serve(tmp_path, server=BOT_SERVER) as c:
        kb_of(c).create_graph(EX + "g")
        text = f"INSERT DATA {{ <{EX}a> <{EX}p> 1 . GRAPH <{EX}g> {{ <{EX}a> <{EX}p> 2 }} }}"
        assert c.post("/update", content=text.encode(), headers=SPARQL_UPDATE).status_code == 401
        response = c.post(
            "/update",
            content=text.encode(),
            headers={**SPARQL_UPDATE, "Authorization": f"Bearer {BOT_TOKEN}"},
        )
        assert response.status_code == 200, response.text
        expected = {"principal": "bot", "credential_id": "bot", "auth_class": "named_bearer"}
        for change in response.json()["graphs"]:
            tx = transaction(c, change["tx"])
            assert tx["authenticated"] == expected
            assert tx["actor"] is None  # the identity never fills the declared actor


def test_an_oversize_update_is_413_and_leaves_the_store_unchanged(client: TestClient) -> None:
    update(client, INSERT_A)
    body = f"INSERT DATA {{ <{EX}b> <{EX}p> 1 }} #".encode() + b" " * MAX_BODY
    problem = refused(client, 413, content=body, headers=SPARQL_UPDATE)
    assert problem["reason"] == "payload_too_large"


def test_a_body_that_is_not_utf8_is_400(client: TestClient) -> None:
    refused(
        client,
        content=b'INSERT DATA { <http://example.org/a> <http://example.org/p> "\xff" }',
        headers=SPARQL_UPDATE,
    )


def test_the_route_documents_both_media_types(client: TestClient) -> None:
    op = client.get("/openapi.json").json()["paths"]["/update"]["post"]
    assert op["operationId"] == "sparql_update"
    assert set(op["requestBody"]["content"]) == {
        "application/sparql-update",
        "application/x-www-form-urlencoded",
    }
