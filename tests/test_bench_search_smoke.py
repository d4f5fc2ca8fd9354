"""The search benchmark runs end to end in a tiny configuration (so it cannot rot unnoticed).

It ranks real vectors in a real store against the numpy floor (exit 1 if they disagree), runs
keyword and hybrid search over a real keyword index beside a bare FTS5 table, and backfills with
the real model; no timing is asserted."""

from __future__ import annotations

import pytest

from bench import search

pytestmark = pytest.mark.backend_independent


def test_search_benchmark_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    status = search.main(["--entities", "3000", "--backfill", "40", "--queries", "5"])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    assert any(row.startswith("| semantic top-10, 3,000 vectors") for row in rows)
    assert any(row.startswith("| keyword top-10, 3,000 entities") for row in rows)
    assert any(row.startswith("| hybrid top-10, 3,000 entities") for row in rows)
    assert any(row.startswith("| backfill, 40 entities of") for row in rows)
    assert all(row.rstrip(" |").endswith(("HIT", "MISS", "target", "-")) for row in rows)
