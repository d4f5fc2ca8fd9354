"""POST /retract/source over the REST app (tools-core §3.9): plan, confirm, apply."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from .support import (
    BOT_SERVER,
    BOT_TOKEN,
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

EX = "http://example.org/"
DOC = f'<{EX}svc> <{EX}owner> <{EX}alice> .\n<{EX}svc> <{EX}tier> "1" .\n'


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def repair(client: TestClient, status: int = 200, **body: Any) -> dict[str, Any]:
    response = client.post("/retract/source", json=body)
    assert response.status_code == status, response.text
    out: dict[str, Any] = response.json()
    return out


def test_preview_plans_and_writes_nothing(client: TestClient) -> None:
    kb_of(client).knot(DOC, "nt", source="legacy")
    before = state(client)
    out = repair(client, source="legacy", repair="T-1")
    assert out["planned"] == 2 and out["entities"] == 1
    assert (out["applied"], out["tx_id"], out["retracted"]) == (False, None, None)
    assert "remaining" not in out
    assert out["repair_source"] == "repair:T-1" and out["graph"] == "urn:quipu:graph:root"
    assert {s["predicate"] for s in out["sample"]} == {f"{EX}owner", f"{EX}tier"}
    assert out["sample_truncated"] is False
    assert state(client) == before


def test_preview_is_a_write_route_and_needs_the_bearer(tmp_path: Path) -> None:
    with serve(tmp_path, server=BOT_SERVER) as client:
        body = {"source": "legacy", "repair": "T-1"}
        problem(client.post("/retract/source", json=body), "missing_or_invalid_bearer_token", 401)
        ok = client.post("/retract/source", json=body, headers={"Authorization": f"Bearer {BOT_TOKEN}"})
        assert ok.status_code == 200 and ok.json()["planned"] == 0


@pytest.mark.parametrize("body", [{"repair": "T"}, {"source": "  ", "repair": "T"}])
def test_missing_source_is_refused_with_where_to_find_one(client: TestClient, body: dict[str, Any]) -> None:
    out = refused_write(client, "/retract/source", field="source", json=body)
    assert "transaction" in out["error"]


@pytest.mark.parametrize("body", [{"source": "legacy"}, {"source": "legacy", "repair": ""}])
def test_missing_repair_is_refused(client: TestClient, body: dict[str, Any]) -> None:
    refused_write(client, "/retract/source", field="repair", json=body)


def test_apply_without_expect_states_the_current_plan(client: TestClient) -> None:
    kb_of(client).knot(DOC, "nt", source="legacy")
    out = refused_write(
        client, "/retract/source", field="expect", json={"source": "legacy", "repair": "T", "apply": True}
    )
    assert "2 statement(s)" in out["error"]


def test_an_expect_mismatch_writes_nothing(client: TestClient) -> None:
    kb_of(client).knot(DOC, "nt", source="legacy")
    body = {"source": "legacy", "repair": "T", "apply": True, "expect": 3}
    out = refused_write(client, "/retract/source", json=body)
    assert out["reason"] == "expect_mismatch"
    assert "expect=3 does not match the current plan of 2 statement(s)" in out["error"]


def test_rule1_plan_is_deduplicated_and_zero_is_meaningful(client: TestClient) -> None:
    kb = kb_of(client)
    kb.knot(DOC, "nt", source="legacy")
    kb.knot(DOC, "nt", source="legacy")  # the same source again: no second claim
    assert repair(client, source="legacy", repair="T")["planned"] == 2
    nothing = repair(client, source="nobody", repair="T")
    assert (nothing["planned"], nothing["entities"], nothing["sample"]) == (0, 0, [])


def test_rule1_the_source_is_matched_exactly(client: TestClient) -> None:
    kb_of(client).knot(DOC, "nt", source="legacy-2")
    assert repair(client, source="legacy", repair="T")["planned"] == 0
    assert repair(client, source=" legacy-2 ", repair="T")["planned"] == 2  # trimmed, then exact


def test_rule2_two_sources_own_one_fact_and_it_stays_until_both_retract(client: TestClient) -> None:
    kb = kb_of(client)
    kb.knot(DOC, "nt", source="a")
    kb.knot(DOC, "nt", source="b")
    first = repair(client, source="a", repair="T-1", apply=True, expect=2)
    assert first["retracted"] == 2
    assert objects(client, f"{EX}svc", f"{EX}owner") == [f"{EX}alice"]
    second = repair(client, source="b", repair="T-2", apply=True, expect=2)
    assert second["retracted"] == 2
    assert objects(client, f"{EX}svc", f"{EX}owner") == []


def test_rule3_the_repair_is_stamped_repair_ticket_and_cannot_assert(client: TestClient) -> None:
    kb_of(client).knot(DOC, "nt", source="legacy")
    body: dict[str, Any] = {
        "source": "legacy",
        "repair": "INC-7",
        "apply": True,
        "expect": 2,
        "turtle": f"<{EX}x> <{EX}y> <{EX}z> .",
    }
    out = repair(client, **body)
    assert out["ignored_fields"] == ["turtle"]
    assert transaction(client, out["tx_id"])["source"] == "repair:INC-7"
    assert objects(client, f"{EX}x", f"{EX}y") == []


def test_rule4_remaining_is_a_fresh_count_after_the_write(client: TestClient) -> None:
    kb = kb_of(client)
    kb.knot(f'<{EX}db> <{RDFS_LABEL}> "db" .\n<{EX}db> <{EX}tier> "2" .\n', "nt", source="legacy")
    kb.knot(f"<{EX}app> <{EX}uses> <{EX}db> .", "nt", source="other")
    out = repair(client, source="legacy", repair="T", apply=True, expect=1)  # the label is kept
    assert out["remaining"] == 1
    assert objects(client, f"{EX}db", RDFS_LABEL) == ["db"]


def test_rule5_an_empty_apply_records_an_empty_repair_transaction(client: TestClient) -> None:
    out = repair(client, source="nobody", repair="T-0", apply=True, expect=0)
    assert out["applied"] is True and out["tx_id"] > 0 and out["retracted"] == 0 and out["remaining"] == 0
    assert transaction(client, out["tx_id"])["source"] == "repair:T-0"


def test_rule6_a_producer_with_no_recorded_claim_loses_the_shared_statement(client: TestClient) -> None:
    # Forward-only ownership: only recorded claims protect a statement.
    kb_of(client).knot(DOC, "nt", source="legacy")
    repair(client, source="legacy", repair="T", apply=True, expect=2)
    assert objects(client, f"{EX}svc", f"{EX}owner") == []


def test_rule7_rekeying_reasserts_first_then_clears_the_old_source(client: TestClient) -> None:
    kb = kb_of(client)
    kb.knot(DOC, "nt", source="old-key")
    kb.knot(DOC, "nt", source="new-key")
    repair(client, source="old-key", repair="rekey", apply=True, expect=2)
    assert objects(client, f"{EX}svc", f"{EX}owner") == [f"{EX}alice"]


def test_a_named_graph_is_planned_on_its_own(client: TestClient) -> None:
    kb = kb_of(client)
    g = "http://example.org/g"
    kb.create_graph(g)
    kb.knot(DOC, "nt", source="legacy", graph=g)
    assert repair(client, source="legacy", repair="T")["planned"] == 0
    out = repair(client, source="legacy", repair="T", graph=g, apply=True, expect=2)
    assert out["graph"] == g and out["retracted"] == 2
    assert objects(client, f"{EX}svc", f"{EX}owner", graph=g) == []


def test_an_unknown_graph_is_refused_as_knot_does(client: TestClient) -> None:
    out = refused_write(
        client, "/retract/source", field="graph", json={"source": "s", "repair": "T", "graph": f"{EX}nope"}
    )
    assert out["reason"] == "unknown_graph"


def test_the_sample_holds_at_most_20_statements(client: TestClient) -> None:
    doc = "".join(f'<{EX}e{i:02d}> <{EX}p> "v" .\n' for i in range(25))
    kb_of(client).knot(doc, "nt", source="bulk")
    out = repair(client, source="bulk", repair="T")
    assert out["planned"] == 25 and len(out["sample"]) == 20 and out["sample_truncated"] is True


def test_wrong_types_are_refused(client: TestClient) -> None:
    problem(
        client.post("/retract/source", json={"source": "s", "repair": "T", "apply": True, "expect": "2"}),
        "wrong_type",
    )


def test_the_closure_stamp_is_the_timestamp_and_actor_is_recorded(client: TestClient) -> None:
    kb_of(client).knot(DOC, "nt", source="legacy")
    body: dict[str, Any] = {"source": "legacy", "repair": "T", "apply": True, "expect": 2}
    out = repair(client, **body, timestamp="2030-05-01T00:00:00Z", actor="ops")
    tx = transaction(client, out["tx_id"])
    assert (tx["timestamp"], tx["actor"]) == ("2030-05-01T00:00:00Z", "ops")
    assert raw(client, "SELECT DISTINCT valid_to FROM facts WHERE retracted_tx = ?", out["tx_id"]) == [
        ("2030-05-01T00:00:00Z",)
    ]
