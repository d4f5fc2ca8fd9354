"""POST /episode, /episodes/complete and /episode/retract over the REST app (tools-core §3.4, §3.5, §3.8)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.episodes.iris import fnv1a64

from .support import (
    RDF_TYPE,
    RDFS_LABEL,
    kb_of,
    objects,
    problem,
    raw,
    refused_write,
    serve,
    state,
    transaction,
)

NS = "http://aegis.gastown.local/ontology/"
PROV = "http://www.w3.org/ns/prov#"
NODES = [{"name": "svc", "type": "Service"}, {"name": "db", "type": "Database"}]
EDGES = [{"source": "svc", "target": "db", "relation": "uses"}]
EPISODE = {"name": "e1", "source": "agent-7", "group_id": "team", "nodes": NODES, "edges": EDGES}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def post(client: TestClient, route: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post(route, json=body)
    assert response.status_code == status, response.text
    out: dict[str, Any] = response.json()
    return out


def episode(client: TestClient, **fields: Any) -> dict[str, Any]:
    return post(client, "/episode", {**EPISODE, **fields})


# -- /episode (§3.4) -------------------------------------------------------------------------


def test_created_episode_response(client: TestClient) -> None:
    out = episode(client)
    assert out == {
        "tx_id": 1,
        "count": 12,  # activity 5, two nodes 3 each, one edge
        "outcome": "created",
        "episode": "e1",
        "resolution_hints": [],
        "resolution_contentions": [],
    }


def test_rule1_a_repeated_identical_episode_is_unchanged_with_tx_id_0(client: TestClient) -> None:
    episode(client)
    before = state(client)
    again = episode(client)
    assert (again["outcome"], again["tx_id"], again["count"]) == ("unchanged", 0, 0)
    assert state(client) == before


def test_rule2_reordered_nodes_and_edges_stay_unchanged(client: TestClient) -> None:
    episode(client, edges=[*EDGES, {"source": "db", "target": "svc", "relation": "serves"}])
    reordered = {
        "nodes": list(reversed(NODES)),
        "edges": [{"source": "db", "target": "svc", "relation": "serves"}, *EDGES],
    }
    assert episode(client, **reordered)["outcome"] == "unchanged"


def test_rule2_the_same_knowledge_under_another_name_is_created(client: TestClient) -> None:
    episode(client)
    assert episode(client, name="e2")["outcome"] == "created"


SHAPES = f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix o: <{NS}> .
o:ServiceShape a sh:NodeShape ; sh:targetClass o:Service ;
    sh:property [ sh:path o:tier ; sh:minCount 1 ; sh:in ("gold" "silver") ] .
o:DatabaseShape a sh:NodeShape ; sh:targetClass o:Database .
"""
GOLD = [
    {"name": "svc", "type": "Service", "properties": {"tier": "gold"}},
    {"name": "db", "type": "Database"},
]
BRONZE = [
    {"name": "svc", "type": "Service", "properties": {"tier": "bronze"}},
    {"name": "db", "type": "Database"},
]


def test_rule3_gates_run_before_the_idempotency_check(client: TestClient) -> None:
    episode(client)
    # The stored episode, now gated by shapes it breaks: refused, not "unchanged".
    body = refused_write(client, "/episode", json={**EPISODE, "shapes": SHAPES})
    assert body["reason"] == "shacl_violation"


def test_request_shapes_refuse_an_invalid_episode_with_400_and_the_issues(client: TestClient) -> None:
    body = refused_write(client, "/episode", json={**EPISODE, "nodes": BRONZE, "shapes": SHAPES})
    assert (body["reason"], body["conforms"], body["violations"]) == ("shacl_violation", False, 1)
    (issue,) = body["issues"]
    assert (issue["focus_node"], issue["path"], issue["allowed"]) == (
        NS + "svc",
        NS + "tier",
        ["gold", "silver"],
    )
    assert "hint" in body


def test_request_shapes_let_a_valid_episode_through(client: TestClient) -> None:
    assert episode(client, nodes=GOLD, shapes=SHAPES)["outcome"] == "created"


def test_request_shapes_that_do_not_parse_are_a_400_on_shapes(client: TestClient) -> None:
    refused_write(client, "/episode", field="shapes", json={**EPISODE, "shapes": "@prefix sh: <x> ."})


