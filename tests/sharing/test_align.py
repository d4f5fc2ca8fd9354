"""Cross-graph alignment (tools-graphs-governance §3.1-§3.3): propose (AP-1..AP-4), decide
(AD-1..AD-4) and apply (AA-1..AA-6) over two small vocabularies in two named graphs of a real
store, through the REST routes (status codes, ``ignored_fields``) and the service beneath them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from quipu.errors import UnknownGraph
from quipu.sharing import align, sssom
from tests.backends import store_location
from tests.graphs.support import ROOT_IRI, ok, refused
from tests.rest.support import kb_of, serve
from tests.store import snapshot

EX = "http://ex.org/"
GA, GB = EX + "vocab/a", EX + "vocab/b"
A, B = EX + "a/", EX + "b/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SAME_AS = sssom.OWL_SAME_AS
ALIGN = "https://quipu.dev/ontology/align/"
PREFIXES = f"@prefix ex: <{EX}> .\n@prefix a: <{A}> .\n@prefix b: <{B}> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
VOCAB_A = (
    PREFIXES
    + """
a:widget a ex:Thing ; rdfs:label "Widget" .
a:gadget a ex:Thing ; rdfs:label "Gadget" .
a:gizmo a ex:Tool ; rdfs:label "Gizmo" .
a:cog a ex:Thing ; rdfs:label "Cog", "Sprocket" .
a:unlabelled a ex:Thing .
a:commit a ex:Thing ; rdfs:label "commit/quipu/abc1234" .
"""
)
VOCAB_B = (
    PREFIXES
    + """
b:widget a ex:Thing ; rdfs:label "widget" .
b:gadget a ex:Thing ; rdfs:label "Gadgett" .
b:gizmo a ex:Thing ; rdfs:label "Gizmo" .
b:zebra a ex:Thing ; rdfs:label "Zebra" .
b:commit a ex:Thing ; rdfs:label "commit/quipu/abc1235" .
"""
)
# ROOT facts about the same entities: alignment is graph-scoped, so none of these count.
ROOT_NOISE = (
    PREFIXES
    + """
b:gizmo a ex:Tool .
b:zebra rdfs:label "Widgets" .
b:widget rdfs:label "A second label, in another graph" .
"""
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        kb = kb_of(c)
        for graph, turtle in ((GA, VOCAB_A), (GB, VOCAB_B)):
            kb.graphs.create(graph)
            kb.knot(turtle, graph=graph)
        kb.knot(ROOT_NOISE)
        yield c


def propose(client: TestClient, a: str = GA, b: str = GB) -> dict[str, Any]:
    return ok(client, "/align/propose", graph_a=a, graph_b=b)


def decide(
    client: TestClient, set_tsv: str, *verdicts: tuple[str, str, str], reviewer: str = "ops"
) -> dict[str, Any]:
    decisions = [{"subject_id": s, "object_id": o, "decision": d} for s, o, d in verdicts]
    return ok(client, "/align/decide", set_tsv=set_tsv, reviewer=reviewer, decisions=decisions)


def apply(
    client: TestClient, decided: dict[str, Any], a: str = GA, b: str = GB, **extra: Any
) -> dict[str, Any]:
    body = {"set_tsv": decided["set_tsv"], "expected_version": decided["expected_version"], **extra}
    return ok(client, "/align/apply", graph_a=a, graph_b=b, **body)


def rows_of(set_tsv: str) -> list[tuple[str, ...]]:
    return [m.cells() for m in sssom.parse(set_tsv).mappings]


def graph_triples(client: TestClient, graph: str) -> set[str]:
    return set(kb_of(client).export("ntriples", graph=graph).splitlines())


def registered(client: TestClient) -> list[str]:
    return [g["iri"] for g in kb_of(client).graphs.list()["graphs"]]


def decided_set(client: TestClient) -> dict[str, Any]:
    """The scenario's decision: widget accepted, gadget negated (written as object, subject)."""
    return decide(
        client,
        propose(client)["set_tsv"],
        (A + "widget", B + "widget", "accept"),
        (B + "gadget", A + "gadget", "negate"),
    )


