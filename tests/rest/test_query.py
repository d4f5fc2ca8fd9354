"""``GET /query`` and ``POST /query`` (tools-core §1.1): the JSON shape, the SPARQL Protocol forms,
content negotiation, the numbered rules and the refusals.

Rule 3 (a ``graph`` naming a dataset) is not tested: this build has no datasets yet.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rdflib import Graph

import quipu
from quipu.config import load_settings
from quipu.rdfio.curie import PrefixMap
from quipu.rest.app import create_app
from quipu.shacl import registry
from quipu.sparql import withheld
from quipu.sparql.cells import BNODE, LITERAL, URI, Cell
from quipu.sparql.engine import QueryResult
from quipu.sparql.quipu_json import result_json, value_json
from tests.backends import store_location
from tests.store import scalar

from .support import EX, XSD, kb_of

RDFS = "http://www.w3.org/2000/01/rdf-schema#"
P = f"PREFIX : <{EX}> PREFIX rdfs: <{RDFS}> "
G1, G2 = f"{EX}g1", f"{EX}g2"

VALUES_TTL = f"""@prefix : <{EX}> . @prefix xsd: <{XSD}> .
:v :iri :target ;
   :blank _:b ;
   :str "plain" ;
   :int 42 ;
   :dbl "1.5"^^xsd:double ;
   :inf "INF"^^xsd:double ;
   :yes true ;
   :lang "hallo"@de ;
   :date "2026-04-02"^^xsd:date ;
   :dec 1.50 .
