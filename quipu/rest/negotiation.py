"""Choosing a response format from an ``Accept`` header.

Only media types the client names explicitly count: a bare ``*/*`` (what most tools send) says
nothing, so the route's default answers. Among the named types the highest ``q`` wins, and the
client's order breaks ties.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


def accepted(header: str | None) -> list[tuple[str, float]]:
    """``(media type, q)`` of each range in the header, in the client's order (q=0 dropped)."""
    out: list[tuple[str, float]] = []
    for part in (header or "").split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        q = 1.0
        for param in params:
            key, _, val = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(val)
                except ValueError:
                    q = 0.0
        if q > 0:
            out.append((media.lower(), q))
    return out


def preferred(header: str | None, offers: Mapping[str, T], default: T) -> T:
    """The offer for the best explicitly accepted media type, else ``default``."""
    best: tuple[float, T] | None = None
    for media, q in accepted(header):
        if media in offers and (best is None or q > best[0]):
            best = (q, offers[media])
    return default if best is None else best[1]
