"""Change pages: the fact log served as a replication feed (tools-core §1.10, DM §11.3).

``changes_page`` checks a request and reads one page (``quipu.store.changes``). ``/changes``, its
SSE stream (``/changes/stream``) and ``quipu changes`` all call it. Reading never writes a cursor:
a consumer passes ``next_tx`` back as ``since``.
"""

from __future__ import annotations

from typing import Any, Final

from quipu.errors import InvalidField
from quipu.store import changes as store_changes
from quipu.store.changes import CAPTURES, MAX_PAGE_RECORDS, NEW_VALUES
from quipu.store.database import Database

DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 10_000
CAPTURE_ERROR: Final = "capture must be new_values, old_and_new_values, or new_row"

__all__ = ["CAPTURES", "DEFAULT_LIMIT", "MAX_LIMIT", "MAX_PAGE_RECORDS", "changes_page", "check_capture"]


def _integer(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidField(f"'{field}' must be an integer, got {value!r}", field=field)
    return value


def check_capture(capture: object) -> str:
    """The capture mode, refused (never defaulted) unless it is one of the three."""
    if not isinstance(capture, str) or capture not in CAPTURES:
        raise InvalidField(CAPTURE_ERROR, field="capture")
    return capture


def check_since(since: object) -> int:
    """A transaction cursor: an integer >= 0."""
    since = _integer(since, "since")
    if since < 0:
        raise InvalidField(f"'since' must be a transaction id >= 0, got {since}", field="since")
    return since


def changes_page(
    db: Database,
    *,
    since: int = 0,
    limit: int = DEFAULT_LIMIT,
    capture: str = NEW_VALUES,
    graph: str | None = None,
) -> dict[str, Any]:
    """One page of whole transactions after ``since``: ``{"records", "next_tx",
    "watermark_tx", "watermark_timestamp", "capture"}``.

    ``limit`` counts transactions, clamped to 1-10 000 (the REST route refuses one below 1, as
    every limit of the tools does); a page also stops before ``MAX_PAGE_RECORDS`` records, but
    always holds its first transaction whole. ``graph`` is one exact graph IRI
    (``urn:quipu:graph:root`` is ROOT); None reads every graph."""
    since = check_since(since)
    limit = max(1, min(_integer(limit, "limit"), MAX_LIMIT))
    capture = check_capture(capture)
    if graph is not None and not isinstance(graph, str):
        raise InvalidField(f"'graph' must be a graph IRI string, got {graph!r}", field="graph")
    return store_changes.read_page(db, since=since, limit=limit, capture=capture, graph=graph)
