"""Choosing a response format from an ``Accept`` header.

Only media types the client names explicitly count: a bare ``*/*`` (what most tools send) says
nothing, so the route's default answers. Among the named types the highest ``q`` wins, and the
client's order breaks ties.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from quipu.sparql.results import media_ranges

T = TypeVar("T")


def preferred(header: str | None, offers: Mapping[str, T], default: T) -> T:
    """The offer for the best explicitly accepted media type, else ``default``."""
    best: tuple[float, T] | None = None
    for media, q in media_ranges(header):
        if media in offers and (best is None or q > best[0]):
            best = (q, offers[media])
    return default if best is None else best[1]
