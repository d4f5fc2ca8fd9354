"""``quipu propose submit|list|accept|reject`` (tools-graphs-governance §7), in process (CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from tests.backends import store_location

P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
AGED = (
    P
    + "ex:S a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ."
)
T1, T2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"
NO_ACTOR: dict[str, str | None] = {"QUIPU_ACTOR": None}


def _setup(tmp_path: Path) -> tuple[str, str, str]:
    (tmp_path / "aged.ttl").write_text(AGED, encoding="utf-8")
    (tmp_path / "broken.ttl").write_text("not turtle {", encoding="utf-8")
    return store_location(tmp_path, "s.db"), str(tmp_path / "aged.ttl"), str(tmp_path / "broken.ttl")


def run(*args: str, env: dict[str, str | None] | None = None, code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args), env=env or NO_ACTOR)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 else result


def test_submit_then_list_prints_json(tmp_path: Path) -> None:
    db, aged, _ = _setup(tmp_path)
    out = run(
        "propose", "submit", "shape", "people", aged, "--proposer", "agent-7",
        "--rationale", "ages are numbers", "--trigger", "validation:1", "--timestamp", T1, "--db", db,
    )  # fmt: skip
    assert out == {"proposal_id": 1, "status": "pending"}
    listed = run("propose", "list", "--db", db)
    assert listed["count"] == 1
    (item,) = listed["proposals"]
    assert (item["kind"], item["target"], item["diff"], item["proposer"]) == (
        "shape",
        "people",
        AGED,
        "agent-7",
    )
    assert (item["rationale"], item["trigger_ref"], item["created_at"]) == (
        "ages are numbers",
        "validation:1",
        T1,
    )
    assert run("propose", "list", "--status", "accepted", "--db", db) == {"proposals": [], "count": 0}


def test_submit_reads_the_diff_from_stdin(tmp_path: Path) -> None:
    db, _, _ = _setup(tmp_path)
    result = CliRunner().invoke(
        app,
        ["propose", "submit", "class", "http://ex.org/C", "-", "--proposer", "p", "--db", db],
        input="patch",
    )
    assert result.exit_code == 0, result.stderr
    with quipu.open(db) as kb:
        assert [p.diff for p in kb.proposals()] == ["patch"]


def test_accept_installs_the_shape_set(tmp_path: Path) -> None:
    db, aged, _ = _setup(tmp_path)
    run("propose", "submit", "shape", "people", aged, "--proposer", "p", "--db", db)
    out = run("propose", "accept", "1", "--note", "ok", "--decided-by", "lead", "--timestamp", T2, "--db", db)
    assert out == {"proposal_id": 1, "status": "accepted", "target": "people", "kind": "shape"}
    with quipu.open(db) as kb:
        assert [(s.name, s.turtle, s.valid_from) for s in kb.shape_sets()] == [("people", AGED, T2)]
        (decided,) = kb.proposals("accepted")
        assert (decided.decided_by, decided.decision_note) == ("lead", "ok")


def test_decided_by_defaults_to_quipu_actor_then_the_os_user(tmp_path: Path) -> None:
    db, aged, _ = _setup(tmp_path)
    for _ in range(2):
        run("propose", "submit", "class", "http://ex.org/C", aged, "--proposer", "p", "--db", db)
    run("propose", "accept", "1", "--db", db, env={"QUIPU_ACTOR": "ci-bot"})
    run("propose", "reject", "2", "--note", "no", "--db", db, env={"QUIPU_ACTOR": None, "LOGNAME": "osuser"})
    with quipu.open(db) as kb:
        assert {p.id: p.decided_by for p in kb.proposals()} == {1: "ci-bot", 2: "osuser"}


def test_reject_records_the_note(tmp_path: Path) -> None:
    db, aged, _ = _setup(tmp_path)
    run("propose", "submit", "shape", "people", aged, "--proposer", "p", "--db", db)
    out = run("propose", "reject", "1", "--note", "too strict", "--decided-by", "lead", "--db", db)
    assert out == {"proposal_id": 1, "status": "rejected", "target": "people"}
    with quipu.open(db) as kb:
        assert [(p.status, p.decision_note) for p in kb.proposals()] == [("rejected", "too strict")]
        assert kb.shape_sets() == []


def test_reject_requires_a_note(tmp_path: Path) -> None:
    db, aged, _ = _setup(tmp_path)
    run("propose", "submit", "shape", "people", aged, "--proposer", "p", "--db", db)
    result = run("propose", "reject", "1", "--decided-by", "lead", "--db", db, code=2)
    assert "--note" in result.stderr
    with quipu.open(db) as kb:
        assert [p.status for p in kb.proposals()] == ["pending"]


def test_refusals_go_to_stderr_with_exit_2(tmp_path: Path) -> None:
    db, aged, broken = _setup(tmp_path)
    bad_kind = run("propose", "submit", "shapes", "people", aged, "--proposer", "p", "--db", db, code=2)
    assert "unknown kind 'shapes'" in bad_kind.stderr and bad_kind.stdout == ""
    assert "unknown status 'open'" in run("propose", "list", "--status", "open", "--db", db, code=2).stderr
    missing = run("propose", "accept", "9", "--decided-by", "lead", "--db", db, code=2)
    assert "proposal 9 not found" in missing.stderr
    run("propose", "submit", "shape", "people", broken, "--proposer", "p", "--db", db)
    invalid = run("propose", "accept", "1", "--decided-by", "lead", "--db", db, code=2)
    assert "proposal 1 remains pending" in invalid.stderr and invalid.stdout == ""
    run("propose", "reject", "1", "--note", "broken", "--decided-by", "lead", "--db", db)
    again = run("propose", "reject", "1", "--note", "x", "--decided-by", "lead", "--db", db, code=2)
    assert "proposal 1 is already rejected" in again.stderr
    with quipu.open(db) as kb:
        assert kb.shape_sets() == [] and [p.decision_note for p in kb.proposals()] == ["broken"]
