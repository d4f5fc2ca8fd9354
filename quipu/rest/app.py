"""``create_app(settings)``: the FastAPI application over one open store.

Nothing happens at import. ``create_app`` loads the credentials (a bad token file fails here,
before the server binds), builds the middleware and routers, and checks every route against the
route table; the lifespan makes the read lanes (quipu/rest/lanes.py), opens the store with a
reader pool they fit in, and closes it on shutdown. The logic memory's runtime opens on the first
``/logic`` call instead (quipu/logic/service.py) and closes with the store.

Every route depends on ``guard`` (credentials and read-only mode) and then on ``admission`` (a
read lane's slot), in that order: a request refused for its credential never takes a slot. With
``server.read_auth = "token"`` the OpenAPI schema is a guarded route too, and the ``/docs`` page,
which a browser could not load without the bearer, is not served.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, contextmanager
from typing import Protocol

from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.middleware.cors import CORSMiddleware

import quipu
from quipu.api import KnowledgeBase
from quipu.config import Settings
from quipu.errors import ConfigError
from quipu.logic.graph_bridge import StoreGraph
from quipu.logic.service import LogicHost
from quipu.rest import explorer, problems, route_table
from quipu.rest.auth import Credentials, guard
from quipu.rest.lanes import Lanes, admission
from quipu.rest.middleware import AccessLog, BodyLimit, JsonText
from quipu.rest.routers import (
    acquire,
    align,
    analytics,
    changes,
    episodes,
    events,
    golden_paths,
    governance,
    graphs,
    logic,
    lookup,
    merge,
    owl,
    proposals,
    query,
    questions,
    ranked_search,
    reads,
    reasoning,
    repair,
    retrieval,
    search,
    service,
    shapes,
    sharing,
    update,
    uploads,
    writes,
)
from quipu.store.database import check_location


def _operation_id(route: APIRoute) -> str:
    """Stable OpenAPI operation ids: the handler's name (unique across routers)."""
    return route.name


class Extension(Protocol):
    """Something served beside the REST routes (the MCP endpoint), installed by ``create_app``.

    It keeps imports one way: the layer above REST plugs itself in; REST knows only this shape.
    """

    def install(self, app: FastAPI) -> None:
        """Add routes to the app (called once, at creation)."""

    def running(self, app: FastAPI) -> AbstractAsyncContextManager[None]:
        """What must run while the app serves (entered after the store opens)."""
        ...


@contextmanager
def _delivering(kb: KnowledgeBase, settings: Settings) -> Iterator[None]:
    """The webhook delivery worker, between the store's opening and its closing. Imported
    here: start-up and the embedded app never load it or its HTTP client."""
    from quipu.events.delivery import Delivery

    worker = Delivery(kb.db, settings.events, kb.feeds)
    worker.start()
    try:
        yield
    finally:
        worker.stop(timeout=settings.events.delivery_timeout_s + 5)  # a POST in flight may finish


_ENVELOPE = 256 * 1024  # bytes of JSON around the members: manifest, keys, decisions


def create_app(settings: Settings, extensions: Sequence[Extension] = (), *, deliver: bool = False) -> FastAPI:
    """``deliver``: run the webhook delivery worker (``quipu-server``; a read-only server never
    does, since delivering commits cursors)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        lanes = app.state.lanes = Lanes.from_settings(settings.server)
        lanes.reserve_threads()
        kb = KnowledgeBase.from_settings(settings, max_readers=lanes.readers)
        app.state.kb = kb
        try:
            async with AsyncExitStack() as stack:
                if deliver and not settings.server.read_only:
                    stack.enter_context(_delivering(kb, settings))
                for extension in extensions:
                    await stack.enter_async_context(extension.running(app))
                yield
        finally:
            try:
                app.state.logic.close()  # the logic runtime, if a /logic call opened it
            finally:
                lanes.close()
                kb.close()

    open_reads = settings.server.read_auth == "open"
    app = FastAPI(
        title="quipu",
        summary="A bitemporal RDF knowledge graph for AI agents",
        version=quipu.__version__,
        lifespan=lifespan,
        openapi_url="/openapi.json" if open_reads else None,
        docs_url="/docs" if open_reads else None,
        redoc_url=None,
        dependencies=[Depends(guard), Depends(admission, scope="function")],
        generate_unique_id_function=_operation_id,
        responses=problems.RESPONSES,
    )
    if not open_reads:

        @app.get("/openapi.json", include_in_schema=False)
        async def openapi_document() -> JSONResponse:
            return JSONResponse(app.openapi())

    check_location(settings.store.db)  # a bad path fails here, before the server binds
    app.state.settings = settings
    app.state.credentials = Credentials.from_settings(settings.server)
    # Opened on the first /logic call: no engine or project must not stop the quad store.
    # The logic memory's rdf/3 family reads this server's own store (opened by the lifespan).
    app.state.logic = LogicHost(settings.logic.project, graph=StoreGraph(lambda: app.state.kb.db))
    problems.install(app)
    # The logic routes first: FastAPI matches routers in order, and zpm serve's every tool call is
    # one of them (no other path starts with /logic/, so no match changes).
    routers = [logic.build_router()]
    routers.extend(
        module.router
        for module in (
            service,
            query,
            reads,
            writes,
            update,
            repair,
            episodes,
            shapes,
            uploads,
            proposals,
            search,
            retrieval,
            lookup,
            ranked_search,
            graphs,
            analytics,
            questions,
            events,
            changes,
            reasoning,
            owl,
            governance,
            golden_paths,
            align,
            sharing,
            merge,
            acquire,
        )
    )
    for router in routers:
        app.include_router(router)
    # Our routers' own route lists (FastAPI keeps an included router as one opaque entry).
    for extension in extensions:
        extension.install(app)
    explorer.install(app)  # the web explorer's files at /ui (docs/ui.md)
    missing = route_table.unclassified(
        route_table.served_routes(r for router in routers for r in router.routes)
    )
    if missing:
        raise ConfigError(f"routes missing from the route table: {missing}")
    # Inside the body limit: the text check reads only a body that passed it.
    app.add_middleware(JsonText, paths={path for method, path in route_table.ROUTES if method == "POST"})
    # A share travels JSON-escaped: its body may be up to twice its members (quotes in N-Triples),
    # and a merge carries two shares. The exact member sizes are checked again once parsed.
    cap = settings.sharing.max_share_bytes
    app.add_middleware(
        BodyLimit,
        paths={
            "/import": 2 * cap + _ENVELOPE,
            "/merge/decisions": 4 * cap + _ENVELOPE,
            "/merge/apply": 4 * cap + _ENVELOPE,
        },
    )
    if settings.server.cors_allowed_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.server.cors_allowed_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Accept", "X-Request-Id"],
            expose_headers=["X-Request-Id", "X-Quipu-Ignored-Fields", "X-Quipu-Inference"],
        )
    app.add_middleware(AccessLog)
    return app
