"""The graph-analytics benchmark runs end to end in a tiny configuration (so it cannot rot
unnoticed): a generated store, quipu's projection, PageRank and Louvain, igraph and networkx
PageRank beside them, and the agreement check (exit 1 if the PageRanks disagree). No timing is
asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import graph

pytestmark = pytest.mark.backend_independent


def test_graph_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = graph.main(["--edges", "3000", "--data-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    stages = [row.split("|")[1].strip() for row in rows[1:]]
    assert stages[:5] == [
        "projection",
        "PageRank",
        "PageRank, tolerance 1e-10",
        "Louvain (single level)",
        "projection + PageRank + Louvain",
    ]
    pagerank_row = rows[2]
    assert "igraph" in pagerank_row and "networkx" in pagerank_row and "× igraph" in pagerank_row
    assert any(row.startswith("| peak memory") for row in rows)
    targets = [row.rstrip(" |").rsplit("|", 1)[1].strip() for row in rows[2:]]
    assert all(t == "-" or t.startswith(("HIT (", "MISS (")) for t in targets), targets
