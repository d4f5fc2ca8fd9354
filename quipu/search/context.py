"""The knowledge-context pipeline: ``quipu_context`` and ``quipu_unified_search``
(tools-search §5.7, §5.5).

1. Direct hits: subjects of current ROOT facts whose IRI, or one of whose literal values,
   contains the query (one lower-cased substring); the scan stops after ``max_entities`` of them.
   Scored 1.0 (in the IRI), 0.9 (in the label) or 0.7, then sorted by score and IRI.
2. Links: for each hit, up to 10 outgoing IRI objects and 10 incoming subjects, 0.5 each, until
   ``max_entities`` entities are held.
3. Unified search only: the global top ``limit`` vector rows add unseen entities as ``Semantic``,
   scored by their cosine clamped into [0, 1] (the tool list promises 0-1 scores).
4. Rank by score, or with ``ppr_rerank`` by Personalized PageRank from the direct hits (ties and
   unreached entities fall back to the score); report what was cut; describe each entity by its
   label, types and first facts, reading one fact beyond the budget to tell ``facts_capped``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from quipu.config import SearchSettings
from quipu.errors import InvalidField
from quipu.search import limits, ppr
from quipu.search.entity_text import lexical
from quipu.search.lexical import CURRENT, LABEL_SUFFIXES, TYPE_SUFFIXES, needle, watched
from quipu.store import search_reads, values
from quipu.store.budget import Budget, enforce
from quipu.store.database import Database
from quipu.store.search_reads import FactRow

if TYPE_CHECKING:
    from quipu.search.embedding import MiniLM
    from quipu.search.vectors import VectorIndex

LINKS_PER_DIRECTION: Final = 10  # neighbours read per direct hit and direction
CONTEXT_FACTS: Final = 20  # quipu_context's fixed fact budget per entity
DEFAULT_MAX_ENTITIES: Final = 20
DEFAULT_FACTS_PER_ENTITY: Final = 10  # quipu_unified_search's default
_MAX_COUNT: Final = 2**31 - 1  # larger counts mean "all" and still bind as SQL integers
DIRECT, LINKED, SEMANTIC = "Direct", "Linked", "Semantic"


@dataclass
class Candidate:
    entity: int
    relevance: str
    score: float
    iri: str | None = None  # known for direct hits (they are sorted by it); the rest are looked up


@dataclass
class Pass:
    """What the retrieval passes found, before ranking and truncation."""

    entities: list[Candidate] = field(default_factory=list)
    direct: int = 0
    linked: int = 0
    semantic: int = 0
    more_available: bool = False  # a pass stopped before it had seen everything


# -- entry points ----------------------------------------------------------------------------------


def context(
    db: Database,
    settings: SearchSettings,
    embeddings: dict[str, Any],
    query: str,
    *,
    max_entities: int | None = None,
    expand_links: bool | None = None,
    ppr_rerank: bool | None = None,
) -> dict[str, Any]:
    """``quipu_context``: lexical retrieval only; ``embeddings`` is the status block to report."""
    wanted = needle(query)
    limit = _count(DEFAULT_MAX_ENTITIES if max_entities is None else max_entities, at_least=1)
    entities, summary = _run(
        db, settings, wanted, limit, CONTEXT_FACTS, _flag(expand_links, True), _flag(ppr_rerank, False), None
    )
    summary["embeddings"] = embeddings
    return {"query": query, "entities": entities, "summary": _ordered(summary)}


def query_vector(
    query: str, embedding: list[float] | None, provider: Callable[[], MiniLM | None]
) -> NDArray[np.float32] | None:
    """The vector of a unified search: the caller's ``embedding`` (checked), else the query embedded
    by the provider when there is one (before any store read), else None (lexical only)."""
    needle(query)
    if embedding is not None:
        if not embedding:
            raise InvalidField("'embedding' must be a non-empty array of numbers", field="embedding")
        vector = np.asarray(embedding, dtype=np.float64)
        if not np.all(np.isfinite(vector)) or np.any(np.abs(vector) > np.finfo(np.float32).max):
            raise InvalidField(
                "'embedding' must hold finite 32-bit floating-point numbers", field="embedding"
            )
        return vector.astype(np.float32)
    model = provider()
    return None if model is None else model.embed_text(query)


def unified_search(
    db: Database,
    settings: SearchSettings,
    embeddings: dict[str, Any],
    index: VectorIndex | None,
    vector: NDArray[np.float32] | None,
    query: str,
    *,
    limit: int | None = None,
    expand_links: bool | None = None,
    max_facts_per_entity: int | None = None,
    ppr_rerank: bool | None = None,
) -> dict[str, Any]:
    """``quipu_unified_search``: the context pipeline with ``max_entities = limit``, plus semantic
    additions when ``vector`` (and its ``index``) is given."""
    wanted = needle(query)
    per_entity = _count(DEFAULT_FACTS_PER_ENTITY if max_facts_per_entity is None else max_facts_per_entity)
    semantic = None if vector is None or index is None else (index, vector)
    entities, summary = _run(
        db,
        settings,
        wanted,
        limits.clamp_limit(settings, limit),
        min(per_entity, settings.max_limit),
        _flag(expand_links, True),
        _flag(ppr_rerank, False),
        semantic,
    )
    summary["embeddings"] = embeddings
    results = [
        {
            "entity": e["iri"],
            "text": e["label"] if e["label"] is not None else e["iri"],
            "score": e["score"],
            "source": e["source"],
            "relevance": e["relevance"],
            "types": e["types"],
            "facts": e["facts"],
            "facts_capped": e["facts_capped"],
        }
        for e in entities
    ]
    return {"results": results, "count": len(results), "summary": _ordered(summary)}


def _count(n: int, *, at_least: int = 0) -> int:
    return max(at_least, min(int(n), _MAX_COUNT))


def _flag(value: bool | None, default: bool) -> bool:
    return default if value is None else value


def _ordered(summary: dict[str, Any]) -> dict[str, Any]:
    keys = ("total_entities", "total_facts", "direct_hits", "linked_additions", "embeddings", "truncated")
    return {key: summary[key] for key in keys}


# -- the pipeline ----------------------------------------------------------------------------------


def _run(
    db: Database,
    settings: SearchSettings,
    wanted: str,
    max_entities: int,
    per_entity: int,
    expand_links: bool,
    ppr_rerank: bool,
    semantic: tuple[VectorIndex, NDArray[np.float32]] | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with (
        db.read(long=True) as conn,
        enforce(db, conn, timeout_ms=settings.query_timeout_ms, max_join_rows=None) as budget,
    ):
        found = _direct_hits(conn, wanted, max_entities, budget)
        if expand_links and found.entities:
            _expand(conn, found, max_entities)
        if semantic is not None:
            _add_semantic(conn, found, max_entities, *semantic)
        ranked = _rank(db, conn, found.entities, ppr_rerank)
        shown = ranked[:max_entities]
        described = _describe(db, conn, shown, per_entity)
    summary = {
        "total_entities": found.direct + found.linked + found.semantic,
        "total_facts": sum(len(e["facts"]) for e in described),
        "direct_hits": found.direct,
        "linked_additions": found.linked,
        "truncated": {
            "entities_shown": len(described),
            "entities_considered": len(ranked),
            "more_available": found.more_available or len(ranked) > max_entities,
            "entities_with_more_facts": sum(1 for e in described if e["facts_capped"]),
        },
    }
    return described, summary


def _direct_hits(conn: Connection, wanted: str, max_entities: int, budget: Budget) -> Pass:
    """Subjects whose IRI or a literal value contains ``wanted``, in store order, stopping after
    ``max_entities`` (one more is looked for, so a cut is reported); then scored and sorted."""
    found = Pass()
    rows = search_reads.scan(conn, CURRENT)
    try:
        for _entity, group in groupby(watched(rows, budget), key=attrgetter("e")):
            claims = list(group)
            subject = claims[0].subject
            in_iri = wanted in subject.lower()
            if not in_iri and not any(_literal_contains(row, wanted) for row in claims):
                continue  # an IRI object does not make a direct hit: pointing at it is a link
            if len(found.entities) == max_entities:
                found.more_available = True
                break
            label = _last(claims, LABEL_SUFFIXES)
            score = 1.0 if in_iri else 0.9 if label is not None and wanted in label.lower() else 0.7
            found.entities.append(Candidate(claims[0].e, DIRECT, score, subject))
    finally:
        rows.close()
    found.entities.sort(key=lambda c: (-c.score, c.iri or ""))
    found.direct = len(found.entities)
    return found


def _literal_contains(row: FactRow, wanted: str) -> bool:
    if row.target is not None:
        return False
    text = lexical(row.v)
    return text is not None and wanted in text.lower()


def _last(claims: Sequence[FactRow], suffixes: tuple[str, ...]) -> str | None:
    """The value of the last claim read whose predicate ends with one of ``suffixes``."""
    found: str | None = None
    for row in claims:
        if row.predicate.endswith(suffixes):
            text = row.target if row.target is not None else lexical(row.v)
            if text is not None:
                found = text
    return found


def _expand(conn: Connection, found: Pass, max_entities: int) -> None:
    """Add each direct hit's neighbours (outgoing IRI objects, then incoming subjects) as Linked
    until ``max_entities`` entities are held; an unseen neighbour left out sets ``more_available``."""
    seen = {c.entity for c in found.entities}
    for hit in list(found.entities):
        outgoing, incoming = search_reads.neighbours(conn, CURRENT, hit.entity, LINKS_PER_DIRECTION)
        for neighbour in outgoing + incoming:
            if neighbour in seen:
                continue
            if len(found.entities) >= max_entities:
                found.more_available = True
                return
            seen.add(neighbour)
            found.entities.append(Candidate(neighbour, LINKED, 0.5))
            found.linked += 1


def _add_semantic(
    conn: Connection, found: Pass, max_entities: int, index: VectorIndex, vector: NDArray[np.float32]
) -> None:
    """The global top ``max_entities`` vector rows, in order, add the entities not yet held while
    fewer than ``max_entities`` are; a candidate left out for room sets ``more_available``."""
    index.refresh(conn)
    ranked = index.rank(vector, max_entities)
    seen = {c.entity for c in found.entities}
    for entity, similarity in zip(ranked.entity_ids.tolist(), ranked.similarities.tolist(), strict=True):
        if entity in seen:
            continue
        if len(found.entities) >= max_entities:
            found.more_available = True
            return
        seen.add(entity)
        # The tool list promises 0-1 scores: a negative cosine is clamped (spec errata).
        found.entities.append(Candidate(int(entity), SEMANTIC, min(1.0, max(0.0, float(similarity)))))
        found.semantic += 1


def _rank(db: Database, conn: Connection, entities: list[Candidate], ppr_rerank: bool) -> list[Candidate]:
    """By score (stable), or by Personalized PageRank from the direct hits with the score as the
    tie-break (unreached entities score 0 and so come last, by score). Without a direct hit in
    the projection there is no walk, and the order stays the score order."""
    seeds = [c.entity for c in entities if c.relevance == DIRECT]
    scores = ppr.scores_for(db, conn, seeds, [c.entity for c in entities]) if ppr_rerank and seeds else None
    if scores is None:
        return sorted(entities, key=lambda c: -c.score)
    return sorted(entities, key=lambda c: (-scores[c.entity], -c.score))


# -- describing the entities shown -------------------------------------------------------------------


def _describe(
    db: Database, conn: Connection, shown: list[Candidate], per_entity: int
) -> list[dict[str, Any]]:
    ids = [c.entity for c in shown]
    picked = search_reads.suffixed_facts(conn, CURRENT, ids, LABEL_SUFFIXES + TYPE_SUFFIXES)
    leading = search_reads.leading_facts(conn, CURRENT, ids, per_entity + 1)
    refs = {ref for rows in leading.values() for _a, v in rows if (ref := values.ref_id(v)) is not None}
    refs |= {ref for _e, _p, v in picked if (ref := values.ref_id(v)) is not None}
    refs |= {a for rows in leading.values() for a, _v in rows}
    iri_of = db.terms.iris(conn, refs | {c.entity for c in shown if c.iri is None})
    labels: dict[int, str] = {}
    types: dict[int, list[str]] = {}
    for e, predicate, v in picked:
        text = _text(v, iri_of)
        if text is None:
            continue
        if predicate.endswith(LABEL_SUFFIXES):
            labels[e] = text  # the last one read wins
        elif text not in types.setdefault(e, []):
            types[e].append(text)
    out = []
    for c in shown:
        rows = leading[c.entity]
        out.append(
            {
                "iri": c.iri if c.iri is not None else iri_of[c.entity],
                "label": labels.get(c.entity),
                "types": types.get(c.entity, []),
                "relevance": c.relevance,
                "score": c.score,
                "source": "knowledge",
                "facts": [_fact(a, v, iri_of) for a, v in rows[:per_entity]],
                "facts_capped": len(rows) > per_entity,
            }
        )
    return out


def _text(v: bytes, iri_of: dict[int, str]) -> str | None:
    ref = values.ref_id(v)
    return iri_of[ref] if ref is not None else lexical(v)


def _fact(a: int, v: bytes, iri_of: dict[int, str]) -> dict[str, Any]:
    decoded = values.decode(v)
    if decoded.kind == "ref":
        return {"predicate": iri_of[a], "value": iri_of[decoded.value], "value_type": "Entity"}
    value: Any = decoded.value
    if decoded.kind == "float" and not math.isfinite(decoded.value):
        value = decoded.lexical  # INF and NaN are not JSON numbers
    return {"predicate": iri_of[a], "value": value, "value_type": "Literal"}