# -- propose ----------------------------------------------------------------------------------


def test_propose_scores_pairs_sharing_a_type_in_the_graphs_named(client: TestClient) -> None:
    out = propose(client)
    # AP-3: both counts in one sentence; a:cog carries two labels in GA and is set aside (§3.1.2)
    assert out["summary"] == "2 candidate(s); 1 entity(ies) set aside as ambiguous"
    assert (out["candidates"], out["set_aside"]) == (2, 1)
    assert rows_of(out["set_tsv"]) == [
        (A + "gadget", "Gadget", SAME_AS, B + "gadget", "Gadgett", "semapv:LexicalSimilarityThresholdMatching",
         "", f"{align.score_labels('Gadget', 'Gadgett')[0]:.3f}", ""),  # type: ignore[index]
        (A + "widget", "Widget", SAME_AS, B + "widget", "widget", "semapv:LexicalMatching", "", "1.000", ""),
    ]  # fmt: skip
    # Left out: Gizmo (no shared type in these graphs; ROOT's ex:Tool does not count), the commit
    # identifiers, Zebra (below the floor; its ROOT label "Widgets" is not read), the unlabelled entity.


def test_ap4_the_version_is_of_exactly_the_set_returned_and_propose_is_deterministic(
    client: TestClient,
) -> None:
    out = propose(client)
    assert out["expected_version"] == "sha256:" + hashlib.sha256(out["set_tsv"].encode()).hexdigest()
    assert out["expected_version"] == sssom.set_version(sssom.parse(out["set_tsv"]))
    assert propose(client) == out


def test_propose_takes_a_set_id_and_reports_unknown_fields(client: TestClient) -> None:
    out = ok(client, "/align/propose", graph_a=GA, graph_b=GB, mapping_set_id="urn:ex:set", colour="red")
    assert sssom.parse(out["set_tsv"]).mapping_set_id == "urn:ex:set"
    assert out["ignored_fields"] == ["colour"]
    refused(client, "/align/propose", "mapping_set_id", graph_a=GA, graph_b=GB, mapping_set_id="not an iri")


def test_ap1_an_unknown_graph_is_refused_and_an_empty_one_is_zero(client: TestClient) -> None:
    body = refused(client, "/align/propose", "is not a known graph", graph_a=GA, graph_b=EX + "vocab/typo")
    assert body["field"] == "graph_b" and body["reason"] == "unknown_graph"
    # interned (used as a subject) but never registered: still not a graph
    refused(client, "/align/propose", "is not a known graph", graph_a=A + "widget", graph_b=GB)
    refused(client, "/align/propose", "missing 'graph_a'", graph_b=GB)
    kb_of(client).graphs.create(EX + "vocab/empty")
    out = propose(client, GA, EX + "vocab/empty")
    assert (out["candidates"], out["set_aside"]) == (0, 1)  # a legitimate zero (cog is still set aside)


def test_root_is_named_by_its_iri(client: TestClient) -> None:
    kb_of(client).knot(PREFIXES + 'ex:root-widget a ex:Thing ; rdfs:label "WIDGET" .')
    out = propose(client, ROOT_IRI, GA)
    # ROOT holds one label per entity (b:widget's "widget" is GB's, not ROOT's): only GA's a:cog
    # is set aside, and ex:root-widget matches a:widget exactly
    assert [(r[0], r[3]) for r in rows_of(out["set_tsv"])] == [(EX + "root-widget", A + "widget")]
    assert out["set_aside"] == 1


