"""Which build is serving: package version, source commit, dirty flag and optional capabilities.

``git_sha`` and ``git_dirty`` are stamped into ``quipu/_build_info.py`` when the package is
built (``hatch_build.py``), never computed by running git while serving. ``features`` names every
extra the installed distribution declares (``Provides-Extra``), true when each requirement the
extra adds here is installed at a version it accepts.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

import quipu

if TYPE_CHECKING:  # packaging costs ~0.1 s to import: only /version needs it, at its first call
    from packaging.requirements import Requirement

DISTRIBUTION = "quipu"


def build_stamp() -> tuple[str, bool]:
    try:
        info = importlib.import_module("quipu._build_info")
    except ImportError:
        return "unknown", False
    return str(getattr(info, "GIT_SHA", "unknown")), bool(getattr(info, "GIT_DIRTY", False))


def _extra_requirements(dist: metadata.Distribution, extra: str) -> list[Requirement] | None:
    """What ``extra`` adds in this environment (None when the metadata does not parse)."""
    from packaging.requirements import InvalidRequirement, Requirement

    out: list[Requirement] = []
    for line in dist.requires or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            return None
        # In the extra, and not already a base requirement (or one for another platform).
        if (
            req.marker is not None
            and req.marker.evaluate({"extra": extra})
            and not req.marker.evaluate({"extra": ""})
        ):
            out.append(req)
    return out


def _satisfied(req: Requirement, seen: set[tuple[str, str]]) -> bool:
    try:
        dist = metadata.distribution(req.name)
    except metadata.PackageNotFoundError:
        return False
    if not req.specifier.contains(dist.version, prereleases=True):
        return False
    return all(_extra_installed(dist, extra, seen) for extra in req.extras)


def _extra_installed(dist: metadata.Distribution, extra: str, seen: set[tuple[str, str]]) -> bool:
    from packaging.utils import canonicalize_name

    key = (canonicalize_name(dist.metadata["Name"] or ""), canonicalize_name(extra))
    if key in seen:  # an extra that (indirectly) needs itself
        return True
    seen.add(key)
    reqs = _extra_requirements(dist, extra)
    return reqs is not None and all(_satisfied(r, seen) for r in reqs)


def features(dist: metadata.Distribution) -> dict[str, bool]:
    """Every extra ``dist`` declares, and whether this installation has what it needs."""
    extras = dist.metadata.get_all("Provides-Extra") or []
    return {extra: _extra_installed(dist, extra, set()) for extra in sorted(set(extras))}


@cache
def installed_features() -> dict[str, bool]:
    """``features`` of the installed quipu (the installation does not change while serving)."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return {}
    return features(dist)


def version_info() -> dict[str, Any]:
    sha, dirty = build_stamp()
    return {
        "version": quipu.__version__,
        "git_sha": sha,
        "git_dirty": dirty,
        "features": dict(installed_features()),
    }
