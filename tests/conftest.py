"""Shared fixtures: every test gets its own real SQLite file under ``tmp_path``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import quipu
from quipu.api import KnowledgeBase


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """A fresh store in a real SQLite file, closed after the test."""
    store = quipu.open(str(tmp_path / "kb.db"))
    try:
        yield store
    finally:
        store.close()
