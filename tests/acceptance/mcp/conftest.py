"""The default target: each test module gets one store per transport, shared by its tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.acceptance.mcp.harness import TRANSPORTS, Target, serve


@pytest.fixture(scope="module", params=TRANSPORTS)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with serve(request.param, tmp_path_factory.mktemp(request.param)) as served:
        yield served
