"""``quipu reason`` (tools-core §3.11's CLI), in process: the report as JSON on stdout, the same
work as ``POST /reason``; refusals on stderr with status 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from tests.backends import store_location

EX = "http://ex.org/"
RULES = (
    "@prefix rule: <http://quipu.local/rule#> .\n"
    f'<{EX}r/base> a rule:Rule ; rule:id "base" ; rule:head "reach(?x, ?y)" ; rule:body "dep(?x, ?y)" .\n'
    f'<{EX}r/step> a rule:Rule ; rule:id "step" ; rule:head "reach(?x, ?z)" ; '
    'rule:body "dep(?x, ?y), reach(?y, ?z)" .'
)


@pytest.fixture
def db(tmp_path: Path) -> str:
    location = store_location(tmp_path, "r.db")
    with quipu.open(location) as kb:
        kb.knot(f"<{EX}a> <{EX}dep> <{EX}b> .\n<{EX}b> <{EX}dep> <{EX}c> .", "nt")
    return location


def test_reason_prints_the_report_and_derives(db: str, tmp_path: Path) -> None:
    rules = tmp_path / "rules.ttl"
    rules.write_text(RULES, encoding="utf-8")
    result = CliRunner().invoke(app, ["reason", "--rules", str(rules), "--prefix", EX, "--db", db])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["asserted"] == 3 and report["inferred_graph"] == "urn:quipu:graph:root#inferred"
    assert report["per_rule"] == [{"rule": "base", "asserted": 2}, {"rule": "step", "asserted": 1}]
    with quipu.open(db) as kb:
        assert kb.query(f"ASK {{ GRAPH <urn:quipu:graph:root#inferred> {{ <{EX}a> <{EX}reach> <{EX}c> }} }}")


def test_reason_refuses_with_status_2_and_writes_nothing(db: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text(RULES.replace("reach(?x, ?y)", "reach(?x, ?q)"), encoding="utf-8")
    with quipu.open(db) as kb:
        before = kb.transactions(limit=None)
    result = CliRunner().invoke(app, ["reason", "--rules", str(bad), "--db", db])
    assert result.exit_code == 2
    assert "head variable ?q is not bound in the body" in result.stderr and result.stdout == ""
    missing = CliRunner().invoke(app, ["reason", "--db", db])  # no stored rules either
    assert missing.exit_code == 2 and "no rules" in missing.stderr
    with quipu.open(db) as kb:
        assert kb.transactions(limit=None) == before


def test_reactive_propagates_only_the_changes_since_the_last_run(db: str, tmp_path: Path) -> None:
    rules = tmp_path / "rules.ttl"
    rules.write_text(RULES, encoding="utf-8")
    args = ["reason", "--reactive", "--rules", str(rules), "--prefix", EX, "--db", db]
    first = json.loads(CliRunner().invoke(app, args).stdout)
    assert (first["mode"], first["asserted"]) == ("full", 3)  # no earlier run to start from
    with quipu.open(db) as kb:
        kb.knot(f"<{EX}c> <{EX}dep> <{EX}d> .", "nt")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    second = json.loads(result.stdout)
    assert (second["mode"], second["asserted"], second["retracted"]) == ("incremental", 3, 0)
    assert second["per_rule"] == [{"rule": "base", "asserted": 1}, {"rule": "step", "asserted": 2}]
