"""POST /cord, POST /unravel, POST /entity_history, GET /fragments and GET /transactions
(tools-core §1.4, §1.5, §1.7-§1.9). /export and /entity have their own files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from fastapi.testclient import TestClient

from quipu.identity import Authenticated

from .support import EX, PREFIXES, RDF_TYPE, kb_of, problem, serve

T1, T2, T3 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    out: dict[str, Any] = response.json()
    return out


# -- /cord ----------------------------------------------------------------------------------------

CORD_DOC = PREFIXES + (
    'ex:b a ex:Person ; ex:name "Bee" ; ex:knows ex:a .\n'
    'ex:a a ex:Person ; ex:name "Ay", "Alpha"@en ; ex:age 30 .\n'
    "ex:Student rdfs:subClassOf ex:Person .\nex:s a ex:Student .\n"
    "ex:c ex:tag ex:x .\n"
)


@pytest.fixture
def cords(client: TestClient) -> TestClient:
    kb_of(client).knot(CORD_DOC)
    return client


def _cord(client: TestClient, **body: Any) -> dict[str, Any]:
    return _ok(client.post("/cord", json=body))


def test_cord_rule1_root_current_state_only(cords: TestClient) -> None:
    kb = kb_of(cords)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}named> <{EX}p> "x" .', graph=EX + "g")
    kb.retract(EX + "c")
    iris = [e["iri"] for e in _cord(cords)["entities"]]
    assert EX + "named" not in iris and EX + "c" not in iris
    assert "ignored_fields" not in _cord(cords)


def test_cord_rule2_type_wins_over_predicate(cords: TestClient) -> None:
    out = _cord(cords, type=EX + "Person", predicate=EX + "tag")
    assert [e["iri"] for e in out["entities"]] == [EX + "a", EX + "b"]


def test_cord_rule3_type_is_asserted_only(cords: TestClient) -> None:
    assert EX + "s" not in [e["iri"] for e in _cord(cords, type=EX + "Person")["entities"]]
    assert [e["iri"] for e in _cord(cords, type=EX + "Student")["entities"]] == [EX + "s"]


def test_cord_rule4_limit_is_clamped_and_entities_ordered_by_iri(tmp_path: Path) -> None:
    with serve(tmp_path, search={"max_sparql_rows": 2}) as c:
        kb_of(c).knot(CORD_DOC)
        assert [e["iri"] for e in _cord(c, limit=50)["entities"]] == [EX + "Student", EX + "a"]
        assert _cord(c, limit=1)["entities"][0]["iri"] == EX + "Student"
        # Below 1 is refused, not raised to 1 (issue 15).
        for below in (0, -5):
            assert problem(c.post("/cord", json={"limit": below}), "invalid_field")["field"] == "limit"


def test_cord_rule5_every_current_statement_once_in_order(cords: TestClient) -> None:
    kb_of(cords).knot(f'<{EX}a> <{EX}age> "30"^^<http://www.w3.org/2001/XMLSchema#integer> .', source="other")
    (a,) = [e for e in _cord(cords, predicate=EX + "age")["entities"]]
    assert a == {
        "iri": EX + "a",
        "facts": [
            {"predicate": EX + "age", "value": 30},
            {"predicate": EX + "name", "value": {"value": "Alpha", "lang": "en"}},
            {"predicate": EX + "name", "value": "Ay"},
            {"predicate": RDF_TYPE, "value": EX + "Person"},
        ],
    }


def test_cord_rule6_blank_node_subjects(client: TestClient) -> None:
    kb_of(client).knot(PREFIXES + 'ex:h ex:addr [ ex:city "Lima" ] .\n')
    iris = [e["iri"] for e in _cord(client)["entities"]]
    assert len(iris) == 2 and iris[0].startswith("_:b")


def test_cord_refusals_and_ignored_fields(cords: TestClient) -> None:
    assert problem(cords.post("/cord", json={"type": "not an iri"}), "invalid_field")["field"] == "type"
    problem(cords.post("/cord", json={"predicate": "<x>"}), "invalid_field")
    assert problem(cords.post("/cord", json={"limit": "5"}), "wrong_type")["field"] == "limit"
    problem(cords.post("/cord", json={"limit": True}), "wrong_type")
    out = _cord(cords, limit=1, zeta=1, dry_run=True)
    assert out["ignored_fields"] == ["dry_run", "zeta"] and out["count"] == 1
    assert cords.post("/cord").json()["count"] == 5  # no body: every default


# -- /unravel -------------------------------------------------------------------------------------


@pytest.fixture
def history(client: TestClient) -> TestClient:
    kb = kb_of(client)
    kb.knot(f'<{EX}b> <{EX}p> "b1" .', timestamp=T1, valid_from=T1)  # tx 1
    kb.knot(f'<{EX}a> <{EX}p> "1" .', timestamp=T1, valid_from=T1)  # tx 2
    kb.knot(f'<{EX}a> <{EX}p> "1" .', source="other", timestamp=T2, valid_from=T2)  # tx 3
    kb.set(EX + "a", EX + "p", "2", timestamp=T3)  # tx 4: closes both claims of "1"
    return client


def _unravel(client: TestClient, **body: Any) -> list[dict[str, Any]]:
    out = _ok(client.post("/unravel", json=body))
    assert out["count"] == len(out["facts"])
    facts: list[dict[str, Any]] = out["facts"]
    return facts


def test_unravel_rule1_tx_shows_claims_retracted_later(history: TestClient) -> None:
    assert [(f["value"], f["tx"]) for f in _unravel(history, tx=3) if f["entity"] == EX + "a"] == [
        ("1", 2),
        ("1", 3),
    ]
    assert [(f["value"], f["tx"]) for f in _unravel(history, tx=4) if f["entity"] == EX + "a"] == [("2", 4)]
    assert _unravel(history, tx=0) == []


def test_unravel_rule1_valid_at(history: TestClient) -> None:
    at_t2 = [(f["value"], f["tx"]) for f in _unravel(history, valid_at="2026-01-02T12:00:00Z")]
    assert at_t2 == [("1", 2), ("1", 3), ("b1", 1)]
    assert [f["value"] for f in _unravel(history, valid_at="2025-12-31")] == []


def test_unravel_rule2_root_only(history: TestClient) -> None:
    kb = kb_of(history)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}n> <{EX}p> "named" .', graph=EX + "g")
    assert EX + "n" not in {f["entity"] for f in _unravel(history, tx=100)}


def test_unravel_rule3_one_row_per_claim(history: TestClient) -> None:
    rows = [f for f in _unravel(history, tx=3) if f["value"] == "1"]
    assert len(rows) == 2 and {f["tx"] for f in rows} == {2, 3}


def test_unravel_rule4_valid_to_is_the_stored_value(history: TestClient) -> None:
    rows = [f for f in _unravel(history, tx=3) if f["value"] == "1"]
    assert [(f["valid_to"], f["retracted_tx"]) for f in rows] == [(T3, 4), (T3, 4)]
    (current,) = [f for f in _unravel(history, tx=4) if f["entity"] == EX + "a"]
    assert current["valid_to"] is None and current["retracted_tx"] is None
    assert set(current) == {"entity", "predicate", "value", "valid_from", "valid_to", "tx", "retracted_tx"}


def test_unravel_rule5_ordered_by_entity_predicate_tx(history: TestClient) -> None:
    kb_of(history).knot(f'<{EX}a> <{EX}o> "later, smaller predicate" .')  # tx 5
    rows = [(f["entity"], f["predicate"], f["tx"]) for f in _unravel(history, tx=5)]
    assert rows == [(EX + "a", EX + "o", 5), (EX + "a", EX + "p", 4), (EX + "b", EX + "p", 1)]


def test_unravel_needs_a_read_point(history: TestClient) -> None:
    assert problem(history.post("/unravel", json={}), "invalid_field")["field"] == "tx"
    problem(history.post("/unravel"), "invalid_field")
    problem(history.post("/unravel", json={"tx": None, "valid_at": None}), "invalid_field")


def test_unravel_refusals_and_ignored_fields(history: TestClient) -> None:
    problem(history.post("/unravel", json={"tx": -1}), "invalid_field")
    assert problem(history.post("/unravel", json={"tx": "3"}), "wrong_type")["field"] == "tx"
    problem(history.post("/unravel", json={"valid_at": " "}), "invalid_field")
    out = _ok(history.post("/unravel", json={"tx": 1, "graph": EX + "g"}))
    assert out["ignored_fields"] == ["graph"]
    assert out["count"] == 1
    assert _ok(history.post("/unravel", json={"tx": 10**30}))["count"] == 2  # beyond every id: now


# -- /entity_history ------------------------------------------------------------------------------


def _history(client: TestClient, iri: str) -> dict[str, Any]:
    return _ok(client.post("/entity_history", json={"iri": iri}))


def test_entity_history_rows_and_order(history: TestClient) -> None:
    kb_of(history).knot(f"<{EX}z> <{EX}k> <{EX}a> .")  # incoming: not history of ex:a (rule 1)
    out = _history(history, EX + "a")
    assert out["iri"] == EX + "a"
    assert out["count"] == len(out["history"]) == 4
    assert [(h["op"], h["value"], h["tx"]) for h in out["history"]] == [
        ("assert", "1", 2),
        ("assert", "1", 3),  # rule 2: a second claim of the same statement is its own row
        ("retract", "1", 4),
        ("assert", "2", 4),
    ]
    assert set(out["history"][0]) == {"op", "predicate", "value", "tx", "valid_from", "valid_to"}


def test_entity_history_rule3_tx_then_predicate(client: TestClient) -> None:
    kb_of(client).knot(f'<{EX}a> <{EX}z> "z" .\n<{EX}a> <{EX}b> "b" .')
    assert [h["predicate"] for h in _history(client, EX + "a")["history"]] == [EX + "b", EX + "z"]


def test_entity_history_rule4_known_iri_without_root_rows(client: TestClient) -> None:
    kb = kb_of(client)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}a> <{EX}p> "named" .', graph=EX + "g")
    assert _history(client, EX + "a") == {"iri": EX + "a", "history": [], "count": 0}


def test_entity_history_unknown_iri(client: TestClient) -> None:
    body = problem(client.post("/entity_history", json={"iri": EX + "nobody"}), "not_found")
    assert body["error"] == f"entity not found: {EX}nobody"


def test_entity_history_is_strict(history: TestClient) -> None:
    # The misspelt field is named, never answered with an empty history.
    assert (
        problem(history.post("/entity_history", json={"entity": EX + "a"}), "unknown_field")["field"]
        == "entity"
    )
    body = {"iri": EX + "a", "graph": EX + "g"}
    assert problem(history.post("/entity_history", json=body), "unknown_field")["field"] == "graph"
    assert (
        problem(history.post("/entity_history", json={}), "missing_field")["error"]
        == "missing 'iri' parameter"
    )
    problem(history.post("/entity_history", json={"iri": ""}), "missing_field")
    assert problem(history.post("/entity_history", json={"iri": 5}), "wrong_type")["field"] == "iri"


# -- /fragments -----------------------------------------------------------------------------------

FRAGMENT_DOC = (
    f'<{EX}b> <{EX}p> "http://ex.org/a" .\n'
    f"<{EX}b> <{EX}p> <{EX}a> .\n"
    f'<{EX}a> <{EX}q> "hello" .\n'
    f'<{EX}a> <{EX}p> "x\\" }} ?s ?p ?o {{" .\n'
    f'<{EX}a> <{EX}p> "hello"@en .\n'
    f"<{EX}a> <{EX}p> <urn:x:1> .\n"
)


@pytest.fixture
def tpf(client: TestClient) -> TestClient:
    kb_of(client).knot(FRAGMENT_DOC)
    return client


def _fragment(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/fragments", params=params)
    out = _ok(response)
    assert response.headers["cache-control"] == "public, max-age=60"
    return out


def _spo(out: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(t["subject"], t["predicate"], t["object"]) for t in out["triples"]]


def test_fragments_rule1_object_iri_or_plain_literal(tpf: TestClient) -> None:
    assert _spo(_fragment(tpf, object=EX + "a")) == [(EX + "b", EX + "p", EX + "a")]
    assert _spo(_fragment(tpf, object="urn:x:1")) == [(EX + "a", EX + "p", "urn:x:1")]
    # A string is a plain literal: not the language-tagged one, not an IRI.
    assert _spo(_fragment(tpf, object="hello")) == [(EX + "a", EX + "q", "hello")]
    assert _fragment(tpf, object="ftp://ex.org/a")["totalCount"] == 0


def test_fragments_rule2_page_and_page_size_are_clamped(tpf: TestClient) -> None:
    out = _fragment(tpf, page=0, pageSize=5000)
    assert (out["page"], out["pageSize"], len(out["triples"])) == (1, 1000, 6)
    out = _fragment(tpf, page=-3, pageSize=1)
    assert (out["page"], out["pageSize"], len(out["triples"])) == (1, 1, 1)
    # A page size below 1 is refused, not raised to 1 (issue 15).
    assert problem(tpf.get("/fragments", params={"pageSize": 0}), "invalid_field")["field"] == "pageSize"


def test_fragments_rule3_total_count_and_next_control(tpf: TestClient) -> None:
    kb_of(tpf).knot(f'<{EX}a> <{EX}q> "hello" .', source="second-owner")
    first = _fragment(tpf, predicate=EX + "p", pageSize=2)
    assert first["totalCount"] == 5 and len(first["triples"]) == 2
    nxt = first["controls"]["next"]
    assert nxt.startswith("/fragments?") and "http%3A%2F%2Fex.org%2Fp" in nxt  # percent-encoded
    assert dict(parse_qsl(urlsplit(nxt).query)) == {"predicate": EX + "p", "page": "2", "pageSize": "2"}
    second = _ok(tpf.get(nxt))
    third = _ok(tpf.get(second["controls"]["next"]))
    assert len(third["triples"]) == 1 and third["controls"] == {}
    assert _fragment(tpf)["totalCount"] == 6  # the second owner is not a second statement
    assert _fragment(tpf, page=9)["triples"] == [] and _fragment(tpf, page=9)["controls"] == {}


def test_fragments_rule4_literals_are_matched_not_spliced(tpf: TestClient) -> None:
    out = _fragment(tpf, object='x" } ?s ?p ?o {')
    assert _spo(out) == [(EX + "a", EX + "p", 'x" } ?s ?p ?o {')]
    assert _fragment(tpf, object='" . } SELECT * { ?s ?p ?o')["totalCount"] == 0


def test_fragments_rule5_order_is_subject_predicate_object(tpf: TestClient) -> None:
    pages = [_spo(_fragment(tpf, page=n, pageSize=1))[0] for n in range(1, 7)]
    assert [(s, p) for s, p, _o in pages] == [
        (EX + "a", EX + "p"),
        (EX + "a", EX + "p"),
        (EX + "a", EX + "p"),
        (EX + "a", EX + "q"),
        (EX + "b", EX + "p"),
        (EX + "b", EX + "p"),
    ]
    assert pages[0][2] == "urn:x:1"  # references before literals
    assert pages[4][2] == EX + "a" and pages[5][2] == "http://ex.org/a"
    assert pages == _spo(_fragment(tpf))


def test_fragments_are_root_and_current_only(tpf: TestClient) -> None:
    kb = kb_of(tpf)
    kb.create_graph(EX + "g")
    kb.knot(f'<{EX}n> <{EX}p> "named" .', graph=EX + "g")
    kb.retract(EX + "b")
    assert {t["subject"] for t in _fragment(tpf)["triples"]} == {EX + "a"}


def test_fragments_unknown_terms_match_nothing(tpf: TestClient) -> None:
    assert _fragment(tpf, subject=EX + "never") == {
        "triples": [],
        "totalCount": 0,
        "page": 1,
        "pageSize": 100,
        "controls": {},
    }


def test_fragments_are_strict(tpf: TestClient) -> None:
    assert problem(tpf.get("/fragments", params={"page_size": 2}), "unknown_field")["field"] == "page_size"
    assert problem(tpf.get("/fragments", params={"page": "two"}), "wrong_type")["field"] == "page"
    problem(tpf.get("/fragments", params={"pageSize": "1.5"}), "wrong_type")
    assert problem(tpf.get("/fragments", params={"subject": "nope"}), "invalid_field")["field"] == "subject"
    problem(tpf.get("/fragments", params={"predicate": "_:b1"}), "invalid_field")


# -- /transactions --------------------------------------------------------------------------------


def _log(client: TestClient, **params: Any) -> list[int]:
    out = _ok(client.get("/transactions", params=params))
    assert out["count"] == len(out["transactions"])
    return [t["id"] for t in out["transactions"]]


@pytest.fixture
def five(client: TestClient) -> TestClient:
    kb = kb_of(client)
    for i in range(5):
        kb.knot(f'<{EX}a> <{EX}p> "{i}" .', actor=f"actor{i}", timestamp=f"2026-01-0{5 - i}T00:00:00Z")
    return client


def test_transactions_rule1_newer_than_since_ascending_and_bounded(five: TestClient) -> None:
    assert _log(five, since=2) == [3, 4, 5]
    assert _log(five, since=2, limit=1) == [3]
    assert _log(five, limit=10**30) == [1, 2, 3, 4, 5]  # capped at 10000
    # A limit below 1 is refused, not raised to 1 (issue 15).
    assert problem(five.get("/transactions", params={"limit": 0}), "invalid_field")["field"] == "limit"
    assert _log(five, since=5) == []
    assert _log(five, since=-10) == [1, 2, 3, 4, 5]
    assert _log(five, since=10**30) == []


def test_transactions_rule2_limit_counts_from_since_forward(five: TestClient) -> None:
    assert _log(five, limit=2) == [1, 2]


def test_transactions_rule3_no_parameter_reads_the_whole_log(client: TestClient) -> None:
    kb = kb_of(client)
    for i in range(1001):
        kb.knot(f'<{EX}a> <{EX}p> "{i}" .')
    assert len(_log(client)) == 1001
    assert len(_log(client, since=0)) == 1000  # either parameter: the default limit applies
    assert len(_log(client, limit=10**6)) == 1001  # clamped to 10000


def test_transactions_rule4_timestamps_are_declarations(five: TestClient) -> None:
    out = _ok(five.get("/transactions"))
    assert [t["timestamp"][:10] for t in out["transactions"]] == [f"2026-01-0{d}" for d in (5, 4, 3, 2, 1)]


def test_transactions_rule5_authenticated_is_the_only_verified_identity(client: TestClient) -> None:
    kb = kb_of(client)
    kb.knot(f'<{EX}a> <{EX}p> "1" .', actor="claims-to-be-admin")
    kb.knot(f'<{EX}a> <{EX}p> "2" .', auth=Authenticated("svc", "svc-key", "named_bearer"))
    first, second = _ok(client.get("/transactions"))["transactions"]
    assert first == {
        "id": 1,
        "timestamp": first["timestamp"],
        "actor": "claims-to-be-admin",
        "source": "knot:claims-to-be-admin",
        "authenticated": None,
    }
    assert second["authenticated"] == {
        "principal": "svc",
        "credential_id": "svc-key",
        "auth_class": "named_bearer",
    }
    assert second["actor"] is None  # never filled from the credential


def test_transactions_are_strict(five: TestClient) -> None:
    assert problem(five.get("/transactions", params={"offset": 1}), "unknown_field")["field"] == "offset"
    assert problem(five.get("/transactions", params={"since": "abc"}), "wrong_type")["field"] == "since"
    problem(five.get("/transactions", params={"limit": "1.5"}), "wrong_type")
