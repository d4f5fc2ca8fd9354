"""The ingest benchmark runs end to end on a tiny data set (so it cannot rot unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import ingest


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