"""
ANIMALS_TTL = f"""@prefix : <{EX}> . @prefix rdfs: <{RDFS}> .
:Dog rdfs:subClassOf :Mammal . :Puppy rdfs:subClassOf :Dog . :Mammal rdfs:subClassOf :Animal .
:Cat rdfs:subClassOf :Mammal .
:rex a :Dog . :tom a :Cat . :bob a :Animal .
"""
# 2000^5 solutions to count: only the deadline can stop it (the row ceiling cannot: one row)
RUNAWAY = P + "SELECT (COUNT(*) AS ?n) WHERE { ?a :p ?b . ?c :p ?d . ?e :p ?f . ?g :p ?h . ?i :p ?j }"
PAIRS = P + "SELECT * WHERE { ?a :p ?b . ?c :p ?d }"
BIG_TTL = f"@prefix : <{EX}> .\n" + "".join(f":s{i} :p :o{i % 50} .\n" for i in range(2000))


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return store_location(tmp_path, "q.db")


def _client(db_path: str, **search: Any) -> TestClient:
    return TestClient(create_app(load_settings(store={"db": db_path}, search=search)))


def _write(db_path: str, *docs: str, **options: Any) -> None:
    kb = quipu.open(db_path)
    try:
        for doc in docs:
            kb.knot(doc, **options)
    finally:
        kb.close()


@pytest.fixture
def client(db_path: str) -> Iterator[TestClient]:
    _write(db_path, VALUES_TTL, ANIMALS_TTL)
    with _client(db_path) as c:
        yield c


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text[:500]
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


def _problem(response: Any, status: int, reason: str) -> dict[str, Any]:
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["reason"] == reason, body
    return body


def _select(client: TestClient, query: str, **fields: Any) -> dict[str, Any]:
    return _ok(client.post("/query", json={"query": query, **fields}))


def _column(body: dict[str, Any], name: str) -> list[Any]:
    return sorted(row[name] for row in body["rows"] if name in row)


# -- the JSON shape and DM §2.1 values ------------------------------------------------------------


def test_select_shape_and_value_forms(client: TestClient) -> None:
    body = _select(client, P + "SELECT ?p ?o WHERE { :v ?p ?o }")
    assert list(body) == ["variables", "rows", "count", "truncated", "labels"]
    assert body["variables"] == ["p", "o"]
    assert body["count"] == len(body["rows"]) == 10
    assert body["truncated"] is False and body["labels"] is None
    by_predicate = {row["p"].removeprefix(EX): row["o"] for row in body["rows"]}
    assert by_predicate["iri"] == f"{EX}target"
    assert by_predicate["blank"].startswith("_:")
    assert by_predicate["str"] == "plain"
    assert by_predicate["int"] == 42 and isinstance(by_predicate["int"], int)
    assert by_predicate["dbl"] == 1.5
    # [changed from DM §2.1] a non-finite double keeps its value: the typed form, not null
    assert by_predicate["inf"] == {"value": "INF", "datatype": f"{XSD}double"}
    assert by_predicate["yes"] is True
    assert by_predicate["lang"] == {"value": "hallo", "lang": "de"}
    assert by_predicate["date"] == {"value": "2026-04-02", "datatype": f"{XSD}date"}
    assert by_predicate["dec"] == {"value": "1.50", "datatype": f"{XSD}decimal"}


def test_ask_shape(client: TestClient) -> None:
    body = _ok(client.post("/query", json={"query": P + "ASK { :tom a :Cat }"}))
    assert body == {"result": True, "labels": None}
    assert _ok(client.post("/query", json={"query": P + "ASK { :rex a :Cat }"}))["result"] is False


def test_construct_shape(client: TestClient) -> None:
    body = _select(client, P + "CONSTRUCT { ?s :kind ?o } WHERE { ?s a ?o }")
    assert list(body) == ["triples", "count", "truncated", "labels"]
    assert body["count"] == 3 and body["truncated"] is False and body["labels"] is None
    assert {"subject": f"{EX}rex", "predicate": f"{EX}kind", "object": f"{EX}Dog"} in body["triples"]


def test_describe_shape(client: TestClient) -> None:
    body = _select(client, P + "DESCRIBE :rex")
    assert body["triples"] == [
        {
            "subject": f"{EX}rex",
            "predicate": "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
            "object": f"{EX}Dog",
        }
    ]
    assert body["count"] == 1


def test_value_json_keeps_an_invalid_numeric_lexical_typed() -> None:
    assert value_json(Cell(LITERAL, "x", f"{XSD}integer")) == {"value": "x", "datatype": f"{XSD}integer"}
    assert value_json(Cell(LITERAL, "-7", f"{XSD}integer")) == -7
    assert value_json(Cell(LITERAL, "NaN", f"{XSD}double")) == {"value": "NaN", "datatype": f"{XSD}double"}
    # a JSON number only where the store holds an Int or a Float: "1E3" is kept as written
    assert value_json(Cell(LITERAL, "1E3", f"{XSD}double")) == {"value": "1E3", "datatype": f"{XSD}double"}
    assert value_json(Cell(LITERAL, "1000.0", f"{XSD}double")) == 1000.0
    assert value_json(Cell(LITERAL, str(2**63), f"{XSD}integer")) == {
        "value": str(2**63),
        "datatype": f"{XSD}integer",
    }
    assert value_json(Cell(LITERAL, "+007", f"{XSD}integer")) == 7
    assert value_json(Cell(LITERAL, "0", f"{XSD}boolean")) is False
    assert value_json(Cell(LITERAL, "maybe", f"{XSD}boolean")) == {
        "value": "maybe",
        "datatype": f"{XSD}boolean",
    }
    assert value_json(Cell(BNODE, "b1")) == "_:b1"


def test_computed_values_use_the_same_forms(client: TestClient) -> None:
    body = _select(client, P + 'SELECT (COUNT(*) AS ?n) ("x"@en AS ?l) WHERE { ?s a ?t }')
    assert body["rows"] == [{"n": 3, "l": {"value": "x", "lang": "en"}}]


# -- the numbered rules of §1.1 -------------------------------------------------------------------


def test_rule1_default_graph_is_root_alone(db_path: str) -> None:
    kb = quipu.open(db_path)
    kb.create_graph(G1)
    kb.knot(f"<{EX}root> <{EX}p> 1 .")
    kb.knot(f"<{EX}named> <{EX}p> 2 .", graph=G1)
    kb.close()
    with _client(db_path) as client:
        body = _select(client, P + "SELECT ?s WHERE { ?s :p ?o }")
        assert _column(body, "s") == [f"{EX}root"]
        in_g1 = _select(client, P + "SELECT ?s WHERE { ?s :p ?o }", graph=G1)
        assert _column(in_g1, "s") == [f"{EX}named"]


def test_rule2_unknown_graph_is_an_empty_default_graph(client: TestClient) -> None:
    body = _select(client, "SELECT * WHERE { ?s ?p ?o }", graph=f"{EX}no-such-graph")
    assert body["rows"] == [] and body["count"] == 0


def test_rule4_from_overrides_the_graph_parameter(db_path: str) -> None:
    kb = quipu.open(db_path)
    for g in (G1, G2):
        kb.create_graph(g)
        kb.knot(f"<{EX}in-{g[-2:]}> <{EX}p> 1 .", graph=g)
    kb.close()
    with _client(db_path) as client:
        body = _select(client, P + f"SELECT ?s FROM <{G2}> WHERE {{ ?s :p ?o }}", graph=G1)
        assert _column(body, "s") == [f"{EX}in-g2"]


def test_rule4_from_without_from_named_makes_graph_match_nothing(db_path: str) -> None:
    kb = quipu.open(db_path)
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .", graph=G1)
    kb.close()
    with _client(db_path) as client:
        scoped = P + f"SELECT ?s FROM <{G1}> WHERE {{ GRAPH ?g {{ ?s :p ?o }} }}"
        assert _select(client, scoped)["rows"] == []
        unscoped = P + "SELECT ?s ?g WHERE { GRAPH ?g { ?s :p ?o } }"
        assert _select(client, unscoped)["rows"] == [{"s": f"{EX}a", "g": G1}]


def test_rule4_graph_variable_never_ranges_over_root(client: TestClient) -> None:
    body = _select(client, P + "SELECT ?g WHERE { GRAPH ?g { :rex a :Dog } }")
    assert body["rows"] == []


def test_rule5_tx_shows_statements_retracted_later(db_path: str) -> None:
    kb = quipu.open(db_path)
    first = kb.knot(f"<{EX}a> <{EX}p> 1 .").tx_id
    kb.retract(f"{EX}a")
    kb.close()
    query = P + "SELECT ?o WHERE { :a :p ?o }"
    with _client(db_path) as client:
        assert _select(client, query)["rows"] == []
        assert _select(client, query, tx=first)["rows"] == [{"o": 1}]
        assert _select(client, query, tx=0)["rows"] == []


def test_rule6_several_claims_are_one_solution(db_path: str) -> None:
    doc = f"<{EX}a> <{EX}p> 1 ."
    kb = quipu.open(db_path)
    kb.knot(doc, source="one")
    kb.knot(doc, source="two")
    for g in (G1, G2):
        kb.create_graph(g)
        kb.knot(doc, graph=g)
    kb.close()
    with _client(db_path) as client:
        assert _select(client, P + "SELECT ?o WHERE { :a :p ?o }")["count"] == 1
        assert _select(client, P + "SELECT (COUNT(*) AS ?n) WHERE { ?s :p ?o }")["rows"] == [{"n": 1}]
        both = P + f"SELECT ?o FROM <{G1}> FROM <{G2}> WHERE {{ :a :p ?o }}"
        assert _select(client, both)["rows"] == [{"o": 1}]


def test_rule7_inference_lists_transitive_subclasses(client: TestClient) -> None:
    body = _select(client, P + "SELECT ?s WHERE { ?s a :Mammal }")
    assert body["rows"] == []  # asserted types only: rex is a Dog, tom a Cat
    inference = body["inference"]
    assert inference["applied"] is False
    assert inference["withheldTypes"] == [
        {"type": f"{EX}Mammal", "subclasses": [f"{EX}Cat", f"{EX}Dog", f"{EX}Puppy"]}
    ]
    assert f"?s a/rdfs:subClassOf* <{EX}Mammal>" in inference["note"]
    explicit = _select(client, P + "SELECT ?s WHERE { ?s a/rdfs:subClassOf* :Mammal }")
    assert _column(explicit, "s") == [f"{EX}rex", f"{EX}tom"]
    assert "inference" not in explicit  # a path is not an rdf:type pattern


@pytest.mark.parametrize("a", ["a", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"])
def test_rule7_inference_names_classes_written_as_full_iris(client: TestClient, a: str) -> None:
    # Full IRIs are taken out of the text before parsing (quipu.sparql.templates): the marker
    # must still name the query's own class, for each class in turn.
    for cls, subs in (("Mammal", ["Cat", "Dog", "Puppy"]), ("Dog", ["Puppy"])):
        body = _select(client, f"SELECT ?s WHERE {{ ?s {a} <{EX}{cls}> }}")
        assert body["inference"]["withheldTypes"] == [
            {"type": EX + cls, "subclasses": [EX + s for s in subs]}
        ]


def test_rule7_inference_covers_every_constant_class_and_ask(client: TestClient) -> None:
    body = _ok(client.post("/query", json={"query": P + "ASK { ?x a :Dog . ?y a :Puppy . ?z a :Animal }"}))
    types = [entry["type"] for entry in body["inference"]["withheldTypes"]]
    assert types == [f"{EX}Animal", f"{EX}Dog"]  # Puppy is a leaf


@pytest.mark.parametrize(
    "query, fields",
    [
        (P + "SELECT ?s WHERE { ?s a :Puppy }", {}),  # a leaf class
        (P + "SELECT ?s WHERE { ?s a ?t }", {}),  # no constant class
        (P + "SELECT ?s WHERE { ?s :p ?o }", {}),  # no rdf:type pattern
        (P + "SELECT ?s WHERE { ?s a :Mammal }", {"graph": G1}),  # a graph scope
        (P + "SELECT ?s FROM <urn:quipu:graph:root> WHERE { ?s a :Mammal }", {}),  # FROM
        (P + "SELECT ?s WHERE { GRAPH ?g { ?s a :Mammal } }", {}),  # GRAPH
    ],
    ids=["leaf", "variable-class", "no-type", "graph-param", "from", "graph-clause"],
)
def test_rule7_inference_absent(client: TestClient, query: str, fields: dict[str, Any]) -> None:
    assert "inference" not in _select(client, query, **fields)


def test_rule7_inference_follows_the_read_point(db_path: str) -> None:
    kb = quipu.open(db_path)
    before = kb.knot(f"<{EX}rex> a <{EX}Dog> .").tx_id
    kb.knot(f"<{EX}Puppy> <{RDFS}subClassOf> <{EX}Dog> .")
    kb.close()
    query = P + "SELECT ?s WHERE { ?s a :Dog }"
    with _client(db_path) as client:
        assert _select(client, query)["inference"]["withheldTypes"][0]["subclasses"] == [f"{EX}Puppy"]
        assert "inference" not in _select(client, query, tx=before)
        kb_of(client).retract(f"{EX}Puppy")
        assert "inference" not in _select(client, query)  # only live subclasses count


def test_rule7_inference_survives_cycles_and_wide_hierarchies(db_path: str) -> None:
    wide = "".join(f"<{EX}C{i}> <{RDFS}subClassOf> <{EX}Wide> .\n" for i in range(600))
    deep = f"<{EX}Leaf> <{RDFS}subClassOf> <{EX}C599> .\n"
    cycle = f"<{EX}A> <{RDFS}subClassOf> <{EX}B> .\n<{EX}B> <{RDFS}subClassOf> <{EX}A> .\n"
    _write(db_path, wide + deep + cycle)
    with _client(db_path) as client:
        body = _select(client, P + "SELECT ?s WHERE { ?s a :Wide . ?t a :A }")
        entries = {entry["type"]: entry["subclasses"] for entry in body["inference"]["withheldTypes"]}
        assert entries[f"{EX}A"] == [f"{EX}B"]  # never its own subclass, even through a cycle
        assert len(entries[f"{EX}Wide"]) == 601 and f"{EX}Leaf" in entries[f"{EX}Wide"]


def test_rule7_inference_in_a_header_on_standard_formats(client: TestClient) -> None:
    response = client.get(
        "/query",
        params={"query": P + "SELECT ?s WHERE { ?s a :Mammal . ?x a :Dog }"},
        headers={"Accept": "application/sparql-results+json"},
    )
    assert response.status_code == 200
    assert response.headers["x-quipu-inference"] == f"withheld: {EX}Dog, {EX}Mammal"
    plain = client.get("/query", params={"query": P + "ASK { ?s a :Puppy }"}, headers={"Accept": "text/csv"})
    assert "x-quipu-inference" not in plain.headers


def test_rule8_iris_are_compacted_unless_verbose(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    prefixes = PrefixMap.from_declarations([{"ex": EX}])
    monkeypatch.setattr(registry, "loaded_prefixes", lambda db: prefixes)
    query = P + 'SELECT ?s ?t ?l WHERE { ?s a ?t . BIND("http://ex.org/rex" AS ?l) } ORDER BY ?s LIMIT 1'
    assert _select(client, query)["rows"] == [{"s": "ex:bob", "t": "ex:Animal", "l": "http://ex.org/rex"}]
    assert _select(client, query, verbose=True)["rows"][0]["s"] == f"{EX}bob"
    triples = _select(client, P + "CONSTRUCT WHERE { :rex a ?t }")["triples"]
    rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"  # no prefix binds its namespace
    assert triples == [{"subject": "ex:rex", "predicate": rdf_type, "object": "ex:Dog"}]
    standard = client.post(
        "/query", json={"query": query}, headers={"Accept": "application/sparql-results+json"}
    ).json()
    assert standard["results"]["bindings"][0]["s"] == {"type": "uri", "value": f"{EX}bob"}


def test_rule8_result_json_compacts_only_iri_values() -> None:
    prefixes = PrefixMap.from_declarations([{"ex": EX, "xsd": XSD}])
    result = QueryResult(
        "SELECT",
        variables=["s", "o", "t"],
        table=[(Cell(URI, f"{EX}a"), Cell(LITERAL, f"{EX}a"), Cell(LITERAL, "d", f"{XSD}date"))],
    )
    rows = result_json(result, prefixes)["rows"]
    assert rows == [{"s": "ex:a", "o": f"{EX}a", "t": {"value": "d", "datatype": f"{XSD}date"}}]
    assert result_json(result, None)["rows"][0]["s"] == f"{EX}a"


def test_rule9_unbound_variable_is_absent_from_its_row(client: TestClient) -> None:
    body = _select(client, P + "SELECT ?s ?sup WHERE { ?s a ?t OPTIONAL { ?t rdfs:subClassOf ?sup } }")
    rows = {row["s"]: row for row in body["rows"]}
    assert rows[f"{EX}bob"] == {"s": f"{EX}bob"}  # Animal has no superclass: no "sup" key, no null
    assert rows[f"{EX}rex"] == {"s": f"{EX}rex", "sup": f"{EX}Mammal"}


def test_rule10_truncated_at_max_sparql_rows(db_path: str) -> None:
    _write(db_path, ANIMALS_TTL)
    with _client(db_path, max_sparql_rows=2) as client:
        body = _select(client, "SELECT * WHERE { ?s ?p ?o }")
        assert body["count"] == 2 and len(body["rows"]) == 2 and body["truncated"] is True
        graph = _select(client, "CONSTRUCT WHERE { ?s ?p ?o }")
        assert graph["count"] == 2 and graph["truncated"] is True
        assert _select(client, P + "SELECT * WHERE { :rex ?p ?o }")["truncated"] is False
        assert "truncated" not in _select(client, "ASK { ?s ?p ?o }")


def test_rule11_valid_at_is_normalised_and_a_bare_date_is_verbatim(db_path: str) -> None:
    _write(db_path, f"<{EX}a> <{EX}p> 1 .", valid_from="2026-04-02T10:00:00Z")
    query = P + "SELECT ?o WHERE { :a :p ?o }"
    with _client(db_path) as client:
        # 11:30+02:00 is 09:30Z, before valid_from, although it sorts after it as text
        assert _select(client, query, valid_at="2026-04-02T11:30:00+02:00")["rows"] == []
        assert _select(client, query, valid_at="2026-04-02T12:30:00+02:00")["rows"] == [{"o": 1}]
        assert _select(client, query, valid_at="2026-04-02")["rows"] == []  # "…T10:00:00Z" > "2026-04-02"
        assert _select(client, query, valid_at="2026-04-03")["rows"] == [{"o": 1}]


def _term_count(db_path: str) -> int:
    with quipu.open(db_path) as kb:
        return int(scalar(kb, "SELECT count(*) FROM terms"))


def test_rule12_a_query_never_interns_a_term(client: TestClient, db_path: str) -> None:
    before = _term_count(db_path)
    unknown = "<http://unknown.example/never-seen>"
    assert _select(client, f"SELECT * WHERE {{ {unknown} ?p ?o }}")["rows"] == []
    assert _select(client, f"SELECT * WHERE {{ ?s a {unknown} }}")["rows"] == []
    assert _select(client, "SELECT * WHERE { ?s ?p ?o }", graph="http://unknown.example/g")["rows"] == []
    response = client.get("/query", params={"query": f"ASK {{ ?s ?p {unknown} }}", "default-graph-uri": G1})
    assert response.json()["result"] is False
    assert _term_count(db_path) == before


# -- the SPARQL Protocol forms --------------------------------------------------------------------


def test_get_with_a_query_parameter(client: TestClient) -> None:
    response = client.get("/query", params={"query": P + "SELECT ?s WHERE { ?s a :Dog }"})
    assert _ok(response)["rows"] == [{"s": f"{EX}rex"}]


def test_get_takes_quipu_fields_as_parameters(db_path: str) -> None:
    kb = quipu.open(db_path)
    first = kb.knot(f"<{EX}a> <{EX}p> 1 .").tx_id
    kb.retract(f"{EX}a")
    kb.close()
    with _client(db_path) as client:
        params = {"query": P + "SELECT ?o WHERE { :a :p ?o }", "tx": str(first), "verbose": "true"}
        assert _ok(client.get("/query", params=params))["rows"] == [{"o": 1}]


def test_post_sparql_query_body(client: TestClient) -> None:
    response = client.post(
        "/query",
        content=(P + "SELECT ?s WHERE { ?s a :Cat }").encode(),
        headers={"Content-Type": "application/sparql-query"},
    )
    assert _ok(response)["rows"] == [{"s": f"{EX}tom"}]


def test_post_form_with_a_query_field(client: TestClient) -> None:
    response = client.post("/query", data={"query": P + "ASK { :tom a :Cat }"})
    assert _ok(response)["result"] is True


def test_protocol_dataset_replaces_from(db_path: str) -> None:
    kb = quipu.open(db_path)
    for g in (G1, G2):
        kb.create_graph(g)
        kb.knot(f"<{EX}in-{g[-2:]}> <{EX}p> 1 .", graph=g)
    kb.close()
    with _client(db_path) as client:
        query = P + f"SELECT ?s FROM <{G1}> WHERE {{ ?s :p ?o }}"
        body = _ok(client.get("/query", params={"query": query, "default-graph-uri": G2}))
        assert _column(body, "s") == [f"{EX}in-g2"]
        named = P + "SELECT ?g WHERE { GRAPH ?g { ?s :p ?o } }"
        only_g1 = _ok(client.post("/query", data={"query": named, "named-graph-uri": G1}))
        assert only_g1["rows"] == [{"g": G1}]
        union = client.post(
            "/query",
            content=(P + "SELECT ?s WHERE { ?s :p ?o }").encode(),
            params=[("default-graph-uri", G1), ("default-graph-uri", G2)],
            headers={"Content-Type": "application/sparql-query"},
        )
        assert _column(_ok(union), "s") == [f"{EX}in-g1", f"{EX}in-g2"]


# -- content negotiation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "accept, content_type",
    [
        ("application/sparql-results+json", "application/sparql-results+json"),
        ("application/sparql-results+xml", "application/sparql-results+xml"),
        ("text/csv", "text/csv"),
        ("text/tab-separated-values", "text/tab-separated-values"),
        ("text/html;q=0.9, text/csv;q=0.5", "text/csv"),
    ],
)
def test_select_in_standard_formats(client: TestClient, accept: str, content_type: str) -> None:
    response = client.post(
        "/query", json={"query": P + "SELECT ?s WHERE { ?s a :Dog }"}, headers={"Accept": accept}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(content_type)
    assert f"{EX}rex" in response.text


def test_select_csv_is_the_w3c_form(client: TestClient) -> None:
    response = client.get(
        "/query", params={"query": P + "SELECT ?s WHERE { ?s a :Dog }"}, headers={"Accept": "text/csv"}
    )
    assert list(csv.reader(io.StringIO(response.text))) == [["s"], [f"{EX}rex"]]


@pytest.mark.parametrize("accept", ["text/turtle", "application/n-triples"])
def test_construct_in_rdf_formats(client: TestClient, accept: str) -> None:
    response = client.post(
        "/query",
        content=(P + "CONSTRUCT WHERE { ?s a :Dog }").encode(),
        headers={"Content-Type": "application/sparql-query", "Accept": accept},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(accept)
    parsed = Graph().parse(data=response.text, format="turtle" if accept == "text/turtle" else "nt")
    assert len(parsed) == 1


@pytest.mark.parametrize(
    "query, accept",
    [
        (P + "CONSTRUCT WHERE { ?s a :Dog }", "text/csv"),  # a table format for a graph
        (P + "SELECT ?s WHERE { ?s a :Dog }", "text/turtle"),  # a graph format for a table
        (P + "SELECT ?s WHERE { ?s a :Dog }", "text/html"),
        (P + "SELECT ?s WHERE { ?s a :Dog }", "*/*"),
        (P + "SELECT ?s WHERE { ?s a :Dog }", "application/json"),
        (P + "SELECT ?s WHERE { ?s a :Dog }", "application/json, application/sparql-results+json;q=0.5"),
    ],
)
def test_accept_that_does_not_fit_falls_back_to_the_json_shape(
    client: TestClient, query: str, accept: str
) -> None:
    body = _ok(client.post("/query", json={"query": query}, headers={"Accept": accept}))
    assert "labels" in body and "count" in body


def test_ignored_fields_in_the_json_shape(client: TestClient) -> None:
    body = _select(client, P + "ASK { :rex a :Dog }", zeta=1, alpha="x")
    assert body["ignored_fields"] == ["alpha", "zeta"]
    assert "ignored_fields" not in _select(client, P + "ASK { :rex a :Dog }")


def test_ignored_fields_in_a_header_on_standard_formats(client: TestClient) -> None:
    response = client.post(
        "/query",
        json={"query": P + "ASK { :rex a :Dog }", "dry_run": True},
        headers={"Accept": "application/sparql-results+json"},
    )
    assert response.json() == {"head": {}, "boolean": True}
    assert json.loads(response.headers["x-quipu-ignored-fields"]) == ["dry_run"]


def test_url_parameters_on_a_json_post_are_reported(client: TestClient) -> None:
    response = client.post("/query", params={"verbose": "true"}, json={"query": P + "ASK { :tom a :Cat }"})
    assert _ok(response)["ignored_fields"] == ["verbose"]


def test_inference_header_percent_encodes_what_a_header_cannot_carry() -> None:
    marker = {
        "withheldTypes": [{"type": f"{EX}Tier", "subclasses": []}, {"type": f"{EX}Büro", "subclasses": []}]
    }
    assert withheld.header(marker) == f"withheld: {EX}Tier, {EX}B%C3%BCro"


def test_unknown_get_parameters_are_reported_not_refused(client: TestClient) -> None:
    params = {"query": P + "ASK { :rex a :Dog }", "limit": "3", "format": "json"}
    assert _ok(client.get("/query", params=params))["ignored_fields"] == ["format", "limit"]
    standard = client.get("/query", params=params, headers={"Accept": "text/csv"})
    assert json.loads(standard.headers["x-quipu-ignored-fields"]) == ["format", "limit"]


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "send",
    [
        lambda c: c.post("/query", json={}),
        lambda c: c.post("/query", json={"query": "   "}),
        lambda c: c.post("/query", content=b""),
        lambda c: c.get("/query"),
        lambda c: c.post("/query", data={"verbose": "true"}),
        lambda c: c.post("/query", content=b"", headers={"Content-Type": "application/sparql-query"}),
    ],
    ids=["json", "blank", "empty-body", "get", "form", "sparql-query"],
)
def test_missing_query_is_missing_field(client: TestClient, send: Any) -> None:
    body = _problem(send(client), 400, "missing_field")
    assert body["field"] == "query"


def test_parse_error_is_400(client: TestClient) -> None:
    body = _problem(client.post("/query", json={"query": "SELEKT * WHERE {"}), 400, "sparql_parse_error")
    assert body["error"].startswith("SPARQL parse error:")


def test_a_lone_surrogate_escape_is_a_parse_error(client: TestClient) -> None:
    query = 'SELECT ("\\uD800" AS ?x) WHERE {}'
    _problem(client.post("/query", json={"query": query}), 400, "sparql_parse_error")


def test_unsupported_construct_is_400_naming_it(client: TestClient) -> None:
    query = "SELECT * WHERE { SERVICE <http://remote.example/sparql> { ?s ?p ?o } }"
    body = _problem(client.post("/query", json={"query": query}), 400, "unsupported")
    assert "SERVICE" in body["error"]


@pytest.mark.parametrize(
    "fields, reason, field",
    [
        ({"tx": "1"}, "wrong_type", "tx"),
        ({"tx": -1}, "invalid_field", "tx"),
        ({"verbose": "yes"}, "wrong_type", "verbose"),
        ({"include_kinds": "inferred"}, "wrong_type", "include_kinds"),
        ({"query": 5}, "wrong_type", "query"),
        ({"valid_at": "  "}, "invalid_field", "valid_at"),
    ],
)
def test_wrong_field_values_are_400(
    client: TestClient, fields: dict[str, Any], reason: str, field: str
) -> None:
    body = _problem(client.post("/query", json={"query": "ASK {}", **fields}), 400, reason)
    assert body["field"] == field


@pytest.mark.parametrize(
    "params, reason, field",
    [
        ({"tx": "abc"}, "wrong_type", "tx"),
        ({"tx": "-2"}, "invalid_field", "tx"),
        ({"verbose": "maybe"}, "wrong_type", "verbose"),
    ],
)
def test_wrong_parameter_values_are_400(
    client: TestClient, params: dict[str, str], reason: str, field: str
) -> None:
    body = _problem(client.get("/query", params={"query": "ASK {}", **params}), 400, reason)
    assert body["field"] == field


def test_a_repeated_query_parameter_is_refused(client: TestClient) -> None:
    response = client.get("/query", params=[("query", "ASK {}"), ("query", "ASK { ?s ?p ?o }")])
    assert _problem(response, 400, "invalid_field")["field"] == "query"
    both = client.post(
        "/query",
        content=b"ASK {}",
        params={"query": "ASK {}"},
        headers={"Content-Type": "application/sparql-query"},
    )
    assert _problem(both, 400, "invalid_field")["field"] == "query"


def test_query_past_the_deadline_is_408(db_path: str) -> None:
    _write(db_path, BIG_TTL)
    with _client(db_path, query_timeout_ms=250) as client:  # a point ASK fits even on a loaded machine
        _problem(client.post("/query", json={"query": RUNAWAY}), 408, "query_timeout")
        assert _select(client, P + "ASK { :s1 :p :o1 }")["result"] is True  # the store stays usable


def test_join_limit_is_422(db_path: str) -> None:
    _write(db_path, BIG_TTL)
    with _client(db_path, max_join_rows=1000) as client:
        body = _problem(client.post("/query", json={"query": PAIRS}), 422, "join_limit_exceeded")
        assert "search.max_join_rows" in body["error"]


def test_request_target_over_8_kib_is_414(client: TestClient) -> None:
    filler = "x" * 8200
    response = client.get("/query", params={"query": f'ASK {{ FILTER("{filler}" != "") }}'})
    _problem(response, 414, "uri_too_long")
    fits = client.get("/query", params={"query": f'ASK {{ FILTER("{"x" * 7000}" != "") }}'})
    assert _ok(fits)["result"] is True


def test_sparql_query_body_over_1_mib_is_413(client: TestClient) -> None:
    text = f'ASK {{ FILTER("{"x" * (1024 * 1024)}" != "") }}'.encode()
    response = client.post("/query", content=text, headers={"Content-Type": "application/sparql-query"})
    _problem(response, 413, "payload_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while read
        yield text[: len(text) // 2]
        yield text[len(text) // 2 :]

    chunked = client.post("/query", content=chunks(), headers={"Content-Type": "application/sparql-query"})
    _problem(chunked, 413, "payload_too_large")
    form = client.post("/query", data={"query": text.decode()})
    _problem(form, 413, "payload_too_large")


def test_a_json_body_may_carry_a_longer_query(client: TestClient) -> None:
    query = f'ASK {{ FILTER("{"x" * (1024 * 1024)}" != "") }}'
    assert _ok(client.post("/query", json={"query": query}))["result"] is True


def test_unsupported_media_type_is_415(client: TestClient) -> None:
    response = client.post("/query", content=b"ASK {}", headers={"Content-Type": "text/plain"})
    _problem(response, 415, "unsupported_media_type")


def test_body_that_is_not_valid_utf8_is_400(client: TestClient) -> None:
    response = client.post(
        "/query", content=b"ASK {\xff}", headers={"Content-Type": "application/sparql-query"}
    )
    _problem(response, 400, "bad_request")


# -- options whose features this build does not have ----------------------------------------------


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"fork": "f", "graph": G1}, "fork"),
        ({"fork": "f", "include_kinds": ["inferred"]}, "fork"),
        ({"federated": True, "valid_at": "2026-01-01T00:00:00Z"}, "federated"),
        ({"federated": True, "tx": 1}, "federated"),
        ({"federated": True, "graph": G1}, "federated"),
        ({"federated": True, "row_labels": True}, "federated"),
    ],
)
def test_mutually_exclusive_fields_are_400(client: TestClient, fields: dict[str, Any], field: str) -> None:
    body = _problem(client.post("/query", json={"query": "ASK {}", **fields}), 400, "conflicting_fields")
    assert body["field"] == field


@pytest.mark.parametrize(
    "fields, field, phrase",
    [
        ({"fork": "experiment"}, "fork", "unknown fork: experiment"),
        ({"row_labels": True}, "row_labels", "labels"),
        ({"federated": True}, "federated", "no federation remotes are configured"),
    ],
)
def test_options_without_their_feature_are_refused(
    client: TestClient, fields: dict[str, Any], field: str, phrase: str
) -> None:
    body = _problem(client.post("/query", json={"query": "ASK {}", **fields}), 400, "unsupported_option")
    assert body["field"] == field and phrase in body["error"]
    params = {"query": "ASK {}", **{k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()}}
    _problem(client.get("/query", params=params), 400, "unsupported_option")


def test_default_option_values_are_accepted(client: TestClient) -> None:
    fields = {"include_kinds": [], "row_labels": False, "federated": False, "fork": None, "verbose": False}
    assert _select(client, P + "ASK { :tom a :Cat }", **fields) == {"result": True, "labels": None}


def test_openapi_documents_every_way_in(client: TestClient) -> None:
    operations = client.get("/openapi.json").json()["paths"]["/query"]
    post = operations["post"]
    assert set(post["requestBody"]["content"]) == {
        "application/json",
        "application/sparql-query",
        "application/x-www-form-urlencoded",
    }
    assert {"query", "default-graph-uri", "named-graph-uri"} <= {
        p["name"] for p in operations["get"]["parameters"]
    }
    assert {"200", "400", "408", "413", "414", "415", "422"} <= set(post["responses"])
