"""GET /entity and the /entity/{iri} path forms (tools-core §1.6), and compaction (§0.6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rdflib import Graph

from quipu.rdfio.curie import PrefixMap
from quipu.rdfio.jsonld import compact_document
from quipu.rest import negotiation
from quipu.rest.entity_page import entity_link
from quipu.rest.routers.reads import split_entity_path
from quipu.shacl import registry

from .support import EX, PREFIXES, RDF_TYPE, RDFS_LABEL, XSD, kb_of, problem, serve

OTHER = "http://other.org/"
DOC = PREFIXES + (
    f'ex:a a ex:Person, ex:Agent ; ex:name "Ay", "Alpha"@en ; ex:age 30 ; ex:ok true ; ex:score 1.5e0 ;\n'
    f'    ex:born "2001-02-03"^^xsd:date ; ex:knows ex:b, ex:c ; <{OTHER}name> "other namespace" .\n'
    'ex:b rdfs:label "Bee" .\nex:c rdfs:label "Sea", "Mer"@fr .\nex:z ex:knows ex:a .\n'
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        kb_of(c).knot(DOC)
        yield c


def _entity(client: TestClient, iri: str, **params: str) -> dict[str, Any]:
    response = client.get("/entity", params={"iri": iri, **params})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/ld+json"
    out: dict[str, Any] = response.json()
    return out


# -- the compacting document builder --------------------------------------------------------------

PREFIXES_MAP = PrefixMap({"ex": EX, "xsd": XSD, "unused": "http://unused.org/"})


def test_compaction_rewrites_keys_ids_types_and_references() -> None:
    doc = {
        "@id": EX + "a",
        "@type": [EX + "Person", OTHER + "Thing"],
        EX + "knows": [{"@id": EX + "b"}, {"@id": OTHER + "x"}],
        EX + "born": {"@value": "2001-02-03", "@type": XSD + "date"},
        EX + "homepage": "http://ex.org/not-a-reference",  # a literal string is never compacted
        OTHER + "name": "n",
    }
    assert compact_document(doc, PREFIXES_MAP) == {
        "@context": {"ex": EX, "xsd": XSD},  # exactly the prefixes used
        "@id": "ex:a",
        "@type": ["ex:Person", OTHER + "Thing"],
        "ex:knows": [{"@id": "ex:b"}, {"@id": OTHER + "x"}],
        "ex:born": {"@value": "2001-02-03", "@type": "xsd:date"},
        "ex:homepage": "http://ex.org/not-a-reference",
        OTHER + "name": "n",
    }


def test_compaction_keeps_unsafe_locals_and_an_empty_map_as_full_iris() -> None:
    doc = {"@id": EX + "a/b", EX + "p.": "x", "@type": EX + "T"}
    assert compact_document(doc, PREFIXES_MAP) == {
        "@context": {"ex": EX},
        "@id": EX + "a/b",
        EX + "p.": "x",
        "@type": "ex:T",
    }
    assert compact_document(doc, PrefixMap()) == {"@context": {}, **doc}


def test_compaction_never_merges_two_keys() -> None:
    # "ex:p" is itself an absolute IRI (scheme "ex"): the CURIE of http://ex.org/p would collide.
    doc = {"@id": EX + "a", "ex:p": "scheme ex", EX + "p": "namespace ex", EX + "q": "q"}
    out = compact_document(doc, PREFIXES_MAP)
    assert out["ex:p"] == "scheme ex" and out[EX + "p"] == "namespace ex" and out["ex:q"] == "q"


def test_entity_route_compacts_with_the_loaded_prefixes(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "loaded_prefixes", lambda db: PrefixMap({"ex": EX}))
    doc = _entity(client, EX + "b")
    assert doc == {"@context": {"ex": EX}, "@id": "ex:b", RDFS_LABEL: "Bee"}
    # The expanded form never compacts.
    assert _entity(client, EX + "b", expanded="true")["@id"] == EX + "b"


# -- GET /entity ----------------------------------------------------------------------------------


def test_entity_compact_form_and_value_forms(client: TestClient) -> None:
    doc = _entity(client, EX + "a")
    assert doc == {
        "@context": {},  # no shape sets loaded: nothing compacts
        "@id": EX + "a",
        "@type": [EX + "Agent", EX + "Person"],
        EX + "age": 30,
        EX + "born": {"@value": "2001-02-03", "@type": XSD + "date"},
        EX + "knows": [{"@id": EX + "b"}, {"@id": EX + "c"}],
        EX + "name": [{"@value": "Alpha", "@language": "en"}, "Ay"],  # ordered by value
        EX + "ok": True,
        EX + "score": {"@value": "1.5e0", "@type": XSD + "double"},  # kept as written
        OTHER + "name": "other namespace",
    }


def test_entity_expanded_form_labels_referenced_nodes(client: TestClient) -> None:
    for flag in ("true", "1"):
        doc = _entity(client, EX + "a", expanded=flag)
        assert "@context" not in doc
        assert doc[EX + "knows"] == [
            {"@id": EX + "b", RDFS_LABEL: "Bee"},
            {"@id": EX + "c", RDFS_LABEL: [{"@value": "Mer", "@language": "fr"}, "Sea"]},
        ]
    for flag in ("false", "0"):
        assert "@context" in _entity(client, EX + "a", expanded=flag)


def test_rule1_entity_is_root_current_and_outgoing_only(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}b> <{EX}p> "named graph" .', graph=EX + "g")
    kb.knot(f'<{EX}b> <{EX}q> "retracted" .')
    kb.retract(EX + "b", EX + "q")
    doc = _entity(client, EX + "b")
    assert doc == {"@context": {}, "@id": EX + "b", RDFS_LABEL: "Bee"}  # ex:a ex:knows ex:b is incoming


def test_rule2_an_iri_without_statements_is_an_empty_description(client: TestClient) -> None:
    assert _entity(client, EX + "never") == {"@context": {}, "@id": EX + "never"}
    assert _entity(client, EX + "never", expanded="1") == {"@id": EX + "never"}
    page = client.get(f"/entity/{EX}never")
    assert page.status_code == 200 and "No current statements" in page.text


def test_rule3_keys_from_two_namespaces_never_merge(client: TestClient) -> None:
    doc = _entity(client, EX + "a")
    assert doc[EX + "name"] != doc[OTHER + "name"]
    assert "name" not in doc


def test_rule4_each_statement_once_whatever_its_owners(client: TestClient) -> None:
    kb_of(client).knot(f'<{EX}b> <{RDFS_LABEL}> "Bee" .', source="second-owner")
    assert _entity(client, EX + "b")[RDFS_LABEL] == "Bee"


def test_entity_blank_node_subject(client: TestClient) -> None:
    kb_of(client).knot(PREFIXES + 'ex:h ex:addr [ ex:city "Lima" ] .\n')
    ref = _entity(client, EX + "h")[EX + "addr"]["@id"]
    assert ref.startswith("_:b")
    assert _entity(client, ref)[EX + "city"] == "Lima"


def test_entity_refusals(client: TestClient) -> None:
    assert problem(client.get("/entity"), "missing_field")["field"] == "iri"
    problem(client.get("/entity", params={"iri": "not an iri"}), "invalid_field")
    problem(client.get("/entity", params={"iri": ""}), "invalid_field")
    assert (
        problem(client.get("/entity", params={"iri": EX + "a", "expanded": "yes"}), "wrong_type")["field"]
        == "expanded"
    )
    body = problem(client.get("/entity", params={"iri": EX + "a", "entity": "x"}), "unknown_field")
    assert body["field"] == "entity"


# -- the /entity/{iri} path forms ----------------------------------------------------------------


@pytest.mark.parametrize(
    "accept", ["application/ld+json", "application/json", "text/html;q=0.5, application/json"]
)
def test_path_form_negotiates_json_ld(client: TestClient, accept: str) -> None:
    response = client.get(f"/entity/{EX}b", headers={"accept": accept})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/ld+json"
    assert response.json() == {"@context": {}, "@id": EX + "b", RDFS_LABEL: "Bee"}


def test_path_form_negotiates_turtle(client: TestClient) -> None:
    response = client.get(f"/entity/{EX}a", headers={"accept": "text/turtle"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/turtle")
    graph = Graph().parse(data=response.text, format="turtle")
    assert len(graph) == 11
    assert {str(s) for s in graph.subjects()} == {EX + "a"}


@pytest.mark.parametrize("accept", ["text/html", "*/*", "image/png", ""])
def test_path_form_serves_html_otherwise(client: TestClient, accept: str) -> None:
    response = client.get(f"/entity/{EX}c", headers={"accept": accept})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "<!DOCTYPE html>" in response.text and "Mer" in response.text


@pytest.mark.parametrize(
    ("suffix", "media"), [("json", "application/ld+json"), ("ttl", "text/turtle"), ("html", "text/html")]
)
def test_path_form_suffix_pins_the_format(client: TestClient, suffix: str, media: str) -> None:
    for accept in ("text/turtle", "application/json", "text/html"):
        response = client.get(f"/entity/{EX}b/{suffix}", headers={"accept": accept})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith(media)


def test_rule2_turtle_form_refuses_an_iri_never_seen(client: TestClient) -> None:
    body = problem(client.get(f"/entity/{EX}never/ttl"), "not_found")
    assert body["error"] == f"entity not found: {EX}never"
    # Known to the dictionary but without statements: an empty document, not an error.
    response = client.get(f"/entity/{EX}Person/ttl")  # only ever an object
    assert response.status_code == 200 and response.text == ""


def test_path_form_repairs_a_collapsed_double_slash(client: TestClient) -> None:
    response = client.get("/entity/http:/ex.org/b/json")
    assert response.json()["@id"] == EX + "b"
    assert split_entity_path("https:/ex.org/a") == ("https://ex.org/a", None)
    assert split_entity_path("urn:x:y/ttl") == ("urn:x:y", "turtle")
    assert split_entity_path("http://ex.org/a") == ("http://ex.org/a", None)


def test_path_form_decodes_percent_encoded_fragments(client: TestClient) -> None:
    kb_of(client).knot(f'<{EX}doc#part> <{EX}p> "hash" .')
    response = client.get("/entity/" + entity_link(EX + "doc#part", "json").removeprefix("/entity/"))
    assert response.json() == {"@context": {}, "@id": EX + "doc#part", EX + "p": "hash"}


def test_path_form_expanded_and_strict_parameters(client: TestClient) -> None:
    response = client.get(f"/entity/{EX}a/json", params={"expanded": "1"})
    assert "@context" not in response.json()
    assert response.json()[EX + "knows"][0][RDFS_LABEL] == "Bee"
    problem(client.get(f"/entity/{EX}a/json", params={"iri": EX + "b"}), "unknown_field")
    problem(client.get("/entity/not-an-iri/json"), "invalid_field")


def test_html_page_escapes_stored_text(client: TestClient) -> None:
    kb_of(client).knot(f'<{EX}x> <{EX}note> "<script>alert(1)</script>" ; <{EX}link> <{EX}y?q=1#f> .')
    page = client.get(f"/entity/{EX}x/html").text
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'href="/entity/http://ex.org/y%3Fq%3D1%23f/html"' in page


def test_html_page_links_referenced_entities_by_label(client: TestClient) -> None:
    page = client.get(f"/entity/{EX}a/html").text
    assert f'<a href="{entity_link(EX + "b")}">Bee</a>' in page
    assert RDF_TYPE not in page  # types are shown as a "type" row


def test_accept_parsing_honours_q_values() -> None:
    offers = {"a/x": 1, "b/y": 2}
    assert negotiation.preferred("a/x;q=0.4, b/y;q=0.9", offers, 0) == 2
    assert negotiation.preferred("b/y, a/x", offers, 0) == 2  # ties: the client's order
    assert negotiation.preferred("a/x;q=0, */*", offers, 0) == 0
    assert negotiation.preferred(None, offers, 0) == 0
    assert negotiation.preferred("A/X;Q=bad, a/x", offers, 0) == 1
