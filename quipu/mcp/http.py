"""Streamable HTTP at ``/mcp`` on ``quipu-server``: stateless, JSON responses.

Each POST is a fresh transport (no session survives a restart, so none goes stale). The SDK's
transport security checks the Host header (421 otherwise) and a browser's Origin, which must be
listed in ``server.cors_allowed_origins`` (403 otherwise; no Origin is normal for agents). The
request's ``Authorization`` header is what tool calls forward to REST, which decides.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from quipu.config import Settings
from quipu.errors import MethodNotAllowed
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import Registry, build_registry
from quipu.mcp.server import build_server, http_credential
from quipu.rest.app import create_app
from quipu.rest.middleware import MAX_BODY
from quipu.rest.problems import problem_response

PATH: Final = "/mcp"
LOOPBACK_HOSTS: Final = ("127.0.0.1:*", "localhost:*", "[::1]:*")


def allowed_hosts(settings: Settings) -> list[str]:
    host = settings.server.host
    own = [] if host in ("0.0.0.0", "::", "") else [f"[{host}]:*" if ":" in host else f"{host}:*"]
    patterns = {*LOOPBACK_HOSTS, *own, *settings.mcp.allowed_hosts}
    # "name:*" is any port, the default one too: a Host header without a port (behind a proxy).
    return sorted(patterns | {p.removesuffix(":*") for p in patterns if p.endswith(":*")})


def served_registry(app: FastAPI, settings: Settings) -> Registry:
    """The tools of this app's routes, narrowed by ``mcp.toolsets`` / ``mcp.read_only_tools``."""
    return build_registry(app.openapi()).select(
        toolsets=settings.mcp.toolsets, read_only=settings.mcp.read_only_tools
    )


class _PostOnly:
    """Stateless streamable HTTP needs only POST: GET would hold an idle event stream open."""

    def __init__(self, app: StreamableHTTPASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") != "POST":
            response = problem_response(
                MethodNotAllowed(f"{scope.get('method')} is not allowed on {PATH}: POST JSON-RPC messages"),
                headers={"Allow": "POST"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class McpHttp:
    """The ``/mcp`` endpoint as a REST-app extension (see ``quipu.rest.app.Extension``)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.manager: StreamableHTTPSessionManager | None = None
        self.dispatcher: Dispatcher | None = None

    def install(self, app: FastAPI) -> None:
        registry = served_registry(app, self.settings)
        self.dispatcher = Dispatcher(app, registry)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed_hosts(self.settings),
            allowed_origins=list(self.settings.server.cors_allowed_origins),
        )
        # One manager per app: its run() may be entered only once.
        self.manager = StreamableHTTPSessionManager(
            app=build_server(registry, self.dispatcher, http_credential),
            stateless=True,
            json_response=True,
            security_settings=security,
            max_request_body_size=MAX_BODY,
        )
        endpoint: Any = _PostOnly(StreamableHTTPASGIApp(self.manager))
        app.router.routes.append(Route(PATH, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))
        app.state.mcp_registry = registry

    @asynccontextmanager
    async def running(self, app: FastAPI) -> AsyncIterator[None]:
        assert self.manager is not None and self.dispatcher is not None
        async with self.manager.run():
            try:
                yield
            finally:
                await self.dispatcher.aclose()


def create_server_app(settings: Settings) -> FastAPI:
    """The REST app with ``/mcp`` beside it: what ``quipu-server`` serves."""
    return create_app(settings, extensions=[McpHttp(settings)])
