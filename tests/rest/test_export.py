"""POST /export (tools-core §1.3): one scope, deterministic RDF, the JSON wrapper on request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rdflib import Graph

from quipu.config import Settings
from quipu.episodes.iris import DEFAULT_BASE_NS, QUECHUA_GROUP_ID

from .support import EX, PREFIXES, kb_of, problem, serve

AEGIS = DEFAULT_BASE_NS
JSON = {"accept": "application/json"}
DOC = PREFIXES + 'ex:b ex:name "Bee" ; ex:knows ex:a .\nex:a ex:name "Ay", "Alpha"@en ; ex:age 30 .\n'


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        kb_of(c).knot(DOC)
        yield c


def _wrapper(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/export", json=body, headers=JSON)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    out: dict[str, Any] = response.json()
    return out


def _lines(rdf: str) -> list[str]:
    return rdf.splitlines()


# -- media types and the wrapper ------------------------------------------------------------------


def test_export_returns_the_turtle_document_by_default(client: TestClient) -> None:
    response = client.post("/export", json={})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/turtle")
    assert "X-Quipu-Ignored-Fields" not in response.headers
    assert len(Graph().parse(data=response.text, format="turtle")) == 5


def test_export_without_a_body_is_the_root_export(client: TestClient) -> None:
    assert client.post("/export").text == client.post("/export", json={}).text


@pytest.mark.parametrize(
    ("fmt", "media"), [("ntriples", "application/n-triples"), ("nt", "application/n-triples")]
)
def test_export_ntriples_media_type(client: TestClient, fmt: str, media: str) -> None:
    response = client.post("/export", json={"format": fmt})
    assert response.headers["content-type"] == media
    assert len(Graph().parse(data=response.text, format="nt")) == 5


def test_export_ttl_alias(client: TestClient) -> None:
    response = client.post("/export", json={"format": "ttl"})
    assert response.headers["content-type"].startswith("text/turtle")
    assert response.text == client.post("/export", json={"format": "turtle"}).text


def test_export_json_wrapper_on_accept_json(client: TestClient) -> None:
    out = _wrapper(client, format="nt")
    assert set(out) == {"rdf", "format", "scope", "graph", "triples"}
    assert out["format"] == "nt"  # as requested
    assert out["scope"] == {"kind": "root", "value": None}
    assert out["graph"] is None
    assert out["triples"] == 5 == len(_lines(out["rdf"]))
    assert out["rdf"] == client.post("/export", json={"format": "nt"}).text


def test_export_prefers_the_document_when_rdf_ranks_higher(client: TestClient) -> None:
    accept = {"accept": "application/json;q=0.5, text/turtle"}
    assert client.post("/export", json={}, headers=accept).headers["content-type"].startswith("text/turtle")
    wildcard = {"accept": "*/*"}
    assert client.post("/export", json={}, headers=wildcard).headers["content-type"].startswith("text/turtle")


def test_export_ignored_fields_travel_in_the_header(client: TestClient) -> None:
    response = client.post("/export", json={"zeta": 1, "dry_run": True})
    assert response.status_code == 200
    assert json.loads(response.headers["X-Quipu-Ignored-Fields"]) == ["dry_run", "zeta"]


def test_export_ignored_fields_travel_in_the_json_wrapper(client: TestClient) -> None:
    response = client.post("/export", json={"zeta": 1, "construct_query": "x"}, headers=JSON)
    assert response.json()["ignored_fields"] == ["construct_query", "zeta"]
    assert "X-Quipu-Ignored-Fields" not in response.headers


def test_export_refuses_a_wrong_json_type(client: TestClient) -> None:
    assert problem(client.post("/export", json={"graph": 5}), "wrong_type")["field"] == "graph"
    problem(client.post("/export", json=["graph"]), "wrong_type")


# -- rules ----------------------------------------------------------------------------------------


def test_rule1_no_scope_exports_root_only(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}n> <{EX}p> "named only" .', graph=EX + "g")
    kb.knot(f'<{EX}gone> <{EX}p> "retracted" .')
    kb.retract(EX + "gone")
    rdf = _wrapper(client, format="nt")["rdf"]
    assert "named only" not in rdf and "retracted" not in rdf
    assert len(_lines(rdf)) == 5


def test_rule2_graph_exports_only_that_graph(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}n> <{EX}p> "named only" .', graph=EX + "g")
    out = _wrapper(client, graph=EX + "g", format="nt")
    assert out["rdf"] == f'<{EX}n> <{EX}p> "named only" .\n'
    assert out["scope"] == {"kind": "graph", "value": EX + "g"}
    assert out["graph"] == EX + "g"
    assert out["triples"] == 1


def test_rule2_root_by_name_is_the_root_scope(client: TestClient) -> None:
    out = _wrapper(client, graph="urn:quipu:graph:root")
    assert out["scope"] == {"kind": "root", "value": None} and out["graph"] is None
    assert out["rdf"] == _wrapper(client)["rdf"]


def test_rule3_unknown_graph_is_400(client: TestClient) -> None:
    body = problem(client.post("/export", json={"graph": EX + "nope"}), "unknown_graph")
    assert "unknown graph: " + EX + "nope" in body["error"]


@pytest.mark.parametrize(
    "body",
    [
        {"graph": EX + "g", "group_id": "g1"},
        {"graph": EX + "g", "construct": "CONSTRUCT WHERE { ?s ?p ?o }"},
        {"group_id": "g1", "construct": "CONSTRUCT WHERE { ?s ?p ?o }"},
    ],
)
def test_export_refuses_more_than_one_scope(client: TestClient, body: dict[str, Any]) -> None:
    problem(client.post("/export", json=body), "invalid_field")


def test_export_a_null_scope_field_is_not_supplied(client: TestClient) -> None:
    out = _wrapper(client, graph=None, construct=None, group_id="nobody")
    assert out["scope"] == {"kind": "group", "value": "nobody"}


def test_export_unknown_format(client: TestClient) -> None:
    body = problem(client.post("/export", json={"format": "rdfxml"}), "unknown_format")
    assert body["error"] == "unknown export format: rdfxml (try: turtle, ntriples)"


def _episodes(client: TestClient, base_ns: str = AEGIS) -> None:
    """Two activities of group g1 (one per groupId spelling), one of g2, and /knot data."""
    kb_of(client).knot(
        PREFIXES
        + f"""
        ex:ep1 a prov:Activity ; <{base_ns}groupId> "g1" ; rdfs:label "first" .
        ex:ep2 a prov:Activity ; <{QUECHUA_GROUP_ID}> "g1" .
        ex:ep3 a prov:Activity ; <{base_ns}groupId> "g2" .
        ex:alice ex:role "dev" ; prov:wasGeneratedBy ex:ep1 .
        ex:bob ex:role "ops" ; prov:wasGeneratedBy ex:ep2 .
        ex:carol ex:role "qa" ; prov:wasGeneratedBy ex:ep3 .
        """
    )


def test_rule4_group_exports_its_activities_and_generated_entities(client: TestClient) -> None:
    _episodes(client)
    out = _wrapper(client, group_id="g1", format="nt")
    subjects = {line.split(" ")[0] for line in _lines(out["rdf"])}
    assert subjects == {f"<{EX}ep1>", f"<{EX}ep2>", f"<{EX}alice>", f"<{EX}bob>"}
    assert out["scope"] == {"kind": "group", "value": "g1"}
    assert out["graph"] is None
    # The entities' every current statement comes along, not just the provenance link.
    assert f'<{EX}alice> <{EX}role> "dev" .' in _lines(out["rdf"])
    # Knot data without a group never appears (the DOC fixture's ex:a and ex:b).
    assert f"<{EX}a>" not in subjects


def test_rule4_unknown_group_is_an_empty_document(client: TestClient) -> None:
    _episodes(client)
    response = client.post("/export", json={"group_id": "never"})
    assert response.status_code == 200
    assert response.text == ""


def test_rule4_group_predicate_uses_the_configured_base_ns(tmp_path: Path) -> None:
    custom = "http://custom.example/ns/"
    with serve(tmp_path, base_ns=custom) as c:
        _episodes(c, base_ns=custom)
        kb_of(c).knot(f'<{EX}other> <{AEGIS}groupId> "g2" .')  # the default spelling is not this store's
        subjects = {line.split(" ")[0] for line in _lines(_wrapper(c, group_id="g2", format="nt")["rdf"])}
        assert subjects == {f"<{EX}ep3>", f"<{EX}carol>"}


def test_rule5_construct_is_exported_deduplicated(client: TestClient) -> None:
    # Each ex:name solution makes the same triple: it is exported once.
    query = f"CONSTRUCT {{ ?s <{EX}named> true }} WHERE {{ ?s <{EX}name> ?n }}"
    out = _wrapper(client, construct=query, format="nt")
    assert _lines(out["rdf"]) == [
        f'<{EX}a> <{EX}named> "true"^^<http://www.w3.org/2001/XMLSchema#boolean> .',
        f'<{EX}b> <{EX}named> "true"^^<http://www.w3.org/2001/XMLSchema#boolean> .',
    ]
    assert out["triples"] == 2
    assert out["scope"] == {"kind": "construct", "value": query}


def test_rule5_describe_is_accepted(client: TestClient) -> None:
    out = _wrapper(client, construct=f"DESCRIBE <{EX}b>", format="nt")
    assert {line.split(" ")[0] for line in _lines(out["rdf"])} == {f"<{EX}b>"}


def test_rule5_construct_honours_dataset_clauses(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}n> <{EX}p> "named only" .', graph=EX + "g")
    root = _wrapper(client, construct="CONSTRUCT WHERE { ?s ?p ?o }", format="nt")
    assert "named only" not in root["rdf"]
    named = _wrapper(client, construct=f"CONSTRUCT {{ ?s ?p ?o }} FROM <{EX}g> WHERE {{ ?s ?p ?o }}")
    assert "named only" in named["rdf"] and named["triples"] == 1


@pytest.mark.parametrize("query", ["SELECT * WHERE { ?s ?p ?o }", "ASK { ?s ?p ?o }"])
def test_rule5_construct_must_be_construct_or_describe(client: TestClient, query: str) -> None:
    assert problem(client.post("/export", json={"construct": query}), "query_error")["field"] == "construct"


def test_rule5_construct_that_does_not_parse(client: TestClient) -> None:
    problem(client.post("/export", json={"construct": "CONSTRUCT {"}), "sparql_parse_error")


def test_construct_larger_than_max_sparql_rows_is_refused(tmp_path: Path) -> None:
    with serve(tmp_path, search={"max_sparql_rows": 3}) as c:
        kb_of(c).knot(DOC)
        body = {"construct": "CONSTRUCT WHERE { ?s ?p ?o }"}
        problem(c.post("/export", json=body), "construct_too_large")
        body = {"construct": f"CONSTRUCT WHERE {{ ?s <{EX}name> ?o }}"}
        assert c.post("/export", json=body).status_code == 200  # 3 triples: at the limit


def test_rule6_output_is_deterministic_and_sorted(client: TestClient, tmp_path: Path) -> None:
    nt = client.post("/export", json={"format": "nt"}).text
    assert _lines(nt) == sorted(set(_lines(nt)))
    (tmp_path / "other").mkdir()
    with serve(tmp_path / "other") as other:
        kb = kb_of(other)
        kb.knot(f'<{EX}zzz> <{EX}p> "first" .')  # other term ids in the other store
        kb.knot(
            PREFIXES + 'ex:a ex:age 30 ; ex:name "Alpha"@en, "Ay" .\nex:b ex:knows ex:a ; ex:name "Bee" .\n'
        )
        kb.retract(EX + "zzz")
        for fmt in ("nt", "turtle"):
            assert (
                other.post("/export", json={"format": fmt}).content
                == client.post("/export", json={"format": fmt}).content
            )


def test_rule6_turtle_orders_subjects_then_predicates(client: TestClient) -> None:
    turtle = client.post("/export", json={}).text
    assert turtle.index(f"<{EX}a>") < turtle.index(f"<{EX}b>")
    block_a = turtle.split("\n\n")[0]
    assert block_a.index(f"<{EX}age>") < block_a.index(f"<{EX}name>")


def test_rule7_a_statement_with_two_owners_appears_once(client: TestClient) -> None:
    kb_of(client).knot(f'<{EX}b> <{EX}name> "Bee" .', source="someone-else")
    nt = client.post("/export", json={"format": "nt"}).text
    assert nt.count(f'<{EX}b> <{EX}name> "Bee" .') == 1


def test_rule7_blank_nodes_keep_their_stored_labels(client: TestClient) -> None:
    kb_of(client).knot(PREFIXES + 'ex:a ex:addr _:home .\n_:home ex:city "Lima" .\n')
    nt = client.post("/export", json={"format": "nt"}).text
    (bnode,) = {line.split(" ")[0] for line in _lines(nt) if line.startswith("_:")}
    assert bnode.startswith("_:b") and bnode.endswith("_home")
    assert f"<{EX}a> <{EX}addr> {bnode} ." in _lines(nt)


def test_default_base_ns_matches_the_settings_default() -> None:
    assert Settings.model_fields["base_ns"].default == DEFAULT_BASE_NS