def test_ap2_entities_without_labels_are_not_concepts() -> None:
    found, aside = align.concepts([(A + "x", "X", EX + "T"), (A + "x", "X", EX + "U"), (A + "y", "Y", "")])
    assert aside == 0
    assert found == [
        align.Concept(A + "x", "X", frozenset({EX + "T", EX + "U"})),
        align.Concept(A + "y", "Y", frozenset()),
    ]


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("Widget", "WIDGET", (1.0, "LexicalMatching")),
        ("commit/quipu/abc1234", "commit/quipu/abc1234", (1.0, "LexicalMatching")),  # equal still matches
        ("commit/quipu/abc1234", "commit/quipu/abc1235", None),
        ("commit/org/quipu/ABCDEF0", "commit/org/quipu/abcdef1", None),
    ],
)
def test_score_labels(a: str, b: str, expected: tuple[float, str] | None) -> None:
    assert align.score_labels(a, b) == expected


@pytest.mark.parametrize(
    "label, commit",
    [
        ("commit/quipu/abc1234", True),
        ("commit/a/b/c/" + "f" * 64, True),
        ("commit/quipu/abc123", False),  # fewer than 7 hex digits
        ("commit/quipu/" + "a" * 65, False),
        ("commit//abc1234", False),  # an empty repository segment
        ("commit/quipu//abc1234", False),
        ("commit/abc1234", False),  # no repository at all
        ("commit/quipu/abc123g", False),
        ("commits/quipu/abc1234", False),
    ],
)
def test_slash_qualified_commit_identifiers(label: str, commit: bool) -> None:
    assert align.is_commit_id(label) is commit


def test_two_commit_identifiers_are_never_candidates_but_a_commit_and_a_name_may_be() -> None:
    a = align.Concept(A + "c", "commit/quipu/abc1234", frozenset({EX + "T"}))
    b = align.Concept(B + "c", "commit/quipu/abc1235", frozenset({EX + "T"}))
    assert align.candidates([a], [b]) == []
    named = align.Concept(B + "n", "commit/quipu/abc1234x", frozenset({EX + "T"}))
    assert [r.object_id for r in align.candidates([a], [named])] == [B + "n"]


def test_the_floor_is_inclusive_and_the_same_iri_is_never_paired() -> None:
    same = align.Concept(A + "x", "Thing", frozenset({EX + "T"}))
    assert align.candidates([same], [same]) == []
    rows = align.candidates([same], [align.Concept(B + "x", "Thing", frozenset({EX + "T"}))])
    assert [(r.confidence, r.justification, r.author_id) for r in rows] == [(1.0, "LexicalMatching", None)]
    assert align.FLOOR == 0.85


# -- decide ---------------------------------------------------------------------------------


def test_decide_records_verdicts_and_reports_what_landed(client: TestClient) -> None:
    proposed = propose(client)
    out = decide(
        client,
        proposed["set_tsv"],
        (A + "widget", B + "widget", "accept"),
        (B + "gadget", A + "gadget", "negate"),
        (A + "widget", B + "widget", "accept"),  # AD-2: a duplicate is harmless
        (A + "nothing", B + "here", "accept"),  # AD-3: changes nothing, reported
    )
    cells = rows_of(out["set_tsv"])
    assert [(c[0], c[6], c[8]) for c in cells] == [(A + "gadget", "Not", "ops"), (A + "widget", "", "ops")]
    assert out["applied"] == 2
    assert out["unmatched"] == [{"subject_id": A + "nothing", "object_id": B + "here"}]
    # AD-4: the decided set is canonical and versioned as returned; propose's version is not it
    assert out["expected_version"] == sssom.set_version(sssom.parse(out["set_tsv"]))
    assert out["expected_version"] != proposed["expected_version"]


def test_decide_is_pure_and_annotating(client: TestClient) -> None:
    proposed = propose(client)["set_tsv"]
    before = snapshot(kb_of(client))
    verdict = {"subject_id": A + "widget", "object_id": B + "widget", "decision": "accept"}
    first = ok(client, "/align/decide", set_tsv=proposed, reviewer="ops", decisions=[verdict], mood="calm")
    assert first.pop("ignored_fields") == ["mood"]
    assert ok(client, "/align/decide", set_tsv=proposed, reviewer="ops", decisions=[verdict]) == first
    assert snapshot(kb_of(client)) == before


