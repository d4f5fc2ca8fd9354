"""The REST benchmark runs end to end on a tiny data set (so it cannot rot unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import rest

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent


def test_rest_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--triples",
        "300",
        "--lookups",
        "20",
        "--knots",
        "10",
        "--clients",
        "3",
        "--per-client",
        "5",
        "--warmup",
        "2",
        "--data-dir",
        str(tmp_path),
    ]
    status = rest.main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]  # a non-200 answer or a wrong count is a FAILED line
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    for label in (
        "in process, kb.query_result",
        "HTTP GET /health, 1 keep-alive client",
        "HTTP POST /query, 1 keep-alive client",
        "in process, kb.knot",
        "HTTP POST /knot, 1 keep-alive client",
        "HTTP, 3 clients × 5, lookups only",
        "HTTP, 3 clients × 5, mixed, 1 /knot in 5",
    ):
        assert any(label in row for row in rows), f"no table row for {label!r}"
    assert any(row.startswith("| point lookup over HTTP median < 2 ms ") for row in rows)
    assert rows[-1].rstrip(" |").endswith(("met", "missed"))
    assert "Checks: every response was 200" in captured.out
