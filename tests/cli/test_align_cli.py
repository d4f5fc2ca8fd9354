"""``quipu align propose|decide|apply`` (tools-graphs-governance §3), in process (CliRunner).

The set goes to stdout or ``--out``, the summary and ``expected-version`` to stderr; a refusal
exits 2 with one ``error:`` line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from quipu.api import KnowledgeBase
from quipu.cli.align import read_decisions
from quipu.cli.main import app
from quipu.sharing import align, sssom
from tests.backends import store_location

EX = "http://ex.org/"
GA, GB = EX + "vocab/a", EX + "vocab/b"
P = f"@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
VOCABS = {
    GA: P + 'ex:a-widget a ex:Thing ; rdfs:label "Widget" . ex:a-gadget a ex:Thing ; rdfs:label "Gadget" .\n'
    'ex:a-cog a ex:Thing ; rdfs:label "Cog", "Sprocket" .',
    GB: P + 'ex:b-widget a ex:Thing ; rdfs:label "widget" . ex:b-gadget a ex:Thing ; rdfs:label "Gadgett" .',
}
NO_ACTOR: dict[str, str | None] = {"QUIPU_ACTOR": None}


def run(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args), env=NO_ACTOR)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def version_in(stderr: str) -> str:
    found = re.search(r"^expected-version: (sha256:[0-9a-f]{64})$", stderr, re.MULTILINE)
    assert found, stderr
    return found.group(1)


def store(tmp_path: Path) -> str:
    db = store_location(tmp_path, "align.db")
    with KnowledgeBase(db) as kb:
        for graph, turtle in VOCABS.items():
            kb.graphs.create(graph)
            kb.knot(turtle, graph=graph)
    return db


def test_propose_decide_apply(tmp_path: Path) -> None:
    db = store(tmp_path)
    proposed = run("align", "propose", GA, GB, "--db", db)
    assert "2 candidate(s); 1 entity(ies) set aside as ambiguous" in proposed.stderr
    assert version_in(proposed.stderr) == sssom.set_version(sssom.parse(proposed.stdout))
    set_file = tmp_path / "set.tsv"
    to_file = run("align", "propose", GA, GB, "--out", str(set_file), "--db", db)
    assert to_file.stdout == "" and f"wrote {set_file}" in to_file.stderr
    assert set_file.read_text(encoding="utf-8") == proposed.stdout  # deterministic

    rows = tmp_path / "rows.tsv"
    rows.write_text(
        "# reviewed by ops\n"
        f"{EX}a-widget\t{EX}b-widget\taccept\n"
        "\n"
        f"{EX}b-gadget\t{EX}a-gadget\tnegate\n"
        f"{EX}a-none\t{EX}b-none\taccept\n",
        encoding="utf-8",
    )
    decided_file = tmp_path / "decided.tsv"
    decided = run(
        "align",
        "decide",
        str(set_file),
        "--decisions",
        str(rows),
        "--reviewer",
        "ops",
        "--out",
        str(decided_file),
    )
    assert "2 decision(s) applied; 1 named no pair in this set" in decided.stderr
    assert f"unmatched: {EX}a-none\t{EX}b-none" in decided.stderr
    version = version_in(decided.stderr)
    assert version != version_in(proposed.stderr)
    sssom.validate_with_schema(decided_file.read_text(encoding="utf-8"))

    apply = ("align", "apply", str(decided_file), "--graph-a", GA, "--graph-b", GB, "--db", db)
    out = json.loads(run(*apply, "--expected-version", version, "--actor", "cli-bot").stdout)
    assert out == {"graph": align.derived_graph(GA, GB), "written": 8, "distinct_from": 1}
    again = json.loads(run(*apply, "--expected-version", version).stdout)
    assert again["written"] == 0
    stale = run(*apply, "--expected-version", version_in(proposed.stderr), code=2)
    assert "changed under this apply" in stale.stderr and "Nothing was written" in stale.stderr


def test_decide_reads_the_set_from_stdin_and_writes_stdout(tmp_path: Path) -> None:
    db = store(tmp_path)
    proposed = run("align", "propose", GA, GB, "--set-id", "urn:ex:set", "--db", db).stdout
    rows = tmp_path / "rows.tsv"
    rows.write_text(f"{EX}a-widget\t{EX}b-widget\taccept\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["align", "decide", "-", "--decisions", str(rows), "--reviewer", "ops"],
        input=proposed,
        env=NO_ACTOR,
    )
    assert result.exit_code == 0, result.stderr
    decided = sssom.parse(result.stdout)
    assert decided.mapping_set_id == "urn:ex:set"
    assert [m.author_id for m in decided.mappings] == [None, "ops"]


def test_refusals_exit_2_with_one_line(tmp_path: Path) -> None:
    db = store(tmp_path)
    unknown = run("align", "propose", GA, EX + "vocab/typo", "--db", db, code=2)
    assert "is not a known graph" in unknown.stderr
    set_file = tmp_path / "set.tsv"
    run("align", "propose", GA, GB, "--out", str(set_file), "--db", db)
    rows = tmp_path / "rows.tsv"
    rows.write_text(f"{EX}a-widget\taccept\n", encoding="utf-8")
    short = run("align", "decide", str(set_file), "--decisions", str(rows), "--reviewer", "ops", code=2)
    assert "decisions line 1" in short.stderr
    rows.write_text(f"{EX}a-widget\t{EX}b-widget\tperhaps\n", encoding="utf-8")
    verdict = run("align", "decide", str(set_file), "--decisions", str(rows), "--reviewer", "ops", code=2)
    assert "must be 'accept' or 'negate'" in verdict.stderr
    missing = run(
        "align", "decide", str(tmp_path / "nope.tsv"), "--decisions", str(rows), "--reviewer", "o", code=2
    )
    assert "mapping set file not found" in missing.stderr


def test_read_decisions_skips_comments_and_blank_lines() -> None:
    text = "# a comment\n\n  # indented comment\r\nx:a\tx:b\taccept\r\n x:c \t x:d \t negate \n"
    assert read_decisions(text) == [
        {"subject_id": "x:a", "object_id": "x:b", "decision": "accept"},
        {"subject_id": "x:c", "object_id": "x:d", "decision": "negate"},
    ]
