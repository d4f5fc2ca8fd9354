"""The MCP benchmark runs end to end on a tiny data set (so it cannot rot unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import mcp

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent


def test_mcp_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--triples", "300", "--calls", "20", "--warmup", "2", "--data-dir", str(tmp_path)]
    status = mcp.main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]  # a failed call or a wrong count is a FAILED line
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    for way in (
        "floor",
        "REST in process",
        "MCP dispatch in process",
        "MCP SDK in memory",
        "REST on loopback",
        "MCP over stdio",
        "MCP over HTTP",
    ):
        row = next((r for r in rows if r.startswith(f"| {way} ")), None)
        assert row is not None, f"no table row for {way!r}"
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == "20"  # every timed call was made
        assert cells[-1].endswith("×")  # the ratio to REST in process
    target = [r for r in rows if "an MCP stdio call adds under 1 ms to the in-process REST call" in r]
    assert len(target) == 1
    assert target[0].rstrip(" |").endswith(("met", "missed"))
    assert "Checks: every call succeeded" in captured.out
