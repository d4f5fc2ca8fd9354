"""``quipu_spotlight`` (tools-search §5.9): the five rules, byte offsets, de-duplication by
(offset, IRI) throughout, what the labeled-entity list reads (current ROOT plain-string labels,
asserted types), the per-store cache (invalidated by any write, never waited for while another
request refills it, bounded by the query deadline), the strict fields and the MCP tool."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from quipu.mcp.http import served_registry
from quipu.search import labels
from quipu.search.spotlight import annotate, cache_of
from tests.rest.support import kb_of, problem, serve
from tests.search.retrieval_support import call_tool

EX = "http://ex.org/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
JSON = {"content-type": "application/json"}


def _label(iri: str, label: str) -> str:
    return f'<{iri}> <{RDFS_LABEL}> "{label}" .\n'


def _type(iri: str, klass: str) -> str:
    return f"<{iri}> <{RDF_TYPE}> <{klass}> .\n"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def knot(client: TestClient, data: str) -> None:
    kb_of(client).knot(data, "ntriples")


def spot(client: TestClient, text: str, **body: Any) -> list[dict[str, Any]]:
    response = client.post("/spotlight", json={"text": text, **body})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    assert result["text"] == text
    annotations: list[dict[str, Any]] = result["annotations"]
    return annotations


def brief(annotations: list[dict[str, Any]]) -> list[tuple[int, str, float]]:
    return [(a["offset"], a["iri"], a["confidence"]) for a in annotations]


def test_rule_1_a_confidence_of_0_9_keeps_label_matches_only(client: TestClient) -> None:
    knot(client, _label(f"{EX}traefik", "edge router") + _label(f"{EX}pg", "postgres"))
    text = "traefik fronts postgres"
    assert brief(spot(client, text)) == [(0, f"{EX}traefik", 0.85), (15, f"{EX}pg", 0.95)]
    assert brief(spot(client, text, confidence=0.9)) == [(15, f"{EX}pg", 0.95)]
    assert brief(spot(client, text, confidence=0.95)) == [(15, f"{EX}pg", 0.95)]  # >= keeps it
    assert spot(client, text, confidence=0.96) == []
    assert brief(spot(client, text, confidence=0)) == brief(spot(client, text))  # default 0.5


def test_rule_2_every_occurrence_is_annotated(client: TestClient) -> None:
    knot(client, _label(f"{EX}e1", "kota"))
    assert brief(spot(client, "kota and kota")) == [(0, f"{EX}e1", 0.95), (9, f"{EX}e1", 0.95)]


def test_rule_3_one_annotation_per_occurrence_typed_by_the_first_type_row(client: TestClient) -> None:
    kota = f"{EX}kota"  # its local name is its label too: two hits at each offset
    knot(client, _label(kota, "Kota") + _type(kota, f"{EX}onto#Person"))
    knot(client, _type(kota, f"{EX}Agent"))  # a later claim: the second type row
    found = spot(client, "kota met kota")
    assert [(a["offset"], a["confidence"], a["type"]) for a in found] == [
        (0, 0.95, "Person"),
        (9, 0.95, "Person"),
    ]


def test_rule_4_a_write_between_calls_is_seen(client: TestClient) -> None:
    a, z = f"{EX}e/1", f"{EX}e/2"  # local names "1" and "2" match nothing here
    knot(client, _label(a, "alpha"))
    assert spot(client, "zed and alpha") == [
        {"surface": "alpha", "iri": a, "type": "Thing", "confidence": 0.95, "offset": 8}
    ]
    knot(client, _label(z, "zed"))
    assert brief(spot(client, "zed and alpha")) == [(0, z, 0.95), (8, a, 0.95)]
    kb_of(client).retract(a)  # a retraction is a write too
    assert brief(spot(client, "zed and alpha")) == [(0, z, 0.95)]


def test_rule_5_matching_ignores_case_and_the_surface_keeps_the_callers(client: TestClient) -> None:
    knot(client, _label(f"{EX}k", "KoTa"))
    found = spot(client, "KOTA, Kota, kota")
    assert [(a["surface"], a["offset"]) for a in found] == [("KOTA", 0), ("Kota", 6), ("kota", 12)]


def test_offsets_are_utf8_byte_offsets(client: TestClient) -> None:
    knot(client, _label(f"{EX}k", "kota") + _label(f"{EX}iz", "İzmir"))
    assert [a["offset"] for a in spot(client, "Café kota")] == [6]  # é is two bytes
    assert [a["offset"] for a in spot(client, "日本 kota")] == [7]
    # İ lower-cases to two code points (i + U+0307, three bytes): offsets count the lower-cased text,
    # and the surface is still the caller's own characters.
    found = spot(client, "İzmir, kota")
    assert [(a["surface"], a["offset"]) for a in found] == [("İzmir", 0), ("kota", 9)]


def test_a_duplicate_is_dropped_even_when_another_entity_sorts_between(client: TestClient) -> None:
    """The original drops only adjacent duplicates: A 0.95, B 0.95, A 0.85 kept A twice."""
    a, b = f"{EX}kota", f"{EX}other"
    knot(client, _label(a, "kota"))  # label and local name both "kota"
    knot(client, _label(b, "kota"))
    assert brief(spot(client, "kota")) == [(0, a, 0.95), (0, b, 0.95)]


def test_occurrences_do_not_overlap_and_need_no_word_boundary(client: TestClient) -> None:
    knot(client, _label(f"{EX}aa", "aa") + _label(f"{EX}art", "art"))
    assert [a["offset"] for a in spot(client, "aaaaa") if a["iri"] == f"{EX}aa"] == [0, 2]
    assert brief(spot(client, "restart")) == [(4, f"{EX}art", 0.95)]


def test_an_empty_local_name_is_no_surface(client: TestClient) -> None:
    knot(client, _label(f"{EX}dir/", "zzz"))
    assert spot(client, "abc") == []


def test_types_are_local_names_and_thing_when_absent(client: TestClient) -> None:
    knot(client, _label(f"{EX}r", "robbie") + _type(f"{EX}r", "http://ex.org/onto#Robot"))
    knot(client, _label(f"{EX}w", "wall-e") + _type(f"{EX}w", "http://ex.org/kinds/Machine"))
    knot(client, _label(f"{EX}n", "nobody"))
    found = {a["iri"]: a["type"] for a in spot(client, "robbie, wall-e, nobody")}
    assert found == {f"{EX}r": "Robot", f"{EX}w": "Machine", f"{EX}n": "Thing"}


def test_only_current_root_plain_string_labels_are_read(client: TestClient) -> None:
    kb = kb_of(client)
    graph = f"{EX}g/side"
    kb.create_graph(graph)
    kb.knot(_label(f"{EX}named", "ghost") + _type(f"{EX}k", f"{EX}NamedType"), "ntriples", graph=graph)
    knot(client, f'<{EX}t> <{RDFS_LABEL}> "tagged"@en .\n<{EX}k> <{RDFS_LABEL}> "kota" .\n')
    knot(client, f'<{EX}d> <{RDFS_LABEL}> "typed"^^<{EX}dt> .\n')
    found = spot(client, "ghost tagged typed kota")
    assert [(a["iri"], a["type"]) for a in found] == [
        (f"{EX}k", "Thing")
    ]  # the named graph's type is not asserted in ROOT


def test_the_labeled_rows_are_in_store_order(client: TestClient) -> None:
    knot(client, _label(f"{EX}b", "bee") + _type(f"{EX}b", f"{EX}T1"))
    knot(client, _type(f"{EX}b", f"{EX}T2") + _label(f"{EX}a", "ay"))
    kb = kb_of(client)
    with kb.db.read() as conn:
        rows = labels.labeled_rows(kb.db, conn)
    assert [(r.iri, r.label, r.type) for r in rows] == [
        (f"{EX}b", "bee", f"{EX}T1"),
        (f"{EX}b", "bee", f"{EX}T2"),
        (f"{EX}a", "ay", ""),
    ]


def test_each_store_has_its_own_cache(tmp_path: Path) -> None:
    """Both stores are at transaction 1: a cache keyed on the id alone would mix them up."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    with serve(tmp_path / "one") as one, serve(tmp_path / "two") as two:
        knot(one, _label(f"{EX}e/1", "apple"))
        knot(two, _label(f"{EX}e/2", "banana"))
        assert brief(spot(one, "apple banana")) == [(0, f"{EX}e/1", 0.95)]
        assert brief(spot(two, "apple banana")) == [(6, f"{EX}e/2", 0.95)]


