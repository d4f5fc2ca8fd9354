"""``quipu project``, ``quipu report``, ``quipu impact`` and ``quipu graph view`` (tools-search
§5.13-§5.15, tools-core §1.12), in process over a real store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from quipu.cli.main import app
from tests.backends import store_location

EX = "http://ex.org/"
TRIANGLES = (
    f"@prefix ex: <{EX}> . ex:a ex:to ex:b . ex:b ex:to ex:c . ex:c ex:to ex:a . "
    "ex:d ex:to ex:e . ex:e ex:to ex:f . ex:f ex:to ex:d . ex:c ex:link ex:d ."
)


def run(*args: str, code: int = 0, stdin: str | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 else result


def loaded(tmp_path: Path) -> str:
    db = store_location(tmp_path, "a.db")
    run("knot", "-", "--db", db, stdin=TRIANGLES)
    return db


def test_project_louvain_persist_and_pagerank(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    assert run("project", "--db", db) == {"nodes": 6, "edges": 7}
    out = run("project", "--algorithm", "louvain", "--persist", "--db", db)
    assert out["count"] == 2 and out["persisted"] == 6 and round(out["modularity"], 6) == 0.357143
    ranked = run("project", "--algorithm", "ppr", "--seed", EX + "a", "--limit", "2", "--db", db)
    assert ranked["personalized"] is True and ranked["count"] == 2
    path = run("project", "--algorithm", "shortest_path", "--from", EX + "a", "--to", EX + "d", "--db", db)
    assert path["length"] == 3


def test_project_refusals_exit_2_and_name_the_field(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    refused = run("project", "--algorithm", "magic", "--db", db, code=2)
    assert "unknown algorithm: magic" in refused.stderr and refused.stdout == ""
    assert "--limit" in run("project", "--limit", "-1", "--db", db, code=2).stderr


def test_report_and_graph_view(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    out = run("report", "--hubs", "2", "--questions", "3", "--db", db)
    assert out["graph"]["communities"] == 2 and len(out["hubs"]) == 2
    assert out["surprising_connections"][0]["from"] == EX + "c"
    view = run("graph", "view", "--limit", "3", "--db", db)
    assert view["truncated"]["shown"] == 3 and view["truncated"]["of"] == 6


def test_impact_with_and_without_remove(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    out = run("impact", EX + "a", "--hops", "2", "--db", db)
    assert [r["iri"] for r in out["reached"]] == [EX + "a", EX + "b", EX + "c"]
    assert run("impact", EX + "a", "--remove", "--db", db)["reached_count"] == 0
    assert run("impact", EX + "a", "--db", db)["reached_count"] == 5  # the removal was rolled back
    assert "entity not found" in run("impact", EX + "ghost", "--db", db, code=2).stderr


def test_graph_view_at_a_past_point(tmp_path: Path) -> None:
    db = store_location(tmp_path, "t.db")
    run("knot", "-", "--timestamp", "2026-11-01T00:00:00Z", "--db", db, stdin=TRIANGLES)
    run("retract", EX + "c", "--predicate", EX + "link", "--timestamp", "2026-11-10T00:00:00Z", "--db", db)
    now = run("graph", "view", "--db", db)
    before = run("graph", "view", "--valid-at", "2026-11-05T00:00:00Z", "--db", db)
    first = run("graph", "view", "--tx", "1", "--db", db)
    assert (now["stats"]["edges"], before["stats"]["edges"], first["stats"]["edges"]) == (6, 7, 7)
    refused = run("graph", "view", "--valid-at", "yesterday", "--db", db, code=2)
    assert "valid_at" in refused.stderr and refused.stdout == ""
