"""The sharing benchmark runs end to end in a tiny configuration (so it cannot rot unnoticed):
its export must equal pyoxigraph's canonical form and the promoted ROOT must hash to the share's
graph_hash, or it exits 1. No timing is asserted."""

from __future__ import annotations

import pytest

from bench import share

pytestmark = pytest.mark.backend_independent


def test_share_benchmark_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    status = share.main(["--entities", "200"])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-3000:]
    rows = [line for line in captured.out.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in rows] == ["step", "share", "import", "promote", "re-import"]
    assert "export.nt equals pyoxigraph's canonical form: True" in captured.out