@pytest.mark.parametrize(
    "change, phrase",
    [
        ({"reviewer": "  "}, "non-blank"),
        ({"decisions": [{"subject_id": A + "widget", "object_id": B + "widget", "decision": "maybe"}]},
         "must be 'accept' or 'negate'"),
        ({"decisions": [{"subject_id": A + "widget", "object_id": B + "widget", "decision": "accept"},
                        {"subject_id": B + "widget", "object_id": A + "widget", "decision": "negate"}]},
         "conflicting decisions"),
        ({"set_tsv": "not a mapping set"}, "no mapping_set_id"),
        ({"set_tsv": None}, "set_tsv"),
        ({"reviewer": None}, "reviewer"),
        ({"decisions": None}, "decisions"),
    ],
)  # fmt: skip
def test_decide_refusals(client: TestClient, change: dict[str, Any], phrase: str) -> None:
    body: dict[str, Any] = {
        "set_tsv": propose(client)["set_tsv"],
        "reviewer": "ops",
        "decisions": [],
        **change,
    }
    refused(client, "/align/decide", phrase, **{k: v for k, v in body.items() if v is not None})


def test_a_row_already_judged_is_not_decided_again(client: TestClient) -> None:
    decided = decided_set(client)
    refused(client, "/align/decide", "already carries a judgement", set_tsv=decided["set_tsv"], reviewer="lead",
            decisions=[{"subject_id": A + "widget", "object_id": B + "widget", "decision": "negate"}])  # fmt: skip


# -- apply ----------------------------------------------------------------------------------


def test_the_acceptance_scenario(client: TestClient) -> None:
    decided = decided_set(client)
    sssom.validate_with_schema(decided["set_tsv"])  # the applied SSSOM file parses with the schema
    untouched = {g: graph_triples(client, g) for g in (ROOT_IRI, GA, GB)}
    out = apply(client, decided, actor="align-bot")
    graph = align.derived_graph(GA, GB)
    # 1 sameAs + 1 distinctFrom, and three provenance values on each subject
    assert out == {"graph": graph, "written": 8, "distinct_from": 1}
    assert graph.startswith("urn:quipu:align:") and graph in registered(client)
    facts = graph_triples(client, graph)
    assert f"<{A}widget> <{SAME_AS}> <{B}widget> ." in facts
    assert f"<{A}gadget> <{align.DISTINCT_FROM}> <{B}gadget> ." in facts
    assert f'<{A}widget> <{ALIGN}assertedBy> "ops" .' in facts
    assert f'<{A}gadget> <{ALIGN}justification> "semapv:LexicalSimilarityThresholdMatching" .' in facts
    assert len(facts) == 8
    # AA-5: nothing outside the derived graph changed
    assert {g: graph_triples(client, g) for g in (ROOT_IRI, GA, GB)} == untouched
    last = kb_of(client).transactions()["transactions"][-1]
    assert last["source"] == "align:apply:" + decided["expected_version"] and last["actor"] == "align-bot"
    # AA-3: re-applying the unchanged set writes nothing new (assertedOn is replaced, not added)
    assert apply(client, decided)["written"] == 0
    assert len(graph_triples(client, graph)) == 8
    # Swapping graph_a and graph_b names the same derived graph
    assert apply(client, decided, GB, GA) == {"graph": graph, "written": 0, "distinct_from": 1}


