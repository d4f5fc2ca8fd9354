"""Write-path embedding (tools-search §3.4): after an episode write commits, with
``[quipu.embedding] auto_embed = true`` and a provider, the entities it touched are embedded.

1. The vectors of the entities the transaction retracted something from are closed (their text
   changed or is gone; a failure below then leaves no stale vector behind).
2. The texts of the touched entities are built: ROOT text for an entity with a current ROOT
   claim; named-only text (§3.3) for one without, only when ``[quipu.search] named_graphs`` is
   on (else the named-graph backfill owns it). An empty text, or the text the entity's current
   vector was already built from, needs nothing.
3. The texts are embedded with no store lock held, in chunks of ``embed_batch_size`` (0: 32);
   each chunk is applied in one write transaction that first re-checks each entity's current
   text and plane: a vector whose source text changed meanwhile is skipped (the later writer
   owns it).

Turtle loads (``/knot``) never come here; ``quipu_embed_backfill`` embeds them. The write this
follows has committed, so nothing here may fail it: ``after_write`` logs a warning instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from sqlalchemy import Connection

from quipu.search.backfill import ROOT_VIEW, WINDOW, Embedder, Job, Recheck, by_length, embed_and_apply
from quipu.search.entity_text import entity_texts, named_only_texts
from quipu.store import vector_work
from quipu.store import vectors as store_vectors
from quipu.store.database import Database
from quipu.times import now

if TYPE_CHECKING:
    from quipu.search.embedding import MiniLM

log = logging.getLogger("quipu.search")
DEFAULT_BATCH: Final = 32

Plane = tuple[str, bool]  # (text, named-only)


@dataclass(frozen=True)
class AutoEmbedResult:
    closed: int  # vectors closed because their entity had a retraction
    embedded: int
    stale_skipped: int


def after_write(
    db: Database,
    provider: Callable[[], MiniLM | None],
    tx: int,
    *,
    batch_size: int,
    named_graphs: bool,
) -> AutoEmbedResult | None:
    """Embed what transaction ``tx`` touched; None when there is nothing to do (no transaction,
    no provider) or when it failed (logged as a warning: the write has committed)."""
    if not tx:
        return None
    try:
        model = provider()
        if model is None:
            return None
        return embed_transaction(db, model, tx, batch_size=batch_size, named_graphs=named_graphs)
    except Exception as exc:
        log.warning(
            "write-path embedding after transaction %s failed (the write stands; "
            "quipu_embed_backfill repairs what is missing): %s",
            tx,
            exc,
            exc_info=True,
        )
        return None


def embed_transaction(
    db: Database, provider: Embedder, tx: int, *, batch_size: int = 0, named_graphs: bool = False
) -> AutoEmbedResult:
    """Steps 1-3 of the module docstring for transaction ``tx``; a provider error raises
    ``EmbeddingFailed`` with the chunks before it applied."""
    with db.read() as conn:
        touched, retracted = vector_work.transaction_subjects(conn, tx)
    closed = 0
    if retracted:
        with db.write() as ctx:
            closed = store_vectors.close(ctx.conn, retracted, now())
    root_jobs: list[Job] = []
    named_jobs: list[Job] = []
    with db.read() as conn:
        for start in range(0, len(touched), WINDOW):
            chunk = touched[start : start + WINDOW]
            planes = plane_texts(db, conn, chunk, named_graphs=named_graphs)
            vectors = store_vectors.for_entities(conn, chunk)
            for entity, (text, named) in planes.items():
                row = vectors.get(entity)
                if not text or (row is not None and row.text == text and row.named_only == named):
                    continue
                (named_jobs if named else root_jobs).append(Job(entity, text, (text, named)))
    size = batch_size or DEFAULT_BATCH
    recheck = _planes_now(db, named_graphs)
    embedded = stale = 0
    for named, jobs in ((False, by_length(root_jobs)), (True, by_length(named_jobs))):
        for at in range(0, len(jobs), size):
            applied = embed_and_apply(db, provider, jobs[at : at + size], recheck, named_only=named)
            embedded += len(applied.written)
            stale += len(applied.stale)
    return AutoEmbedResult(closed, embedded, stale)


def plane_texts(
    db: Database, conn: Connection, entities: Iterable[int], *, named_graphs: bool
) -> dict[int, Plane]:
    """Each entity's embedding text and whether it is named-only: ROOT text when it has a current
    ROOT claim, else (with ``named_graphs``) its named-only text; other entities are left out."""
    ids = list(entities)
    root = entity_texts(db, conn, ids, ROOT_VIEW)
    out: dict[int, Plane] = {e: (t.text, False) for e, t in root.items() if t.version}
    if named_graphs:
        named = named_only_texts(db, conn, [e for e in ids if e not in out])
        out.update((e, (t.text, True)) for e, t in named.items())
    return out


def _planes_now(db: Database, named_graphs: bool) -> Recheck:
    return lambda conn, entities: plane_texts(db, conn, entities, named_graphs=named_graphs)
