"""``quipu graph list|create|label|freeze|thaw`` (tools-graphs-governance §1), in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from tests.backends import store_location

G = "http://ex.org/runs/2026-08"
NO_ACTOR: dict[str, str | None] = {"QUIPU_ACTOR": None}


def run(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args), env=NO_ACTOR)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 else result


def test_create_label_and_list(tmp_path: Path) -> None:
    db = store_location(tmp_path, "g.db")
    out = run("graph", "create", G, "--actor", "ops", "--timestamp", "2026-08-01T00:00:00Z", "--db", db)
    assert out["created"] is True and out["creation"] == {"timestamp": "2026-08-01T00:00:00Z", "actor": "ops"}
    label = run(
        "graph", "label", G, "--freshness", "fresh", "--policy", "pii", "--policy", "internal",
        "--trust", "http://ex.org/gold", "--trust-chain", "http://ex.org/chain", "--trust-rank", "3",
        "--kind", "operational", "--db", db,
    )  # fmt: skip
    assert isinstance(label["tx_id"], int)
    listed = run("graph", "list", "--kind", "operational", "--db", db)
    assert [g["iri"] for g in listed["graphs"]] == [G]
    assert listed["graphs"][0]["labels"] == {
        "freshness": "fresh", "durability": None, "trust_rank": 3, "trust_chain": "http://ex.org/chain",
        "policy": "internal pii", "kind": "operational",
    }  # fmt: skip
    refused = run("graph", "label", G, "--freshness", "crisp", "--db", db, code=2)
    assert "freshness" in refused.stderr


@pytest.mark.sqlite_only
def test_freeze_to_a_directory_and_thaw(tmp_path: Path) -> None:
    db = str(tmp_path / "g.db")
    with quipu.open(db) as kb:
        kb.graphs.create(G)
        kb.knot('<http://ex.org/r> <http://ex.org/status> "ok" .', graph=G)
    packs = tmp_path / "cold"
    packs.mkdir()
    frozen = run("graph", "freeze", G, "--out", str(packs), "--db", db)
    assert Path(frozen["pack"]).parent == packs.resolve() and frozen["facts"] == 1
    assert [g["iri"] for g in run("graph", "list", "--frozen", "--db", db)["graphs"]] == [G]
    thawed = run("graph", "thaw", G, "--db", db)
    assert thawed == {"graph": G, "facts_restored": 1, "vectors_restored": 0}
    assert run("graph", "list", "--frozen", "--db", db)["count"] == 0
