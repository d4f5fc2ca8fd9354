"""The logic memory benchmark runs end to end in a tiny configuration (so it cannot rot unnoticed).

It starts a real ``zpm serve`` and the SWI-Prolog engine; no timing is asserted."""

from __future__ import annotations

import shutil

import pytest

from bench import logic

pytestmark = [
    pytest.mark.skipif(shutil.which("swipl") is None, reason="SWI-Prolog (swipl) is not installed"),
    pytest.mark.backend_independent,
]


def test_logic_benchmark_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--facts", "2000", "--calls", "50", "--queries", "20", "--journal", "100"]
    status = logic.main([*argv, "--restarts", "1", "--warmup", "2", "--startup-runs", "1"])
    captured = capsys.readouterr()
    # 1: a wrong answer, a fact missing from the journal, a partial restart or a dead server.
    assert status == 0, captured.err[-3000:]
    assert "2,000 snapshot facts + 100 journal entries" in captured.out.splitlines()[0]
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    cells = [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]
    for operation, path, calls in (
        ("ping", "stdio, JSON-RPC only (the transport floor)", "20"),
        ("echo", "in process, LogicService.call (no engine)", "20"),
        ("echo", "stdio, zpm serve → LogicService.call", "20"),
        ("remember_fact", "in process, LogicService.call", "50"),
        ("remember_fact", "stdio, zpm serve", "50"),
        ("query_logic", "in process, LogicService.call", "20"),
        ("query_logic", "stdio, zpm serve", "20"),
    ):
        assert [operation, path, calls] in [row[:3] for row in cells], f"no row {operation!r}, {path!r}"
    for restart in ("in process: LogicRuntime.open", "stdio: zpm serve Popen → first tools/call answer"):
        assert any(row.startswith(f"| {restart} ") for row in rows), f"no restart row {restart!r}"
    for process in ("python -c 'import sys' (the floor)", "zpm serve", "quipu mcp"):
        assert any(row.startswith(f"| {process} ") for row in rows), f"no start-up row {process!r}"
    for target in (
        "query_logic over stdio median < 1 ms",
        "restart < 2 s (LogicRuntime.open)",
        "restart < 2 s (zpm serve to first answer)",
    ):
        row = next((row for row in rows if row.startswith(f"| {target} ")), None)
        assert row is not None, f"no target row {target!r}"
        assert row.rstrip(" |").endswith(("PASS", "MISS"))
    restart_targets = [row for row in rows if row.startswith("| restart < 2 s")]
    assert all("the target is at 100k + 10k" in row for row in restart_targets)  # a tiny run claims nothing
    assert "each restart loaded every snapshot fact and journal entry" in captured.out
