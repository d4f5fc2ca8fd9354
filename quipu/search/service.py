"""``Search``: the per-store service of the search family (``KnowledgeBase.search``).

It owns the family's state: the embedding provider, loaded from ``[quipu.embedding]`` on first
use, and the cached vector index, made on first use too. Opening a store, or starting a server,
neither waits for the model nor imports numpy. Routers and the CLI call it directly.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast

from quipu.search.state import NO_PROVIDER
from quipu.store import graph_scope
from quipu.store import vectors as store_vectors
from quipu.store.database import Database

if TYPE_CHECKING:
    from quipu.config import EmbeddingSettings, ResolutionSettings, SearchSettings
    from quipu.search.backfill import Progress
    from quipu.search.embedding import MiniLM
    from quipu.search.resolve import NameIndex
    from quipu.search.vectors import VectorIndex

log = logging.getLogger("quipu.search")

DEFAULT_DIMENSION: Final = 384


class Committed(Protocol):
    """What a write returns that write-path embedding follows: its transaction (0: none)."""

    @property
    def tx_id(self) -> int: ...


Write = TypeVar("Write", bound=Callable[..., Committed])


class Search:
    def __init__(
        self,
        db: Database,
        embedding: EmbeddingSettings | None = None,
        settings: SearchSettings | None = None,
        resolution: ResolutionSettings | None = None,
        *,
        base_ns: str = "http://aegis.gastown.local/ontology/",
    ) -> None:
        from quipu.config import ResolutionSettings, SearchSettings

        self.db = db
        self.base_ns = base_ns  # content ranking's Section/Chunk/CodeSymbol live under it
        self._embedding = embedding
        self.settings = settings if settings is not None else SearchSettings()
        self.resolution = resolution if resolution is not None else ResolutionSettings()
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

    # -- SPARQL-scoped ranking, named-graph backfill, write-path embedding -------------------------

    def hybrid_search(
        self,
        *,
        query: str | None = None,
        embedding: list[float] | None = None,
        sparql: str | None = None,
        limit: int | None = None,
        valid_at: str | None = None,
    ) -> dict[str, Any]:
        """``POST /hybrid_search`` (tools-search §5.2): vector ranking of the entities a SPARQL
        SELECT names (quipu/search/scoped.py)."""
        from quipu.search import scoped

        result = scoped.hybrid_search(
            self.db, self.index, self.provider, self.settings,
            query=query, embedding=embedding, sparql=sparql, limit=limit, valid_at=valid_at,
        )  # fmt: skip
        result["embeddings"] = self.embeddings()
        return result

    def embed_backfill_graph(
        self, graph: str | None, max_entities: int | None = None, progress: Progress | None = None
    ) -> dict[str, Any]:
        """``POST /embed_backfill/graph`` (tools-search §5.12): named-only entities of one named
        graph. A missing provider is a 400 here; a provider failure part way is ``status: "error"``
        with the batches before it applied, as for ``embed_backfill``."""
        from quipu.errors import BadRequest
        from quipu.search import backfill, graph_backfill

        graph_id = graph_backfill.check_graph(self.db, graph)
        assert graph is not None
        model = self.provider()
        if model is None:
            raise BadRequest(NO_PROVIDER, reason="no_embedding_provider")
        cap = graph_backfill.clamp_max_entities(max_entities)
        try:
            result = graph_backfill.embed_backfill_graph(self.db, model, graph, graph_id, cap, progress)
        except backfill.EmbeddingFailed as exc:
            log.error("named-graph embedding backfill stopped: %s", exc)
            return {"status": "error", "error": str(exc)}
        return result.as_json()

    def auto_embedded(self, write: Write) -> Write:
        """``write`` (an episode write) followed, with ``[quipu.embedding] auto_embed = true``, by
        the write-path embedding of what it touched (tools-search §3.4); ``write`` itself when
        off. Its failure is logged, never raised: the write has committed."""
        settings = self._embedding
        if settings is None or not settings.auto_embed:
            return write

        @functools.wraps(write)
        def written(*args: Any, **kwargs: Any) -> Committed:
            result: Committed = write(*args, **kwargs)
            from quipu.search import auto_embed

            auto_embed.after_write(
                self.db, self.provider, result.tx_id,
                batch_size=settings.embed_batch_size, named_graphs=self.settings.named_graphs,
            )  # fmt: skip
            return result

        return cast(Write, written)

    # -- quipu_search and its keyword index ---------------------------------------------------------

    def find(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /search`` (tools-search §5.1): semantic, keyword, hybrid or anchored."""
        from quipu.search import modes

        modes.check_request(body)
        if body.get("anchor") is not None:
            from quipu.search import anchored

            return anchored.search(self, body)
        return modes.text_search(self, body)

    def keyword_index(self) -> dict[str, Any] | None:
        """The keyword index's backfill state, or None before activation (creates nothing)."""
        from quipu.store import keyword_index

        with self.db.read() as conn:
            state = keyword_index.progress(conn)
        return None if state is None else state.as_json()

    def keyword_backfill(self, batch_size: int) -> dict[str, Any]:
        """One bounded backfill batch, in one write transaction (activating the index first)."""
        from quipu.store import keyword_index

        with self.db.write() as ctx:
            return keyword_index.backfill_batch(ctx.conn, batch_size).as_json()

    def keyword_drop(self) -> None:
        """Remove the keyword index (facts are untouched)."""
        from quipu.store import keyword_index

        with self.db.write() as ctx:
            keyword_index.drop(ctx.conn)

    # -- finding entities by name: resolve, spotlight, reconcile ------------------------------------

    def resolve(
        self,
        name: str,
        properties: Mapping[str, Any] | None = None,
        top_k: Any = None,
        threshold: float | None = None,
        names: NameIndex | None = None,
    ) -> dict[str, Any]:
        """``POST /resolve`` (tools-search §5.8): near-duplicate candidates for a proposed entity.
        ``top_k`` that is not an integer >= 0 falls back to ``[quipu.resolution] top_k``.
        ``names``: local labels read once for many calls (a share import resolves each entity)."""
        from quipu.search import resolve

        graph_scope.enforce_root(self.db)  # they read ROOT: the label floor applies
        valid_k = isinstance(top_k, int) and not isinstance(top_k, bool) and top_k >= 0
        provider = self.provider()
        return resolve.resolve(
            self.db,
            provider,
            self.index if provider is not None else None,
            name,
            properties or {},
            top_k if valid_k else self.resolution.top_k,
            self.resolution.threshold if threshold is None else threshold,
            names,
        )

    def spotlight(self, text: str, confidence: float = 0.5) -> dict[str, Any]:
        """``POST /spotlight`` (tools-search §5.9): known entities mentioned in ``text``."""
        from quipu.search import spotlight

        graph_scope.enforce_root(self.db)  # they read ROOT: the label floor applies
        return spotlight.spotlight(self.db, text, confidence, self.settings.query_timeout_ms)

    def reconcile(self, queries: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``POST /reconcile`` (tools-search §5.10): the manifest without ``queries``, else
        scored candidates per keyed query."""
        from quipu.errors import WrongType
        from quipu.search import reconcile

        if queries is None:
            return reconcile.manifest()
        if not isinstance(queries, Mapping):
            raise WrongType("'queries' must be an object", field="queries")
        graph_scope.enforce_root(self.db)  # they read ROOT: the label floor applies
        return reconcile.reconcile(self.db, queries)

    # -- substring search and context: search_nodes, search_facts, context, unified_search ----------

    def search_nodes(self, query: str, **options: Any) -> dict[str, Any]:
        """``POST /search_nodes`` (tools-search §5.3): entities by case-insensitive substring."""
        from quipu.search import lexical

        graph_scope.enforce_root(self.db)  # they read ROOT: the label floor applies
        return lexical.search_nodes(self.db, self.settings, query, **options)

    def search_facts(self, query: str, **options: Any) -> dict[str, Any]:
        """``POST /search_facts`` (tools-search §5.4): facts whose predicate or object contains ``query``."""
        from quipu.search import lexical

        graph_scope.enforce_root(self.db)  # they read ROOT: the label floor applies
        return lexical.search_facts(self.db, self.settings, query, **options)

    def context(self, query: str, **options: Any) -> dict[str, Any]:
        """``POST /context`` (tools-search §5.7): direct hits, their links and their facts."""
        from quipu.search import context

        graph_scope.enforce_root(self.db)  # they read ROOT: the label floor applies
        return context.context(self.db, self.settings, self.embeddings(), query, **options)

    def unified_search(
        self, query: str, embedding: list[float] | None = None, **options: Any
    ) -> dict[str, Any]:
        """``POST /unified_search`` (tools-search §5.5): the context pipeline plus semantic additions
        when a vector is given or the query can be embedded (embedded before the store is read)."""
        from quipu.search import context

        graph_scope.enforce_root(self.db)  # they read ROOT: the label floor applies
        vector = context.query_vector(query, embedding, self.provider)
        index = self.index if vector is not None else None
        return context.unified_search(
            self.db, self.settings, self.embeddings(), index, vector, query, **options
        )

    def search_query(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /search/query`` (tools-search §5.6): search hits seed one variable of a SELECT."""
        from quipu.search import search_query

        return search_query.run(self, body)
