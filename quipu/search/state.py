"""What the ranking modules need from the Search service, as a protocol.

The modes, content ranking, anchored search and search_query take the service as an argument;
typing them against this protocol, not against ``quipu.search.service.Search``, keeps the
service the only module that imports them (no import cycle inside the package).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from quipu.config import ResolutionSettings, SearchSettings
    from quipu.search.embedding import MiniLM
    from quipu.search.vectors import VectorIndex
    from quipu.store.database import Database

# What a caller is told when a tool needs a provider and none is configured (tools-search §2).
NO_PROVIDER: Final = (
    "no embedding provider is configured: set [quipu.embedding] model_path (the model's "
    "model.safetensors) and tokenizer_path (its tokenizer.json); `quipu models install` puts the "
    "all-MiniLM-L6-v2 files in place and prints both keys (dimension: 384). Facts loaded with "
    "/knot are embedded by quipu_embed_backfill."
)


class SearchState(Protocol):
    """The store, settings, provider and vector index of one store's search family."""

    db: Database
    base_ns: str
    settings: SearchSettings
    resolution: ResolutionSettings

    @property
    def index(self) -> VectorIndex: ...

    def provider(self) -> MiniLM | None: ...

    def embeddings(self) -> dict[str, Any]: ...

    def find(self, body: Mapping[str, Any]) -> dict[str, Any]: ...
