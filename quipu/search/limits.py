"""Result counts of the search tools (tools-search §0.6): the default, the clamp, the oversample."""

from __future__ import annotations

from quipu.config import SearchSettings


def clamp_limit(settings: SearchSettings, requested: int | None) -> int:
    """A caller's limit: ``default_limit`` when absent, else within 1..``max_limit``."""
    if requested is None:
        return min(settings.default_limit, settings.max_limit)
    return max(1, min(int(requested), settings.max_limit))


def oversample(settings: SearchSettings, limit: int) -> int:
    """How many candidates to fetch for ``limit`` results that are filtered afterwards."""
    return max(limit, limit * settings.oversample_factor)
