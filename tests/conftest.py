"""Shared fixtures: every test gets its own real SQLite file under ``tmp_path``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.config import Settings


@pytest.fixture(autouse=True, scope="session")
def _no_ambient_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The developer's own config never reaches a test: an empty user config directory and no
    ``QUIPU_*`` settings variables, for the whole session (module fixtures and subprocesses too)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
        for name in list(os.environ):
            key = name.lower().removeprefix("quipu_")
            if name.upper() == "QUIPU_CONFIG" or (
                key != name.lower() and key.split("__")[0] in Settings.model_fields
            ):
                patch.delenv(name)
        yield


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """A fresh store in a real SQLite file, closed after the test."""
    store = quipu.open(str(tmp_path / "kb.db"))
    try:
        yield store
    finally:
        store.close()
