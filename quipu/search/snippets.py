"""Highlighted snippets for ``explain`` (tools-search §6.7): the query's terms marked with
``<mark>`` in an HTML-escaped window of the row's text. Presentation, not contract: the window
bounds may change; escaping, marks around matched terms and the length bound may not."""

from __future__ import annotations

import html
import re
from typing import Final

WINDOW: Final = 240  # characters shown
LEAD: Final = 60  # characters kept before the first hit
_TOKEN: Final = re.compile(r"\w+", re.UNICODE)


def terms(query: str | None) -> set[str]:
    """The query's whitespace-separated parts, quotes removed, case-folded, as word tokens."""
    if not query:
        return set()
    return {t.casefold() for part in query.split() for t in _TOKEN.findall(part.strip('"'))}


def snippet(text: str, query: str | None) -> str:
    wanted = terms(query)
    tokens = [m for m in _TOKEN.finditer(text) if m.group().casefold() in wanted]
    start = max(0, tokens[0].start() - LEAD) if tokens else 0
    end = min(len(text), start + WINDOW)
    out = ["…"] if start > 0 else []
    at = start
    for m in tokens:
        if m.start() < start or m.end() > end:
            continue
        out += [html.escape(text[at : m.start()]), "<mark>", html.escape(m.group()), "</mark>"]
        at = m.end()
    out.append(html.escape(text[at:end]))
    if end < len(text):
        out.append("…")
    return "".join(out)


def matched_fields(fields: dict[str, str], query: str | None) -> list[str]:
    """The indexed columns holding at least one of the query's terms, in column order."""
    wanted = terms(query)
    return [
        name for name, value in fields.items()
        if value and wanted.intersection(t.casefold() for t in _TOKEN.findall(value))
    ]  # fmt: skip
