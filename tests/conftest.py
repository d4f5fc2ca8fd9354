"""Shared fixtures: every test gets its own real store: a SQLite file under ``tmp_path``, or a
PostgreSQL database of its own when ``QUIPU_TEST_DB`` names a server (tests/backends.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.config import Settings
from tests import backends


def pytest_report_header(config: pytest.Config) -> str:
    url = backends.server_url()
    return f"quipu store backend: {'PostgreSQL ' + url if url else 'SQLite files'}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not backends.on_postgres():
        return
    skips = {
        "sqlite_only": pytest.mark.skip(
            reason="checks the SQLite file itself (QUIPU_TEST_DB selects PostgreSQL)"
        ),
        # On PostgreSQL these parts of a query are answered by rdflib's evaluator instead.
        "sparql_functions": pytest.mark.skip(
            reason="property paths and per-row rdflib functions compile on SQLite only"
        ),
    }
    for item in items:
        for marker, skip in skips.items():
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield
    if backends.on_postgres():
        tmp = getattr(item, "funcargs", {}).get("tmp_path")
        if isinstance(tmp, Path):
            backends.drop_under(tmp)


def pytest_sessionfinish(session: pytest.Session) -> None:
    backends.remove_sqlite_template()
    if backends.on_postgres():
        backends.drop_under(None)
        backends.drop_template()


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
    """A fresh store (a real SQLite file, or a database of its own), closed after the test."""
    store = quipu.open(backends.migrated_location(tmp_path))
    try:
        yield store
    finally:
        store.close()
