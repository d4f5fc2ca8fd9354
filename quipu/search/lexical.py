"""Graphiti-compatible substring search: ``quipu_search_nodes`` and ``quipu_search_facts``
(tools-search §5.3, §5.4).

Both scan ROOT's current statements in store order (ascending subject term id, then predicate,
then fact row) and match the lower-cased query as a plain substring. Following the spec's
recommendation they scan every candidate, bounded by the query deadline rather than by an
oversampled window, and match every literal kind; nodes are described from all their facts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import groupby
from operator import attrgetter
from typing import Any, Final

from sqlalchemy import Connection

from quipu.config import SearchSettings
from quipu.errors import InvalidField
from quipu.search import compaction, limits, scopes
from quipu.search.entity_text import lexical
from quipu.store import search_reads
from quipu.store.budget import Budget, enforce
from quipu.store.database import Database
from quipu.store.search_reads import FactRow
from quipu.store.views import TemporalView

CURRENT: Final = TemporalView()
_CHECK_EVERY: Final = 1024  # rows between two deadline checks
LABEL_SUFFIXES: Final = ("#label", "/label")
TYPE_SUFFIXES: Final = ("#type", "/type")
COMMENT_SUFFIXES: Final = ("#comment", "/comment")


def needle(query: str) -> str:
    """The lower-cased substring to look for; an empty query is refused (it would match everything)."""
    if not query.strip():
        raise InvalidField("'query' must not be empty", field="query")
    return query.lower()


def rendering(row: FactRow) -> str | None:
    """A statement's object as matched: a reference's IRI, else the literal's lexical form
    (plain, tagged, typed, numbers, booleans); None for a binary value."""
    return row.target if row.target is not None else lexical(row.v)


def watched(rows: Iterator[FactRow], budget: Budget) -> Iterator[FactRow]:
    """``rows``, checking the query deadline as they are read (408 past it)."""
    for n, row in enumerate(rows):
        if n % _CHECK_EVERY == 0:
            budget.check_deadline()
        yield row


def _iri_writer(db: Database, conn: Connection, verbose: bool) -> Callable[[str], str]:
    return compaction.identity() if verbose else compaction.compactor(db, conn)


# -- quipu_search_nodes ----------------------------------------------------------------------------


def search_nodes(
    db: Database,
    settings: SearchSettings,
    query: str,
    *,
    group_ids: list[object] | None = None,
    max_results: int | None = None,
    entity_type_filter: str | None = None,
    verbose: bool = False,
) -> dict[str, Any]:
    """Entities whose IRI or any current ROOT value contains ``query`` (case-insensitive), in store
    order, each ``{iri, label, types, summary, score: 1.0}``; at most ``max_results``."""
    wanted = needle(query)
    limit = limits.clamp_limit(settings, max_results)
    nodes: list[dict[str, Any]] = []
    with (
        db.read(long=True) as conn,
        enforce(db, conn, timeout_ms=settings.query_timeout_ms, max_join_rows=None) as budget,
    ):
        typed = (
            scopes.typed_members(db, conn, entity_type_filter, None, infer=False)
            if entity_type_filter  # an empty string is no filter
            else None
        )
        scope = scopes.intersect(scopes.group_members(db, conn, group_ids, None), typed)
        iri = _iri_writer(db, conn, verbose)
        if scope is not None and not scope:
            return {"nodes": [], "count": 0}
        rows = search_reads.scan(conn, CURRENT, scope)
        try:
            for _entity, group in groupby(watched(rows, budget), key=attrgetter("e")):
                claims = list(group)
                if _node_matches(claims, wanted):
                    nodes.append(_node(claims, iri))
                    if len(nodes) >= limit:
                        break
        finally:
            rows.close()
    return {"nodes": nodes, "count": len(nodes)}


def _node_matches(claims: list[FactRow], wanted: str) -> bool:
    if wanted in claims[0].subject.lower():
        return True
    for row in claims:
        text = rendering(row)
        if text is not None and wanted in text.lower():
            return True
    return False


def _node(claims: list[FactRow], iri: Callable[[str], str]) -> dict[str, Any]:
    """A node from all of an entity's facts: the last label and comment read win."""
    label: str | None = None
    summary: str | None = None
    types: list[str] = []
    for row in claims:
        shown = _shown(row, iri)
        if shown is None:
            continue
        if row.predicate.endswith(LABEL_SUFFIXES):
            label = shown
        elif row.predicate.endswith(TYPE_SUFFIXES):
            if shown not in types:
                types.append(shown)
        elif row.predicate.endswith(COMMENT_SUFFIXES):
            summary = shown
    return {"iri": iri(claims[0].subject), "label": label, "types": types, "summary": summary, "score": 1.0}


def _shown(row: FactRow, iri: Callable[[str], str]) -> str | None:
    return iri(row.target) if row.target is not None else lexical(row.v)


# -- quipu_search_facts ----------------------------------------------------------------------------


def search_facts(
    db: Database,
    settings: SearchSettings,
    query: str,
    *,
    group_ids: list[object] | None = None,
    max_results: int | None = None,
    verbose: bool = False,
) -> dict[str, Any]:
    """Current ROOT facts whose predicate IRI or object contains ``query`` (case-insensitive), in
    store order, each ``{source, predicate, target, provenance}``; at most ``max_results``."""
    wanted = needle(query)
    limit = limits.clamp_limit(settings, max_results)
    kept: list[FactRow] = []
    with (
        db.read(long=True) as conn,
        enforce(db, conn, timeout_ms=settings.query_timeout_ms, max_join_rows=None) as budget,
    ):
        scope = scopes.group_members(db, conn, group_ids, None)
        iri = _iri_writer(db, conn, verbose)
        if scope is not None and not scope:
            return {"facts": [], "count": 0}
        rows = search_reads.scan(conn, CURRENT, scope)
        try:
            for row in watched(rows, budget):
                text = rendering(row)
                if wanted in row.predicate.lower() or (text is not None and wanted in text.lower()):
                    kept.append(row)
                    if len(kept) >= limit:
                        break
        finally:
            rows.close()
        episodes = _episodes(db, conn, {row.e for row in kept})
    facts = [
        {
            "source": iri(row.subject),
            "predicate": iri(row.predicate),
            "target": iri(row.target) if row.target is not None else _literal(row.v),
            "provenance": {"episode": iri(episodes[row.e])} if row.e in episodes else None,
        }
        for row in kept
    ]
    return {"facts": facts, "count": len(facts)}


def _episodes(db: Database, conn: Connection, subjects: set[int]) -> dict[int, str]:
    """The episode of each subject: the object of its first ``prov:wasGeneratedBy`` (none for
    subjects written through ``/knot``)."""
    generated_by = db.terms.lookup(conn, (scopes.PROV_WAS_GENERATED_BY,)).get(scopes.PROV_WAS_GENERATED_BY)
    if generated_by is None or not subjects:
        return {}
    firsts = search_reads.first_targets(conn, CURRENT, subjects, generated_by)
    names = db.terms.iris(conn, set(firsts.values()))
    return {subject: names[episode] for subject, episode in firsts.items()}


def _literal(v: bytes) -> str:
    text = lexical(v)
    return text if text is not None else f"<{len(v) - 1} bytes>"
