"""``create_app(settings)``: the FastAPI application over one open store.

The store opens in the lifespan, never at import. This foundation serves liveness and store
statistics; the full route table (tools-core §5) grows here, one router per resource family.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request

import quipu
from quipu.api import KnowledgeBase
from quipu.config import Settings
from quipu.errors import InvalidField
from quipu.rest import problems


def _no_arguments(request: Request) -> None:
    """Strict argument-less routes: any parameter is refused rather than ignored."""
    if request.query_params:
        names = ", ".join(sorted(request.query_params))
        raise InvalidField(f"this route takes no arguments (got: {names})", reason="unknown_field")


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = settings.store
        kb = quipu.open(
            store.db,
            synchronous=store.synchronous,
            cache_mb=store.cache_mb,
            readers=store.readers,
            max_sparql_rows=settings.search.max_sparql_rows,
            query_timeout_ms=settings.search.query_timeout_ms,
            max_join_rows=settings.search.max_join_rows,
        )
        app.state.kb = kb
        try:
            yield
        finally:
            kb.close()

    app = FastAPI(title="quipu", version=quipu.__version__, lifespan=lifespan)
    app.state.settings = settings
    problems.install(app)

    @app.get("/health")
    def health(request: Request) -> dict[str, str]:
        """Liveness of the process; never touches the store."""
        _no_arguments(request)
        return {"status": "ok"}

    @app.get("/stats")
    def stats(request: Request) -> dict[str, int]:
        """Counts of ROOT's current statements, entities and predicates."""
        _no_arguments(request)
        kb: KnowledgeBase = request.app.state.kb
        return kb.stats()

    return app
