"""The SPARQL benchmark runs end to end on a tiny data set (so it cannot rot unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import sparql


def test_sparql_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--triples", "3000", "--repeat", "1", "--data-dir", str(tmp_path)]
    status = sparql.main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]  # row-count mismatches are listed as FAILED lines
    lines = captured.out.splitlines()
    for name in sparql.ALL_NAMES:
        assert any(line.startswith(f"| {name} ") for line in lines), f"no table row for {name}"
    assert "Row counts: quipu and rdflib agree with pyoxigraph" in captured.out


def test_sparql_benchmark_only_and_skip_rdflib(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--triples", "3000", "--repeat", "1", "--data-dir", str(tmp_path), "--only", "Q6,T3"]
    assert sparql.main([*argv, "--skip-rdflib"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [row.split()[1] for row in rows[1:]] == ["Q6", "T3"]  # rows[0] is the header
