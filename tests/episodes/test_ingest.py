"""Writing episodes into a real store: outcomes, provenance, replacement, graphs (DM §9, §8)."""

from __future__ import annotations

from typing import Any

import pytest

from quipu.api import KnowledgeBase
from quipu.episodes.iris import DEFAULT_BASE_NS as NS
from quipu.errors import InvalidField, WriteRefused
from tests.store import count, select, snapshot

PROV = "http://www.w3.org/ns/prov#"
NODES = [{"name": "svc", "type": "Service"}, {"name": "db", "type": "Database"}]
EDGES = [{"source": "svc", "target": "db", "relation": "uses"}]


def _objects(kb: KnowledgeBase, s: str, p: str, **kw: Any) -> list[str]:
    return sorted(str(r["o"]) for r in select(kb, f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}", **kw))


def test_a_new_episode_is_created_in_one_transaction_under_its_source(kb: KnowledgeBase) -> None:
    out = kb.episode("e1", source="agent-7", nodes=NODES, edges=EDGES)
    assert (out.outcome, out.tx_id) == ("created", 1)
    log = kb.transactions()["transactions"]
    assert [(t["source"], t["actor"]) for t in log] == [("episode:e1", "agent-7")]
    assert _objects(kb, NS + "svc", NS + "uses") == [NS + "db"]
    assert _objects(kb, NS + "svc", PROV + "wasGeneratedBy") == [NS + "episode_e1"]


def test_a_repeated_identical_episode_is_unchanged_and_writes_nothing(kb: KnowledgeBase) -> None:
    kb.episode("e1", nodes=NODES, edges=EDGES)
    before = snapshot(kb)
    again = kb.episode("e1", nodes=list(reversed(NODES)), edges=EDGES)
    assert (again.outcome, again.tx_id, again.count) == ("unchanged", 0, 0)
    assert snapshot(kb) == before


def test_the_same_content_under_another_name_is_a_new_episode(kb: KnowledgeBase) -> None:
    kb.episode("e1", nodes=NODES)
    assert kb.episode("e2", nodes=NODES).outcome == "created"
    assert _objects(kb, NS + "svc", PROV + "wasGeneratedBy") == [NS + "episode_e1", NS + "episode_e2"]


def test_updated_retracts_stale_activity_statements_and_keeps_old_entities(kb: KnowledgeBase) -> None:
    kb.episode("e1", episode_body="first", group_id="g1", nodes=NODES)
    out = kb.episode("e1", episode_body="second", nodes=[{"name": "cache", "type": "Cache"}])
    assert out.outcome == "updated" and out.tx_id == 2
    act = NS + "episode_e1"
    assert _objects(kb, act, "http://www.w3.org/2000/01/rdf-schema#comment") == ["second"]
    assert _objects(kb, act, NS + "groupId") == []
    assert len(_objects(kb, act, NS + "contentHash")) == 1
    assert _objects(kb, NS + "svc", PROV + "wasGeneratedBy") == [act]  # entities are additive
    # One transaction did both: the stale descriptors were closed by the new content's tx.
    assert count(kb, "facts", "op = 0 AND tx = 2") == 3  # comment, groupId, contentHash
    assert len(kb.transactions()["transactions"]) == 2


def test_replace_snapshot_drops_what_the_previous_version_wrote(kb: KnowledgeBase) -> None:
    kb.episode("inv", nodes=NODES, edges=EDGES, replace_snapshot=True)
    out = kb.episode("inv", nodes=[NODES[0]], replace_snapshot=True)
    assert out.outcome == "updated" and out.retracted > 0
    assert _objects(kb, NS + "svc", NS + "uses") == []
    assert _objects(kb, NS + "db", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type") == []
    assert _objects(kb, NS + "svc", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type") == [NS + "Service"]


def test_replace_snapshot_closes_valid_to_at_the_transaction_stamp(kb: KnowledgeBase) -> None:
    kb.episode("inv", nodes=NODES, replace_snapshot=True)
    out = kb.episode("inv", nodes=[], replace_snapshot=True)  # an empty snapshot is valid
    stamp = kb.transactions()["transactions"][-1]["timestamp"]
    closed = count(kb, "facts", "op = 1 AND retracted_tx = ? AND valid_to = ?", out.tx_id, stamp)
    assert closed > 0
    assert count(kb, "facts", "op = 1 AND retracted_tx = ? AND valid_to != ?", out.tx_id, stamp) == 0


def test_replacement_keeps_the_label_of_an_entity_another_producer_references(kb: KnowledgeBase) -> None:
    kb.episode("inv", nodes=NODES, replace_snapshot=True)
    kb.knot(f"<http://other.org/app> <http://other.org/dependsOn> <{NS}db> .", "nt", source="other")
    kb.episode("inv", nodes=[NODES[0]], replace_snapshot=True)
    assert _objects(kb, NS + "db", "http://www.w3.org/2000/01/rdf-schema#label") == ["db"]
    assert _objects(kb, NS + "db", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type") == []


def test_valid_from_is_now_unless_a_local_caller_gives_one(kb: KnowledgeBase) -> None:
    kb.episode("e1", nodes=NODES, valid_from="2020-01-01T01:00:00+01:00")
    rows = select(kb, f"SELECT ?o WHERE {{ <{NS}svc> a ?o }}", valid_at="2020-01-01T00:00:01Z")
    assert [str(r["o"]) for r in rows] == [NS + "Service"]
    tx = kb.transactions()["transactions"][0]["timestamp"]
    assert tx > "2026-01-01T00:00:00Z"  # the transaction time is the server's now


def test_a_malformed_valid_time_is_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidField, match="timestamp"):
        kb.episodes_complete("flat", timestamp="yesterday")
    assert count(kb, "transactions") == 0


def test_an_unregistered_graph_is_registered_and_written(kb: KnowledgeBase) -> None:
    g = "http://ex.org/graph/agents"
    out = kb.episode("e1", source="bot", nodes=NODES, graph=g)
    assert out.outcome == "created"
    assert _objects(kb, NS + "svc", PROV + "wasGeneratedBy", graph=g) == [NS + "episode_e1"]
    assert _objects(kb, NS + "svc", PROV + "wasGeneratedBy") == []
    assert count(kb, "graphs", "created_actor = 'bot'") == 1
    # The stored hash is read in the destination graph.
    assert kb.episode("e1", source="bot", nodes=NODES, graph=g).outcome == "unchanged"


def test_a_companion_graph_is_refused_and_nothing_is_written(kb: KnowledgeBase) -> None:
    before = snapshot(kb)
    with pytest.raises(WriteRefused):
        kb.episode("e1", nodes=NODES, graph="urn:quipu:graph:root#inferred")
    assert snapshot(kb) == before


def test_a_bad_type_refuses_the_whole_episode(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidField, match="has no type"):
        kb.episode("e1", nodes=[NODES[0], {"name": "x"}])
    assert count(kb, "facts") == 0


def test_a_gate_runs_before_the_idempotency_check(kb: KnowledgeBase) -> None:
    kb.episode("e1", nodes=NODES)
    seen: list[int] = []

    def refuse(ctx: Any, graph: int, built: Any) -> None:
        seen.append(graph)
        raise WriteRefused("shapes say no", reason="shacl_violation")

    with pytest.raises(WriteRefused, match="shapes say no"):
        kb.episode("e1", nodes=NODES, gates=(refuse,))
    assert seen == [0]


def test_episodes_complete_writes_only_the_activity(kb: KnowledgeBase) -> None:
    out = kb.episodes_complete("flat", episode_body="said", group_id="g", source_description="graphiti")
    assert (out.outcome, out.count) == ("created", 6)
    assert count(kb, "facts", "op = 1") == 6
    assert kb.transactions()["transactions"][0]["source"] == "episode:flat"
    assert kb.episodes_complete(
        "flat", episode_body="said", group_id="g", source_description="graphiti"
    ).outcome == ("unchanged")
