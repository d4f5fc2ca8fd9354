"""quipu_ask (tools-search §5.17): the catalog, parameter handling by kind, the injection guard,
dispatch, dataset and graph scoping, the built-in questions over both vocabularies, and the
value shapes of the run response."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.errors import InvalidField
from quipu.graphs.ask_catalog import BUILTINS
from quipu.graphs.query_params import ParamSpec, placeholders
from quipu.graphs.query_shape import guarded
from tests.rest.support import serve

from .question_support import RDFS, chain, commit, edge, reads_nothing
from .support import EX, G1, G2, knot, ok, refused

BUILTIN_NAMES = [
    "brief_ground",
    "brief_related",
    "entity_summary",
    "entity_facts",
    "service_deps",
    "references_to",
    "entities_of_type",
    "labeled_like",
    "entity_work",
    "cochanged_with",
]
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def ask(client: TestClient, name: object = None, **params: Any) -> dict[str, Any]:
    return ok(client, "/ask", name=name, params=params)


def rows(client: TestClient, name: str, **params: Any) -> list[dict[str, Any]]:
    return list(ask(client, name, **params)["rows"])


def provenance(client: TestClient) -> None:
    """Work items W-1, W-2 and W-3; W-1 and W-2 share e1 and e2 (e1 under both vocabularies),
    W-1 and W-3 share e3. Identifiers and file paths are spread over both vocabularies."""
    chain(
        client,
        *commit("c1", "w1", "e1", "e2"),
        edge("c1", "implements", "w1", "quechua"),  # the same edge twice, in both vocabularies
        edge("c1", "modifies", "e1", "quechua"),
        *commit("c2", "w2", "e1", implements="quechua", modifies="quechua"),
        *commit("c2b", "w2", "e2", implements="quechua"),
        *commit("c3", "w1", "e3", modifies="quechua"),
        *commit("c4", "w3", "e3"),
        f'<{EX}w1> <http://aegis.gastown.local/ontology/identifier> "W-1" .',
        f'<{EX}w1> <https://scbrown.github.io/quechua/ns#identifier> "W-1" .',
        f'<{EX}w2> <https://scbrown.github.io/quechua/ns#identifier> "W-2" .',
        f'<{EX}w3> <http://aegis.gastown.local/ontology/identifier> "W-3" .',
        f'<{EX}e1> <http://aegis.gastown.local/ontology/filePath> "src/a.py" .',
        f'<{EX}e1> <https://scbrown.github.io/quechua/ns#filePath> "src/a.py" .',
        f'<{EX}e2> <https://scbrown.github.io/quechua/ns#filePath> "src/b.py" .',
        f'<{EX}e3> <http://aegis.gastown.local/ontology/filePath> "src/c.py" .',
    )


def entity(client: TestClient) -> None:
    knot(
        client,
        f"""<{EX}svc> a <{EX}Service>, <{EX}Thing> ;
            <{RDFS}label> "Gateway O'Brien"@en ;
            <{RDFS}comment> "routes traffic" ;
            <{EX}dependsOn> <{EX}db>, <{EX}cache> ;
            <{EX}port> 8080 ;
            <{EX}ratio> "0.5"^^<{XSD}double> ;
            <{EX}public> true ;
            <{EX}since> "2026-01-01"^^<{XSD}date> .
        <{EX}web> <{EX}calls> <{EX}svc> .
        <{EX}db> a <{EX}Service> .""",
    )


# == catalog ========================================================================================


def test_rule1_an_empty_call_and_name_list_both_return_the_catalog_built_ins_first(
    client: TestClient,
) -> None:
    ok(client, "/queries", action="load", name="aaa_first_by_name", template="SELECT * WHERE { ?s ?p ?o }")
    for body in ({}, {"name": "list"}, {"name": 7}, {"name": None}):
        out = ok(client, "/ask", **body)
        assert [q["name"] for q in out["queries"]] == [*BUILTIN_NAMES, "aaa_first_by_name"]
        assert out["usage"].startswith('Call with {"name": "<query>"')
    catalog = ok(client, "/ask")["queries"]
    assert catalog[3] == {
        "name": "entity_facts",
        "description": "Every predicate/object pair with the entity as subject.",
        "params": [
            {
                "name": "entity",
                "type": "iri",
                "required": True,
                "default": None,
                "description": "the entity IRI",
            },
            {
                "name": "limit",
                "type": "int",
                "required": False,
                "default": "100",
                "description": "maximum rows",
            },
        ],
        "source": "builtin",
    }
    assert catalog[-1]["source"] == "stored" and catalog[-1]["dataset"] is None


def test_every_built_in_ends_with_its_limit_and_has_the_spec_defaults() -> None:
    defaults = {q.name: next(p.default for p in q.params if p.name == "limit") for q in BUILTINS}
    assert defaults == {
        "brief_ground": "50",
        "brief_related": "10",
        "entity_summary": "10",
        "entity_facts": "100",
        "service_deps": "50",
        "references_to": "50",
        "entities_of_type": "100",
        "labeled_like": "50",
        "entity_work": "100",
        "cochanged_with": "50",
    }
    assert all(q.template.endswith("LIMIT {limit}") for q in BUILTINS)


# == parameter handling =============================================================================


def test_rule3_an_int_limit_renders_as_limit_n_and_an_injected_one_is_refused(client: TestClient) -> None:
    entity(client)
    out = ask(client, "entity_facts", entity=EX + "svc", limit=5)
    assert out["sparql"].endswith("\nLIMIT 5") and out["count"] == 5
    body = refused(client, "/ask", "param 'limit': '5; DROP' is not an integer",
                   name="entity_facts", params={"entity": EX + "svc", "limit": "5; DROP"})  # fmt: skip
    assert body["field"] == "params"


@pytest.mark.parametrize(
    ("value", "rendered"),
    [(" 07", "7"), ("-0", "0"), ("+3", "3"), (9223372036854775807, "9223372036854775807")],
)
def test_an_int_is_trimmed_parsed_as_64_bits_and_reprinted(
    client: TestClient, value: Any, rendered: str
) -> None:
    out = ask(client, "entities_of_type", type=EX + "T", limit=value)
    assert out["sparql"].endswith(f"LIMIT {rendered}")


@pytest.mark.parametrize("value", [5.0, "5.0", "1e3", "0x10", "", "9223372036854775808", "٣", "1_000", True])
def test_a_non_integer_int_param_is_refused(client: TestClient, value: Any) -> None:
    refused(
        client,
        "/ask",
        "is not an integer",
        name="entities_of_type",
        params={"type": EX + "T", "limit": value},
    )


def test_a_negative_limit_is_refused_naming_the_param(client: TestClient) -> None:
    body = refused(client, "/ask", "param 'limit': the query does not parse",
                   name="entities_of_type", params={"type": EX + "T", "limit": -1})  # fmt: skip
    assert body["field"] == "params"


@pytest.mark.parametrize("value", [[EX], {"iri": EX}, None])
def test_an_array_object_or_null_value_is_an_unsupported_value_type(client: TestClient, value: Any) -> None:
    refused(
        client,
        "/ask",
        "param 'entity': unsupported value type",
        name="entity_facts",
        params={"entity": value},
    )


def test_numbers_and_booleans_become_their_json_text(client: TestClient) -> None:
    knot(client, f'<{EX}n> <{RDFS}label> "v true 5.5 x" .')
    for value, text in ((True, "true"), (5.5, "5.5"), (5, "5")):
        out = ask(client, "labeled_like", text=value)
        assert f"LCASE('{text}')" in out["sparql"]
        assert out["rows"] == [{"s": EX + "n", "label": "v true 5.5 x"}]


def test_a_missing_required_param_is_refused_naming_query_and_param(client: TestClient) -> None:
    refused(client, "/ask", "named query 'entity_facts' requires param 'entity'", name="entity_facts")
    refused(
        client,
        "/ask",
        "named query 'brief_ground' requires param 'item'",
        name="brief_ground",
        params={"limit": 3},
    )


def test_an_empty_iri_is_refused(client: TestClient) -> None:
    refused(client, "/ask", "param 'entity': empty IRI", name="entity_facts", params={"entity": ""})


def test_keys_the_query_does_not_declare_are_ignored(client: TestClient) -> None:
    entity(client)
    out = ask(client, "entities_of_type", type=EX + "Service", other=[1, 2], also={"x": None})
    assert out["count"] == 2


def test_params_must_be_an_object(client: TestClient) -> None:
    response = client.post("/ask", json={"name": "entity_facts", "params": ["entity"]})
    assert response.status_code == 400 and response.json()["field"] == "params"


def test_rule4_o_brien_is_escaped_so_the_query_parses_and_matches(client: TestClient) -> None:
    entity(client)
    out = ask(client, "labeled_like", text="o'brien")
    assert "LCASE('o\\'brien')" in out["sparql"]
    assert out["rows"] == [{"s": EX + "svc", "label": {"value": "Gateway O'Brien", "lang": "en"}}]


def test_substitution_is_a_single_pass_so_a_value_holding_a_placeholder_stays_text(
    client: TestClient,
) -> None:
    knot(client, f'<{EX}n> <{RDFS}label> "see {{limit}} here" .')
    out = ask(client, "labeled_like", text="{limit}", limit=3)
    assert "LCASE('{limit}')" in out["sparql"] and out["sparql"].endswith("LIMIT 3")
    assert out["rows"] == [{"s": EX + "n", "label": "see {limit} here"}]


# == injection ======================================================================================

# (query, params, the param a refusal names, its phrase); no phrase: the value must be bound as a
# literal that matches nothing, leaving the query's shape as it was.
INJECTIONS: list[tuple[str, dict[str, Any], str, str | None]] = [
    ("entity_facts", {"entity": 'x" ?p ?o'}, "entity", "invalid character in IRI"),
    ("entity_facts", {"entity": "x> ?p ?o } DROP ALL #"}, "entity", "invalid character in IRI"),
    ("entity_facts", {"entity": "x}"}, "entity", "invalid character in IRI"),
    ("entity_facts", {"entity": "x} UNION {?s ?p ?o"}, "entity", "invalid character in IRI"),
    ("entity_facts", {"entity": "x\u0000"}, "entity", "invalid character in IRI"),
    ("entity_facts", {"entity": "x\ny"}, "entity", "invalid character in IRI"),
    ("entity_facts", {"entity": "x" * 100_000}, "entity", "at most 4096 are accepted"),
    ("entity_facts", {"entity": EX + "svc", "limit": "5 } UNION { ?s ?p ?o }"}, "limit", "is not an integer"),
    ("entity_facts", {"entity": EX + "svc", "limit": "5\n"}, "limit", None),  # trimmed: a plain 5
    ("labeled_like", {"text": '"'}, "text", None),
    ("labeled_like", {"text": "x'y"}, "text", None),
    ("labeled_like", {"text": ">"}, "text", None),
    ("labeled_like", {"text": "}"}, "text", None),
    ("labeled_like", {"text": "') ) } UNION { ?s ?p ?o } #"}, "text", None),
    ("labeled_like", {"text": "\\') ) } UNION { ?s ?p ?label FILTER('"}, "text", None),
    ("labeled_like", {"text": '") ) } UNION { ?s ?p ?label } #'}, "text", None),
    ("labeled_like", {"text": "line\nbreak\r\ttab"}, "text", None),
    ("labeled_like", {"text": "nul\u0000"}, "text", "control character U+0000"),
    ("labeled_like", {"text": "bell\u0007"}, "text", "control character U+0007"),
    ("labeled_like", {"text": "x" * 100_000}, "text", "at most 4096 are accepted"),
    ("brief_ground", {"item": "W-1' . ?x ?y ?path . #"}, "item", None),
]


def _template_pieces(template: str) -> list[str]:
    pieces, last = [], 0
    for start, end, _ in placeholders(template):
        pieces.append(template[last:start])
        last = end
    return [*pieces, template[last:]]


@pytest.mark.parametrize(
    ("name", "params", "culprit", "phrase"), INJECTIONS, ids=[repr(i[1])[:40] for i in INJECTIONS]
)
def test_sparql_fragments_in_params_are_refused_or_bound_as_a_literal_that_matches_nothing(
    client: TestClient, name: str, params: dict[str, Any], culprit: str, phrase: str | None
) -> None:
    entity(client)
    provenance(client)
    before = reads_nothing(client)
    response = client.post("/ask", json={"name": name, "params": params})
    if phrase is not None:
        assert response.status_code == 400, response.text
        body = response.json()
        assert phrase in body["error"] and f"param '{culprit}'" in body["error"]
        assert body["field"] == "params"
    else:
        assert response.status_code == 200, response.text
        out = response.json()
        template = next(q for q in BUILTINS if q.name == name).template
        # Every piece of the template's own text is there, in order: nothing was added or moved.
        position = 0
        for piece in _template_pieces(template):
            found = out["sparql"].find(piece, position)
            assert found >= position, (piece, out["sparql"])
            position = found + len(piece)
        assert out["sparql"].count("\n") == template.count("\n")
        plain = {k: "1" if k == "limit" else "z" for k in params}
        assert out["columns"] == ask(client, name, **plain)["columns"]
        if name == "entity_facts":
            assert out["count"] == 5 and out["sparql"].endswith("LIMIT 5")
        else:
            assert out["rows"] == []  # a literal that matches nothing
    assert reads_nothing(client) == before


def test_rule2_an_injected_entity_is_refused_and_never_executed(client: TestClient) -> None:
    knot(client, f"<{EX}s> <{EX}p> <{EX}o> .")
    before = reads_nothing(client)
    body = refused(client, "/ask", "invalid character in IRI",
                   name="entity_facts", params={"entity": "x> ?p ?o } DROP ALL #"})  # fmt: skip
    assert "param 'entity'" in body["error"]
    assert reads_nothing(client) == before


def test_a_stored_query_is_guarded_the_same_way(client: TestClient) -> None:
    template = 'SELECT ?s WHERE { ?s <http://ex.org/p> "{v}" } LIMIT {n}'
    params = [{"name": "v", "required": True}, {"name": "n", "type": "int", "default": "3"}]
    ok(client, "/queries", action="load", name="dq", template=template, params=params)
    knot(client, f'<{EX}s> <{EX}p> "a\\"b" .')
    out = ask(client, "dq", v='a"b')
    assert out["sparql"] == 'SELECT ?s WHERE { ?s <http://ex.org/p> "a\\"b" } LIMIT 3'
    assert out["rows"] == [{"s": EX + "s"}]
    assert ask(client, "dq", v='" } UNION { ?s ?p ?o } #')["rows"] == []


# == dispatch ======================================================================================


def test_an_unknown_name_is_refused_pointing_at_the_catalog(client: TestClient) -> None:
    refused(client, "/ask", "unknown named query 'nope'; call quipu_ask with no name to list available queries",
            name="nope")  # fmt: skip


def test_rule5_a_stored_query_named_like_a_built_in_is_unreachable(client: TestClient) -> None:
    entity(client)
    template = "SELECT ?x WHERE { BIND(<{entity}> AS ?x) }"
    params = [{"name": "entity", "type": "iri", "required": True}]
    ok(client, "/queries", action="load", name="entity_facts", template=template, params=params)
    out = ask(client, "entity_facts", entity=EX + "svc")
    assert out["columns"] == ["p", "o"]  # the built-in ran
    names = [q["name"] for q in ok(client, "/ask")["queries"]]
    assert names == BUILTIN_NAMES  # and the catalog does not offer the shadowed one
    assert [q["name"] for q in ok(client, "/queries")["queries"]] == ["entity_facts"]


def test_a_stored_query_runs_with_its_dataset_unless_the_caller_names_a_graph(client: TestClient) -> None:
    for g, who in ((G1, "one"), (G2, "two")):
        ok(client, "/graph/create", graph=g)
        knot(client, f"<{EX}{who}> a <{EX}T> .", graph=g)
    knot(client, f"<{EX}root> a <{EX}T> .")
    ok(client, "/datasets", action="create", name=EX + "ds", members=[G1, G2])
    template = "SELECT ?s WHERE { ?s a <{type}> } ORDER BY ?s"
    params = [{"name": "type", "type": "iri", "required": True}]
    ok(client, "/queries", action="load", name="typed", template=template, params=params, dataset=EX + "ds")

    def scoped(**extra: Any) -> list[str]:
        out = ok(client, "/ask", name="typed", params={"type": EX + "T"}, **extra)
        return [r["s"] for r in out["rows"]]

    assert scoped() == [EX + "one", EX + "two"]  # the dataset's members
    assert scoped(graph=G2) == [EX + "two"]  # the caller's graph, not the dataset
    assert scoped(graph="urn:quipu:graph:root") == [EX + "root"]
    assert scoped(graph=EX + "unknown") == []  # as quipu_query: an unknown graph reads as empty


def test_graph_scopes_a_built_in_too(client: TestClient) -> None:
    ok(client, "/graph/create", graph=G1)
    knot(client, f"<{EX}inside> a <{EX}T> .", graph=G1)
    knot(client, f"<{EX}outside> a <{EX}T> .")
    assert rows(client, "entities_of_type", type=EX + "T") == [{"s": EX + "outside"}]
    out = ok(client, "/ask", name="entities_of_type", params={"type": EX + "T"}, graph=G1)
    assert out["rows"] == [{"s": EX + "inside"}]


def test_unknown_keys_come_back_as_ignored_fields(client: TestClient) -> None:
    out = ok(client, "/ask", name="entities_of_type", params={"type": EX + "T"}, zeta=1, alpha=True)
    assert out["ignored_fields"] == ["alpha", "zeta"]
    assert "ignored_fields" not in ok(client, "/ask")


# == the built-in questions =======================================================================


def test_brief_ground_reads_both_vocabularies_and_lists_each_path_once(client: TestClient) -> None:
    provenance(client)
    assert rows(client, "brief_ground", item="W-1") == [
        {"path": "src/a.py"},
        {"path": "src/b.py"},
        {"path": "src/c.py"},
    ]
    assert rows(client, "brief_ground", item="W-1", limit=1) == [{"path": "src/a.py"}]


def test_brief_related_counts_distinct_shared_entities_and_excludes_the_item(client: TestClient) -> None:
    provenance(client)
    out = ask(client, "brief_related", item="W-1")
    assert out["columns"] == ["other", "shared_entities"]
    assert out["rows"] == [{"other": "W-2", "shared_entities": 2}, {"other": "W-3", "shared_entities": 1}]
    assert rows(client, "brief_related", item="W-2") == [{"other": "W-1", "shared_entities": 2}]


def test_entity_work_lists_each_commit_and_bead_pair_once(client: TestClient) -> None:
    provenance(client)
    assert rows(client, "entity_work", entity=EX + "e1") == [
        {"commit": EX + "c1", "bead": EX + "w1"},
        {"commit": EX + "c2", "bead": EX + "w2"},
    ]


def test_cochanged_with_counts_distinct_shared_work_items_and_excludes_the_entity(client: TestClient) -> None:
    provenance(client)
    out = ask(client, "cochanged_with", entity=EX + "e1")
    assert out["columns"] == ["other", "shared_workitems"]
    assert out["rows"] == [
        {"other": EX + "e2", "shared_workitems": 2},
        {"other": EX + "e3", "shared_workitems": 1},
    ]


def test_rule6_empty_provenance_results_are_count_zero(client: TestClient) -> None:
    entity(client)  # facts, but no provenance chain
    for name, params in (("brief_ground", {"item": "W-1"}), ("brief_related", {"item": "W-1"}),
                         ("entity_work", {"entity": EX + "svc"}), ("cochanged_with", {"entity": EX + "svc"})):  # fmt: skip
        out = ask(client, name, **params)
        assert out["rows"] == [] and out["count"] == 0


def test_a_third_namespace_with_the_same_local_names_never_matches(client: TestClient) -> None:
    other = "http://other.example/ns#"
    knot(client, f'<{EX}w9> <{other}identifier> "W-9" .\n<{EX}c9> <{other}implements> <{EX}w9> .\n'
                 f'<{EX}c9> <{other}modifies> <{EX}e9> .\n<{EX}e9> <{other}filePath> "src/z.py" .')  # fmt: skip
    assert rows(client, "brief_ground", item="W-9") == []
    assert rows(client, "entity_work", entity=EX + "e9") == []


def test_entity_summary_gives_label_type_and_comment_without_the_facts(client: TestClient) -> None:
    entity(client)
    out = ask(client, "entity_summary", entity=EX + "svc")
    assert out["columns"] == ["label", "type", "comment"]
    label = {"value": "Gateway O'Brien", "lang": "en"}
    assert out["rows"] == [
        {"label": label, "type": EX + "Service", "comment": "routes traffic"},
        {"label": label, "type": EX + "Thing", "comment": "routes traffic"},
    ]
    assert rows(client, "entity_summary", entity=EX + "db") == [{"type": EX + "Service"}]  # unbound: absent
    assert rows(client, "entity_summary", entity=EX + "nobody") == []


def test_entity_facts_service_deps_and_references_to(client: TestClient) -> None:
    entity(client)
    facts = ask(client, "entity_facts", entity=EX + "svc")
    assert facts["columns"] == ["p", "o"] and facts["count"] == 10
    values = {r["p"]: r["o"] for r in facts["rows"] if r["p"] != RDF_TYPE}
    assert values[EX + "port"] == 8080
    assert values[EX + "ratio"] == 0.5
    assert values[EX + "public"] is True
    assert values[EX + "since"] == {"value": "2026-01-01", "datatype": XSD + "date"}
    assert values[RDFS + "comment"] == "routes traffic"
    deps = rows(client, "service_deps", entity=EX + "svc")
    assert {r["o"] for r in deps} == {EX + "db", EX + "cache", EX + "Service", EX + "Thing"}
    assert rows(client, "references_to", entity=EX + "svc") == [{"s": EX + "web", "p": EX + "calls"}]


def test_entities_of_type_and_labeled_like(client: TestClient) -> None:
    entity(client)
    assert rows(client, "entities_of_type", type=EX + "Service") == [{"s": EX + "db"}, {"s": EX + "svc"}]
    assert rows(client, "labeled_like", text="GATEWAY") == [
        {"s": EX + "svc", "label": {"value": "Gateway O'Brien", "lang": "en"}}
    ]


def test_the_response_carries_the_exact_sparql_executed(client: TestClient) -> None:
    out = ask(client, "references_to", entity=EX + "x", limit=2)
    assert out["sparql"] == f"SELECT DISTINCT ?s ?p WHERE {{\n  ?s ?p <{EX}x> .\n}}\nORDER BY ?s ?p\nLIMIT 2"
    assert out["query"] == "references_to" and out["count"] == 0 and out["rows"] == []


# == reads never write, and the query budgets =======================================================


def test_asking_writes_nothing(client: TestClient) -> None:
    entity(client)
    provenance(client)
    ok(client, "/queries", action="load", name="typed", template="SELECT ?s WHERE { ?s a <{t}> }",
       params=[{"name": "t", "type": "iri", "required": True}])  # fmt: skip
    before = reads_nothing(client)
    ok(client, "/ask")
    for name in BUILTIN_NAMES:
        ask(client, name, item="W-1", entity=EX + "svc", type=EX + "Service", text="o")
    ask(client, "typed", t=EX + "Service")
    assert reads_nothing(client) == before


def test_a_read_only_server_answers_ask(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as client:
        assert ok(client, "/ask", name="entities_of_type", params={"type": EX + "T"})["count"] == 0


def _crowd(client: TestClient) -> None:
    """Forty commits of one work item and forty of forty others, each modifying the same forty
    entities: a chain that multiplies into millions of intermediate rows, most of which pass
    the question's filter (another item), so no join order can prune it early."""
    entities = [f"f{e}" for e in range(40)]
    lines = [line for c in range(40) for line in commit(f"k{c}", "wide", *entities)]
    lines += [line for c in range(40) for line in commit(f"o{c}", f"other{c}", *entities)]
    identifier = "http://aegis.gastown.local/ontology/identifier"
    lines += [f'<{EX}other{c}> <{identifier}> "O{c}" .' for c in range(40)]
    chain(client, *lines, f'<{EX}wide> <{identifier}> "WIDE" .')


