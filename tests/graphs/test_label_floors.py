"""Label floors (``[quipu.labels]``, tools-graphs-governance §1.3): every read path refuses a read
whose graphs fall below the floor, naming the graph, and reads that pass stay in SQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from quipu.errors import ConfigError
from quipu.store.graph_scope import LabelFloorRefused
from tests.backends import migrated_location
from tests.governance.path_fixtures import EX as PATH_EX
from tests.governance.path_fixtures import MINIMAL
from tests.rest.support import kb_of, serve

from .support import EX, G1, G2, ROOT_IRI, T0, knot, ok

CHAIN = EX + "chain"
MINI = PATH_EX + "mini"
FLOOR = {
    "min_freshness": "recomputing",
    "min_trust_rank": 20,
    "min_trust_chain": CHAIN,
    "deny_policy_tokens": ["no-export"],
    "deny_data_kinds": ["archive"],
}
RULES = (
    "@prefix rule: <http://quipu.local/rule#> .\n"
    f'<{EX}r> a rule:Rule ; rule:id "r" ; rule:head "q(?x, ?y)" ; rule:body "p(?x, ?y)" ; rule:prefix "{EX}" .'
)
GOOD = {"freshness": "fresh", "trust": {"iri": EX + "gold", "chain": CHAIN, "rank": 30}}


def golden_path_read(client: TestClient, route: str, **body: Any) -> Any:
    """A golden-path read of a verified trajectory (written first, so a passing read answers 200)."""
    kb_of(client).knot(MINIMAL)
    return client.post(route, json=body)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, labels=FLOOR) as c:
        for g in (G1, G2):
            ok(c, "/graph/create", graph=g)
            knot(c, f"<{EX}in-{g[-2:]}> <{EX}p> 1 .", graph=g)
        knot(c, f"<{EX}s> <{EX}p> 1 .")
        ok(c, "/graph/label", graph=ROOT_IRI, timestamp=T0, **GOOD)
        ok(c, "/graph/label", graph=G1, timestamp=T0, **GOOD)
        yield c


def label(client: TestClient, graph: str, **axes: Any) -> None:
    ok(client, "/graph/label", graph=graph, timestamp=T0, **axes)


def refused_read(response: Any, graph: str, phrase: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["reason"] == "label_floor" and f"<{graph}>" in body["error"] and phrase in body["error"], body


# Each read path, over ROOT: (method, route, request) as the REST client sends it.
ROOT_READS: dict[str, Callable[[TestClient], Any]] = {
    "sparql": lambda c: c.post("/query", json={"query": "SELECT * WHERE { ?s ?p ?o }"}),
    "sparql-get": lambda c: c.get("/query", params={"query": "ASK { ?s ?p ?o }"}),
    "export": lambda c: c.post("/export", json={}),
    "entity": lambda c: c.get("/entity", params={"iri": EX + "s"}),
    "entity_history": lambda c: c.post("/entity_history", json={"iri": EX + "s"}),
    "cord": lambda c: c.post("/cord", json={}),
    "unravel": lambda c: c.post("/unravel", json={"valid_at": "2030-01-01T00:00:00Z"}),
    "search": lambda c: c.post("/search", json={"embedding": [0.1] * 384}),
    "search_nodes": lambda c: c.post("/search_nodes", json={"query": "s"}),
    "search_facts": lambda c: c.post("/search_facts", json={"query": "s"}),
    "context": lambda c: c.post("/context", json={"query": "s"}),
    "unified_search": lambda c: c.post("/unified_search", json={"query": "s", "embedding": [0.1] * 384}),
    "resolve": lambda c: c.post("/resolve", json={"name": "s"}),
    "spotlight": lambda c: c.post("/spotlight", json={"text": "s and t"}),
    "reconcile": lambda c: c.post("/reconcile", json={"queries": {"q0": {"query": "s"}}}),
    "hybrid_search": lambda c: c.post(
        "/hybrid_search", json={"embedding": [0.1] * 384, "sparql": "SELECT ?s WHERE { ?s ?p ?o }"}
    ),
    "search_query": lambda c: c.post(
        "/search/query",
        json={"sparql": "SELECT ?s WHERE { ?s ?p ?o }", "mode": "semantic", "embedding": [0.1] * 384},
    ),
    # graph analytics and named questions (issue 19)
    "graph": lambda c: c.post("/graph", json={}),
    "project": lambda c: c.post("/project", json={"algorithm": "louvain"}),
    "report": lambda c: c.get("/report"),
    "impact": lambda c: c.post("/impact", json={"entity": EX + "s"}),
    "impact-remove": lambda c: c.post("/impact", json={"entity": EX + "s", "remove": True}),
    "ask": lambda c: c.post("/ask", json={"name": "entity_facts", "params": {"entity": EX + "s"}}),
    "cooccurrence": lambda c: c.post("/cooccurrence", json={"work_item": EX + "w"}),
    # the change feed filtered on ROOT (unfiltered, it reads every graph a page holds)
    "changes": lambda c: c.get("/changes", params={"graph": ROOT_IRI}),
    "changes-stream": lambda c: c.get("/changes/stream", params={"graph": ROOT_IRI, "follow": "false"}),
    # the event log speaks of ROOT's statements (issue 20)
    "events": lambda c: c.get("/events"),
    "events-stream": lambda c: c.get("/events/stream", params={"follow": "false"}),
    # reasoning (issue 22): the rules read ROOT as premises; a rule query reads its evidence
    "reason": lambda c: c.post("/reason", json={"rules": RULES}),
    "rule_query": lambda c: c.post(
        "/rule/query", json={"claim": {"subject": EX + "s", "predicate": EX + "p", "object": {"int": 1}}}
    ),
    # golden paths (issue 23): the cone and the backtest read ROOT's trajectories
    "path_cone": lambda c: golden_path_read(c, "/path/cone", trajectory=MINI),
    "path_backtest": lambda c: golden_path_read(c, "/path/backtest", exemplar=MINI),
    # governance (issue 23): the policy's claim, and the verifier registry, live in ROOT
    "policy_check": lambda c: c.post("/policy/check", json={"target": EX + "s", "claim": "ASK { ?s ?p ?o }"}),
    "verdict_verify": lambda c: c.post(
        "/verdict/verify",
        json={
            "predicate_id": "p",
            "target_ref": EX + "s",
            "outcome": "satisfied",
            "evidence_hash": "fnv1a:0000000000000000",
            "verifier": "ci",
            "signature": "00" * 64,
        },
    ),
    "verifier_authorized": lambda c: c.post(
        "/verifier/authorized", json={"verifier": "ci", "predicate": "p"}
    ),
}


@pytest.mark.parametrize("path", sorted(ROOT_READS))
def test_every_root_read_passes_a_floor_root_meets(client: TestClient, path: str) -> None:
    response = ROOT_READS[path](client)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("path", sorted(ROOT_READS))
def test_every_root_read_is_refused_when_root_falls_below(client: TestClient, path: str) -> None:
    label(client, ROOT_IRI, freshness="stale", trust=GOOD["trust"])
    refused_read(ROOT_READS[path](client), ROOT_IRI, "below min_freshness")


@pytest.mark.parametrize(
    "axes, phrase",
    [
        ({"trust": GOOD["trust"]}, "declares no freshness"),  # undeclared fails a minimum
        ({"freshness": "fresh"}, "declares no trust"),
        ({**GOOD, "trust": {"iri": EX + "bronze", "chain": CHAIN, "rank": 10}}, "below min_trust_rank 20"),
        ({**GOOD, "trust": {"iri": EX + "x", "chain": EX + "other", "rank": 99}}, "not comparable"),
        ({**GOOD, "policy": ["pii", "no-export"]}, "no-export"),
        ({**GOOD, "kind": "archive"}, "deny_data_kinds"),
    ],
)
def test_each_floor_key_refuses_naming_the_graph(
    client: TestClient, axes: dict[str, Any], phrase: str
) -> None:
    label(client, G2, **axes)
    refused_read(client.post("/query", json={"query": "ASK { ?s ?p ?o }", "graph": G2}), G2, phrase)


def test_an_undeclared_kind_passes_the_kind_blocklist(client: TestClient) -> None:
    label(client, G2, **GOOD)  # no kind
    assert client.post("/query", json={"query": "ASK { ?s ?p ?o }", "graph": G2}).status_code == 200


def test_the_floor_covers_every_graph_a_query_names(client: TestClient) -> None:
    # G1 passes, G2 is undeclared: FROM both, a dataset of both, FROM NAMED and GRAPH all refuse.
    ok(client, "/datasets", action="create", name=EX + "ds", members=[G1, G2])
    for request in (
        {"query": f"ASK FROM <{G1}> FROM <{G2}> {{ ?s ?p ?o }}"},
        {"query": "ASK { ?s ?p ?o }", "graph": EX + "ds"},
        {"query": f"ASK FROM <{G1}> FROM NAMED <{G2}> {{ GRAPH ?g {{ ?s ?p ?o }} }}"},
    ):
        refused_read(client.post("/query", json=request), G2, "declares no freshness")
    # A graph the query does not read is not held against it.
    assert client.post("/query", json={"query": "ASK { ?s ?p ?o }", "graph": G1}).status_code == 200


def test_export_and_search_of_a_named_graph_are_floor_checked(client: TestClient) -> None:
    refused_read(client.post("/export", json={"graph": G2}), G2, "declares no freshness")
    refused_read(
        client.post("/search", json={"embedding": [0.1] * 384, "graph": G2}), G2, "declares no freshness"
    )
    assert client.post("/export", json={"graph": G1}).status_code == 200


def test_compiled_and_fallback_sparql_agree_and_a_floor_keeps_sql(client: TestClient) -> None:
    kb = kb_of(client)
    text = "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?s"
    assert kb.query_result(text, graph=G1).plan == "sql"  # the floor does not force the fallback
    for compiled in (True, False):
        with pytest.raises(LabelFloorRefused, match=f"<{G2}>"):
            kb.query_result(text, graph=G2, compiled=compiled)
        assert kb.query_result(text, graph=G1, compiled=compiled).rows


def test_an_expired_declaration_fails_the_floor(client: TestClient) -> None:
    label(client, G2, **GOOD, valid_to="2026-06-01T00:00:00Z")
    refused_read(
        client.post("/query", json={"query": "ASK { ?s ?p ?o }", "graph": G2}), G2, "declares no freshness"
    )


def test_no_floor_means_no_refusal(tmp_path: Path) -> None:
    with serve(tmp_path) as c:
        ok(c, "/graph/create", graph=G2)
        ok(c, "/graph/label", graph=G2, timestamp=T0, freshness="stale", policy=["no-export"])
        assert c.post("/query", json={"query": "ASK { ?s ?p ?o }", "graph": G2}).status_code == 200


@pytest.mark.parametrize(
    "floor, phrase",
    [
        ({"min_trust_rank": 3}, "go together"),
        ({"min_trust_chain": CHAIN}, "go together"),
        ({"deny_data_kinds": ["Archive"]}, "deny_data_kinds"),
    ],
)
def test_a_floor_that_cannot_be_evaluated_refuses_to_open(
    tmp_path: Path, floor: dict[str, Any], phrase: str
) -> None:
    from quipu.config import LabelsSettings

    with pytest.raises(ConfigError, match=phrase):
        KnowledgeBase(migrated_location(tmp_path), labels=LabelsSettings(**floor))
