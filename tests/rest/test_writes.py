"""POST /knot, /retract and /set over the REST app (tools-core §3.1, §3.6, §3.7, §0.4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.rest.middleware import MAX_BODY

from .support import (
    BOT_SERVER,
    BOT_TOKEN,
    RDF_TYPE,
    RDFS_LABEL,
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
PREFIX = f"@prefix ex: <{EX}> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
DOC = PREFIX + 'ex:a ex:name "A" ; ex:knows ex:b .\n'
T1, T2 = "2026-05-01T10:00:00Z", "2026-05-02T10:00:00Z"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def post(client: TestClient, route: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post(route, json=body)
    assert response.status_code == status, response.text
    out: dict[str, Any] = response.json()
    return out


def refused(client: TestClient, route: str, body: Any, *, field: str | None = None) -> dict[str, Any]:
    """A 400 that leaves the store as it was; returns the problem body."""
    return refused_write(client, route, field=field, json=body)


def knot(client: TestClient, turtle: str = DOC, **fields: Any) -> dict[str, Any]:
    return post(client, "/knot", {"turtle": turtle, **fields})


def interned(client: TestClient, iri: str) -> bool:
    return bool(raw(client, "SELECT 1 FROM terms WHERE iri = ?", iri))


# == /knot ====================================================================================


def test_knot_writes_and_answers_the_documented_shape(client: TestClient) -> None:
    out = knot(client, timestamp=T1)
    assert out == {
        "conforms": True,
        "tx_id": out["tx_id"],
        "count": 2,
        "snapshot": None,
        "replaced": False,
        "valid_from": T1,
    }
    assert out["tx_id"] > 0
    assert objects(client, EX + "a", EX + "knows") == [EX + "b"]


def test_knot_rule1_timestamp_and_valid_from_are_different_axes(client: TestClient) -> None:
    out = knot(client, timestamp=T2, valid_from="2026-03-04T09:15:00Z")
    assert transaction(client, out["tx_id"])["timestamp"] == T2
    assert {c[0] for c in all_claims(client, EX + "a", EX + "name")} == {"2026-03-04T09:15:00Z"}
    # valid_at reads see the valid time, not the transaction time.
    rows = kb_of(client).query(f'ASK {{ <{EX}a> <{EX}name> "A" }}', valid_at="2026-03-05T00:00:00Z")
    assert rows is True


def test_knot_rule2_valid_from_is_normalised_and_echoed(client: TestClient) -> None:
    out = knot(client, valid_from="2026-03-04T09:15:00.987+01:00")
    assert out["valid_from"] == "2026-03-04T08:15:00Z"
    assert {c[0] for c in all_claims(client, EX + "a", EX + "name")} == {"2026-03-04T08:15:00Z"}


def test_knot_rule2_without_valid_from_the_echo_is_the_normalised_timestamp(client: TestClient) -> None:
    assert knot(client, timestamp="2026-03-04T09:15:00+01:00")["valid_from"] == "2026-03-04T08:15:00Z"
    assert knot(client, timestamp="2026-03-04")["valid_from"] == "2026-03-04"  # a bare date, verbatim
    # Free text is refused (issue 15): it would become the facts' valid_from.
    assert client.post("/knot", json={"turtle": DOC, "timestamp": "last tuesday"}).status_code == 400


def test_knot_rule3_malformed_valid_from_is_refused_before_anything(client: TestClient) -> None:
    problem = refused(
        client,
        "/knot",
        {"turtle": "not { turtle", "valid_from": "2026-03-04", "graph": EX + "typo"},
        field="valid_from",
    )
    assert problem["reason"] == "invalid_valid_from"
    assert not interned(client, EX + "typo")


def test_knot_rule7_graph_absent_empty_or_root_iri_is_root(client: TestClient) -> None:
    for graph in (None, "", "urn:quipu:graph:root"):
        body: dict[str, Any] = {} if graph is None else {"graph": graph}
        out = knot(client, PREFIX + f'ex:a ex:n "{graph}" .', **body)
        assert raw(client, "SELECT graph FROM transactions WHERE id = ?", out["tx_id"]) == [(0,)]
    assert objects(client, EX + "a", EX + "n") == ["", "None", "urn:quipu:graph:root"]


def test_knot_rule7_a_registered_graph_is_written_and_root_is_not(client: TestClient) -> None:
    kb_of(client).create_graph(EX + "g")
    knot(client, graph=EX + "g")
    assert objects(client, EX + "a", EX + "knows", graph=EX + "g") == [EX + "b"]
    assert objects(client, EX + "a", EX + "knows") == []


def test_knot_rule7_an_unknown_graph_is_refused_and_not_interned(client: TestClient) -> None:
    problem = refused(client, "/knot", {"turtle": DOC, "graph": EX + "typo"}, field="graph")
    assert problem["reason"] == "unknown_graph"
    assert "create and register it first" in problem["error"]
    assert not interned(client, EX + "typo")


def test_knot_rule7_an_interned_but_unregistered_graph_is_refused(client: TestClient) -> None:
    knot(client)
    problem = refused(client, "/knot", {"turtle": DOC, "graph": EX + "b"}, field="graph")
    assert problem["reason"] == "unknown_graph"
    assert "interned but not registered" in problem["error"]


def test_knot_rule7_a_companion_inferred_graph_is_refused(client: TestClient) -> None:
    problem = refused(client, "/knot", {"turtle": DOC, "graph": EX + "g#inferred"}, field="graph")
    assert problem["reason"] == "write_refused"


def test_knot_rule8_append_source_keys(client: TestClient) -> None:
    ids = [
        knot(client, source="feed")["tx_id"],
        knot(client, actor="ann")["tx_id"],
        knot(client, actor="ann", source="  ")["tx_id"],
        knot(client)["tx_id"],
    ]
    assert [transaction(client, i)["source"] for i in ids] == [
        "feed",
        "knot:ann",
        "knot:ann",
        "knot:anonymous",
    ]
    assert transaction(client, ids[1])["actor"] == "ann"


def test_knot_rule8_same_source_adds_no_claim_another_source_adds_one(client: TestClient) -> None:
    knot(client, source="A")
    knot(client, source="A")
    assert len(all_claims(client, EX + "a", EX + "knows")) == 1
    knot(client, source="B")
    assert [c[4] for c in all_claims(client, EX + "a", EX + "knows")] == ["A", "B"]
    assert objects(client, EX + "a", EX + "knows") == [EX + "b"]


def test_knot_rule9_replacement_uses_the_snapshot_key_and_ignores_source(client: TestClient) -> None:
    first = knot(client, replace_snapshot=True, snapshot="inv", source="mine", timestamp=T1)
    assert (first["replaced"], first["snapshot"]) == (True, "inv")
    assert transaction(client, first["tx_id"])["source"] == "snapshot:inv"
    second = knot(client, PREFIX + 'ex:a ex:name "A" .', replace_snapshot=True, snapshot="inv", timestamp=T2)
    assert objects(client, EX + "a", EX + "knows") == []
    # The common fact keeps its claim; the dropped one closes at the timestamp, scoped to the key.
    assert all_claims(client, EX + "a", EX + "name") == [(T1, None, first["tx_id"], None, "snapshot:inv")]
    assert all_claims(client, EX + "a", EX + "knows") == [
        (T1, T2, first["tx_id"], second["tx_id"], "snapshot:inv")
    ]


def test_knot_rule9_other_owners_keep_replaced_statements_visible(client: TestClient) -> None:
    knot(client, replace_snapshot=True, snapshot="inv")
    knot(client, source="other")
    knot(client, "", replace_snapshot=True, snapshot="inv")
    assert objects(client, EX + "a", EX + "knows") == [EX + "b"]


def test_knot_rule9_labels_of_referenced_entities_survive_types_do_not(client: TestClient) -> None:
    knot(client, PREFIX + 'ex:x rdfs:label "X" ; a ex:Thing .', replace_snapshot=True, snapshot="inv")
    knot(client, PREFIX + "ex:y ex:uses ex:x .", source="other")
    knot(client, "", replace_snapshot=True, snapshot="inv")
    assert objects(client, EX + "x", RDFS_LABEL) == ["X"]
    assert objects(client, EX + "x", RDF_TYPE) == []


def test_knot_rule10_count_is_statements_parsed_not_new_claims(client: TestClient) -> None:
    knot(client)
    assert knot(client)["count"] == 2  # nothing new, still two parsed
    knot(client, replace_snapshot=True, snapshot="inv")
    emptied = knot(client, "", replace_snapshot=True, snapshot="inv")
    nothing = knot(client, "", replace_snapshot=True, snapshot="never-used")
    strip = {"tx_id", "valid_from"}
    assert {k: v for k, v in emptied.items() if k not in strip} == {
        "conforms": True,
        "count": 0,
        "snapshot": "inv",
        "replaced": True,
    }
    assert {k: v for k, v in nothing.items() if k not in strip | {"snapshot"}} == {
        "conforms": True,
        "count": 0,
        "replaced": True,
    }


def test_knot_rule11_every_successful_call_records_a_transaction(client: TestClient) -> None:
    first = knot(client)["tx_id"]
    again = knot(client)["tx_id"]
    empty = knot(client, "")["tx_id"]
    assert 0 < first < again < empty
    assert kb_of(client).transactions()["count"] == 3


def test_knot_rule12_blank_nodes_reused_per_document_and_graph(client: TestClient) -> None:
    doc = PREFIX + 'ex:a ex:has [ ex:name "n" ] .'
    kb_of(client).create_graph(EX + "g")

    def nodes(graph: str | None = None) -> list[str]:
        return objects(client, EX + "a", EX + "has", graph=graph)

    knot(client, doc)
    knot(client, doc)
    assert len(nodes()) == 1  # same document, same graph: the same blank node
    knot(client, doc, blank_node_scope="other-scope")
    assert len(nodes()) == 2
    knot(client, doc, graph=EX + "g")
    assert nodes(EX + "g")[0] not in nodes()


def test_knot_missing_turtle_is_the_first_error(client: TestClient) -> None:
    problem = refused(client, "/knot", {"valid_from": "bad", "replace_snapshot": True}, field="turtle")
    assert problem["reason"] == "missing_field"
    assert problem["error"] == "missing 'turtle' parameter"


def test_knot_valid_from_is_checked_before_the_snapshot_key(client: TestClient) -> None:
    body = {"turtle": DOC, "valid_from": "bad", "replace_snapshot": True}
    assert refused(client, "/knot", body, field="valid_from")["reason"] == "invalid_valid_from"


@pytest.mark.parametrize("key", [None, "", "   "])
def test_knot_replace_snapshot_needs_a_non_empty_key(client: TestClient, key: str | None) -> None:
    body: dict[str, Any] = {"turtle": DOC, "replace_snapshot": True, "graph": EX + "typo"}
    if key is not None:
        body["snapshot"] = key
    problem = refused(client, "/knot", body, field="snapshot")
    assert "requires a non-empty stable 'snapshot' producer key" in problem["error"]


def test_knot_graph_is_checked_before_the_syntax(client: TestClient) -> None:
    problem = refused(
        client, "/knot", {"turtle": "this is { not turtle", "graph": EX + "typo"}, field="graph"
    )
    assert problem["reason"] == "unknown_graph"


def test_knot_syntax_error(client: TestClient) -> None:
    knot(client)
    problem = refused(client, "/knot", {"turtle": DOC + f'<{EX}c> <{EX}p> "broken .'})
    assert problem["reason"] == "rdf_parse_error"
    assert not interned(client, EX + "c")


def test_knot_bad_literal(client: TestClient) -> None:
    body = {"turtle": PREFIX + 'ex:c ex:n "ten"^^<http://www.w3.org/2001/XMLSchema#integer> .'}
    problem = refused(client, "/knot", body)
    assert problem["reason"] == "bad_literal"
    assert "bad integer literal" in problem["error"]


def test_knot_request_shapes_are_applied_not_ignored(client: TestClient) -> None:
    # Every ex:a must know exactly two things; DOC gives it one: refused with 200, nothing written.
    shapes = PREFIX + "@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
    shapes += "ex:S a sh:NodeShape ; sh:targetNode ex:a ; sh:property [ sh:path ex:knows ; sh:minCount 2 ] ."
    response = client.post("/knot", json={"turtle": DOC, "shapes": shapes})
    assert response.status_code == 200
    assert response.json()["conforms"] is False
    assert objects(client, EX + "a", EX + "knows") == []


def test_knot_empty_shapes_are_no_shapes(client: TestClient) -> None:
    assert knot(client, shapes="  ")["conforms"] is True


def test_knot_unknown_fields_are_reported_and_the_write_still_happens(client: TestClient) -> None:
    out = knot(client, dry_run=True, zeta=1)
    assert out["ignored_fields"] == ["dry_run", "zeta"]
    assert objects(client, EX + "a", EX + "knows") == [EX + "b"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"turtle": 5}, "turtle"),
        ({"turtle": DOC, "replace_snapshot": "yes"}, "replace_snapshot"),
        ({"turtle": DOC, "timestamp": 1}, "timestamp"),
    ],
)
def test_knot_wrong_json_types_are_400(client: TestClient, body: dict[str, Any], field: str) -> None:
    assert refused(client, "/knot", body, field=field)["reason"] == "wrong_type"


# == /set =====================================================================================


@pytest.fixture
def seeded(client: TestClient) -> TestClient:
    knot(client, timestamp=T1)
    return client


def put(client: TestClient, value: Any, **fields: Any) -> dict[str, Any]:
    return post(client, "/set", {"entity": EX + "a", "predicate": EX + "name", "value": value, **fields})


def test_set_answers_the_documented_shape(seeded: TestClient) -> None:
    out = put(seeded, "B")
    assert out == {
        "tx_id": out["tx_id"],
        "retracted": 1,
        "asserted": 1,
        "entity": EX + "a",
        "predicate": EX + "name",
    }
    assert objects(seeded, EX + "a", EX + "name") == ["B"]


@pytest.mark.parametrize("graph", [None, EX + "g", ""])
def test_set_refuses_a_graph_key_even_null_before_anything_else(
    seeded: TestClient, graph: str | None
) -> None:
    # No entity either: the graph key is still the error reported.
    problem = refused(seeded, "/set", {"graph": graph, "value": "x"}, field="graph")
    assert problem["reason"] == "graph_not_accepted"


def test_set_rule1_root_only(seeded: TestClient) -> None:
    kb_of(seeded).create_graph(EX + "g")
    knot(seeded, graph=EX + "g")
    put(seeded, "B")
    assert objects(seeded, EX + "a", EX + "name", graph=EX + "g") == ["A"]


def test_set_rule2_every_current_object_is_replaced(seeded: TestClient) -> None:
    knot(seeded, PREFIX + 'ex:a ex:name "A2", "A3" .')
    out = put(seeded, "B")
    assert (out["retracted"], out["asserted"]) == (3, 1)
    assert objects(seeded, EX + "a", EX + "name") == ["B"]


def test_set_rule3_one_transaction(seeded: TestClient) -> None:
    before = kb_of(seeded).transactions()["count"]
    out = put(seeded, "B")
    assert kb_of(seeded).transactions()["count"] == before + 1
    [(_vf, _vt, _tx, closed_by, _src), (_vf2, _vt2, asserted_by, _rt, _src2)] = all_claims(
        seeded, EX + "a", EX + "name"
    )
    assert closed_by == asserted_by == out["tx_id"]


def test_set_rule4_the_sole_value_again_writes_no_transaction(seeded: TestClient) -> None:
    before = state(seeded)
    assert put(seeded, "A") == {
        "tx_id": 0,
        "retracted": 0,
        "asserted": 0,
        "entity": EX + "a",
        "predicate": EX + "name",
    }
    assert state(seeded) == before


def test_set_rule4_a_value_present_among_others_only_retracts_the_others(seeded: TestClient) -> None:
    knot(seeded, PREFIX + 'ex:a ex:name "A2" .')
    out = put(seeded, "A")
    assert (out["retracted"], out["asserted"]) == (1, 0)
    assert out["tx_id"] > 0
    assert objects(seeded, EX + "a", EX + "name") == ["A"]


def test_set_rule5_unscoped_and_stamped_with_the_timestamp(seeded: TestClient) -> None:
    knot(seeded, source="other")  # a second owner of "A"
    out = put(seeded, "B", timestamp=T2)
    rows = all_claims(seeded, EX + "a", EX + "name")
    assert [(vt, rt) for _vf, vt, _tx, rt, _src in rows[:2]] == [(T2, out["tx_id"])] * 2
    assert rows[2][:3] == (T2, None, out["tx_id"])  # the new value's valid_from is the timestamp


def test_set_rule6_bare_string_refused_on_a_reference_valued_predicate(seeded: TestClient) -> None:
    body = {"entity": EX + "a", "predicate": EX + "knows", "value": EX + "c"}
    problem = refused(seeded, "/set", body, field="value")
    assert problem["reason"] == "write_refused"
    assert "set refused" in problem["error"]


def test_set_rule6_iri_looking_bare_string_refused_on_an_empty_predicate(seeded: TestClient) -> None:
    body = {"entity": EX + "a", "predicate": EX + "homepage", "value": "https://example.org/a"}
    assert refused(seeded, "/set", body, field="value")["reason"] == "write_refused"


def test_set_rule6_a_string_valued_predicate_accepts_urls(seeded: TestClient) -> None:
    assert put(seeded, "https://example.org/a")["asserted"] == 1


def test_set_rule6_str_form_disables_the_guard_and_iri_form_is_an_edge(seeded: TestClient) -> None:
    body = {"entity": EX + "a", "predicate": EX + "homepage"}
    assert post(seeded, "/set", {**body, "value": {"str": "https://example.org/a"}})["asserted"] == 1
    post(seeded, "/set", {**body, "predicate": EX + "knows", "value": {"iri": EX + "c"}})
    assert objects(seeded, EX + "a", EX + "knows") == [EX + "c"]


def test_set_rule7_an_unknown_entity_is_not_found_and_not_minted(seeded: TestClient) -> None:
    problem = refused(
        seeded, "/set", {"entity": EX + "typo", "predicate": EX + "name", "value": "x"}, field="entity"
    )
    assert problem["reason"] == "not_found"
    assert not interned(seeded, EX + "typo")


def test_set_rule7_a_new_predicate_and_object_are_interned(seeded: TestClient) -> None:
    post(seeded, "/set", {"entity": EX + "a", "predicate": EX + "brandNew", "value": {"iri": EX + "new"}})
    assert interned(seeded, EX + "brandNew") and interned(seeded, EX + "new")


def test_set_rule8_source_keys(seeded: TestClient) -> None:
    ids = [
        put(seeded, "B")["tx_id"],
        put(seeded, "C", actor="ann")["tx_id"],
        put(seeded, "D", source="fix")["tx_id"],
    ]
    assert [transaction(seeded, i)["source"] for i in ids] == ["set:anonymous", "set:ann", "fix"]


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"predicate": EX + "name", "value": "x"}, "entity", "missing_field"),
        ({"entity": EX + "a", "value": "x"}, "predicate", "missing_field"),
        ({"entity": EX + "a", "predicate": EX + "name"}, "value", "missing_field"),
        ({"entity": EX + "a", "predicate": EX + "name", "value": None}, "value", "invalid_field"),
        ({"entity": EX + "a", "predicate": EX + "name", "value": 5}, "value", "invalid_field"),
        ({"entity": EX + "a", "predicate": EX + "name", "value": {"int": "5"}}, "value", "invalid_field"),
    ],
)
def test_set_refuses_missing_fields_and_bad_values(
    seeded: TestClient, body: dict[str, Any], field: str, reason: str
) -> None:
    assert refused(seeded, "/set", body, field=field)["reason"] == reason


def test_set_reports_ignored_fields(seeded: TestClient) -> None:
    assert put(seeded, "B", note="why")["ignored_fields"] == ["note"]


# == /retract =================================================================================


def retract(client: TestClient, **fields: Any) -> dict[str, Any]:
    return post(client, "/retract", {"entity": EX + "a", **fields})


def test_retract_answers_the_documented_shape(seeded: TestClient) -> None:
    out = retract(seeded, predicate=EX + "name")
    assert out == {"tx_id": out["tx_id"], "retracted": 1, "entity": EX + "a"}
    assert out["tx_id"] > 0


@pytest.mark.parametrize("graph", [None, EX + "g"])
def test_retract_refuses_a_graph_key_even_null_before_anything_else(
    seeded: TestClient, graph: str | None
) -> None:
    problem = refused(seeded, "/retract", {"graph": graph}, field="graph")
    assert problem["reason"] == "graph_not_accepted"


def test_retract_rule1_root_only_and_subject_only(seeded: TestClient) -> None:
    kb_of(seeded).create_graph(EX + "g")
    knot(seeded, graph=EX + "g")
    knot(seeded, PREFIX + "ex:z ex:knows ex:a .")
    assert retract(seeded)["retracted"] == 2
    assert objects(seeded, EX + "a", EX + "name", graph=EX + "g") == ["A"]
    assert objects(seeded, EX + "z", EX + "knows") == [EX + "a"]  # where a is the object: untouched


def test_retract_rule2_unscoped_and_counting_statements(seeded: TestClient) -> None:
    knot(seeded, source="other")
    out = retract(seeded, predicate=EX + "knows")
    assert out["retracted"] == 1  # one statement, though two owners claimed it
    assert [r[3] for r in all_claims(seeded, EX + "a", EX + "knows")] == [out["tx_id"]] * 2
    assert objects(seeded, EX + "a", EX + "knows") == []


def test_retract_rule3_nothing_matched_writes_no_transaction(seeded: TestClient) -> None:
    before = state(seeded)
    assert retract(seeded, predicate=EX + "name", value="not there") == {
        "tx_id": 0,
        "retracted": 0,
        "entity": EX + "a",
    }
    retract(seeded, predicate=EX + "name")
    again = state(seeded)
    assert retract(seeded, predicate=EX + "name")["tx_id"] == 0
    assert state(seeded) == again != before


def test_retract_rule4_an_unknown_iri_value_matches_nothing_and_is_not_interned(seeded: TestClient) -> None:
    before = state(seeded)
    out = retract(seeded, predicate=EX + "knows", value={"iri": EX + "never-seen"})
    assert (out["tx_id"], out["retracted"]) == (0, 0)
    assert state(seeded) == before
    assert not interned(seeded, EX + "never-seen")


def test_retract_rule5_bare_string_aimed_at_a_reference_is_refused(seeded: TestClient) -> None:
    body = {"entity": EX + "a", "predicate": EX + "knows", "value": EX + "b"}
    problem = refused(seeded, "/retract", body, field="value")
    assert problem["reason"] == "write_refused"
    assert "retract matched nothing" in problem["error"]
    assert retract(seeded, predicate=EX + "knows", value={"iri": EX + "b"})["retracted"] == 1


def test_retract_rule6_half_ghost_guard(seeded: TestClient) -> None:
    knot(seeded, PREFIX + "ex:a a ex:Thing .")
    problem = refused(seeded, "/retract", {"entity": EX + "a", "predicate": RDF_TYPE})
    assert problem["reason"] == "would_orphan"
    assert retract(seeded, predicate=RDF_TYPE, allow_orphan=True)["retracted"] == 1


def test_retract_rule6_retracting_everything_is_always_allowed(seeded: TestClient) -> None:
    knot(seeded, PREFIX + "ex:a a ex:Thing .")
    assert retract(seeded)["retracted"] == 3


def test_retract_rule7_closure_stamp_is_the_timestamp_and_history_stays(seeded: TestClient) -> None:
    out = retract(seeded, predicate=EX + "name", timestamp=T2)
    assert [(r[1], r[3]) for r in all_claims(seeded, EX + "a", EX + "name")] == [(T2, out["tx_id"])]
    before = kb_of(seeded).query(f"SELECT ?o WHERE {{ <{EX}a> <{EX}name> ?o }}", as_of_tx=out["tx_id"] - 1)
    assert isinstance(before, list) and [str(r["o"]) for r in before] == ["A"]


def test_retract_rule8_source_keys(seeded: TestClient) -> None:
    knot(seeded, PREFIX + 'ex:a ex:x "1" ; ex:y "2" ; ex:z "3" .')
    ids = [
        retract(seeded, predicate=EX + "x")["tx_id"],
        retract(seeded, predicate=EX + "y", actor="ann")["tx_id"],
        retract(seeded, predicate=EX + "z", actor="ann", source="cleanup")["tx_id"],
    ]
    assert [transaction(seeded, i)["source"] for i in ids] == ["retract:anonymous", "retract:ann", "cleanup"]


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({}, "entity", "missing_field"),
        ({"entity": EX + "typo"}, "entity", "not_found"),
        ({"entity": EX + "a", "predicate": EX + "typo"}, "predicate", "not_found"),
        ({"entity": EX + "a", "value": [1]}, "value", "invalid_field"),
        ({"entity": EX + "a", "allow_orphan": "yes"}, "allow_orphan", "wrong_type"),
    ],
)
def test_retract_refusals(seeded: TestClient, body: dict[str, Any], field: str, reason: str) -> None:
    assert refused(seeded, "/retract", body, field=field)["reason"] == reason


def test_retract_reports_ignored_fields(seeded: TestClient) -> None:
    assert retract(seeded, predicate=EX + "name", why="typo")["ignored_fields"] == ["why"]


# == identity and failed writes ================================================================


@pytest.fixture
def authed(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, server=BOT_SERVER) as c:
        yield c


def test_the_named_principal_is_recorded_on_every_write(authed: TestClient) -> None:
    headers = {"Authorization": f"Bearer {BOT_TOKEN}"}
    ids = [
        authed.post("/knot", json={"turtle": DOC, "actor": "declared"}, headers=headers).json()["tx_id"],
        authed.post(
            "/set", json={"entity": EX + "a", "predicate": EX + "name", "value": "B"}, headers=headers
        ).json()["tx_id"],
        authed.post("/retract", json={"entity": EX + "a"}, headers=headers).json()["tx_id"],
    ]
    expected = {"principal": "bot", "credential_id": "bot", "auth_class": "named_bearer"}
    assert [transaction(authed, i)["authenticated"] for i in ids] == [expected] * 3
    assert transaction(authed, ids[0])["actor"] == "declared"  # declared, never replaced by the identity


def test_a_write_without_the_credential_is_401_and_writes_nothing(authed: TestClient) -> None:
    before = state(authed)
    response = authed.post("/knot", json={"turtle": DOC})
    assert response.status_code == 401
    assert state(authed) == before


@pytest.mark.parametrize("route", ["/knot", "/set", "/retract"])
def test_a_malformed_body_leaves_the_store_unchanged(seeded: TestClient, route: str) -> None:
    before = state(seeded)
    for content in (b"{not json", b"[1, 2]", b'"text"'):
        response = seeded.post(route, content=content, headers={"Content-Type": "application/json"})
        assert response.status_code == 400, response.text
    assert state(seeded) == before


def test_an_oversize_request_is_413_and_leaves_the_store_unchanged(seeded: TestClient) -> None:
    before = state(seeded)
    body = b'{"turtle": "' + b" " * (MAX_BODY + 1) + b'"}'
    response = seeded.post("/knot", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["reason"] == "payload_too_large"
    assert state(seeded) == before


def test_an_oversize_chunked_request_is_413_too(seeded: TestClient) -> None:
    before = state(seeded)

    def chunks() -> Iterator[bytes]:
        yield b'{"turtle": "'
        for _ in range(65):
            yield b" " * (1024 * 1024)
        yield b'"}'

    response = seeded.post("/knot", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert state(seeded) == before


def test_routes_are_documented_with_unique_operation_ids(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {paths[p]["post"]["operationId"] for p in ("/knot", "/set", "/retract")} == {
        "knot",
        "set_value",
        "retract",
    }
