"""``Search``: the per-store service of the search family (``KnowledgeBase.search``).

It owns the family's state: the embedding provider, loaded from ``[quipu.embedding]`` on first
use, and the cached vector index, made on first use too. Opening a store, or starting a server,
neither waits for the model nor imports numpy. Routers and the CLI call it directly.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Final

from quipu.store import vectors as store_vectors
from quipu.store.database import Database

if TYPE_CHECKING:
    from quipu.config import EmbeddingSettings
    from quipu.search.backfill import Progress
    from quipu.search.embedding import MiniLM
    from quipu.search.vectors import VectorIndex

log = logging.getLogger("quipu.search")

# What a caller is told when a tool needs a provider and none is configured (tools-search §2).
NO_PROVIDER: Final = (
    "no embedding provider is configured: set [quipu.embedding] model_path (the model's "
    "model.safetensors) and tokenizer_path (its tokenizer.json); `quipu models install` puts the "
    "all-MiniLM-L6-v2 files in place and prints both keys (dimension: 384). Facts loaded with "
    "/knot are embedded by quipu_embed_backfill."
)
DEFAULT_DIMENSION: Final = 384


class Search:
    def __init__(self, db: Database, embedding: EmbeddingSettings | None = None) -> None:
        self.db = db
        self._embedding = embedding
        self._provider: MiniLM | None = None
        self._loaded = False
        self._load_lock = threading.Lock()
        self._index: VectorIndex | None = None

    @property
    def index(self) -> VectorIndex:
        """The cached vector index of this store (made on first use)."""
        with self._load_lock:
            if self._index is None:
                from quipu.search.vectors import VectorIndex

                dimension = self._embedding.dimension if self._embedding is not None else DEFAULT_DIMENSION
                self._index = VectorIndex(dimension)
            return self._index

    def provider(self) -> MiniLM | None:
        """The configured provider, loaded once on first use; None without one (a model that
        cannot be loaded is logged as a warning once, tools-search §2)."""
        with self._load_lock:
            if not self._loaded:
                if self._embedding is not None:
                    from quipu.search.embedding import provider

                    self._provider = provider(self._embedding)
                self._loaded = True
            return self._provider

    def embeddings(self) -> dict[str, Any]:
        """The ``embeddings`` status block: a provider attached, and how many entities have a
        current vector (0 when the count fails, rather than failing the request)."""
        try:
            with self.db.read() as conn:
                embedded = store_vectors.count_current(conn)
        except Exception:
            log.warning("counting the embedded entities failed", exc_info=True)
            embedded = 0
        return {"configured": self.provider() is not None, "embedded_entities": embedded}

    def embed_backfill(self, progress: Progress | None = None) -> dict[str, Any]:
        """``POST /embed_backfill`` (tools-search §5.11): a missing provider or a provider failure
        is ``status: "error"`` with HTTP 200 (callers branch on ``status``); a store failure is
        an error of the request."""
        from quipu.search import backfill

        model = self.provider()
        if model is None:
            return {"status": "error", "error": NO_PROVIDER}
        try:
            result = backfill.embed_backfill(self.db, model, progress)
        except backfill.EmbeddingFailed as exc:
            log.error("embedding backfill stopped: %s", exc)
            return {"status": "error", "error": str(exc)}
        return {
            "status": "ok",
            "entities_embedded": result.entities_embedded,
            "stale_retries": result.stale_retries,
        }