def test_aa1_aa2_a_stale_version_writes_and_registers_nothing(client: TestClient) -> None:
    proposed = propose(client)
    decided = decided_set(client)
    before, graphs = snapshot(kb_of(client)), registered(client)
    stale = {"set_tsv": decided["set_tsv"], "expected_version": proposed["expected_version"]}
    body = refused(
        client, "/align/apply", "the mapping set changed under this apply", graph_a=GA, graph_b=GB, **stale
    )
    assert "Nothing was written" in body["error"] and body["field"] == "expected_version"
    edited = {
        "set_tsv": decided["set_tsv"].replace("\tops\n", "\tlead\n"),
        "expected_version": decided["expected_version"],
    }
    refused(client, "/align/apply", "changed under this apply", graph_a=GA, graph_b=GB, **edited)
    assert snapshot(kb_of(client)) == before and registered(client) == graphs
    assert align.derived_graph(GA, GB) not in graphs


def test_a_missing_expected_version_is_explained_never_defaulted(client: TestClient) -> None:
    decided = decided_set(client)
    before = snapshot(kb_of(client))
    body = refused(
        client,
        "/align/apply",
        "carry the expected_version",
        set_tsv=decided["set_tsv"],
        graph_a=GA,
        graph_b=GB,
    )
    assert body["field"] == "expected_version" and body["reason"] == "missing_field"
    assert snapshot(kb_of(client)) == before


def test_a_negated_row_derives_distinct_from_and_a_close_match_derives_no_same_as(client: TestClient) -> None:
    # The operator edits the predicate of the proposed widget row to skos:closeMatch, then accepts.
    close = propose(client)["set_tsv"].replace(
        f"{A}widget\tWidget\t{SAME_AS}", f"{A}widget\tWidget\t{sssom.SKOS_NS}closeMatch"
    )
    decided = decide(
        client, close, (A + "widget", B + "widget", "accept"), (A + "gadget", B + "gadget", "negate")
    )
    out = apply(client, decided)
    facts = graph_triples(client, out["graph"])
    assert not any(f"<{SAME_AS}>" in t for t in facts)
    assert f"<{A}gadget> <{align.DISTINCT_FROM}> <{B}gadget> ." in facts
    assert out["distinct_from"] == 1 and not any(t.startswith(f"<{A}widget>") for t in facts)


def test_aa6_undecided_rows_derive_nothing(client: TestClient) -> None:
    proposed = propose(client)
    out = apply(client, proposed)  # propose's own version is right for the undecided set
    assert out == {"graph": align.derived_graph(GA, GB), "written": 0, "distinct_from": 0}
    assert graph_triples(client, out["graph"]) == set()


def test_aa4_changed_provenance_replaces_the_stale_value(client: TestClient) -> None:
    decided = decided_set(client)
    graph = apply(client, decided)["graph"]
    # Only the author changed (an edit, versioned anew by the operator's tooling)
    edited = decided["set_tsv"].replace("\tops\n", "\tlead\n")
    again = apply(client, {"set_tsv": edited, "expected_version": sssom.set_version(sssom.parse(edited))})
    assert again["written"] == 0  # two values retracted, two asserted
    facts = graph_triples(client, graph)
    by = sorted(t for t in facts if f"<{ALIGN}assertedBy>" in t)
    assert by == [f'<{A}gadget> <{ALIGN}assertedBy> "lead" .', f'<{A}widget> <{ALIGN}assertedBy> "lead" .']
    assert len(facts) == 8


def test_one_subject_in_two_rows_keeps_one_value_per_provenance_predicate(client: TestClient) -> None:
    rows = (
        sssom.MappingRow(A + "widget", SAME_AS, B + "widget", "LexicalMatching", author_id="ann"),
        sssom.MappingRow(
            A + "widget", SAME_AS, B + "zebra", "ManualMappingCuration", author_id="bob", negated=True
        ),
    )
    tsv = sssom.serialise(sssom.MappingSet(sssom.DEFAULT_SET_ID, rows))
    out = apply(client, {"set_tsv": tsv, "expected_version": sssom.version_of(tsv)})
    facts = graph_triples(client, out["graph"])
    assert out["written"] == len(facts) == 5  # two assertions, one value of each provenance predicate
    assert f'<{A}widget> <{ALIGN}assertedBy> "bob" .' in facts  # the later row in pair order


