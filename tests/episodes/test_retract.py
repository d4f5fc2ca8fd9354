"""Retracting episodes: source-scoped closure and identity accounting (DM §10, tools-core §3.8)."""

from __future__ import annotations

from typing import Any

import pytest

from quipu.api import KnowledgeBase
from quipu.episodes.iris import DEFAULT_BASE_NS as NS
from quipu.episodes.retract import episode_name, orphan_policy
from quipu.errors import InvalidField, MissingField, WriteRefused
from tests.store import count, select, snapshot, sql

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
NODES = [{"name": "svc", "type": "Service"}, {"name": "db", "type": "Database"}]


def _objects(kb: KnowledgeBase, s: str, p: str, **kw: Any) -> list[str]:
    return sorted(str(r["o"]) for r in select(kb, f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}", **kw))


def test_aliases_and_precedence_of_the_episode_name() -> None:
    assert episode_name("a", "b", "c") == "a"
    assert episode_name(None, "b", "c") == "b"
    assert episode_name(None, None, "c") == "c"
    with pytest.raises(MissingField, match="missing 'episode' \\(or 'episode_id'\\)"):
        episode_name()


def test_policies_are_case_insensitive_with_an_alias() -> None:
    assert orphan_policy() == "preserve"
    assert orphan_policy("ReFuse") == "refuse"
    assert orphan_policy(None, "ALLOW") == "allow"
    with pytest.raises(InvalidField, match="invalid 'on_orphan'"):
        orphan_policy("keep")


def test_retraction_closes_only_that_episodes_claims(kb: KnowledgeBase) -> None:
    kb.episode("e1", nodes=NODES)
    kb.episode("e2", nodes=[NODES[0]])
    out = kb.retract_episode("e1")
    assert out["retracted"] > 0 and out["identity_orphans"] == 0
    # svc is still claimed by e2: its type and label stay; db was e1's alone and is gone whole.
    assert _objects(kb, NS + "svc", RDF_TYPE) == [NS + "Service"]
    assert _objects(kb, NS + "svc", LABEL) == ["svc"]
    assert _objects(kb, NS + "db", LABEL) == []
    assert _objects(kb, NS + "svc", "http://www.w3.org/ns/prov#wasGeneratedBy") == [NS + "episode_e2"]
    log = kb.transactions()["transactions"]
    assert log[-1]["source"] == "retract-episode:e1" and log[-1]["id"] == out["tx_id"]


def test_unknown_or_repeated_retraction_is_a_no_op(kb: KnowledgeBase) -> None:
    assert kb.retract_episode("never")["tx_id"] == 0
    kb.episode("e1", nodes=NODES)
    kb.retract_episode("e1")
    before = snapshot(kb)
    again = kb.retract_episode("e1")
    assert (again["tx_id"], again["retracted"]) == (0, 0)
    assert snapshot(kb) == before


def _referenced(kb: KnowledgeBase) -> None:
    kb.episode("e1", nodes=NODES)
    kb.knot(f"<http://other.org/app> <http://other.org/dependsOn> <{NS}db> .", "nt", source="other")


def test_preserve_keeps_the_identity_of_a_referenced_entity(kb: KnowledgeBase) -> None:
    _referenced(kb)
    out = kb.retract_episode("e1")
    assert out["on_orphan"] == "preserve"
    assert out["identity_orphan_entities"] == [{"entity": NS + "db", "lost_label": True, "lost_type": True}]
    assert out["identity_preserved"] == 2
    kept = {(s["predicate"], s["value"]) for s in out["identity_preserved_statements"]}
    assert kept == {(LABEL, "db"), (RDF_TYPE, NS + "Database")}
    assert not any(
        s["entity"] == NS + "db" and s["predicate"] in (LABEL, RDF_TYPE) for s in out["statements"]
    )
    assert _objects(kb, NS + "db", LABEL) == ["db"]
    assert _objects(kb, NS + "svc", LABEL) == []  # unreferenced: removed whole, not an orphan
    # A second call preserves them again and writes nothing.
    before = snapshot(kb)
    assert kb.retract_episode("e1")["tx_id"] == 0
    assert snapshot(kb) == before


def test_refuse_writes_nothing_and_lists_what_would_be_lost(kb: KnowledgeBase) -> None:
    _referenced(kb)
    before = snapshot(kb)
    with pytest.raises(WriteRefused, match="would lose its label and type") as raised:
        kb.retract_episode("e1", on_orphan="refuse")
    assert raised.value.extra["identity_orphan_entities"][0]["entity"] == NS + "db"
    assert snapshot(kb) == before


def test_allow_retracts_identity_and_reports_the_ghosts(kb: KnowledgeBase) -> None:
    _referenced(kb)
    out = kb.retract_episode("e1", on_orphan="allow")
    assert out["identity_orphans"] == 1 and out["identity_preserved"] == 0
    assert _objects(kb, NS + "db", LABEL) == []
    assert [str(r["o"]) for r in select(kb, "SELECT ?o WHERE { <http://other.org/app> ?p ?o }")] == [
        NS + "db"
    ]


def test_closure_stamp_is_the_timestamp_and_history_survives(kb: KnowledgeBase) -> None:
    kb.episode("e1", nodes=NODES)
    out = kb.retract_episode("e1", timestamp="2099-01-01T00:00:00Z", actor="ops")
    assert (
        count(
            kb, "facts", "op = 1 AND retracted_tx = ? AND valid_to = ?", out["tx_id"], "2099-01-01T00:00:00Z"
        )
        > 0
    )
    assert _objects(kb, NS + "svc", LABEL, as_of_tx=out["tx_id"] - 1) == ["svc"]
    assert kb.transactions()["transactions"][-1]["actor"] == "ops"


def test_an_episode_in_named_graphs_is_retracted_per_graph_root_first(kb: KnowledgeBase) -> None:
    g = "http://ex.org/graph/agents"
    kb.episode("e1", nodes=NODES)
    kb.episode("e1", nodes=NODES, graph=g)
    out = kb.retract_episode("e1")
    log = kb.transactions()["transactions"][-2:]
    assert [t["source"] for t in log] == ["retract-episode:e1"] * 2
    assert out["tx_id"] == log[-1]["id"]
    assert _objects(kb, NS + "svc", LABEL) == [] and _objects(kb, NS + "svc", LABEL, graph=g) == []
    graphs = [r[0] for r in sql(kb, "SELECT graph FROM transactions ORDER BY id")]
    assert graphs[-2] == 0 and graphs[-1] != 0
