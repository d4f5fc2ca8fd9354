"""The reasoning benchmark runs end to end in a tiny configuration (so it cannot rot unnoticed):
quipu's closure must equal pyoxigraph's ``p+`` count, or it exits 1. No timing is asserted."""

from __future__ import annotations

import pytest

from bench import reason

pytestmark = pytest.mark.backend_independent


def test_reason_benchmark_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    status = reason.main(
        [
            "--edges",
            "300",
            "--chain",
            "40",
            "--reactive-facts",
            "2000",
            "--reactive-tree",
            "500",
            "--writes",
            "3",
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    assert any(row.startswith("| random tree, 300 edges ") for row in rows)
    chain = next(row for row in rows if row.startswith("| chain, 40 edges "))
    assert [cell.strip() for cell in chain.strip().strip("|").split("|")][1] == "820"  # 40 * 41 / 2
    assert any(row.startswith("| new leaf edge + maintenance (median) ") for row in rows)
