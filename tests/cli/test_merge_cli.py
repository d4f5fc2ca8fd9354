"""``quipu merge`` (tools-graphs-governance §4.4, §4.5), in process (CliRunner): emit the decisions
of merging a share directory into ROOT, decide them in the file, dry-run and apply it. The document
goes where ``--emit-decisions`` says, the apply result to stdout, summaries to stderr; a refusal
exits 2 with one ``error:`` line and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from quipu.api import KnowledgeBase
from quipu.cli.main import app
from quipu.sharing.manifest import manifest_text
from tests.backends import store_location
from tests.sharing.test_merge import BASE_NT, STATUS, TASK, THEIRS_NT, decided, diverge, make_share

NO_ACTOR: dict[str, str | None] = {"QUIPU_ACTOR": None}


def run(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args), env=NO_ACTOR)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def write_share(directory: Path, share: dict[str, Any]) -> str:
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text(manifest_text(share["manifest"]), encoding="utf-8")
    (directory / "export.nt").write_text(share["export_ntriples"], encoding="utf-8")
    (directory / "shapes.ttl").write_text(share["shapes_turtle"], encoding="utf-8")
    return str(directory)


def setup(tmp_path: Path) -> tuple[str, str, str]:
    """A diverged store, and the base and incoming share directories side by side."""
    db = store_location(tmp_path, "merge.db")
    with KnowledgeBase(db) as kb:
        diverge(kb)
    base = make_share(BASE_NT)
    incoming = make_share(THEIRS_NT, parent=base["manifest"]["share_id"])
    shares = tmp_path / "shares"
    base_dir = write_share(shares / "base", base)
    return db, base_dir, write_share(shares / "incoming", incoming)


def test_emit_decide_dry_run_and_apply(tmp_path: Path) -> None:
    db, _base_dir, incoming_dir = setup(tmp_path)
    file = tmp_path / "decisions.json"
    emitted = run("merge", incoming_dir, "--emit-decisions", str(file), "--propose", "--db", db)
    assert emitted.stdout == ""
    assert f"2 conflict(s) written to {file}" in emitted.stderr  # the base was found beside it
    doc = json.loads(file.read_text(encoding="utf-8"))
    assert [row["proposal"]["choose"] for row in doc["rows"]] == ["theirs", "ours"]
    file.write_text(json.dumps(decided(doc)), encoding="utf-8")
    dry = run("merge", incoming_dir, "--decisions", str(file), "--reviewer", "alice", "--dry-run", "--db", db)
    assert json.loads(dry.stdout)["outcome"] == "dry-run"
    assert dry.stderr.strip() == "dry-run: 4 asserted, 1 retracted"
    done = run(
        "merge", incoming_dir, "--decisions", str(file), "--reviewer", "alice", "--actor", "bot", "--db", db
    )
    out = json.loads(done.stdout)
    assert (out["outcome"], out["asserted"], out["retracted"]) == ("merged", 4, 1)
    assert done.stderr.strip() == f"merged: 4 asserted, 1 retracted (tx {out['tx_id']})"
    with KnowledgeBase(db) as kb:
        rows = kb.query(f"SELECT ?o WHERE {{ <{TASK}> <{STATUS}> ?o }}")
        assert isinstance(rows, list) and [str(r["o"]) for r in rows] == ["reviewed"]
        tx = kb.transactions(limit=None)["transactions"][-1]
        assert tx["actor"] == "bot" and tx["source"].endswith(";reviewer=alice")
    again = run("merge", incoming_dir, "--decisions", str(file), "--reviewer", "alice", "--db", db, code=2)
    assert "stale decisions: ROOT changed" in again.stderr


def test_an_explicit_base_and_the_refusals(tmp_path: Path) -> None:
    db, base_dir, incoming_dir = setup(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    moved = write_share(
        elsewhere / "incoming", make_share(THEIRS_NT, parent=make_share(BASE_NT)["manifest"]["share_id"])
    )
    file = tmp_path / "decisions.json"
    lost = run("merge", moved, "--emit-decisions", str(file), "--db", db, code=2)
    assert "not found beside" in lost.stderr and "--base" in lost.stderr
    run("merge", moved, "--base", base_dir, "--emit-decisions", str(file), "--db", db)
    undecided = run("merge", incoming_dir, "--decisions", str(file), "--reviewer", "r", "--db", db, code=2)
    assert "is undecided" in undecided.stderr
    assert "exactly one of" in run("merge", incoming_dir, "--db", db, code=2).stderr
    no_reviewer = run("merge", incoming_dir, "--decisions", str(file), "--db", db, code=2)
    assert "needs --reviewer" in no_reviewer.stderr
    orphan = write_share(tmp_path / "orphan" / "incoming", make_share(THEIRS_NT))
    no_base = run("merge", orphan, "--emit-decisions", str(file), "--db", db, code=2)
    assert "three-way merge has no base" in no_base.stderr
    with KnowledgeBase(db) as kb:  # every refusal wrote nothing
        assert all(
            not (t["source"] or "").startswith("share-merge:")
            for t in kb.transactions(limit=None)["transactions"]
        )
