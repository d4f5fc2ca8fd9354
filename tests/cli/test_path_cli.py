"""``quipu path cone`` and ``quipu path backtest`` (tools-graphs-governance §6), in process over a
real store: --json prints the route's body exactly, otherwise a text report; refusals exit 2 with
the message on stderr and nothing on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from quipu.cli.main import app
from tests.backends import store_location
from tests.governance.path_fixtures import EX, EXEMPLAR, HISTORY, OMIT, PATTERN, TRAJ, VIA


def run(*args: str, code: int = 0, stdin: str | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def loaded(tmp_path: Path) -> str:
    db = store_location(tmp_path, "p.db")
    run("knot", "-", "--db", db, stdin=EXEMPLAR)
    run("knot", "-", "--db", db, stdin=HISTORY)
    return db


def via_flags() -> list[str]:
    return [arg for predicate in VIA for arg in ("--via", predicate)]


def test_cone_json_is_the_report(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    out = json.loads(run("path", "cone", TRAJ, *via_flags(), "--hops", "2", "--json", "--db", db).stdout)
    assert out["hops"] == 2 and out["verifications"] == [EX + "verif"]
    assert [(s["iri"][len(EX) :], s["verdict"]) for s in out["steps"]] == [
        ("s1-implement", "OutOfCone"),
        ("s2-detour", "OutOfCone"),
        ("s3-test", "InCone"),
        ("s4-verify", "InCone"),
        ("s5-mail", "CannotEvaluate"),
    ]


def test_cone_text_report(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    lines = run("path", "cone", TRAJ, *via_flags(), "--db", db).stdout.splitlines()
    assert lines[0] == f"cone of {TRAJ} within 8 hops"
    assert lines[1] == f"verifications: {EX}verif"
    assert lines[3] == f"   1  InCone          {EX}s1-implement  (reaches {EX}verif at depth 3)"
    assert lines[-1].startswith(f"   5  CannotEvaluate  {EX}s5-mail  (no outgoing derivation edges")


def test_backtest_json_is_the_report(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    omit = [arg for step in OMIT for arg in ("--omit", step)]
    out = json.loads(run("path", "backtest", TRAJ, *omit, "--json", "--db", db).stdout)
    assert out["grammar"] == "gp-grammar/1" and out["pattern"] == PATTERN
    assert (out["conformers_done"], out["conformers_total"]) == (2, 3)
    assert (out["deviators_done"], out["deviators_total"], out["cannot_evaluate"]) == (0, 2, 2)


def test_backtest_text_report(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    omit = [arg for step in OMIT for arg in ("--omit", step)]
    lines = run("path", "backtest", TRAJ, *omit, "--db", db).stdout.splitlines()
    assert lines[0] == f"gp-grammar/1 backtest of {TRAJ}"
    assert lines[1] == f"pattern: edit:literal -> run:{EX}Artifact -> verify:none"
    assert lines[2] == "topics: service-deploy"
    assert f"{EX}t-open  {EX}wi-t-open  open  DeviatesAt pattern[2]  (0 unevaluated)" in lines
    assert lines[-1] == "conformers: 2 done of 3; deviators: 0 done of 2; cannot evaluate: 2"


def test_refusals_exit_2_on_stderr(tmp_path: Path) -> None:
    db = loaded(tmp_path)
    unknown = run("path", "cone", EX + "nobody", "--json", "--db", db, code=2)
    assert unknown.stdout == "" and "entity not found" in unknown.stderr
    hole = run("path", "backtest", TRAJ, "--omit", EX + "s2-detour", "--db", db, code=2)
    assert hole.stdout == "" and f"{EX}s5-mail" in hole.stderr and "gp-grammar/1" in hole.stderr
    assert "--hops" in run("path", "cone", TRAJ, "--hops", "-1", "--db", db, code=2).stderr
