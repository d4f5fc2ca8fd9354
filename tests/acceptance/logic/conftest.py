"""Shared fixture of the logic acceptance suite: a fresh ``zpm init`` project folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from quipu.logic import project as zpm_project
from tests.acceptance.logic.harness import ZPM


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert ZPM.is_file(), f"{ZPM} is missing: run `uv sync` to install the zpm console script"
    root = tmp_path / "proj"
    root.mkdir()
    assert zpm_project.init(root)
    return root
