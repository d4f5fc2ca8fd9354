"""Which build is serving: package version, source commit and whether the tree was dirty.

``git_sha`` and ``git_dirty`` are stamped into ``quipu/_build_info.py`` when the package is
built (``hatch_build.py``), never computed by running git while serving.
"""

from __future__ import annotations

import importlib
from typing import Any

import quipu


def build_stamp() -> tuple[str, bool]:
    try:
        info = importlib.import_module("quipu._build_info")
    except ImportError:
        return "unknown", False
    return str(getattr(info, "GIT_SHA", "unknown")), bool(getattr(info, "GIT_DIRTY", False))


def version_info() -> dict[str, Any]:
    sha, dirty = build_stamp()
    return {"version": quipu.__version__, "git_sha": sha, "git_dirty": dirty, "features": {}}
