"""The logic-over-the-graph benchmark runs end to end in a tiny configuration (so it cannot rot
unnoticed): a real store, the real engine and SWI-Prolog's rdf_db as the peer. No timing is
asserted; the answers must agree with the peer's (the run exits 1 otherwise)."""

from __future__ import annotations

import shutil

import pytest

from bench import logic_graph

pytestmark = [
    pytest.mark.skipif(shutil.which("swipl") is None, reason="SWI-Prolog (swipl) is not installed"),
    pytest.mark.backend_independent,
]


def test_logic_graph_benchmark_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    status = logic_graph.main(["--services", "300", "--runs", "1"])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    assert "1,200 triples (300 services)" in captured.out.splitlines()[0]
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    cells = {
        row.split("|")[1].strip(): [c.strip() for c in row.strip().strip("|").split("|")] for row in rows
    }
    assert cells["scan"][2] == "300"
    assert cells["join 2"][2] == cells["join 3"][2] == "100"  # every third service's run failed
    assert int(cells["join 2"][3]) < 100  # fact statements: per call pattern, not per solution
