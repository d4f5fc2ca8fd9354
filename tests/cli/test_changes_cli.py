"""``quipu changes`` (tools-core §1.10; the errata's CLI verb), in process: one page as JSON on
stdout, the same page ``GET /changes`` answers; refusals on stderr with status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from quipu.events.changes import changes_page
from tests.backends import store_location

EX = "http://ex.org/"
G = EX + "g"


def run(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 else result


@pytest.fixture
def db(tmp_path: Path) -> str:
    location = store_location(tmp_path, "c.db")
    with quipu.open(location) as kb:
        kb.knot(f'<{EX}a> <{EX}p> <{EX}b> .\n<{EX}a> <{EX}q> "x" .', "nt")
        kb.set(EX + "a", EX + "q", "y")
        kb.graphs.create(G)
        kb.knot(f"<{EX}c> <{EX}p> <{EX}d> .", "nt", graph=G)
    return location


def test_prints_the_page_get_changes_answers(db: str) -> None:
    out = run("changes", "--db", db)
    with quipu.open(db) as kb:
        assert out == changes_page(kb.db)
    assert [(r["tx"], r["op"]) for r in out["records"]] == [
        (1, "assert"),
        (1, "assert"),
        (2, "retract"),
        (2, "assert"),
        (3, "assert"),
    ]
    assert out["records"][0]["value"] == {"ref": EX + "b"} and out["next_tx"] == out["watermark_tx"] == 3


def test_from_limit_capture_and_graph(db: str) -> None:
    out = run("changes", "--from", "1", "--limit", "1", "--capture", "old_and_new_values", "--db", db)
    assert {r["tx"] for r in out["records"]} == {2} and out["next_tx"] == 2
    retract = out["records"][0]
    assert retract["op"] == "retract" and retract["old_value"] == "x" and retract["closed_claims"] == 1
    rows = run("changes", "--capture", "new_row", "--limit", "1", "--db", db)["records"]
    assert rows[-1]["row"] == {EX + "p": {"ref": EX + "b"}, EX + "q": "x"}
    scoped = run("changes", "--graph", G, "--db", db)
    assert [r["graph"] for r in scoped["records"]] == [G] and scoped["watermark_tx"] == 3
    root = run("changes", "--graph", "urn:quipu:graph:root", "--db", db)
    assert {r["graph"] for r in root["records"]} == {"ROOT"} and root["next_tx"] == 2


def test_an_empty_page_keeps_the_cursor(db: str) -> None:
    out = run("changes", "--from", "9", "--db", db)
    assert (out["records"], out["next_tx"], out["watermark_tx"]) == ([], 9, 3)


def test_refusals_go_to_stderr_with_status_2(db: str) -> None:
    result = run("changes", "--capture", "full", "--db", db, code=2)
    assert result.stdout == ""
    assert "capture must be new_values, old_and_new_values, or new_row" in result.stderr
    result = run("changes", "--graph", EX + "nowhere", "--db", db, code=2)
    assert f"unknown graph IRI: {EX}nowhere" in result.stderr
    assert run("changes", "--limit", "0", "--db", db, code=2).stdout == ""
    assert run("changes", "--from", "-1", "--db", db, code=2).stdout == ""
