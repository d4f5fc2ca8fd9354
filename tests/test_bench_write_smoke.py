"""The write benchmark runs end to end on a tiny data set (so it cannot rot unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import write

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent


def test_write_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--triples", "300", "--episodes", "20", "--gated", "8", "--warmup", "1"]
    status = write.main([*argv, "--data-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]  # a write that wrote nothing, or a gate that let bad data in
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    for label, path in (
        ("episode, no shapes", "kb.episode(), one transaction each"),
        ("episode, SHACL gate", "kb.episode(shapes=…), one transaction each"),
        ("episode, SHACL gate", "stored shapes + shacl.validate_on_write, kb.episode()"),
        ("same statements, no shapes", "kb.knot() of the episode's statements"),
        ("Rust Quipu (documented)", "the original implementation"),
    ):
        assert any(row.startswith(f"| {label} ") and path in row for row in rows), (
            f"no row {label!r}, {path!r}"
        )
    rust = next(row for row in rows if row.startswith("| Rust Quipu"))
    assert "315-390" in rust
    rate = next(row for row in rows if row.startswith("| ≥ 2,000 episodes/s without shapes "))
    assert rate.rstrip(" |").endswith(("PASS", "MISS"))
    gated = next(row for row in rows if row.startswith("| median SHACL-gated episode write ≤ 5 ms at 1M "))
    assert "the target is at 1M" in gated  # a 300-triple run must not claim the 1M target
    assert gated.rstrip(" |").endswith(("PASS", "MISS"))
    assert "the gate refused the invalid episode" in captured.out
