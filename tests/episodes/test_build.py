"""Episode IRIs, the content hash and the statements an episode generates (DM §9.1-§9.4)."""

from __future__ import annotations

import pytest
from rdflib import Literal, URIRef

from quipu.episodes.build import Edge, Episode, Node, build, content_hash, parse_episode
from quipu.episodes.iris import activity_iri, entity_iri, fnv1a64, relation_iri, sanitize
from quipu.errors import InvalidField
from quipu.store import values

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

NS = "http://ns.example/"


def test_sanitize_replaces_everything_outside_the_local_name_alphabet() -> None:
    assert sanitize("svc A/b#c") == "svc_A_b_c"
    assert sanitize("ok.name-1_x") == "ok.name-1_x"


def test_fnv1a64_matches_the_reference_vectors() -> None:
    assert fnv1a64("") == "cbf29ce484222325"
    assert fnv1a64("a") == "af63dc4c8601ec8c"
    assert fnv1a64("foobar") == "85944171f73967e8"


def test_iris_are_minted_under_base_ns() -> None:
    assert activity_iri(NS, "my ep") == NS + "episode_my_ep"
    assert entity_iri(NS, "svc A") == NS + "svc_A"


@pytest.mark.parametrize(
    ("relation", "iri", "written"),
    [
        ("runs_on", NS + "runs_on", "aegis:runs_on"),
        ("owl:sameAs", "http://www.w3.org/2002/07/owl#sameAs", "owl:sameAs"),
        ("<http://x.org/rel>", "http://x.org/rel", "<http://x.org/rel>"),
    ],
)
def test_relations_are_used_exactly_as_given(relation: str, iri: str, written: str) -> None:
    assert relation_iri(NS, relation) == (iri, written)


@pytest.mark.parametrize(
    ("relation", "phrase"),
    [
        ("", "empty 'relation'"),
        ("runs on", "would be rewritten"),
        ("ex:rel", "/set"),
        ("owl:same as", "local name"),
        ("<norel>", "not a full IRI"),
    ],
)
def test_relations_that_would_be_rewritten_are_refused(relation: str, phrase: str) -> None:
    with pytest.raises(InvalidField, match=phrase):
        relation_iri(NS, relation)


def test_the_undeclared_prefix_message_names_the_full_iri_form() -> None:
    with pytest.raises(InvalidField, match="<full-iri>"):
        relation_iri(NS, "ex:rel")


@pytest.mark.parametrize(
    ("type_", "phrase"), [(None, "has no type"), ("", "has no type"), ("A,B", "comma"), ("A B", "rewritten")]
)
def test_bad_node_types_refuse_the_whole_episode(type_: str | None, phrase: str) -> None:
    episode = Episode("e", nodes=(Node("n", "Good"), Node("m", type_)))
    with pytest.raises(InvalidField, match=phrase):
        build(episode, NS)


def test_hash_ignores_node_and_edge_order_but_not_content() -> None:
    a, b = Node("a", "T", properties={"x": 1, "y": [1, 2]}), Node("b", "T")
    e1, e2 = Edge("a", "b", "r"), Edge("b", "a", "r", 0.5)
    one = Episode("e", nodes=(a, b), edges=(e1, e2))
    assert content_hash(one) == content_hash(Episode("e", nodes=(b, a), edges=(e2, e1)))
    assert content_hash(one) != content_hash(Episode("other", nodes=(a, b), edges=(e1, e2)))
    assert content_hash(one) != content_hash(
        Episode("e", nodes=(a, b), edges=(e1, e2), replace_snapshot=True)
    )


def test_hash_follows_the_specified_line_format() -> None:
    episode = Episode(
        "e", episode_body="b", source="s", group_id="g", nodes=(Node("n", "T", "d", {"k": "v"}),)
    )
    lines = 'name=e\nreplace_snapshot=false\nbody=b\nsource=s\ngroup=g\nnode:n|T|d|k="v"'
    assert content_hash(episode) == fnv1a64(lines)


def test_distinct_from_is_not_part_of_the_hash() -> None:
    plain = Episode("e", nodes=(Node("n", "T"),))
    distinct = Episode("e", nodes=(Node("n", "T", distinct_from=("http://x.org/o",)),))
    assert content_hash(plain) == content_hash(distinct)


def _triples(episode: Episode) -> set[tuple[str, str, object]]:
    return {(s, p, o) for _g, s, p, o in build(episode, NS).batch.statements}