def test_a_cold_cache_being_refilled_elsewhere_is_not_waited_for(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    knot(client, _label(f"{EX}k", "kota"))
    entered, release = threading.Event(), threading.Event()
    real = labels.labeled_rows

    def slow(db: Any, conn: Any) -> list[labels.LabeledRow]:
        entered.set()
        assert release.wait(10)
        return real(db, conn)

    monkeypatch.setattr(labels, "labeled_rows", slow)
    first: list[list[dict[str, Any]]] = []
    refiller = threading.Thread(target=lambda: first.append(spot(client, "kota")))
    refiller.start()
    try:
        assert entered.wait(10)
        started = time.monotonic()
        assert spot(client, "kota") == []  # no waiting: an empty list, at once
        assert time.monotonic() - started < 5
    finally:
        release.set()
        refiller.join(10)
    assert brief(first[0]) == [(0, f"{EX}k", 0.95)]
    monkeypatch.setattr(labels, "labeled_rows", real)
    assert brief(spot(client, "kota")) == [(0, f"{EX}k", 0.95)]  # warm now


def test_a_warm_cache_reads_no_labels(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    knot(client, _label(f"{EX}k", "kota"))
    assert len(spot(client, "kota")) == 1
    calls: list[int] = []
    real = labels.labeled_rows

    def counted(db: Any, conn: Any) -> list[labels.LabeledRow]:
        calls.append(1)
        return real(db, conn)

    monkeypatch.setattr(labels, "labeled_rows", counted)
    assert len(spot(client, "kota kota")) == 2
    assert calls == []
    knot(client, _label(f"{EX}z", "zed"))
    assert len(spot(client, "kota zed")) == 2
    assert calls == [1]


def test_a_refill_past_the_query_deadline_is_a_408(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(tmp_path, search={"query_timeout_ms": 300}) as slow_client:
        knot(slow_client, _label(f"{EX}k", "kota"))
        real = labels.labeled_rows

        def slow(db: Any, conn: Any) -> list[labels.LabeledRow]:
            time.sleep(1.0)  # well past the deadline, which leaves a loaded machine room elsewhere
            return real(db, conn)

        monkeypatch.setattr(labels, "labeled_rows", slow)
        body = problem(slow_client.post("/spotlight", json={"text": "kota"}), "query_timeout", 408)
        assert "search.query_timeout_ms" in body["error"]
        monkeypatch.setattr(labels, "labeled_rows", real)
        assert len(spot(slow_client, "kota")) == 1  # the failed refill left the cache cold, not wrong


def test_strict_fields(client: TestClient) -> None:
    body = problem(client.post("/spotlight", json={}), "missing_field")
    assert body["error"] == "missing 'text' parameter"
    assert problem(client.post("/spotlight", json={"text": 3}), "wrong_type")["field"] == "text"
    assert (
        problem(client.post("/spotlight", json={"text": "x", "limit": 3}), "unknown_field")["field"]
        == "limit"
    )
    for bad in ("high", True, None):
        refused = problem(client.post("/spotlight", json={"text": "x", "confidence": bad}), "wrong_type")
        assert refused["field"] == "confidence"
    assert spot(client, "x", confidence=1) == []  # an integer is a number
    nan = client.post("/spotlight", content=b'{"text": "x", "confidence": NaN}', headers=JSON)
    assert nan.status_code == 400 and nan.json()["field"] == "confidence"


def test_annotate_is_pure() -> None:
    """The scan alone: sorted by offset then confidence, one per (offset, IRI)."""
    from quipu.search.spotlight import Surface

    surfaces = [
        Surface("ab", 0.85, "urn:x", "Thing"),
        Surface("b", 0.95, "urn:y", "T"),
        Surface("ab", 0.95, "urn:x", "Thing"),
    ]
    assert [(a["offset"], a["iri"], a["confidence"]) for a in annotate("zAB", 0.5, surfaces)] == [
        (1, "urn:x", 0.95),
        (2, "urn:y", 0.95),
    ]


def test_the_mcp_tool(client: TestClient) -> None:
    app: FastAPI = client.app  # type: ignore[assignment]
    spec = served_registry(app, app.state.settings).get("quipu_spotlight")
    assert spec is not None and spec.read_only
    assert set(spec.input_schema["properties"]) == {"text", "confidence"}
    knot(client, _label(f"{EX}k", "kota"))
    is_error, body = call_tool(client, "quipu_spotlight", {"text": "Kota"})
    assert not is_error
    assert body == {
        "text": "Kota",
        "annotations": [
            {"surface": "Kota", "iri": f"{EX}k", "type": "Thing", "confidence": 0.95, "offset": 0}
        ],
    }
    is_error, body = call_tool(client, "quipu_spotlight", {"text": "Kota", "limit": 1})
    assert is_error and body["reason"] == "unknown_field" and body["field"] == "limit"
    is_error, body = call_tool(client, "quipu_spotlight", {"text": "Kota", "confidence": "high"})
    assert is_error and body["reason"] == "wrong_type"
    assert cache_of(kb_of(client).db) is cache_of(kb_of(client).db)
