"""quipu_graph_label (tools-graphs-governance §1.3): rules LB-1..LB-7, the label cache, the
versioned meta-graph facts, expiry, and the composed ``labels`` of query responses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import raw, serve

from .support import (
    EX,
    G1,
    G2,
    META_IRI,
    ROOT_IRI,
    T0,
    T1,
    T2,
    graph_rows,
    knot,
    ok,
    refused,
    rows,
    store_snapshot,
)

Q = "https://quipu.dev/ontology/"
CHAIN = EX + "chain"
GOLD = {"iri": EX + "gold", "chain": CHAIN, "rank": 30}
SILVER = {"iri": EX + "silver", "chain": CHAIN, "rank": 20}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        ok(c, "/graph/create", graph=G1)
        ok(c, "/graph/create", graph=G2)
        yield c


def labels_of(client: TestClient, iri: str) -> dict[str, Any]:
    (row,) = [g for g in graph_rows(client)["graphs"] if g["iri"] == iri]
    out: dict[str, Any] = row["labels"]
    return out


def meta_facts(client: TestClient) -> list[tuple[str, str, str]]:
    found = rows(client, "SELECT ?s ?p ?o WHERE { ?s ?p ?o }", graph=META_IRI, verbose=True)
    return sorted((r["s"], r["p"], str(r["o"])) for r in found)


def test_a_declaration_fills_the_cache_and_writes_meta_facts(client: TestClient) -> None:
    out = ok(
        client, "/graph/label", graph=G1, timestamp=T0, freshness="fresh", durability="reproducible",
        trust=GOLD, policy=["pii", "no-export", "pii"], kind="knowledge", actor="curator",
    )  # fmt: skip
    assert labels_of(client, G1) == {
        "freshness": "fresh",
        "durability": "reproducible",
        "trust_rank": 30,
        "trust_chain": CHAIN,
        "policy": "no-export pii",  # LB-6: a set, sorted and space-separated
        "kind": "knowledge",
    }
    assert meta_facts(client) == sorted(
        [
            (G1, Q + "freshness", "fresh"),
            (G1, Q + "durability", "reproducible"),
            (G1, Q + "trust", EX + "gold"),
            (EX + "gold", Q + "inChain", CHAIN),
            (EX + "gold", Q + "trustRank", "30"),
            (G1, Q + "policyClass", "no-export"),
            (G1, Q + "policyClass", "pii"),
            (G1, Q + "dataKind", "knowledge"),
        ]
    )
    # One transaction in the meta-graph, source graph-label, the declared actor, valid from T0.
    tx = raw(client, "SELECT timestamp, actor, source, graph FROM transactions WHERE id = ?", out["tx_id"])
    assert tx == [(T0, "curator", "graph-label", 1)]


def test_lb3_a_declaration_replaces_the_whole_cached_label(client: TestClient) -> None:
    ok(client, "/graph/label", graph=G1, timestamp=T0, freshness="fresh", kind="knowledge", policy=["pii"])
    ok(client, "/graph/label", graph=G1, timestamp=T1, durability="backed")
    assert labels_of(client, G1) == {
        "freshness": None, "durability": "backed", "trust_rank": None, "trust_chain": None,
        "policy": None, "kind": None,
    }  # fmt: skip


def test_lb4_earlier_declarations_stay_as_history(client: TestClient) -> None:
    first = ok(client, "/graph/label", graph=G1, timestamp=T0, freshness="fresh")["tx_id"]
    second = ok(client, "/graph/label", graph=G1, timestamp=T1, freshness="stale")["tx_id"]
    assert second > first
    assert (G1, Q + "freshness", "fresh") in meta_facts(client)
    assert (G1, Q + "freshness", "stale") in meta_facts(client)
    assert labels_of(client, G1)["freshness"] == "stale"


def test_root_can_be_labelled(client: TestClient) -> None:
    ok(client, "/graph/label", graph=ROOT_IRI, timestamp=T0, freshness="recomputing")
    assert labels_of(client, ROOT_IRI)["freshness"] == "recomputing"


def test_an_expired_declaration_reads_as_undeclared(client: TestClient) -> None:
    ok(client, "/graph/label", graph=G1, timestamp=T0, freshness="fresh", valid_to=T1)
    assert labels_of(client, G1)["freshness"] is None
    ok(client, "/graph/label", graph=G2, timestamp=T0, freshness="fresh", valid_to="2999-01-01T00:00:00Z")
    assert labels_of(client, G2)["freshness"] == "fresh"


@pytest.mark.parametrize(
    "body, field, phrase",
    [
        ({"freshness": "fresh"}, "timestamp", "timestamp"),
        ({}, "graph", "declares no axis"),
        ({"policy": []}, "graph", "declares no axis"),  # LB-7
        ({"freshness": "Fresh"}, "freshness", "stale, recomputing, fresh"),  # LB-1
        ({"durability": "durable"}, "durability", "soleRecord"),
        ({"trust": {"chain": CHAIN, "rank": 1}}, "trust.iri", "trust.iri"),
        ({"trust": {"iri": EX + "t", "rank": 1}}, "trust.chain", "a rank without the chain that ranks it"),
        ({"trust": {"iri": EX + "t", "chain": CHAIN, "rank": "1"}}, "trust.rank", "integer"),
        ({"trust": {"iri": EX + "t", "chain": CHAIN, "rank": True}}, "trust.rank", "integer"),
        ({"policy": ["no export"]}, "policy", "whitespace"),
        ({"policy": [7]}, "policy", "strings"),
        ({"kind": "Archive"}, "kind", "[a-z][a-z0-9-]*"),
        ({"kind": "1st"}, "kind", "[a-z][a-z0-9-]*"),
        ({"freshness": "fresh", "valid_to": "2026-06-01T00:00:00+00:00"}, "valid_to", "canonical UTC"),
        ({"freshness": "fresh", "valid_to": "2025-06-01T00:00:00Z"}, "valid_to", "strictly later"),
        ({"freshness": "fresh", "valid_to": T0}, "valid_to", "strictly later"),
    ],
)
def test_lb1_each_axis_is_parsed_strictly_and_nothing_is_written(
    client: TestClient, body: dict[str, Any], field: str, phrase: str
) -> None:
    timestamp = {} if field == "timestamp" else {"timestamp": T0}
    before = store_snapshot(client)
    out = refused(client, "/graph/label", phrase, **{"graph": G1, **timestamp, **body})
    assert out["field"] == field
    assert store_snapshot(client) == before


def test_lb2_an_unregistered_graph_is_refused_leaving_no_meta_facts(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> <{EX}mentioned> .")  # interned, never registered
    before = store_snapshot(client)
    for iri in (EX + "mentioned", EX + "never-seen"):
        refused(client, "/graph/label", "Create it first", graph=iri, timestamp=T0, freshness="fresh")
    assert store_snapshot(client) == before


def test_the_meta_graph_is_not_labelled(client: TestClient) -> None:
    refused(client, "/graph/label", "not labelled", graph=META_IRI, timestamp=T0, freshness="fresh")


# -- the composed label of a query ------------------------------------------------------------------


def composed(client: TestClient, **fields: Any) -> Any:
    return ok(client, "/query", query="ASK { ?s ?p ?o }", **fields)["labels"]


def test_a_query_over_undeclared_graphs_has_null_labels(client: TestClient) -> None:
    assert composed(client) is None
    assert composed(client, graph=G1) is None


def test_composition_never_widens(client: TestClient) -> None:
    ok(client, "/graph/label", graph=G1, timestamp=T0, freshness="fresh", durability="backed",
       trust=GOLD, policy=["pii"], kind="knowledge")  # fmt: skip
    ok(client, "/graph/label", graph=G2, timestamp=T0, freshness="stale", trust=SILVER,
       policy=["no-export"], kind="operational")  # fmt: skip
    ok(client, "/datasets", action="create", name=EX + "both", members=[G1, G2])
    assert composed(client, graph=EX + "both") == {
        "freshness": {"value": "stale", "coverage": "full"},  # meet
        "durability": {"value": "backed", "coverage": "partial"},  # only G1 declares it
        "trust": {"value": EX + "silver", "chain": CHAIN, "coverage": "full"},
        "policy": {"value": ["no-export", "pii"], "coverage": "full"},  # join
        "kind": {"value": ["knowledge", "operational"], "coverage": "full"},
    }
    # The same through FROM, and for one graph alone.
    ask = f"ASK FROM <{G1}> FROM <{G2}> {{ ?s ?p ?o }}"
    assert ok(client, "/query", query=ask)["labels"]["freshness"] == {"value": "stale", "coverage": "full"}
    assert composed(client, graph=G1)["freshness"] == {"value": "fresh", "coverage": "full"}


def test_trust_from_different_chains_is_an_error_but_rows_still_come(client: TestClient) -> None:
    ok(client, "/graph/label", graph=G1, timestamp=T0, trust=GOLD)
    ok(
        client,
        "/graph/label",
        graph=G2,
        timestamp=T0,
        trust={"iri": EX + "x", "chain": EX + "other", "rank": 1},
    )
    knot(client, f"<{EX}a> <{EX}p> 1 .", graph=G1)
    out = ok(client, "/query", query=f"SELECT ?s FROM <{G1}> FROM <{G2}> WHERE {{ ?s ?p ?o }}")
    assert "different chains" in out["labels"]["error"] and out["count"] == 1


def test_a_label_on_root_reaches_a_plain_query(client: TestClient) -> None:
    ok(client, "/graph/label", graph=ROOT_IRI, timestamp=T2, freshness="fresh")
    assert composed(client)["freshness"] == {"value": "fresh", "coverage": "full"}
