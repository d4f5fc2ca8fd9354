"""``quipu episode FILE|-``, run for real as the console script on a store in a temp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.backends import store_location

QUIPU = Path(sys.executable).parent / "quipu"
NS = "http://aegis.gastown.local/ontology/"
SHAPES = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix o: <{NS}> .
o:ServiceShape a sh:NodeShape ; sh:targetClass o:Service ;
    sh:property [ sh:path o:tier ; sh:minCount 1 ; sh:in ("gold" "silver") ] .
o:DatabaseShape a sh:NodeShape ; sh:targetClass o:Database .
"""
GOOD = {
    "name": "deploy-42",
    "source": "agent-7",
    "nodes": [
        {"name": "svc", "type": "Service", "properties": {"tier": "gold"}},
        {"name": "db", "type": "Database"},
    ],
    "edges": [{"source": "svc", "target": "db", "relation": "uses"}],
}
BAD = {"name": "deploy-43", "nodes": [{"name": "svc", "type": "Service", "properties": {"tier": "bronze"}}]}
TIER = f"SELECT ?t WHERE {{ <{NS}svc> <{NS}tier> ?t }}"


def quipu(tmp_path: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("QUIPU_")}
    base.update({"QUIPU_STORE__DB": store_location(tmp_path, "s.db"), **env})
    return subprocess.run(
        [str(QUIPU), *args], cwd=tmp_path, input=stdin, capture_output=True, text=True, env=base, timeout=120
    )


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def tiers(tmp_path: Path, *args: str) -> list[str]:
    out = quipu(tmp_path, "read", TIER, "--format", "json", *args)
    assert out.returncode == 0, out.stderr
    return [b["t"]["value"] for b in json.loads(out.stdout)["results"]["bindings"]]


def test_an_episode_from_a_file_is_created_at_its_valid_time_then_unchanged(tmp_path: Path) -> None:
    path = write(tmp_path, "good.json", GOOD)
    first = quipu(tmp_path, "episode", path, "--timestamp", "2026-01-01T00:00:00Z")
    assert first.returncode == 0, first.stderr
    assert (json.loads(first.stdout)["outcome"], json.loads(first.stdout)["tx_id"]) == ("created", 1)
    again = quipu(tmp_path, "episode", "-", stdin=json.dumps(GOOD))
    assert (json.loads(again.stdout)["outcome"], json.loads(again.stdout)["tx_id"]) == ("unchanged", 0)
    assert tiers(tmp_path, "--valid-at", "2025-06-01T00:00:00Z") == []
    assert tiers(tmp_path, "--valid-at", "2026-02-01T00:00:00Z") == ["gold"]


def test_shapes_refuse_an_invalid_episode_with_exit_2_and_the_issues(tmp_path: Path) -> None:
    shapes = write(tmp_path, "shapes.ttl", SHAPES)
    refused = quipu(tmp_path, "episode", write(tmp_path, "bad.json", BAD), "--shapes", shapes)
    assert refused.returncode == 2
    report = json.loads(refused.stdout)
    (issue,) = report["issues"]
    assert (issue["path"], issue["allowed"]) == (NS + "tier", ["gold", "silver"])
    assert "SHACL validation failed" in refused.stderr
    # Stored shapes gate episodes with shacl.validate_on_write; nothing was written before.
    assert quipu(tmp_path, "shapes", "load", "services", shapes).returncode == 0
    stored = quipu(tmp_path, "episode", "-", stdin=json.dumps(BAD), QUIPU_SHACL__VALIDATE_ON_WRITE="true")
    assert stored.returncode == 2 and json.loads(stored.stdout)["violations"] == 1
    log = quipu(tmp_path, "read", f"SELECT ?s WHERE {{ ?s a <{NS}Service> }}", "--format", "json")
    assert json.loads(log.stdout)["results"]["bindings"] == []


def test_a_malformed_document_is_refused_before_the_store_is_opened(tmp_path: Path) -> None:
    unknown = quipu(tmp_path, "episode", "-", stdin=json.dumps({**GOOD, "node": []}))
    assert unknown.returncode == 2 and "unknown field(s) node" in unknown.stderr
    broken = quipu(tmp_path, "episode", "-", stdin="{not json")
    assert broken.returncode == 2 and "invalid episode JSON" in broken.stderr
    missing = quipu(tmp_path, "episode", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "input file not found" in missing.stderr
    assert not (tmp_path / "s.db").exists()
