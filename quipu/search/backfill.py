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
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
from numpy.typing import NDArray

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
            # Texts of similar length side by side: a batch is padded to its longest text.
            todo = sorted(
                ((e, t) for e, t in texts.items() if t.text and embedded_texts.get(e) != t.text),
                key=lambda item: len(item[1].text),
            )
            for at in range(0, len(todo), BATCH):
                batch = todo[at : at + BATCH]
                try:
                    matrix = provider.embed_batch([t.text for _e, t in batch])  # no lock held
                except Exception as exc:
                    raise EmbeddingFailed(f"the embedding provider failed: {exc}") from exc
                with db.write() as ctx:
                    again = entity_texts(db, ctx.conn, [e for e, _t in batch], ROOT_VIEW)
                    rows = []
                    for (entity, seen), vector in zip(batch, matrix, strict=True):
                        if again[entity] == seen:
                            rows.append((entity, seen.text, np.asarray(vector, dtype="<f4").tobytes()))
                        elif requeued[entity] < MAX_REQUEUES:
                            requeued[entity] += 1
                            stale += 1
                            pending.append(entity)  # read again after this window's batches
                    store_vectors.write(ctx.conn, rows, now())
                embedded += len(rows)
                embedded_texts.update((entity, text) for entity, text, _v in rows)
        if progress is not None:
            progress(min(start + WINDOW, len(subjects)), len(subjects))
    return BackfillResult(embedded, stale)
