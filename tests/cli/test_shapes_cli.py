"""``quipu validate``, ``quipu shapes ...`` and ``quipu knot --shapes``, in process (CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from tests.backends import store_location

EX = "http://ex.org/"
P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
SHAPES = (
    P
    + "ex:S a sh:NodeShape ; sh:targetClass ex:Person ; sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ."
)
BAD = P + 'ex:a a ex:Person ; ex:age "old" .'
GOOD = P + "ex:a a ex:Person ; ex:age 3 ."


def _files(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name, text in (("shapes.ttl", SHAPES), ("bad.ttl", BAD), ("good.ttl", GOOD)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        out[name] = str(tmp_path / name)
    out["db"] = store_location(tmp_path, "s.db")
    return out


def test_validate_prints_the_report(tmp_path: Path) -> None:
    f = _files(tmp_path)
    result = CliRunner().invoke(
        app, ["validate", "--shapes", f["shapes.ttl"], "--data", f["bad.ttl"], "--db", f["db"]]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["conforms"] is False and report["violations"] == 1
    assert report["issues"][0]["component"] == "sh:DatatypeConstraintComponent"


def test_validate_without_stored_shapes_is_refused(tmp_path: Path) -> None:
    f = _files(tmp_path)
    result = CliRunner().invoke(app, ["validate", "--data", f["bad.ttl"], "--db", f["db"]])
    assert result.exit_code == 2
    assert "pass 'shapes', or load some and retry" in result.stderr


def test_shapes_load_list_get_vocabulary_remove(tmp_path: Path) -> None:
    f = _files(tmp_path)
    run = CliRunner()
    assert json.loads(
        run.invoke(app, ["shapes", "load", "people", f["shapes.ttl"], "--db", f["db"]]).stdout
    ) == {
        "action": "loaded",
        "name": "people",
    }
    listed = json.loads(run.invoke(app, ["shapes", "list", "--db", f["db"]]).stdout)
    assert [s["name"] for s in listed["shapes"]] == ["people"]
    assert run.invoke(app, ["shapes", "get", "people", "--db", f["db"]]).stdout.strip() == SHAPES.strip()
    vocabulary = json.loads(run.invoke(app, ["shapes", "vocabulary", "--db", f["db"]]).stdout)
    assert vocabulary == {"classes": [EX + "Person"], "count": 1}
    # stored shapes now gate the CLI's knot and serve validate
    refused = run.invoke(app, ["knot", f["bad.ttl"], "--db", f["db"]])
    assert refused.exit_code == 2 and json.loads(refused.stdout)["conforms"] is False
    assert run.invoke(app, ["knot", f["good.ttl"], "--db", f["db"]]).exit_code == 0
    removed = json.loads(run.invoke(app, ["shapes", "remove", "people", "--db", f["db"]]).stdout)
    assert removed == {"action": "removed", "name": "people", "found": True}
    missing = run.invoke(app, ["shapes", "get", "people", "--db", f["db"]])
    assert missing.exit_code == 2 and "no shape set named 'people'" in missing.stderr


def test_knot_shapes_gates_one_write(tmp_path: Path) -> None:
    f = _files(tmp_path)
    run = CliRunner()
    refused = run.invoke(app, ["knot", f["bad.ttl"], "--shapes", f["shapes.ttl"], "--db", f["db"]])
    assert refused.exit_code == 2
    assert json.loads(refused.stdout)["issues"][0]["focus_node"] == EX + "a"
    assert "SHACL validation failed" in refused.stderr
    with quipu.open(f["db"]) as kb:
        assert kb.stats()["facts"] == 0
    assert (
        run.invoke(app, ["knot", f["good.ttl"], "--shapes", f["shapes.ttl"], "--db", f["db"]]).exit_code == 0
    )