def test_a_question_past_the_join_bound_is_422(tmp_path: Path) -> None:
    # More final rows than max_join_rows: refused on every backend (SQLite also counts the work).
    with serve(tmp_path, search={"max_join_rows": 100}) as client:
        knot(client, "\n".join(f'<{EX}big> <{EX}p{i}> "v{i}" .' for i in range(300)))
        response = client.post(
            "/ask", json={"name": "entity_facts", "params": {"entity": EX + "big", "limit": 1000}}
        )
        assert response.status_code == 422, response.text
        assert response.json()["reason"] in ("join_limit_exceeded", "query_too_expensive")


def test_a_question_past_the_deadline_is_408(tmp_path: Path) -> None:
    with serve(tmp_path, search={"query_timeout_ms": 1}) as client:
        _crowd(client)
        response = client.post("/ask", json={"name": "brief_related", "params": {"item": "WIDE"}})
        assert response.status_code == 408, response.text
        assert response.json()["reason"] == "query_timeout"


# == the shape guard on its own ====================================================================


def test_the_shape_guard_refuses_a_value_that_left_its_term_even_past_the_renderer() -> None:
    # Called directly, past render()'s character checks: the guard alone must catch the change.
    spec = ParamSpec("e", "iri", True, None, "")
    template = "SELECT ?p ?o WHERE { <{e}> ?p ?o }"
    assert guarded(template, [spec], {"e": EX + "a"}, {"e": EX + "a"}).startswith("SELECT")
    for escaped in (f"{EX}a> ?p ?o . ?s ?q ?r . <{EX}b", f"{EX}a> ?p ?o }} UNION {{ ?s ?p ?o . <{EX}b"):
        with pytest.raises(InvalidField, match="param 'e'"):
            guarded(template, [spec], {"e": escaped}, {"e": escaped})


@pytest.mark.parametrize(
    ("template", "written"),
    [
        ("SELECT * WHERE { ?s ?p '{t}' }", "'a\\'b\"c\\\\d\\ne'"),
        ('SELECT * WHERE { ?s ?p "{t}" }', '"a\'b\\"c\\\\d\\ne"'),
        ("SELECT * WHERE { ?s ?p '''{t}''' }", "'''a\\'b\"c\\\\d\\ne'''"),
        ('SELECT * WHERE { ?s <http://ex.org/a#b> "{t}" } # it\'s', '"a\'b\\"c\\\\d\\ne"'),
    ],
)
def test_a_text_value_is_escaped_for_the_quotes_it_sits_in(template: str, written: str) -> None:
    spec = ParamSpec("t", "text", True, None, "")
    raw = "a'b\"c\\d\ne"
    text = guarded(template, [spec], {"t": raw}, {"t": raw})
    assert written in text
