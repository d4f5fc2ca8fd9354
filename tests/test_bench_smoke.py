"""The ingest benchmark runs end to end on a tiny data set (so it cannot rot unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import ingest
from tests import backends


@pytest.mark.backend_independent
def test_ingest_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--triples",
        "3000",
        "--episodes",
        "30",
        "--repeat",
        "1",
        "--data-dir",
        str(tmp_path),
        "--no-ox-disk",
    ]
    assert ingest.main(argv) == 0
    out = capsys.readouterr().out
    assert "correctness gate: quipu live statements = pyoxigraph count" in out
    for label in ("pyoxigraph in-memory bulk_load", "pyoxigraph on-disk bulk_load", "quipu, SQLite file"):
        assert label in out


@pytest.mark.skipif(not backends.on_postgres(), reason="PostgreSQL half: set QUIPU_TEST_DB=postgresql://...")
def test_ingest_benchmark_on_postgres_prints_pg_rows_and_checks_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = backends.server_url()
    assert url is not None
    argv = ["--triples", "3000", "--episodes", "20", "--repeat", "1", "--data-dir", str(tmp_path)]
    status = ingest.main([*argv, "--no-ox-disk", "--engines", "pyoxigraph,quipu", "--db", url])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]  # a PG count unlike pyoxigraph's is a FAILED line
    out = captured.out
    assert "× SQLite" in next(line for line in out.splitlines() if line.startswith("| engine "))
    assert "quipu, PostgreSQL, one knot()" in out
    assert "correctness gate: quipu on PostgreSQL live statements = pyoxigraph count = " in out
    assert "quipu PostgreSQL, one knot() per episode" in out
    assert "PostgreSQL bulk load ≤ 2× SQLite's" in out