def test_stored_shapes_gate_episodes_only_with_validate_on_write(tmp_path: Path) -> None:
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    with serve(tmp_path / "on", shacl={"validate_on_write": True}) as on:
        kb_of(on).load_shapes("services", SHAPES)
        body = refused_write(on, "/episode", json={**EPISODE, "nodes": BRONZE})
        assert body["reason"] == "shacl_violation"
        assert episode(on, nodes=GOLD)["outcome"] == "created"
    with serve(tmp_path / "off") as off:
        kb_of(off).load_shapes("services", SHAPES)
        assert episode(off, nodes=BRONZE)["outcome"] == "created"


def test_stored_shapes_refuse_an_unsanctioned_node_type_on_episodes(client: TestClient) -> None:
    kb_of(client).load_shapes("services", SHAPES)
    nodes = [*GOLD, {"name": "c", "type": "Cache"}]
    body = refused_write(client, "/episode", json={**EPISODE, "nodes": nodes})
    assert (body["reason"], body["unknown_types"]) == ("unknown_type", [NS + "Cache"])


def test_stored_shapes_gate_episodes_complete_with_validate_on_write(tmp_path: Path) -> None:
    required = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
<{NS}ActivityShape> a sh:NodeShape ; sh:targetClass <{PROV}Activity> ;
    sh:property [ sh:path <{NS}groupId> ; sh:minCount 1 ] ."""
    with serve(tmp_path, shacl={"validate_on_write": True}) as c:
        kb_of(c).load_shapes("activities", required)
        body = refused_write(c, "/episodes/complete", json={"name": "flat"})
        assert body["reason"] == "shacl_violation"
        assert post(c, "/episodes/complete", {"name": "flat", "group_id": "g"})["outcome"] == "created"


def test_rule4_a_caller_timestamp_is_ignored_and_reported(client: TestClient) -> None:
    out = episode(client, timestamp="2001-01-01T00:00:00Z")
    assert out["ignored_fields"] == ["timestamp"]
    tx = transaction(client, out["tx_id"])
    assert tx["timestamp"] > "2026-01-01T00:00:00Z"
    (valid_from,) = {r[0] for r in raw(client, "SELECT valid_from FROM facts WHERE tx = ?", out["tx_id"])}
    assert valid_from == tx["timestamp"]


def test_rule5_source_actor_provenance_and_group(client: TestClient) -> None:
    out = episode(client)
    tx = transaction(client, out["tx_id"])
    assert (tx["source"], tx["actor"]) == ("episode:e1", "agent-7")
    activity = NS + "episode_e1"
    for entity in ("svc", "db"):
        assert objects(client, NS + entity, PROV + "wasGeneratedBy") == [activity]
        assert objects(client, NS + entity, NS + "groupId") == []
    assert objects(client, activity, NS + "groupId") == ["team"]
    assert objects(client, activity, PROV + "wasAssociatedWith") == ["agent-7"]
    assert objects(client, activity, RDF_TYPE) == [PROV + "Activity"]


def test_rule6_repeated_node_entries_give_several_types(client: TestClient) -> None:
    episode(client, nodes=[{"name": "svc", "type": "Service"}, {"name": "svc", "type": "Process"}], edges=[])
    assert objects(client, NS + "svc", RDF_TYPE) == [NS + "Process", NS + "Service"]


def test_rule6_a_display_type_list_is_not_valid_input(client: TestClient) -> None:
    body = refused_write(
        client, "/episode", field="nodes", json={"name": "e", "nodes": [{"name": "x", "type": "A, B"}]}
    )
    assert "comma" in body["error"]


def test_rule7_relations_are_emitted_as_given_with_confidence_reified(client: TestClient) -> None:
    edges = [
        {"source": "svc", "target": "db", "relation": "owl:sameAs", "confidence": 0.75},
        {"source": "svc", "target": "db", "relation": "<http://x.org/rel>"},
    ]
    episode(client, edges=edges)
    assert objects(client, NS + "svc", "http://www.w3.org/2002/07/owl#sameAs") == [NS + "db"]
    assert objects(client, NS + "svc", "http://x.org/rel") == [NS + "db"]
    stmt = f"{NS}stmt_{fnv1a64('svc|owl:sameAs|db')}"
    assert objects(client, stmt, "https://quipu.dev/ontology/confidence") == ["0.75"]


@pytest.mark.parametrize(
    ("relation", "phrase"),
    [("", "empty 'relation'"), ("ex:rel", "/set"), ("runs on", "rewritten")],
)
def test_rule7_a_relation_that_would_be_rewritten_is_refused(
    client: TestClient, relation: str, phrase: str
) -> None:
    edges = [{"source": "svc", "target": "db", "relation": relation}]
    body = refused_write(client, "/episode", field="edges", json={**EPISODE, "edges": edges})
    assert phrase in body["error"]


def test_rule8_updated_replaces_activity_statements_in_one_transaction(client: TestClient) -> None:
    episode(client)
    out = episode(
        client, episode_body="now with a body", nodes=[{"name": "cache", "type": "Cache"}], edges=[]
    )
    assert out["outcome"] == "updated"
    activity = NS + "episode_e1"
    assert len(objects(client, activity, NS + "contentHash")) == 1
    assert objects(client, activity, "http://www.w3.org/2000/01/rdf-schema#comment") == ["now with a body"]
    assert objects(client, NS + "svc", RDF_TYPE) == [NS + "Service"]  # the old entities stay
    closed = raw(client, "SELECT COUNT(*) FROM facts WHERE op = 1 AND retracted_tx = ?", out["tx_id"])
    assert closed == [(1,)]  # only the stale content hash


def test_rule9_replace_snapshot_with_an_empty_payload_empties_the_episode(client: TestClient) -> None:
    episode(client, replace_snapshot=True)
    out = episode(client, replace_snapshot=True, nodes=[], edges=[])
    assert out["outcome"] == "updated"
    assert objects(client, NS + "svc", RDF_TYPE) == []
    assert objects(client, NS + "svc", NS + "uses") == []


def test_rule9_replacement_keeps_a_referenced_entitys_label_but_not_its_type(client: TestClient) -> None:
    episode(client, replace_snapshot=True)
    kb_of(client).knot(f"<http://other.org/app> <http://other.org/uses> <{NS}db> .", "nt", source="other")
    episode(client, replace_snapshot=True, nodes=[NODES[0]], edges=[])
    assert objects(client, NS + "db", RDFS_LABEL) == ["db"]
    assert objects(client, NS + "db", RDF_TYPE) == []


def test_rule10_an_unregistered_graph_is_registered_and_written(client: TestClient) -> None:
    g = "http://example.org/graphs/agents"
    out = episode(client, graph=g)
    assert out["outcome"] == "created"
    assert objects(client, NS + "svc", RDF_TYPE, graph=g) == [NS + "Service"]
    assert objects(client, NS + "svc", RDF_TYPE) == []
    assert raw(client, "SELECT class, created_actor FROM graphs WHERE created_actor IS NOT NULL") == [
        ("committed", "agent-7")
    ]
    assert episode(client, graph=g)["outcome"] == "unchanged"


@pytest.mark.parametrize("graph", ["urn:quipu:graph:root#inferred", "http://example.org/g#inferred"])
def test_rule10_a_companion_graph_is_refused(client: TestClient, graph: str) -> None:
    refused_write(client, "/episode", field="graph", json={**EPISODE, "graph": graph})


def test_rule11_count_includes_statements_that_already_existed(client: TestClient) -> None:
    episode(client)
    out = episode(client, name="e2")
    assert out["count"] == 12


def test_rule12_no_resolution_hints_unless_enabled(client: TestClient) -> None:
    out = episode(client)
    assert out["resolution_hints"] == [] and out["resolution_contentions"] == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"nodes": []}, "missing_field"),
        ({"name": 5}, "wrong_type"),
        ({"name": "e", "nodes": [{"name": "x"}]}, "invalid_field"),
        ({"name": "e", "nodes": [{"name": "x", "type": ""}]}, "invalid_field"),
        ({"name": "e", "nodes": [{"name": "x", "type": "a b"}]}, "invalid_field"),
    ],
)
def test_invalid_episodes_are_refused_and_write_nothing(
    client: TestClient, body: dict[str, Any], reason: str
) -> None:
    assert refused_write(client, "/episode", json=body)["reason"] == reason


def test_a_node_without_type_names_the_node(client: TestClient) -> None:
    body = refused_write(client, "/episode", json={"name": "e", "nodes": [{"name": "lonely"}]})
    assert "node 'lonely' has no type" in body["error"]


def test_unknown_fields_are_reported(client: TestClient) -> None:
    assert episode(client, colour="red", also="x")["ignored_fields"] == ["also", "colour"]


def test_base_ns_comes_from_the_settings(tmp_path: Path) -> None:
    with serve(tmp_path, base_ns="http://mine.example/ns#") as client:
        post(client, "/episode", {"name": "e", "nodes": [{"name": "a", "type": "T"}]})
        assert objects(client, "http://mine.example/ns#a", RDF_TYPE) == ["http://mine.example/ns#T"]


# -- /episodes/complete (§3.5) --------------------------------------------------------------


FLAT = {"name": "chat-1", "episode_body": "user said hi", "group_id": "g", "source_description": "graphiti"}


def test_complete_rule1_only_the_activity_is_written_with_the_same_outcomes(client: TestClient) -> None:
    out = post(client, "/episodes/complete", FLAT)
    assert (out["outcome"], out["count"], out["episode"]) == ("created", 6, "chat-1")
    activity = NS + "episode_chat-1"
    assert objects(client, activity, PROV + "wasAssociatedWith") == ["graphiti"]
    assert transaction(client, out["tx_id"])["source"] == "episode:chat-1"
    assert post(client, "/episodes/complete", FLAT)["outcome"] == "unchanged"
    assert post(client, "/episodes/complete", {**FLAT, "episode_body": "changed"})["outcome"] == "updated"


def test_complete_rule2_timestamp_is_valid_time_only(client: TestClient) -> None:
    out = post(client, "/episodes/complete", {**FLAT, "timestamp": "2024-03-04T10:00:00+02:00"})
    (valid_from,) = {r[0] for r in raw(client, "SELECT valid_from FROM facts WHERE tx = ?", out["tx_id"])}
    assert valid_from == "2024-03-04T08:00:00Z"
    assert transaction(client, out["tx_id"])["timestamp"] > "2026-01-01T00:00:00Z"


def test_complete_rule2_a_malformed_timestamp_is_refused(client: TestClient) -> None:
    refused_write(client, "/episodes/complete", field="timestamp", json={**FLAT, "timestamp": "last tuesday"})


def test_complete_rule3_iris_follow_the_configured_base_ns(tmp_path: Path) -> None:
    with serve(tmp_path, base_ns="http://mine.example/") as client:
        post(client, "/episodes/complete", FLAT)
        assert objects(client, "http://mine.example/episode_chat-1", RDFS_LABEL) == ["chat-1"]


def test_complete_missing_name(client: TestClient) -> None:
    body = refused_write(client, "/episodes/complete", json={"episode_body": "x"})
    assert body["reason"] == "missing_field" and "missing 'name' parameter" in body["error"]


# -- /episode/retract (§3.8) ----------------------------------------------------------------


def retract(client: TestClient, status: int = 200, **body: Any) -> dict[str, Any]:
    return post(client, "/episode/retract", body, status)


def test_retract_rule1_closes_only_that_episodes_claims(client: TestClient) -> None:
    episode(client)
    episode(client, name="e2", nodes=[NODES[0]], edges=[])
    out = retract(client, episode="e1")
    assert out["retracted"] > 0 and out["episode"] == "e1"
    assert objects(client, NS + "svc", RDF_TYPE) == [NS + "Service"]  # e2 still owns it
    assert objects(client, NS + "svc", NS + "uses") == []
    assert objects(client, NS + "db", RDFS_LABEL) == []
    assert {"entity": NS + "svc", "predicate": NS + "uses", "value": NS + "db"} in out["statements"]


def test_retract_rule2_preserve_keeps_referenced_identity(client: TestClient) -> None:
    episode(client)
    kb_of(client).knot(f"<http://other.org/app> <http://other.org/uses> <{NS}db> .", "nt", source="other")
    out = retract(client, episode="e1")
    assert out["on_orphan"] == "preserve" and out["identity_preserved"] == 2
    assert out["identity_orphans"] == 1
    assert out["identity_orphan_entities"] == [{"entity": NS + "db", "lost_label": True, "lost_type": True}]
    assert objects(client, NS + "db", RDFS_LABEL) == ["db"]
    assert objects(client, NS + "db", RDF_TYPE) == [NS + "Database"]


def test_retract_rule2_allow_reports_the_ghosts(client: TestClient) -> None:
    episode(client)
    kb_of(client).knot(f"<http://other.org/app> <http://other.org/uses> <{NS}db> .", "nt", source="other")
    out = retract(client, episode="e1", on_orphan="ALLOW")
    assert (out["on_orphan"], out["identity_orphans"], out["identity_preserved"]) == ("allow", 1, 0)
    assert objects(client, NS + "db", RDFS_LABEL) == []


def test_retract_refuse_writes_nothing_and_names_what_would_be_lost(client: TestClient) -> None:
    episode(client)
    kb_of(client).knot(f"<http://other.org/app> <http://other.org/uses> <{NS}db> .", "nt", source="other")
    body = refused_write(client, "/episode/retract", json={"episode": "e1", "orphan_policy": "refuse"})
    assert body["reason"] == "would_orphan" and NS + "db" in body["error"]


def test_retract_rule3_an_unreferenced_entity_goes_whole_and_is_no_orphan(client: TestClient) -> None:
    episode(client)
    out = retract(client, episode="e1", on_orphan="refuse")
    assert out["identity_orphans"] == 0
    assert objects(client, NS + "db", RDFS_LABEL) == [] and objects(client, NS + "db", RDF_TYPE) == []


def test_retract_rule4_unknown_or_repeated_retraction_is_a_no_op(client: TestClient) -> None:
    assert retract(client, episode="never")["tx_id"] == 0
    episode(client)
    kb_of(client).knot(f"<http://other.org/app> <http://other.org/uses> <{NS}db> .", "nt", source="other")
    retract(client, episode="e1")
    before = state(client)
    again = retract(client, episode="e1")
    assert (again["tx_id"], again["retracted"], again["identity_preserved"]) == (0, 0, 2)
    assert state(client) == before


def test_retract_rule5_the_transaction_source_is_retract_episode(client: TestClient) -> None:
    episode(client)
    out = retract(client, episode_id="e1", actor="ops")
    tx = transaction(client, out["tx_id"])
    assert (tx["source"], tx["actor"]) == ("retract-episode:e1", "ops")


def test_retract_rule6_every_graph_is_retracted_root_first(client: TestClient) -> None:
    g = "http://example.org/graphs/agents"
    episode(client)
    episode(client, graph=g)
    out = retract(client, name="e1")
    graphs = raw(client, "SELECT id, graph FROM transactions WHERE source = 'retract-episode:e1' ORDER BY id")
    assert len(graphs) == 2 and graphs[0][1] == 0 and graphs[1][1] != 0
    assert out["tx_id"] == graphs[1][0]
    assert objects(client, NS + "svc", RDF_TYPE, graph=g) == []


def test_retract_rule7_facts_are_never_deleted(client: TestClient) -> None:
    first = episode(client)
    out = retract(client, episode="e1", timestamp="2099-01-01T00:00:00Z")
    rows = kb_of(client).query(f"SELECT ?o WHERE {{ <{NS}svc> a ?o }}", as_of_tx=first["tx_id"])
    assert isinstance(rows, list) and len(rows) == 1
    stamps = raw(
        client, "SELECT DISTINCT valid_to FROM facts WHERE op = 1 AND retracted_tx = ?", out["tx_id"]
    )
    assert stamps == [("2099-01-01T00:00:00Z",)]


def test_retract_precedence_episode_over_episode_id_over_name(client: TestClient) -> None:
    episode(client)
    out = retract(client, episode="e1", episode_id="nope", name="nope")
    assert out["episode"] == "e1" and out["tx_id"] > 0


def test_retract_missing_episode(client: TestClient) -> None:
    body = problem(client.post("/episode/retract", json={"actor": "x"}), "missing_field")
    assert "missing 'episode' (or 'episode_id') parameter" in body["error"]


def test_retract_invalid_policy(client: TestClient) -> None:
    body = problem(
        client.post("/episode/retract", json={"episode": "e1", "on_orphan": "keep"}), "invalid_field"
    )
    assert "invalid 'on_orphan'" in body["error"]


def test_retract_unknown_fields_are_reported(client: TestClient) -> None:
    assert retract(client, episode="e1", dry_run=True)["ignored_fields"] == ["dry_run"]


def test_distinct_from_and_its_alias_become_quipu_distinct_from(client: TestClient) -> None:
    nodes = [
        {"name": "a", "type": "T", "distinct_from": ["http://x.org/b"]},
        {"name": "c", "type": "T", "distinctFrom": ["http://x.org/d"]},
    ]
    episode(client, nodes=nodes, edges=[])
    assert objects(client, NS + "a", "https://quipu.dev/ontology/distinctFrom") == ["http://x.org/b"]
    assert objects(client, NS + "c", "https://quipu.dev/ontology/distinctFrom") == ["http://x.org/d"]
