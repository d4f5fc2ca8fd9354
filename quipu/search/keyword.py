"""Keyword mode of ``quipu_search`` (tools-search §4.4, §5.1.4): bm25 over the keyword index.

Caller text is never passed on as index syntax: it is split on whitespace outside double quotes,
every part becomes one quoted phrase, and all of them must occur in the same fact document (one
label, one comment, one attribute value). Results keep the best document of each entity.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any, Final

from sqlalchemy import Connection

from quipu.errors import InvalidField, QueryTimeout
from quipu.search import snippets
from quipu.search.graph_scope import GraphScope
from quipu.store import graph_members, keyword_index
from quipu.store.database import Database
from quipu.store.schema import ROOT
from quipu.store.views import TemporalView

MAX_QUERY_BYTES: Final = 16_384
NOT_READY: Final = (
    "keyword index is not ready; run bounded lexical backfill batches (quipu search-index backfill)"
)
DISABLED: Final = "keyword search is disabled ([quipu.search] keyword = false)"


def phrases(query: str) -> list[str]:
    """The phrases of a keyword query: bare words and double-quoted spans."""
    if len(query.encode("utf-8")) > MAX_QUERY_BYTES:
        raise InvalidField(f"keyword query is longer than {MAX_QUERY_BYTES} bytes", field="query")
    if query.count('"') % 2:
        raise InvalidField("unclosed keyword phrase: a double quote has no partner", field="query")
    out: list[str] = []
    for i, chunk in enumerate(query.split('"')):
        if i % 2:  # inside quotes: one phrase
            if chunk.strip():
                out.append(chunk.strip())
        else:
            out.extend(chunk.split())
    if not out:
        raise InvalidField("keyword query is empty", field="query")
    return out


def search(
    db: Database,
    scope: GraphScope,
    query: str,
    *,
    limit: int,
    valid_at: str | None,
    allowed: Callable[[int], bool],
    explain: bool,
    timeout_ms: int | None,
) -> list[dict[str, Any]]:
    """The best document of each of up to ``limit`` entities; ``allowed`` filters entity ids."""
    parts = phrases(query)
    view = TemporalView.at(valid_at=valid_at, graphs=scope.ids)
    deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms else None
    late = QueryTimeout(f"query timeout: keyword search ran past {timeout_ms} ms")
    rows: list[dict[str, Any]] = []
    seen: set[int] = set()
    with db.read() as conn:
        if not keyword_index.ready(conn):
            raise InvalidField(NOT_READY, field="mode")
        guard = db.dialect.deadline(conn, deadline, late) if deadline is not None else nullcontext()
        with guard:
            for match in keyword_index.matches(conn, parts, view):
                if deadline is not None and time.monotonic() > deadline:
                    raise late
                if match.entity_id in seen or not allowed(match.entity_id):
                    continue
                seen.add(match.entity_id)
                rows.append(_row(match, scope, query, explain))
                if len(rows) >= limit:
                    break
        if scope.explicit and rows:
            _add_graphs(db, conn, rows, scope, valid_at)
    return rows


def _row(match: keyword_index.Match, scope: GraphScope, query: str, explain: bool) -> dict[str, Any]:
    text = next((value for value in match.fields.values() if value), "")
    row: dict[str, Any] = {
        "entity": match.entity_iri,
        "entity_id": match.entity_id,
        "text": text,
        "score": -match.bm25,
        "bm25": match.bm25,
        "ranking_reason": "keyword",
        "source": "knowledge",
        "valid_from": match.valid_from,
        "valid_to": match.valid_to,
        "language": match.language,
        "datatype": match.datatype,
        "type_iri": match.type_iri,
        "plane": "ROOT" if match.graph_id == ROOT else "named",
    }
    if explain:
        fields = snippets.matched_fields(match.fields, query)
        row["matched_fields"] = fields
        best = match.fields[fields[0]] if fields else text
        row["snippet"] = snippets.snippet(best, query)
    if scope.explicit:
        row["graph"] = scope.iris[match.graph_id]
    return row


def _add_graphs(
    db: Database, conn: Connection, rows: list[dict[str, Any]], scope: GraphScope, valid_at: str | None
) -> None:
    view = TemporalView.at(valid_at=valid_at, graphs=scope.ids)
    member_of = graph_members.graphs_of(conn, view, [r["entity_id"] for r in rows])
    for row in rows:
        row["graphs"] = [scope.iris[g] for g in member_of.get(row["entity_id"], [])]


def check_refusals(body: Mapping[str, Any], *, ranking: str) -> None:
    """Keyword mode refuses what it cannot honour rather than ignoring it (§5.1.12 rule 3)."""
    if body.get("embedding") is not None or body.get("anchor") is not None or ranking != "semantic":
        raise InvalidField("keyword mode does not accept embedding, anchor, or content ranking", field="mode")
