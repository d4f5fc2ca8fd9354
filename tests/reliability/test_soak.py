"""``just bench soak`` in miniature: a real ``quipu-server`` under writers, readers and heavy
queries, stopped cleanly, then killed with SIGKILL and restarted (issue 15's acceptance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import run
from quipu.store.wal import MIB


@pytest.mark.backend_independent  # a SQLite file of its own, served by a child process
def test_a_short_soak_then_a_kill_loses_no_acknowledged_write_and_leaves_no_log(tmp_path: Path) -> None:
    result = run(
        seconds=3,
        writers=4,
        readers=1,
        heavy=1,
        seeds=300,
        kill_after=2,
        workdir=tmp_path,
        server_env={"QUIPU_SEARCH__QUERY_TIMEOUT_MS": "1500"},
    )
    assert result.server_errors == 0
    assert result.writes_per_s > 0
    assert result.kill_acknowledged > 0
    assert result.kill_lost == 0
    assert result.wal_after_shutdown < 4 * MIB
    assert result.wal_after_restart < 4 * MIB
    assert all(status < 500 for status in result.heavy_statuses)
