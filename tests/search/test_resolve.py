"""``quipu_resolve_entity`` (tools-search §5.8): both halves with the real model, the merge, every
rule that applies to quipu (no attached layers exist, so rule 7 is the ``whole_store`` scope),
that the probe commits nothing, the MCP tool, and Jaro-Winkler against the ``strsim`` rules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from quipu.mcp.http import served_registry
from quipu.search.resolve import Candidate, jaro_winkler, merge, probe_text
from quipu.store import vectors as store_vectors
from tests.rest.support import kb_of, problem, serve, state
from tests.search.retrieval_support import call_tool
from tests.search.test_embed_backfill_tool import EMBEDDING

EX = "http://ex.org/"
GRAPH = "http://ex.org/graph/side"
DATA = f"""@prefix ex: <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix quipu: <https://quipu.dev/ontology/> .
ex:svc rdfs:label "example-service" ; a ex:DatabaseService .
ex:svc2 rdfs:label "example-service" ; quipu:distinctFrom ex:svc .
ex:doc rdfs:label "doctor" .
ex:tagged rdfs:label "cheeseburger"@en .
ex:typed rdfs:label "cheeseburger"^^ex:name .
ex:twice rdfs:label "north gate" , "North Gate Bridge" .
ex:d1 rdfs:label "dup" . ex:d2 rdfs:label "dup" . ex:d3 rdfs:label "dup" . ex:d4 rdfs:label "dup" .
"""
NAMED = f'<{EX}side> <http://www.w3.org/2000/01/rdf-schema#label> "side entrance" .\n'


# -- Jaro-Winkler -------------------------------------------------------------------------------


def strsim_jaro_winkler(a: str, b: str) -> float:
    """The rules of §5.8 written out: the oracle rapidfuzz is checked against."""
    la, lb = len(a), len(b)
    if la == 0 and lb == 0:
        return 1.0
    if la == 0 or lb == 0:
        return 0.0
    window = max(0, max(la, lb) // 2 - 1)
    taken_a, taken_b = [False] * la, [False] * lb
    matches = 0
    for i, ch in enumerate(a):
        for j in range(max(0, i - window), min(lb, i + window + 1)):
            if not taken_b[j] and b[j] == ch:
                taken_a[i] = taken_b[j] = True
                matches += 1
                break
    if matches == 0:
        return 0.0
    in_a = [c for c, t in zip(a, taken_a, strict=True) if t]
    in_b = [c for c, t in zip(b, taken_b, strict=True) if t]
    transpositions = sum(x != y for x, y in zip(in_a, in_b, strict=True)) // 2
    jaro = (matches / la + matches / lb + (matches - transpositions) / matches) / 3
    if jaro <= 0.7:
        return jaro
    prefix = 0
    for x, y in zip(a[:4], b[:4], strict=False):
        if x != y:
            break
        prefix += 1
    return jaro + 0.1 * prefix * (1 - jaro)


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("cheeseburger", "cheese fries", 0.8666666666666667),  # the spec's reference value
        ("", "", 1.0),  # two empty strings
        ("", "a", 0.0),  # exactly one empty
        ("abc", "", 0.0),
        ("ab", "ba", 0.0),  # window 0: no matches
        ("abc", "axyzw", 0.5111111111111111),  # jaro <= 0.7: no prefix boost
        ("aadca", "adcbaaad", 0.8275),  # 3 half-transpositions: t = 1 (integer halving)
        ("abcdefgh", "abcdefgx", 0.95),  # the prefix counts at most 4
        ("😀a", "😀b", 2 / 3),  # code points: one match each side, not UTF-16 units
        ("martha", "marhta", 0.9611111111111111),
    ],
)
def test_jaro_winkler_follows_the_strsim_rules(a: str, b: str, expected: float) -> None:
    assert jaro_winkler(a, b) == pytest.approx(expected, abs=1e-12)
    assert strsim_jaro_winkler(a, b) == pytest.approx(expected, abs=1e-12)


@pytest.mark.backend_independent
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abcdé😀 ", max_size=14), st.text(alphabet="abcdé😀 ", max_size=14))
def test_jaro_winkler_agrees_with_the_rules_everywhere(a: str, b: str) -> None:
    assert jaro_winkler(a, b) == pytest.approx(strsim_jaro_winkler(a, b), abs=1e-12)


# -- helpers of the merge ------------------------------------------------------------------------


@pytest.mark.backend_independent
def test_probe_text_uses_string_properties_by_key() -> None:
    properties = {"type": "DatabaseService", "a": "first", "n": 3, "z": None, "o": {"x": "y"}}
    assert probe_text("example-service", properties) == "example-service. a: first. type: DatabaseService"
    assert probe_text("x", {}) == "x"


@pytest.mark.backend_independent
def test_merge_keeps_the_better_row_and_the_vector_row_on_a_tie() -> None:
    """Rule 2, unit level: vector rows come first, so an equal name row loses."""
    rows = [
        Candidate("a", 0.9, "embedding:0.90"),
        Candidate("b", 0.88, "embedding:0.88"),
        Candidate("a", 0.9, "canonical_name:jaro_winkler:0.90"),
        Candidate("b", 1.0, "canonical_name:exact"),
    ]
    assert merge(rows, 5) == [rows[3], rows[0]]
    assert merge(rows, 1) == [rows[3]]
    assert merge(rows, 0) == []


# -- the route, with the real model ------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with serve(tmp_path_factory.mktemp("resolve"), embedding=EMBEDDING) as c:
        kb = kb_of(c)
        kb.knot(DATA)
        kb.create_graph(GRAPH)
        kb.knot(NAMED, "ntriples", graph=GRAPH)
        assert c.post("/embed_backfill", json={}).json()["status"] == "ok"
        yield c


def _resolve(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/resolve", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    assert result["count"] == len(result["candidates"])
    assert result["has_matches"] is bool(result["candidates"])
    return result


def _by_iri(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["iri"]: c for c in result["candidates"]}


def test_a_paraphrase_is_found_by_the_vector_half(client: TestClient) -> None:
    """ "physician" shares no spelling with "doctor" (Jaro-Winkler 0.43): only the embedding finds it."""
    assert jaro_winkler("physician", "doctor") < 0.5
    result = _resolve(client, name="physician")
    found = _by_iri(result)[f"{EX}doc"]
    assert re.fullmatch(r"embedding:0\.\d\d", found["matched_on"])
    assert found["score"] >= 0.85
    assert found["matched_on"] == f"embedding:{found['score']:.2f}"
    assert result["vector_scope"] == {"kind": "whole_store"}  # rule 7: no attached layers in quipu


def test_properties_are_folded_into_the_embedded_text(client: TestClient) -> None:
    """The stored text of ex:svc is "example-service. type: DatabaseService": the same probe text
    gives a cosine of 1; a name that alone is below the threshold is lifted by its properties."""
    plain = _resolve(client, name="service for the database", threshold=0.8)
    assert f"{EX}svc" not in _by_iri(plain)
    lifted = _resolve(client, name="example service", properties={"type": "DatabaseService"}, threshold=0.95)
    assert _by_iri(lifted)[f"{EX}svc"]["matched_on"].startswith("embedding:")


def test_rule_1_top_k_zero_returns_nothing_even_for_an_exact_label(client: TestClient) -> None:
    result = _resolve(client, name="example-service", top_k=0)
    assert result["has_matches"] is False and result["candidates"] == [] and result["count"] == 0


def test_rule_2_an_entity_found_by_both_halves_appears_once_with_its_best_score(client: TestClient) -> None:
    result = _resolve(client, name="doctor", top_k=10)
    rows = [c for c in result["candidates"] if c["iri"] == f"{EX}doc"]
    assert len(rows) == 1
    # the embedding of "doctor" against the stored text "doctor" is 1 up to float32 rounding
    assert rows[0]["score"] == pytest.approx(1.0, abs=1e-6)
    assert rows[0]["matched_on"] in ("canonical_name:exact", "embedding:1.00")
    scores = [c["score"] for c in result["candidates"]]
    assert scores == sorted(scores, reverse=True)


def test_rule_3_a_label_match_is_case_insensitive(client: TestClient) -> None:
    found = _by_iri(_resolve(client, name="Example-Service", top_k=10))
    assert found[f"{EX}svc"]["score"] == 1.0
    assert found[f"{EX}svc"]["matched_on"] == "canonical_name:exact"


def test_rule_4_language_tagged_and_typed_labels_are_ignored(client: TestClient) -> None:
    # Were they read, both would be exact matches (1.0); nothing else comes near 0.99.
    result = _resolve(client, name="cheeseburger", top_k=10, threshold=0.99)
    assert result["candidates"] == []  # nor embedded: their entity text is empty


def test_rule_5_without_a_provider_only_name_matches_are_reported(tmp_path: Path) -> None:
    with serve(tmp_path) as bare:
        kb_of(bare).knot(DATA)
        assert _resolve(bare, name="physician")["candidates"] == []
        result = _resolve(bare, name="Doctor")
        assert result["candidates"] == [
            {"iri": f"{EX}doc", "score": 1.0, "matched_on": "canonical_name:exact"}
        ]
        assert result["vector_scope"] == {"kind": "whole_store"}


def test_rule_6_distinct_from_is_not_applied(client: TestClient) -> None:
    found = _by_iri(_resolve(client, name="example-service", top_k=10))
    assert found[f"{EX}svc"]["score"] == found[f"{EX}svc2"]["score"] == 1.0


def test_jaro_winkler_rows_carry_their_score_and_an_entity_may_match_by_several_labels(
    client: TestClient,
) -> None:
    expected = jaro_winkler("north gate bridges", "north gate bridge")
    result = _resolve(client, name="North Gate Bridges", top_k=10)
    row = _by_iri(result)[f"{EX}twice"]
    assert row["score"] >= expected - 1e-9  # the closer of its two labels, or its embedding
    names = [c for c in result["candidates"] if c["matched_on"].startswith("canonical_name:")]
    assert all(re.fullmatch(r"canonical_name:jaro_winkler:\d\.\d\d", c["matched_on"]) for c in names)


def test_the_threshold_is_the_floor_of_both_halves(client: TestClient) -> None:
    loose = _resolve(client, name="doctors", threshold=0.9)
    assert f"{EX}doc" in _by_iri(loose)  # Jaro-Winkler 0.97
    strict = _resolve(client, name="doctors", threshold=0.999)
    assert strict["candidates"] == []


def test_the_name_half_reads_named_graphs_too(client: TestClient) -> None:
    found = _by_iri(_resolve(client, name="Side Entrance"))
    assert found[f"{EX}side"]["matched_on"] == "canonical_name:exact"  # ROOT-only backfill: no vector


@pytest.mark.parametrize("top_k", [-1, 2.5, "2", True, None])
def test_a_top_k_that_is_not_an_integer_of_at_least_0_falls_back_to_the_default(
    client: TestClient, top_k: Any
) -> None:
    body: dict[str, Any] = {"name": "dup"}
    if top_k is not None:
        body["top_k"] = top_k
    assert _resolve(client, **body)["count"] == 3  # [quipu.resolution] top_k
    assert _resolve(client, name="dup", top_k=4)["count"] == 4
    assert _resolve(client, name="dup", top_k=1)["count"] == 1


def test_the_configured_defaults_are_used(tmp_path: Path) -> None:
    with serve(tmp_path, resolution={"top_k": 1, "threshold": 0.5}) as bare:
        kb_of(bare).knot(DATA)
        # "dock" ~ "doctor" is 0.825 (below the 0.85 default), "dock" ~ "dup" 0.53: one candidate
        result = _resolve(bare, name="dock")
        assert [c["iri"] for c in result["candidates"]] == [f"{EX}doc"]
        assert result["candidates"][0]["matched_on"].startswith("canonical_name:jaro_winkler:0.8")
        assert _resolve(bare, name="dock", threshold=0.85)["candidates"] == []


def test_the_probe_commits_nothing(client: TestClient) -> None:
    before = state(client)
    with kb_of(client).db.read() as conn:
        vectors_before = store_vectors.current(conn), store_vectors.generation(conn)
    for body in ({"name": "physician"}, {"name": "brand new thing", "properties": {"kind": "x"}}):
        _resolve(client, **body)
    assert state(client) == before  # the transaction log and every table, vectors included
    with kb_of(client).db.read() as conn:
        assert (store_vectors.current(conn), store_vectors.generation(conn)) == vectors_before


def test_unknown_fields_are_reported_not_refused(client: TestClient) -> None:
    result = _resolve(client, name="doctor", zeta=1, alpha="x")
    assert result["ignored_fields"] == ["alpha", "zeta"]
    assert "ignored_fields" not in _resolve(client, name="doctor")


def test_a_missing_or_non_string_name_is_a_400(client: TestClient) -> None:
    body = problem(client.post("/resolve", json={}), "missing_field")
    assert body["error"] == "missing 'name' parameter" and body["field"] == "name"
    assert problem(client.post("/resolve", json={"name": 5}), "wrong_type")["field"] == "name"
    assert problem(client.post("/resolve", json={"name": "x", "threshold": "high"}), "wrong_type")[
        "field"
    ] == ("threshold")
    assert problem(client.post("/resolve", json={"name": "x", "properties": []}), "wrong_type")["field"] == (
        "properties"
    )
    nan = client.post(
        "/resolve", content=b'{"name": "x", "threshold": NaN}', headers={"content-type": "application/json"}
    )
    assert nan.status_code == 400 and nan.json()["field"] == "threshold"


def test_stored_vectors_of_another_dimension_are_a_400(tmp_path: Path) -> None:
    with serve(tmp_path, embedding=EMBEDDING) as other:
        kb = kb_of(other)
        kb.knot(DATA)
        with kb.db.write() as ctx:
            entity = kb.db.terms.lookup(ctx.conn, (f"{EX}doc",))[f"{EX}doc"]
            store_vectors.write(ctx.conn, [(entity, "doctor", b"\0" * 12)], "2026-01-01T00:00:00Z")
        body = problem(other.post("/resolve", json={"name": "doctor"}), "invalid_field")
        assert "dimension mismatch" in body["error"]


def test_a_failing_provider_is_a_400(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    model = kb_of(client).search.provider()
    assert model is not None

    def broken(text: str) -> Any:
        raise RuntimeError("tokenizer exploded")

    monkeypatch.setattr(model, "embed_text", broken)
    body = problem(client.post("/resolve", json={"name": "doctor"}), "bad_request")
    assert "the embedding provider failed: tokenizer exploded" in body["error"]


# -- over MCP -----------------------------------------------------------------------------------------


def test_the_mcp_tool_is_a_read(client: TestClient) -> None:
    app: FastAPI = client.app  # type: ignore[assignment]
    spec = served_registry(app, app.state.settings).get("quipu_resolve_entity")
    assert spec is not None and spec.read_only and spec.toolset == "search"
    assert spec.annotations() == {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True}
    assert spec.input_schema["required"] == ["name"]
    is_error, body = call_tool(client, "quipu_resolve_entity", {"name": "Example-Service"})
    assert not is_error
    assert _by_iri(body)[f"{EX}svc"]["matched_on"] == "canonical_name:exact"
    is_error, body = call_tool(client, "quipu_resolve_entity", {"name": "doctor", "extra": 1})
    assert not is_error and body["ignored_fields"] == ["extra"]  # not a strict tool
    is_error, body = call_tool(client, "quipu_resolve_entity", {"name": 7})
    assert is_error and body["reason"] == "wrong_type"


def test_the_name_index_keeps_equal_labels_at_any_threshold_and_stops_at_the_limit() -> None:
    """Thresholds outside [0, 1] still filter as they always did (an equal label always counts),
    and rows stop once ``limit`` distinct IRIs are found, best first, label order among equals."""
    from quipu.search.resolve import NameIndex

    index = NameIndex([("urn:a", "Alice"), ("urn:b", "alice"), ("urn:c", "Alicia"), ("urn:a", "ALICE")])
    assert [(c.iri, c.score) for c in index.rows("ALICE", 2.0)] == [
        ("urn:a", 1.0),
        ("urn:b", 1.0),
        ("urn:a", 1.0),
    ]
    everything = index.rows("alice", -1.0)
    assert [c.iri for c in everything] == ["urn:a", "urn:b", "urn:a", "urn:c"]
    assert everything[-1].matched_on.startswith("canonical_name:jaro_winkler:")
    assert [c.iri for c in index.rows("alice", 0.85, limit=1)] == ["urn:a"]
    unprepared = index.rows("alice", 0.85)
    index.prepare(["ALICE", "Alicia"], 0.85)  # scored in one block: the same rows
    assert index.rows("alice", 0.85) == unprepared


def test_limited_rows_are_the_prefix_of_the_full_ranking() -> None:
    """The shortlist taken before sorting never changes which rows a limit keeps, ties included."""
    import random

    from quipu.search.resolve import NameIndex

    rng = random.Random(7)
    stems = ["entity", "entiti", "entry", "enterprise"]
    pairs = [(f"urn:{rng.randrange(300)}", f"{rng.choice(stems)} {rng.randrange(50)}") for _ in range(600)]
    index = NameIndex(pairs)
    for name in ("entity 7", "Entity 12", "entry 3", "nothing like it"):
        full = index.rows(name, 0.7)
        for limit in (1, 3, 5, 40):
            kept: list[Any] = []
            seen: set[str] = set()
            for row in full:
                kept.append(row)
                seen.add(row.iri)
                if len(seen) >= limit:
                    break
            assert index.rows(name, 0.7, limit) == kept, (name, limit)