@pytest.mark.parametrize("bad", [EX + "has space", EX + "has>angle", "relative/iri"])
def test_an_iri_that_cannot_be_written_is_refused(client: TestClient, bad: str) -> None:
    rows = (sssom.MappingRow(A + "widget", SAME_AS, bad, "LexicalMatching", author_id="ops"),)
    tsv = sssom.serialise(sssom.MappingSet(sssom.DEFAULT_SET_ID, rows))
    before = snapshot(kb_of(client))
    refused(client, "/align/apply", "cannot be written as an IRI", set_tsv=tsv, graph_a=GA, graph_b=GB,
            expected_version=sssom.version_of(tsv))  # fmt: skip
    assert snapshot(kb_of(client)) == before


def test_apply_refuses_an_unknown_source_graph_and_reports_unknown_fields(client: TestClient) -> None:
    decided = decided_set(client)
    body = {"set_tsv": decided["set_tsv"], "expected_version": decided["expected_version"]}
    refused(client, "/align/apply", "is not a known graph", graph_a=GA, graph_b=EX + "typo", **body)
    assert align.derived_graph(GA, EX + "typo") not in registered(client)
    out = apply(client, decided, note="x")
    assert out["ignored_fields"] == ["note"]


def test_the_derived_graph_iri() -> None:
    first, second = sorted((GA, GB))
    digest = [hashlib.sha256(g.encode()).hexdigest()[:12] for g in (first, second)]
    assert (
        align.derived_graph(GA, GB)
        == align.derived_graph(GB, GA)
        == f"urn:quipu:align:{digest[0]}:{digest[1]}"
    )


def test_the_service_over_a_store_opened_directly(tmp_path: Path) -> None:
    with KnowledgeBase(store_location(tmp_path, "direct.db")) as kb:
        with pytest.raises(UnknownGraph, match="is not a known graph"):
            kb.sharing.align_propose(graph_a=GA, graph_b=GB)
        for graph, turtle in ((GA, VOCAB_A), (GB, VOCAB_B)):
            kb.graphs.create(graph)
            kb.knot(turtle, graph=graph)
        proposed = kb.sharing.align_propose(graph_a=GA, graph_b=GB)
        verdicts = [{"subject_id": A + "widget", "object_id": B + "widget", "decision": "accept"}]
        decided = kb.sharing.align_decide(set_tsv=proposed["set_tsv"], reviewer="ops", decisions=verdicts)
        out = kb.sharing.align_apply(
            set_tsv=decided["set_tsv"], graph_a=GA, graph_b=GB, expected_version=decided["expected_version"]
        )
        assert out["written"] == 4
        assert kb.query(f"ASK {{ <{A}widget> <{SAME_AS}> <{B}widget> }}", graph=out["graph"]) is True
        assert kb.query(f"ASK {{ <{A}widget> <{SAME_AS}> <{B}widget> }}") is False  # not in ROOT


def test_propose_reads_both_graphs_under_the_label_floor(tmp_path: Path) -> None:
    with serve(tmp_path, labels={"min_freshness": "recomputing"}) as c:
        for graph, turtle in ((GA, VOCAB_A), (GB, VOCAB_B)):
            kb_of(c).graphs.create(graph)
            kb_of(c).knot(turtle, graph=graph)
        ok(c, "/graph/label", graph=GA, timestamp="2026-01-01T00:00:00Z", freshness="fresh")
        body = refused(c, "/align/propose", f"graph <{GB}> declares no freshness", graph_a=GA, graph_b=GB)
        assert body["reason"] == "label_floor"
        ok(c, "/graph/label", graph=GB, timestamp="2026-01-01T00:00:00Z", freshness="fresh")
        assert propose(c)["candidates"] == 2
