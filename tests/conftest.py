"""Shared fixtures: every test gets its own real store: a SQLite file under ``tmp_path``, or a
PostgreSQL database of its own when ``QUIPU_TEST_DB`` names a server (tests/backends.py).

A test marked ``backend_independent`` never asks tests/backends for the backend or a store (it
parses arguments, checks headers, or uses stores of its own on SQLite files): the PostgreSQL half
skips it, and the SQLite half fails it if it asks after all, or is skipped. A mark on a test that
shares a module fixture with store-using tests is caught only when it runs first: check new marks
with ``pytest -m backend_independent``.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.config import Settings
from tests import backends

# The cyclic garbage collector, tuned for a test process. Its full collections walk every object
# alive, and a test worker holds hundreds of thousands (modules, apps, hypothesis): with the
# default thresholds they took a third of a worker's CPU time (measured on tests/graphs and
# tests/sharing). A larger young generation lets most cycles die young, and the objects loaded
# by collection are frozen: they live as long as the run and need no walking.
GC_THRESHOLDS: Final = (50_000, 20, 10)


def pytest_configure(config: pytest.Config) -> None:
    gc.set_threshold(*GC_THRESHOLDS)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


def pytest_report_header(config: pytest.Config) -> str:
    url = backends.server_url()
    return f"quipu store backend: {'PostgreSQL ' + url if url else 'SQLite files'}"


INDEPENDENT = "backend_independent"
_ASKED_BEFORE = pytest.StashKey[int]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not backends.postgres_half():
        return
    skips = {
        # Its SQLite run covers it: it never reaches a test store (checked there, below).
        INDEPENDENT: pytest.mark.skip(reason="never reaches the backend under test: the SQLite half runs it"),
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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_ASKED_BEFORE] = backends.asked()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """On SQLite, a test marked backend_independent must run and never ask for the backend or a
    store location: otherwise the PostgreSQL half, which skips it, would lose coverage."""
    outcome = yield
    if backends.postgres_half() or item.get_closest_marker(INDEPENDENT) is None:
        return
    report = outcome.get_result()
    if call.when == "setup" and report.skipped:
        report.outcome, report.longrepr = (
            "failed",
            f"{item.nodeid} is {INDEPENDENT} yet skipped here: it runs nowhere",
        )
    elif call.when == "teardown" and backends.asked() != item.stash.get(_ASKED_BEFORE, backends.asked()):
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} is marked {INDEPENDENT} but asked tests/backends for the backend or a "
            "store location: remove the mark, or the PostgreSQL half loses this test"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield
    if backends.postgres_half():
        tmp = getattr(item, "funcargs", {}).get("tmp_path")
        if isinstance(tmp, Path):
            backends.drop_under(tmp)


def pytest_sessionfinish(session: pytest.Session) -> None:
    backends.remove_sqlite_template()
    if backends.postgres_half():
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
