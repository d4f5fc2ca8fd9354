"""A real headless Chromium for the explorer's tests, driven by Playwright's Python package.

The browser is the machine's own (Debian's ``chromium``, which ``scripts/ensure-chromium.sh``
installs for the test command while the suite runs, or ``QUIPU_CHROMIUM``): Playwright never
downloads one. Without it the browser tests are skipped with a message, and fail under
``CI=true``, the rule the PostgreSQL half follows.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

MISSING = (
    "no Chromium for the explorer's browser tests: install Debian's chromium "
    "(scripts/ensure-chromium.sh does) or set QUIPU_CHROMIUM"
)


def chromium_path() -> str | None:
    given = os.environ.get("QUIPU_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _wait_for_the_install() -> None:
    """The test command installs Chromium beside the running suite and names a file that appears
    when it is done (``QUIPU_CHROMIUM_WAIT``, scripts/test.sh): wait for it, at most ten minutes."""
    marker = os.environ.get("QUIPU_CHROMIUM_WAIT")
    if not marker:
        return
    deadline = time.monotonic() + 600
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.5)


def require_chromium() -> str:
    _wait_for_the_install()
    path = chromium_path()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{MISSING}; under CI=true that is a failure")
        pytest.skip(MISSING)
    return path


@contextmanager
def chromium() -> Iterator[Browser]:
    """One headless browser; each test opens its own page (a fresh context: no shared memory)."""
    from playwright.sync_api import sync_playwright

    executable = require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield browser
        finally:
            browser.close()
