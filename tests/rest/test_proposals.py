"""Schema proposals over REST (tools-graphs-governance §7): /propose, /proposals,
/proposal/accept, /proposal/reject, and the /knot hint that points at them (SP-2)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.shacl import registry
from quipu.shacl.gate import HINT

from .support import kb_of, problem, raw, serve

P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
PEOPLE = P + "ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ."
# The proposed change: a person's age must be an integer.
AGED = P + (
    "ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ."
)
NOT_TURTLE = "this is not turtle {"
NOT_SHACL = P + "ex:S a sh:NodeShape ; sh:minCount 1 ; sh:path ex:p ; sh:path ex:q ."
T1, T2, T3 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"
CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
FIELDS = [
    "id",
    "kind",
    "target",
    "diff",
    "rationale",
    "proposer",
    "trigger_ref",
    "status",
    "decided_by",
    "decided_at",
    "decision_note",
    "created_at",
]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def post(client: TestClient, route: str, **body: Any) -> dict[str, Any]:
    response = client.post(route, json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def propose(
    client: TestClient, kind: str = "shape", target: str = "people", diff: str = AGED, **extra: Any
) -> int:
    out = post(client, "/propose", kind=kind, target=target, diff=diff, proposer="agent-7", **extra)
    assert out["status"] == "pending"
    proposal_id: int = out["proposal_id"]
    return proposal_id


def listed(client: TestClient, **body: Any) -> list[dict[str, Any]]:
    out = post(client, "/proposals", **body)
    assert out["count"] == len(out["proposals"])
    found: list[dict[str, Any]] = out["proposals"]
    return found


def one(client: TestClient, proposal_id: int) -> dict[str, Any]:
    (found,) = [p for p in listed(client) if p["id"] == proposal_id]
    return found


def shapes_rows(client: TestClient) -> list[tuple[Any, ...]]:
    """Every version the shapes registry holds, open or closed."""
    return raw(
        client,
        "SELECT name, turtle, valid_from, valid_to, tx, closed_tx FROM shapes ORDER BY name, valid_from",
    )


def knot(client: TestClient, turtle: str) -> dict[str, Any]:
    return post(client, "/knot", turtle=P + turtle)


# == §7.1 quipu_propose_schema_change ============================================================


def test_propose_answers_pending_and_each_call_files_a_new_proposal(client: TestClient) -> None:
    first = post(client, "/propose", kind="shape", target="people", diff=AGED, proposer="agent-7")
    second = post(client, "/propose", kind="shape", target="people", diff=AGED, proposer="agent-7")
    assert first == {"proposal_id": first["proposal_id"], "status": "pending"}
    assert second["proposal_id"] > first["proposal_id"]
    assert [p["id"] for p in listed(client)] == [second["proposal_id"], first["proposal_id"]]


def test_propose_stores_every_field_and_filing_changes_no_schema(client: TestClient) -> None:
    pid = propose(client, rationale="ages are numbers", trigger_ref="validation:42", timestamp=T1)
    assert one(client, pid) == {
        "id": pid,
        "kind": "shape",
        "target": "people",
        "diff": AGED,
        "rationale": "ages are numbers",
        "proposer": "agent-7",
        "trigger_ref": "validation:42",
        "status": "pending",
        "decided_by": None,
        "decided_at": None,
        "decision_note": None,
        "created_at": T1,
    }
    assert kb_of(client).shape_sets() == [] and shapes_rows(client) == []


def test_propose_sp1_does_not_validate_the_diff(client: TestClient) -> None:
    for diff in (NOT_TURTLE, NOT_SHACL, '[{"op": "add", "path": "/x"}]'):
        pid = propose(client, diff=diff)
        assert one(client, pid)["diff"] == diff
    assert shapes_rows(client) == []


@pytest.mark.parametrize("missing", ["kind", "target", "diff", "proposer"])
def test_propose_refuses_a_missing_required_field(client: TestClient, missing: str) -> None:
    body = {"kind": "shape", "target": "people", "diff": AGED, "proposer": "agent-7"}
    del body[missing]
    out = problem(client.post("/propose", json=body), "missing_field")
    assert out["field"] == missing and f"'{missing}'" in out["error"]
    assert listed(client) == []


@pytest.mark.parametrize("blank", ["target", "diff", "proposer"])
def test_propose_treats_a_blank_required_field_as_missing(client: TestClient, blank: str) -> None:
    body = {"kind": "shape", "target": "people", "diff": AGED, "proposer": "agent-7", blank: "  "}
    assert problem(client.post("/propose", json=body), "missing_field")["field"] == blank
    assert listed(client) == []


def test_propose_refuses_an_unknown_kind_naming_the_allowed_ones(client: TestClient) -> None:
    body = {"kind": "shapes", "target": "people", "diff": AGED, "proposer": "agent-7"}
    out = problem(client.post("/propose", json=body), "unknown_kind")
    assert out["field"] == "kind"
    assert "'shapes'" in out["error"] and "shape, ontology, class, property" in out["error"]
    assert listed(client) == []


def test_propose_refuses_a_wrong_json_type(client: TestClient) -> None:
    body = {"kind": "shape", "target": "people", "diff": AGED, "proposer": 7}
    assert problem(client.post("/propose", json=body), "wrong_type")["field"] == "proposer"


def test_propose_normalises_the_timestamp_and_defaults_to_now(client: TestClient) -> None:
    offset = propose(client, timestamp="2026-03-01T10:00:00.250+02:00")
    assert one(client, offset)["created_at"] == "2026-03-01T08:00:00Z"
    default = propose(client)
    assert CANONICAL.fullmatch(one(client, default)["created_at"])


def test_propose_reports_unknown_keys_as_ignored_fields(client: TestClient) -> None:
    out = post(
        client, "/propose", kind="class", target="http://ex.org/C", diff="d", proposer="p", zeta=1, alpha=2
    )
    assert out["ignored_fields"] == ["alpha", "zeta"]


def test_knot_sp2_shacl_refusal_hints_at_propose_schema_change(client: TestClient) -> None:
    post(client, "/shapes", action="load", name="people", turtle=AGED)
    refused = knot(client, 'ex:a a ex:Person ; ex:age "old" .')
    assert refused["conforms"] is False and refused["violations"] == 1
    assert refused["hint"] == HINT and "quipu_propose_schema_change" in refused["hint"]


def test_knot_sp2_unknown_type_refusal_hints_at_propose_schema_change(client: TestClient) -> None:
    post(client, "/shapes", action="load", name="people", turtle=PEOPLE)
    out = problem(client.post("/knot", json={"turtle": P + "ex:a a ex:Robot ."}), "unknown_type")
    assert "quipu_propose_schema_change" in out["error"]


# == §7.2 quipu_list_proposals ===================================================================


def test_list_is_newest_created_at_first_with_ties_by_id(client: TestClient) -> None:
    old = propose(client, timestamp=T1)
    newest = propose(client, timestamp=T3)
    tie_a = propose(client, timestamp=T2)
    tie_b = propose(client, timestamp=T2)
    assert [p["id"] for p in listed(client)] == [newest, tie_b, tie_a, old]


def test_list_items_carry_every_documented_field(client: TestClient) -> None:
    propose(client)
    (item,) = listed(client)
    assert list(item) == FIELDS


def test_list_narrows_to_one_status_and_absent_lists_all(client: TestClient) -> None:
    pending = propose(client, kind="class", target="http://ex.org/C")
    accepted = propose(client, kind="class", target="http://ex.org/D")
    rejected = propose(client, kind="class", target="http://ex.org/E")
    post(client, "/proposal/accept", id=accepted, decided_by="lead")
    post(client, "/proposal/reject", id=rejected, decided_by="lead", note="no")
    assert [p["id"] for p in listed(client, status="pending")] == [pending]
    assert [p["id"] for p in listed(client, status="accepted")] == [accepted]
    assert [p["id"] for p in listed(client, status="rejected")] == [rejected]
    assert sorted(p["id"] for p in listed(client)) == [pending, accepted, rejected]
    assert post(client, "/proposals", status="pending")["count"] == 1


def test_list_of_an_empty_queue(client: TestClient) -> None:
    assert post(client, "/proposals") == {"proposals": [], "count": 0}


def test_list_refuses_an_unknown_status_naming_the_allowed_ones(client: TestClient) -> None:
    out = problem(client.post("/proposals", json={"status": "open"}), "unknown_status")
    assert out["field"] == "status" and "pending, accepted, rejected" in out["error"]


def test_list_is_a_read_served_on_a_read_only_server(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as client:
        assert post(client, "/proposals") == {"proposals": [], "count": 0}
        body = {"kind": "shape", "target": "people", "diff": AGED, "proposer": "p"}
        problem(client.post("/propose", json=body), "server_is_read_only", 403)
        problem(
            client.post("/proposal/accept", json={"id": 1, "decided_by": "x"}), "server_is_read_only", 403
        )
        problem(
            client.post("/proposal/reject", json={"id": 1, "decided_by": "x", "note": "n"}),
            "server_is_read_only",
            403,
        )


# == §7.3 quipu_accept_proposal ==================================================================


def test_accept_pa1_installs_the_shape_set_named_target_at_decided_at(client: TestClient) -> None:
    pid = propose(client)
    assert knot(client, 'ex:a a ex:Person ; ex:age "old" .')["conforms"] is True  # no shapes yet
    out = post(client, "/proposal/accept", id=pid, decided_by="lead", note="agreed", timestamp=T2)
    assert out == {"proposal_id": pid, "status": "accepted", "target": "people", "kind": "shape"}
    (installed,) = kb_of(client).shape_sets()
    assert (installed.name, installed.turtle, installed.valid_from) == ("people", AGED, T2)
    decided = one(client, pid)
    assert (decided["status"], decided["decided_by"], decided["decided_at"], decided["decision_note"]) == (
        "accepted",
        "lead",
        T2,
        "agreed",
    )
    # The accepted shape now gates writes.
    refused = knot(client, 'ex:b a ex:Person ; ex:age "older" .')
    assert refused["conforms"] is False and refused["violations"] == 1
    assert knot(client, "ex:c a ex:Person ; ex:age 3 .")["conforms"] is True


def test_accept_pa1_closes_the_previous_version_at_decided_at(client: TestClient) -> None:
    post(client, "/shapes", action="load", name="people", turtle=PEOPLE, timestamp=T1)
    pid = propose(client)
    post(client, "/proposal/accept", id=pid, decided_by="lead", timestamp=T2)
    rows = [(name, turtle, start, end) for name, turtle, start, end, _tx, _closed in shapes_rows(client)]
    assert rows == [("people", PEOPLE, T1, T2), ("people", AGED, T2, None)]
    with kb_of(client).db.read() as conn:
        assert [s.turtle for s in registry.open_sets(conn, valid_at="2026-01-15T00:00:00Z")] == [PEOPLE]
        assert [s.turtle for s in registry.open_sets(conn, valid_at=T2)] == [AGED]


def test_accept_pa1_at_the_identical_instant_replaces_that_version(client: TestClient) -> None:
    post(client, "/shapes", action="load", name="people", turtle=PEOPLE, timestamp=T2)
    pid = propose(client)
    post(client, "/proposal/accept", id=pid, decided_by="lead", timestamp=T2)
    rows = [(name, turtle, start, end) for name, turtle, start, end, _tx, _closed in shapes_rows(client)]
    assert rows == [("people", AGED, T2, None)]


def test_accept_pa1_leaves_other_shape_sets_alone(client: TestClient) -> None:
    post(client, "/shapes", action="load", name="base", turtle=PEOPLE, timestamp=T1)
    post(client, "/proposal/accept", id=propose(client, target="ages"), decided_by="lead", timestamp=T2)
    assert [(s.name, s.turtle) for s in kb_of(client).shape_sets()] == [("ages", AGED), ("base", PEOPLE)]


@pytest.mark.parametrize(
    ("kind", "target"),
    [("class", "http://ex.org/Person"), ("property", "http://ex.org/age"), ("ontology", "people")],
)
def test_accept_pa2_other_kinds_only_record_the_decision(client: TestClient, kind: str, target: str) -> None:
    post(client, "/shapes", action="load", name="people", turtle=PEOPLE, timestamp=T1)
    before = shapes_rows(client)
    pid = propose(client, kind=kind, target=target, diff=AGED)  # loadable SHACL, yet not loaded
    out = post(client, "/proposal/accept", id=pid, decided_by="lead", timestamp=T2)
    assert out == {"proposal_id": pid, "status": "accepted", "target": target, "kind": kind}
    assert shapes_rows(client) == before
    assert (one(client, pid)["status"], one(client, pid)["decided_at"]) == ("accepted", T2)
    assert knot(client, 'ex:a a ex:Person ; ex:age "old" .')["conforms"] is True  # no new gate


def test_accept_pa2_an_invalid_diff_of_another_kind_is_still_accepted(client: TestClient) -> None:
    pid = propose(client, kind="ontology", target="http://ex.org/onto", diff=NOT_TURTLE)
    assert post(client, "/proposal/accept", id=pid, decided_by="lead")["status"] == "accepted"
    assert shapes_rows(client) == []


@pytest.mark.parametrize(
    ("diff", "phrase"), [(NOT_TURTLE, "do not parse as Turtle"), (NOT_SHACL, "not valid SHACL")]
)
def test_accept_pa3_an_invalid_shape_diff_leaves_proposal_and_registry_unchanged(
    client: TestClient, diff: str, phrase: str
) -> None:
    post(client, "/shapes", action="load", name="people", turtle=PEOPLE, timestamp=T1)
    pid = propose(client, diff=diff)
    before_rows, before_proposal = shapes_rows(client), one(client, pid)
    out = problem(
        client.post("/proposal/accept", json={"id": pid, "decided_by": "lead", "timestamp": T2}),
        "invalid_shapes",
    )
    assert out["field"] == "diff" and phrase in out["error"]
    assert f"proposal {pid} remains pending" in out["error"]
    assert one(client, pid) == before_proposal and before_proposal["status"] == "pending"
    assert shapes_rows(client) == before_rows
    # Still pending, so it can be decided later.
    assert post(client, "/proposal/reject", id=pid, decided_by="lead", note="broken")["status"] == "rejected"


def test_accept_pa3_a_load_refused_inside_the_transaction_changes_nothing(client: TestClient) -> None:
    # The registry refuses a version that starts before the open one, after the proposal was
    # read inside the same write: both stay as they were.
    post(client, "/shapes", action="load", name="people", turtle=PEOPLE, timestamp=T2)
    pid = propose(client)
    before_rows = shapes_rows(client)
    out = problem(
        client.post("/proposal/accept", json={"id": pid, "decided_by": "lead", "timestamp": T1}),
        "invalid_field",
    )
    assert out["field"] == "timestamp" and f"proposal {pid} remains pending" in out["error"]
    assert one(client, pid)["status"] == "pending" and one(client, pid)["decided_by"] is None
    assert shapes_rows(client) == before_rows


@pytest.mark.parametrize(
    ("body", "field"),
    [({"decided_by": "lead"}, "id"), ({"id": 1}, "decided_by"), ({"id": 1, "decided_by": " "}, "decided_by")],
)
def test_accept_refuses_a_missing_id_or_decided_by(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    pid = propose(client)
    assert pid == 1
    assert problem(client.post("/proposal/accept", json=body), "missing_field")["field"] == field
    assert one(client, pid)["status"] == "pending" and shapes_rows(client) == []


def test_accept_marks_id_and_decided_by_required_in_the_schema(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert sorted(schemas["AcceptRequest"]["required"]) == ["decided_by", "id"]
    assert sorted(schemas["RejectRequest"]["required"]) == ["decided_by", "id", "note"]
    assert sorted(schemas["ProposeRequest"]["required"]) == ["diff", "kind", "proposer", "target"]


def test_accept_refuses_an_id_of_the_wrong_type(client: TestClient) -> None:
    propose(client)
    out = problem(client.post("/proposal/accept", json={"id": "1", "decided_by": "lead"}), "wrong_type")
    assert out["field"] == "id"


def test_accept_refuses_an_unknown_id(client: TestClient) -> None:
    out = problem(client.post("/proposal/accept", json={"id": 99, "decided_by": "lead"}), "not_found")
    assert out["field"] == "id" and "proposal 99 not found" in out["error"]


@pytest.mark.parametrize("pid", [0, -1, 2**63, -(10**26)])
@pytest.mark.parametrize("route", ["/proposal/accept", "/proposal/reject"])
def test_an_id_outside_the_64_bit_range_is_simply_not_found(client: TestClient, route: str, pid: int) -> None:
    body = {"id": pid, "decided_by": "lead", "note": "n"}
    out = problem(client.post(route, json=body), "not_found")
    assert out["field"] == "id" and f"proposal {pid} not found" in out["error"]


def test_accept_refuses_a_decided_proposal(client: TestClient) -> None:
    pid = propose(client)
    post(client, "/proposal/accept", id=pid, decided_by="lead", timestamp=T2)
    before_rows, before_proposal = shapes_rows(client), one(client, pid)
    out = problem(client.post("/proposal/accept", json={"id": pid, "decided_by": "other"}), "not_pending")
    assert out["field"] == "id" and f"proposal {pid} is already accepted" in out["error"]
    assert shapes_rows(client) == before_rows and one(client, pid) == before_proposal

    rejected = propose(client)
    post(client, "/proposal/reject", id=rejected, decided_by="lead", note="no")
    out = problem(client.post("/proposal/accept", json={"id": rejected, "decided_by": "lead"}), "not_pending")
    assert f"proposal {rejected} is already rejected" in out["error"]
    assert one(client, rejected)["status"] == "rejected"


def test_accept_normalises_decided_at_and_defaults_to_now(client: TestClient) -> None:
    offset = propose(client, kind="class", target="http://ex.org/C")
    post(client, "/proposal/accept", id=offset, decided_by="lead", timestamp="2026-02-01T01:30:00-01:00")
    assert one(client, offset)["decided_at"] == "2026-02-01T02:30:00Z"
    default = propose(client, kind="class", target="http://ex.org/D")
    post(client, "/proposal/accept", id=default, decided_by="lead")
    assert CANONICAL.fullmatch(one(client, default)["decided_at"])


def test_accept_reports_unknown_keys_as_ignored_fields(client: TestClient) -> None:
    pid = propose(client, kind="class", target="http://ex.org/C")
    out = post(client, "/proposal/accept", id=pid, decided_by="lead", actor="x")
    assert out["ignored_fields"] == ["actor"]


# == §7.4 quipu_reject_proposal ==================================================================


def test_reject_records_the_reason_and_changes_no_schema(client: TestClient) -> None:
    pid = propose(client, timestamp=T1)
    out = post(client, "/proposal/reject", id=pid, decided_by="lead", note="ages may be text", timestamp=T2)
    assert out == {"proposal_id": pid, "status": "rejected", "target": "people"}
    decided = one(client, pid)
    assert (decided["status"], decided["decided_by"], decided["decided_at"], decided["decision_note"]) == (
        "rejected",
        "lead",
        T2,
        "ages may be text",
    )
    assert shapes_rows(client) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"note": "n", "decided_by": "lead"}, "id"),
        ({"id": 1, "decided_by": "lead"}, "note"),
        ({"id": 1, "decided_by": "lead", "note": ""}, "note"),
        ({"id": 1, "note": "n"}, "decided_by"),
    ],
)
def test_reject_refuses_a_missing_id_note_or_decided_by(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    assert propose(client) == 1
    assert problem(client.post("/proposal/reject", json=body), "missing_field")["field"] == field
    assert one(client, 1)["status"] == "pending"


def test_reject_refuses_an_unknown_id(client: TestClient) -> None:
    out = problem(
        client.post("/proposal/reject", json={"id": 5, "decided_by": "l", "note": "n"}), "not_found"
    )
    assert "proposal 5 not found" in out["error"]


def test_reject_refuses_a_decided_proposal(client: TestClient) -> None:
    pid = propose(client)
    post(client, "/proposal/reject", id=pid, decided_by="lead", note="first")
    out = problem(
        client.post("/proposal/reject", json={"id": pid, "decided_by": "l", "note": "again"}), "not_pending"
    )
    assert f"proposal {pid} is already rejected" in out["error"]
    assert one(client, pid)["decision_note"] == "first"
