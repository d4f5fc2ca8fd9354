"""Embedding backfill of the named-only entities of one named graph (tools-search §5.12).

The missing set is every entity with a current claim in the graph, none in ROOT and no current
vector, in ascending term id, whose named-only text (§3.3: the union of its current named-graph
claims) is not empty **[designed here: an entity with no text can never get a vector, so
counting it would keep ``remaining`` above 0 forever and, first in term order, would take every
call's budget]**. The first ``max_entities`` of it are embedded in batches of 32, with the ROOT
backfill's discipline (``embed_and_apply``): texts read from a snapshot, the provider called with
no lock held, then per entity a re-check inside the write — text unchanged, still no current
vector, still named-only — before its vector is written, marked named-only so that default
(ROOT) semantic search leaves it out. An entity that fails the re-check is counted in
``stale_skipped`` and left for the next call. ROOT entity text is never rewritten here.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection

from quipu.errors import InvalidField, MissingField
from quipu.search.backfill import (
    BATCH,
    WINDOW,
    Embedder,
    Job,
    Progress,
    Recheck,
    by_length,
    embed_and_apply,
)
from quipu.search.entity_text import named_only_texts
from quipu.store import values, vector_work
from quipu.store import vectors as store_vectors
from quipu.store.database import Database
from quipu.store.reads import resolve_graph
from quipu.store.schema import META_IRI, ROOT, ROOT_IRI

DEFAULT_MAX_ENTITIES: Final = 256
MAX_ENTITIES: Final = 2000


@dataclass(frozen=True)
class GraphBackfillResult:
    graph: str
    max_entities: int
    entities_embedded: int
    remaining: int
    stale_skipped: int

    def as_json(self) -> dict[str, object]:
        return {
            "status": "ok",
            "graph": self.graph,
            "max_entities": self.max_entities,
            "entities_embedded": self.entities_embedded,
            "remaining": self.remaining,
            "stale_skipped": self.stale_skipped,
        }


def clamp_max_entities(requested: int | None) -> int:
    """Rule 4: absent is 256; otherwise within 1..2000 (0 behaves as 1, 5000 as 2000)."""
    if requested is None:
        return DEFAULT_MAX_ENTITIES
    return max(1, min(int(requested), MAX_ENTITIES))


def check_graph(db: Database, graph: object) -> int:
    """The id of the registered named graph ``graph`` names; ROOT and unknown graphs are refused."""
    if graph is None:
        raise MissingField("graph (named-graph IRI) is required", field="graph")
    values.check_iri(graph, "graph")
    assert isinstance(graph, str)
    if graph == ROOT_IRI:
        raise InvalidField(
            f"graph <{graph}> is ROOT: ROOT entities are embedded by quipu_embed_backfill", field="graph"
        )
    with db.read() as conn:
        gid = None if graph == META_IRI else resolve_graph(db, conn, graph)
    if gid is None or gid == ROOT:
        raise InvalidField(f"unknown graph: {graph}; register it first (quipu_create_graph)", field="graph")
    return gid


def embed_backfill_graph(
    db: Database,
    provider: Embedder,
    graph: str,
    graph_id: int,
    max_entities: int,
    progress: Progress | None = None,
) -> GraphBackfillResult:
    """Embed up to ``max_entities`` missing named-only entities of ``graph`` (already checked by
    ``check_graph``); a provider error raises ``EmbeddingFailed`` with earlier batches applied."""
    selected: list[Job] = []
    missing_total = 0
    with db.read() as conn:
        candidates = vector_work.named_only_without_vector(conn, graph_id)
        for start in range(0, len(candidates), WINDOW):
            texts = named_only_texts(db, conn, candidates[start : start + WINDOW])
            for entity in candidates[start : start + WINDOW]:  # ascending term id
                found = texts.get(entity)
                if found is None or not found.text:
                    continue
                missing_total += 1
                if len(selected) < max_entities:
                    selected.append(Job(entity, found.text, found.text))
    todo = by_length(selected)
    embedded = stale = 0
    for at in range(0, len(todo), BATCH):
        applied = embed_and_apply(db, provider, todo[at : at + BATCH], _still_missing(db), named_only=True)
        embedded += len(applied.written)
        stale += len(applied.stale)
        if progress is not None:
            progress(min(at + BATCH, len(todo)), len(todo))
    return GraphBackfillResult(graph, max_entities, embedded, missing_total - embedded, stale)


def _still_missing(db: Database) -> Recheck:
    """The re-check of §5.12 step 3: each entity that still has no current vector and is still
    named-only, with its named-only text now."""

    def recheck(conn: Connection, entities: list[int]) -> Mapping[int, Hashable]:
        embedded = store_vectors.for_entities(conn, entities)
        texts = named_only_texts(db, conn, [e for e in entities if e not in embedded])
        return {entity: text.text for entity, text in texts.items()}

    return recheck