def test_activity_statements() -> None:
    got = _triples(Episode("e", episode_body="body", source="agent", group_id="g1"))
    act = NS + "episode_e"
    assert (act, values.RDF + "type", "http://www.w3.org/ns/prov#Activity") in got
    assert (act, "http://www.w3.org/2000/01/rdf-schema#comment", values.string("body")) in got
    assert (act, "http://www.w3.org/ns/prov#wasAssociatedWith", values.string("agent")) in got
    assert (act, NS + "groupId", values.string("g1")) in got
    assert any(p == NS + "contentHash" for _s, p, _o in got)


def test_node_statements_and_property_literals() -> None:
    node = Node(
        "svc",
        "Service",
        "desc",
        {"port": 80, "ratio": 0.5, "up": True, "tags": ["a", "b", {"x": 1}], "none": None, "obj": {"k": 1}},
        ("http://x.org/other",),
    )
    got = _triples(Episode("e", nodes=(node,)))
    svc = NS + "svc"
    assert (svc, values.RDF + "type", NS + "Service") in got
    assert (svc, "http://www.w3.org/ns/prov#wasGeneratedBy", NS + "episode_e") in got
    assert (svc, "https://quipu.dev/ontology/distinctFrom", "http://x.org/other") in got
    assert (svc, NS + "port", values.integer(80)) in got
    assert (svc, NS + "ratio", values.double(0.5)) in got
    assert (svc, NS + "up", values.boolean(True)) in got
    assert {o for s, p, o in got if p == NS + "tags"} == {values.string("a"), values.string("b")}
    assert not any(p in (NS + "none", NS + "obj") for _s, p, _o in got)


def test_confidence_reifies_the_edge_beside_the_bare_triple() -> None:
    got = _triples(Episode("e", edges=(Edge("a", "b", "uses", 0.9), Edge("a", "c", "uses", "EXTRACTED"))))
    assert (NS + "a", NS + "uses", NS + "b") in got
    stmt = f"{NS}stmt_{fnv1a64('a|aegis:uses|b')}"
    assert (stmt, values.RDF + "subject", NS + "a") in got
    assert (
        stmt,
        "https://quipu.dev/ontology/confidence",
        values.literal("0.9", values.XSD + "decimal"),
    ) in got
    grade = f"{NS}stmt_{fnv1a64('a|aegis:uses|c')}"
    assert (grade, "https://quipu.dev/ontology/confidence", values.string("EXTRACTED")) in got


def test_other_confidence_types_are_ignored() -> None:
    got = _triples(Episode("e", edges=(Edge("a", "b", "uses", True),)))
    assert not any("stmt_" in s for s, _p, _o in got)


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
        ({"name": None}, "missing 'name'"),
        ({"name": 3}, "'name' must be a string"),
        ({"name": "e", "nodes": [{"type": "T"}]}, "missing 'name'"),
        ({"name": "e", "nodes": "x"}, "must be an array"),
        ({"name": "e", "edges": [{"source": "a", "target": "b"}]}, "missing 'relation'"),
    ],
)
def test_malformed_episodes_are_invalid_episode_json(kwargs: dict[str, object], phrase: str) -> None:
    name = kwargs.pop("name")
    with pytest.raises(InvalidField, match="invalid episode JSON") as raised:
        parse_episode(name, **kwargs)  # type: ignore[arg-type]
    assert phrase in raised.value.message


def test_distinct_from_alias_is_accepted() -> None:
    episode = parse_episode("e", nodes=[{"name": "n", "type": "T", "distinctFrom": ["http://x.org/o"]}])
    assert episode.nodes[0].distinct_from == ("http://x.org/o",)


def test_the_built_statements_as_an_rdflib_graph_for_gates() -> None:
    # Strings carry xsd:string explicitly, as shapes parse them, so sh:in and sh:hasValue match.
    label = Literal("n", datatype=URIRef(values.XSD_STRING))
    built = build(Episode("e", nodes=(Node("n", "T", properties={"k": 2}),)), NS)
    graph = built.graph()
    assert len(graph) == len(built.batch.statements)
    assert (URIRef(NS + "n"), URIRef(NS + "k"), Literal("2", datatype=URIRef(values.XSD_INTEGER))) in graph
    assert (URIRef(NS + "n"), URIRef("http://www.w3.org/2000/01/rdf-schema#label"), label) in graph
