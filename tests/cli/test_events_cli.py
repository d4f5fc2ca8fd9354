"""``quipu events read|commit|refusals`` in process over a real store (tools-core §1.11, §3.12)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from quipu.cli.main import app
from tests.backends import store_location

EX = "http://ex.org/"


def run(*args: str, code: int = 0, stdin: str | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 else result


def test_read_commit_and_read_again_from_the_cursor(tmp_path: Path) -> None:
    db = store_location(tmp_path, "e.db")
    run("knot", "-", "--db", db, stdin=f"<{EX}a> <{EX}p> <{EX}b> .")
    page = run("events", "read", "--db", db)
    assert [e["type"] for e in page["events"]] == ["predicate.new", "entity.added", "edge.added"]
    assert run("events", "commit", "worker", "2", "--db", db) == {
        "consumer_id": "worker",
        "committed_offset": 2,
    }
    again = run("events", "read", "--consumer", "worker", "--types", "edge.added", "--db", db)
    assert [e["offset"] for e in again["events"]] == [3] and again["committed_offset"] == 2


def test_refusals_are_counted_by_gate(tmp_path: Path) -> None:
    db = store_location(tmp_path, "r.db")
    assert run("events", "refusals", "--db", db) == {"total": 0, "by_gate": {}}


def test_a_bad_offset_is_refused_with_a_message(tmp_path: Path) -> None:
    db = store_location(tmp_path, "b.db")
    result = run("events", "commit", "--db", db, "--", "worker", "-3", code=2)  # bad input exits 2
    assert "offset must be >= 0" in result.stderr


def test_prune_applies_retention_now_and_needs_a_horizon(tmp_path: Path) -> None:
    db = store_location(tmp_path, "p.db")
    run("knot", "-", "--db", db, "--timestamp", "2020-01-01T00:00:00Z", stdin=f"<{EX}a> <{EX}p> <{EX}b> .")
    # declared in 2020 but recorded today: not old by both clocks, so nothing goes
    assert run("events", "prune", "--days", "1", "--db", db) == {"pruned": 0, "older_than_days": 1}
    assert len(run("events", "read", "--db", db)["events"]) == 3
    result = run("events", "prune", "--db", db, code=2)  # retention off and no --days
    assert "retention is off" in result.stderr
