"""``quipu_reconcile`` (tools-search §5.10): the W3C / OpenRefine reconciliation service.

Without ``queries`` the answer is the service manifest (version 0.1 of the W3C Reconciliation
Service API, whose required keys are the three this manifest has; tests validate it against the
published schema). With ``queries``, each keyed query is scored against the labeled ROOT rows of
``labels.labeled_rows``, read afresh: 100 when the lower-cased query equals the lower-cased label
or IRI local name, otherwise, when one of them contains it, ``min(80 * len(query) /
max(len(label), len(local name)), 95)`` over UTF-8 byte lengths. Scores stay on this 0-100 scale
(spec errata), unlike ``/resolve``'s 0-1. Nothing is merged, written or embedded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from quipu.errors import InvalidField, WrongType
from quipu.search import labels
from quipu.store.database import Database

MANIFEST: Final[dict[str, Any]] = {
    "name": "Quipu Knowledge Graph",
    "identifierSpace": "https://quipu.dev/entity/",
    "schemaSpace": "https://quipu.dev/ontology/",
    "view": {"url": "/entity/{{id}}"},
    "preview": {"url": "/preview/{{id}}", "width": 400, "height": 300},
    "defaultTypes": [],
}
DEFAULT_LIMIT: Final = 5
EXACT: Final = 100.0
PARTIAL_CEILING: Final = 95.0


def manifest() -> dict[str, Any]:
    return copy.deepcopy(MANIFEST)


def _query(key: str, raw: Any) -> tuple[str, int, list[str] | None]:
    """One keyed query's text, limit and type filters, or a 400 naming the bad field."""
    where = f"queries.{key}"
    if not isinstance(raw, dict):
        raise WrongType(f"'{where}' must be an object (a query: query, limit, type)", field=where)
    text = raw.get("query", "")
    if not isinstance(text, str):
        raise WrongType(f"'{where}.query' must be a string", field=f"{where}.query")
    limit = raw.get("limit", DEFAULT_LIMIT)
    # The W3C protocol types limit as a number: an integral one such as 3.0 is taken [designed here].
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise WrongType(f"'{where}.limit' must be an integer", field=f"{where}.limit")
    if limit < 0:
        raise InvalidField(f"'{where}.limit' must be >= 0, got {limit}", field=f"{where}.limit")
    kind = raw.get("type")
    # A list of types (allowed by the W3C protocol) keeps a row matching any one [designed here].
    if kind is None:
        types = None
    elif isinstance(kind, str):
        types = [kind]
    elif isinstance(kind, list) and all(isinstance(t, str) for t in kind):
        types = list(kind)
    else:
        raise WrongType(f"'{where}.type' must be a string or a list of strings", field=f"{where}.type")
    return text, limit, types


def score(query: str, label: str, local: str) -> float | None:
    """The score of one row for a lower-cased query (None: the row does not match)."""
    if label == query or local == query:
        return EXACT
    if query in label or query in local:
        longest = max(len(label.encode("utf-8")), len(local.encode("utf-8")))
        return min(80.0 * len(query.encode("utf-8")) / longest, PARTIAL_CEILING)
    return None


def reconcile(db: Database, queries: Mapping[str, Any]) -> dict[str, Any]:
    parsed = {key: _query(key, raw) for key, raw in queries.items()}
    with db.read() as conn:
        rows = labels.labeled_rows(db, conn)
    prepared = [(row, row.label.lower(), labels.local_name(row.iri).lower()) for row in rows]
    out: dict[str, Any] = {}
    for key, (text, limit, types) in parsed.items():
        wanted = text.lower()
        scored: list[tuple[float, labels.LabeledRow]] = []
        for row, label, local in prepared:
            if types is not None and not any(t in row.type for t in types):
                continue
            found = score(wanted, label, local)
            if found is not None:
                scored.append((found, row))
        scored.sort(key=lambda pair: -pair[0])  # stable: store order among equal scores
        out[key] = {"result": [_candidate(s, row) for s, row in scored[:limit]]}
    return out


def _candidate(s: float, row: labels.LabeledRow) -> dict[str, Any]:
    kind = {"id": row.type, "name": labels.local_name(row.type) if row.type else ""}
    return {"id": row.iri, "name": row.label, "type": [kind], "score": s, "match": s >= EXACT}
