"""A real SWI-Prolog engine for the logic tests (no mocks). Skipped only when swipl is missing;
scripts/ensure-swipl.sh installs it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from quipu.logic.engine import Engine


@pytest.fixture
def engine() -> Iterator[Engine]:
    if shutil.which("swipl") is None:
        pytest.skip("swipl is not installed (run scripts/ensure-swipl.sh)")
    with Engine(query_timeout=1.0, grace=1.0) as eng:
        eng.ensure_memory("default")
        yield eng
