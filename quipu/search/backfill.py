"""Embedding backfill of ROOT entities (tools-search §5.11), resumable and bounded in memory.

The work list is every entity with a current ROOT claim whose ROOT text (§3.2) is not empty and
has no current vector, or a vector built from another text (a label changed since) **[designed
here, as the spec: missing or stale]**. Named-only entities are never touched here. The texts
of a window of 512 entities are read from one snapshot, with their version markers (latest
transaction), and sorted by length so that each batch of 32 pads little; the provider embeds a
batch with no lock held; then, inside one write transaction, each
entity whose text and version are unchanged gets its vector, and one that changed meanwhile goes
back on the list, at most three times (then the next call takes it). Stopping part way loses
nothing: every applied batch is committed, and the next call starts from what is missing.

``embed_and_apply`` (embed with no lock, re-check and write in one transaction) is shared with
the named-graph backfill (graph_backfill.py) and write-path embedding (auto_embed.py).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from quipu.search.entity_text import entity_texts
from quipu.store import vectors as store_vectors
from quipu.store.database import Database
from quipu.store.reads import subjects_with_facts
from quipu.store.views import TemporalView
from quipu.times import now

BATCH: Final = 32
WINDOW: Final = 512  # entities whose texts are compared with their vectors at once
MAX_REQUEUES: Final = 3
ROOT_VIEW: Final = TemporalView()

Progress = Callable[[int, int], None]  # (entities looked at, entities in the store)


class Embedder(Protocol):
    def embed_batch(self, texts: list[str]) -> NDArray[np.float32]: ...


class EmbeddingFailed(Exception):
    """The provider raised: the call stops, with the batches before it applied."""


@dataclass(frozen=True)
class BackfillResult:
    entities_embedded: int
    stale_retries: int


@dataclass(frozen=True, slots=True)
class Job:
    """One entity to embed: its text, and what must still hold when the vector is written (its
    text and version, or its text and plane), compared with what ``recheck`` then reports."""

    entity: int
    text: str
    marker: Hashable


# (write connection, entities) -> the marker each entity has now; an entity left out no longer
# qualifies (it got a vector meanwhile, or left its plane).
Recheck = Callable[[Connection, list[int]], Mapping[int, Hashable]]


@dataclass(frozen=True)
class Applied:
    written: list[Job]
    stale: list[Job]  # changed while the batch was embedded: not written


def by_length(jobs: Sequence[Job]) -> list[Job]:
    """Texts of similar length side by side: a batch is padded to its longest text."""
    return sorted(jobs, key=lambda job: len(job.text))


def embed_and_apply(
    db: Database, provider: Embedder, batch: Sequence[Job], recheck: Recheck, *, named_only: bool = False
) -> Applied:
    """Embed ``batch`` with no store lock held, then, in one write transaction, give each entity
    whose marker is unchanged its vector (stamped now); the others are returned as stale.
    A provider error raises ``EmbeddingFailed`` with nothing of this batch written."""
    if not batch:
        return Applied([], [])
    try:
        matrix = provider.embed_batch([job.text for job in batch])  # no lock held
    except Exception as exc:
        raise EmbeddingFailed(f"the embedding provider failed: {exc}") from exc
    written: list[Job] = []
    stale: list[Job] = []
    rows: list[tuple[int, str, bytes]] = []
    with db.write() as ctx:
        again = recheck(ctx.conn, [job.entity for job in batch])
        for job, vector in zip(batch, matrix, strict=True):
            if job.entity in again and again[job.entity] == job.marker:
                written.append(job)
                rows.append((job.entity, job.text, np.asarray(vector, dtype="<f4").tobytes()))
            else:
                stale.append(job)
        store_vectors.write(ctx.conn, rows, now(), named_only=named_only)
    return Applied(written, stale)


def embed_backfill(db: Database, provider: Embedder, progress: Progress | None = None) -> BackfillResult:
    """Embed what is missing or stale (see the module docstring); a provider error raises
    ``EmbeddingFailed``, with the batches before it applied."""
    with db.read() as conn:
        subjects = subjects_with_facts(conn, ROOT_VIEW)
        embedded_texts = {row.entity_id: row.text for row in store_vectors.current(conn)}
    embedded = stale = 0
    requeued: Counter[int] = Counter()
    for start in range(0, len(subjects), WINDOW):
        pending = deque(subjects[start : start + WINDOW])
        while pending:
            with db.read() as conn:
                texts = entity_texts(db, conn, list(pending), ROOT_VIEW)
            pending.clear()
            todo = by_length(
                [Job(e, t.text, t) for e, t in texts.items() if t.text and embedded_texts.get(e) != t.text]
            )
            for at in range(0, len(todo), BATCH):
                applied = embed_and_apply(db, provider, todo[at : at + BATCH], _root_texts(db))
                for job in applied.stale:
                    if requeued[job.entity] < MAX_REQUEUES:
                        requeued[job.entity] += 1
                        stale += 1
                        pending.append(job.entity)  # read again after this window's batches
                embedded += len(applied.written)
                embedded_texts.update((job.entity, job.text) for job in applied.written)
        if progress is not None:
            progress(min(start + WINDOW, len(subjects)), len(subjects))
    return BackfillResult(embedded, stale)


def _root_texts(db: Database) -> Recheck:
    return lambda conn, entities: entity_texts(db, conn, entities, ROOT_VIEW)
