"""On PostgreSQL, freeze and thaw are refused with a 400 that names the limit: archive packs are
SQLite files attached to the store's reads (docs/postgresql.md). Runs on the PostgreSQL half."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import backends
from tests.rest.support import serve

from .support import G1, T1, ok


def test_postgresql_refuses_freeze_and_thaw(tmp_path: Path) -> None:
    if not backends.postgres_half():
        pytest.skip("the SQLite half freezes for real (test_freeze.py)")
    with serve(tmp_path) as c:
        ok(c, "/graph/create", graph=G1)
        for route in ("/graph/freeze", "/graph/thaw"):
            response = c.post(route, json={"graph": G1, "timestamp": T1})
            assert response.status_code == 400, response.text
            body = response.json()
            assert body["reason"] == "unsupported_backend" and "PostgreSQL" in body["error"]
        assert c.get("/graphs").json()["graphs"][1]["lifecycle"] is None
