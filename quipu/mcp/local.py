"""The REST app built in this process with a dispatcher into it, for callers that own its lifespan.

``quipu mcp`` (stdio) and ``quipu tool call --db`` both build the app as the server does, learn
its tools without opening the store, and open the store (the app's lifespan) only to call them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from quipu.config import Settings
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.http import served_registry
from quipu.rest.app import create_app


class LocalTools:
    """The tools of a REST app in this process; ``open()`` opens its store for the calls."""

    def __init__(self, settings: Settings) -> None:
        self.app = create_app(settings)
        self.dispatcher = Dispatcher(self.app, served_registry(self.app, settings))

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Dispatcher]:
        try:
            async with self.app.router.lifespan_context(self.app):
                yield self.dispatcher
        finally:
            await self.dispatcher.aclose()
