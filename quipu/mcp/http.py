"""Streamable HTTP at ``/mcp`` on ``quipu-server``: stateless, JSON responses.

Each POST is a fresh transport (no session survives a restart, so none goes stale). Before it,
the SDK's transport-security check guards against DNS rebinding: the Host header must be one
well-formed host (a name or an IP literal, an optional port: ``well_formed_host``) that is loopback,
``server.host`` or one of ``mcp.allowed_hosts`` (421 otherwise), and a browser's Origin must be the
server's own loopback origin (``http://127.0.0.1:<port>``, ``http://localhost:<port>`` or
``http://[::1]:<port>``, for the port the request came in on) or be listed in
``server.cors_allowed_origins`` (403 otherwise; no Origin is normal for agents). The request's
``Authorization`` header is what tool calls forward to REST, which decides; with
``server.read_auth = "token"`` a request without a valid one is refused here already (401), so
that listing the tools, and the version tool answered in process, are not open either.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from quipu.config import Settings
from quipu.errors import MethodNotAllowed, Unauthorized
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import Registry, registry_for
from quipu.mcp.server import build_server, http_credential
from quipu.rest.app import create_app
from quipu.rest.auth import Credentials
from quipu.rest.middleware import MAX_BODY
from quipu.rest.problems import problem_response

PATH: Final = "/mcp"
LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_HOSTS: Final = tuple(f"{name}:*" for name in LOOPBACK_NAMES)


_LABEL: Final = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME: Final = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_HOST: Final = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253})(?::([0-9]{1,5}))?")


def well_formed_host(value: str) -> bool:
    """Whether a Host header is a hostname, an IPv4 literal or a bracketed IPv6 literal, then an
    optional port of 1-65535, and nothing else.

    The SDK's check matches ``name:*`` by prefix, so ``127.0.0.1:3030@evil`` or
    ``localhost:x`` would pass it: a header that is not a host at all is refused first, the
    same way (421)."""
    found = _HOST.fullmatch(value)
    if found is None:
        return False
    name, port = found.groups()
    if name.startswith("["):
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return False
    elif _HOSTNAME.fullmatch(name) is None:
        return False
    return port is None or 1 <= int(port) <= 65535


def _single_host(scope: Scope) -> str | None:
    """The request's one Host header, or None when it has none or several."""
    found = [value for key, value in scope.get("headers", ()) if key == b"host"]
    return found[0].decode("latin-1") if len(found) == 1 else None


def allowed_hosts(settings: Settings) -> list[str]:
    host = settings.server.host
    own = [] if host in ("0.0.0.0", "::", "") else [f"[{host}]:*" if ":" in host else f"{host}:*"]
    patterns = {*LOOPBACK_HOSTS, *own, *settings.mcp.allowed_hosts}
    # "name:*" is any port, the default one too: a Host header without a port (behind a proxy).
    return sorted(patterns | {p.removesuffix(":*") for p in patterns if p.endswith(":*")})


def served_registry(app: FastAPI, settings: Settings) -> Registry:
    """The tools of this app's routes, narrowed by ``mcp.toolsets`` / ``mcp.read_only_tools``
    (unset: the default surface; the opt-in ``logic`` toolset only when named)."""
    return registry_for(app.openapi(), toolsets=settings.mcp.toolsets, read_only=settings.mcp.read_only_tools)


def own_origins(port: int) -> list[str]:
    """The origins of a page this server serves itself, on a loopback name, at ``port``."""
    origins = [f"http://{name}:{port}" for name in LOOPBACK_NAMES]
    if port == 80:  # a browser leaves the scheme's default port out of an Origin
        origins += [f"http://{name}" for name in LOOPBACK_NAMES]
    return origins


class _Guard:
    """POST only, then the SDK's Host and Origin checks, then (closed reads) the credential, then
    the transport.

    Stateless streamable HTTP needs only POST: GET would hold an idle event stream open. The
    server's own loopback origins depend on the port it listens on, which is known only per
    request: ``--bind 127.0.0.1:0`` leaves it to the kernel and an embedding uvicorn (the test
    servers) never tells the settings. So the port is the socket's the request came in on (the
    ASGI ``server`` address), not the Host header's: the client cannot choose it, and Host is
    checked on its own. One SDK check per port, built on first use (a server has one or two).
    """

    def __init__(
        self,
        app: StreamableHTTPASGIApp,
        hosts: list[str],
        origins: list[str],
        credentials: Credentials | None = None,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins
        self.credentials = credentials  # None: reads are open, tool calls' REST routes decide
        self.checks: dict[int | None, TransportSecurityMiddleware] = {}

    def check(self, port: int | None) -> TransportSecurityMiddleware:
        found = self.checks.get(port)
        if found is None:
            origins = [*self.origins, *(own_origins(port) if port else ())]
            settings = TransportSecuritySettings(
                enable_dns_rebinding_protection=True, allowed_hosts=self.hosts, allowed_origins=origins
            )
            found = self.checks[port] = TransportSecurityMiddleware(settings)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope.get("method") != "POST":
                response = problem_response(
                    MethodNotAllowed(
                        f"{scope.get('method')} is not allowed on {PATH}: POST JSON-RPC messages"
                    ),
                    headers={"Allow": "POST"},
                )
                await response(scope, receive, send)
                return
            host = _single_host(scope)
            if host is None or not well_formed_host(host):
                await Response("Invalid Host header", status_code=421)(scope, receive, send)  # as the SDK's
                return
            server = scope.get("server")  # (host, port); the port is None on a Unix socket
            request = Request(scope)
            refused = await self.check(server[1] if server else None).validate_request(request, is_post=True)
            if refused is not None:
                await refused(scope, receive, send)
                return
            credentials = self.credentials
            if credentials is not None and credentials.verify(request.headers.get("authorization")) is None:
                response = problem_response(
                    Unauthorized(
                        "this server's reads need a valid 'Authorization: Bearer <token>' header",
                        extra={"endpoint": PATH},
                    )
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
        # One manager per app: its run() may be entered only once. Host and Origin are checked
        # before it, by _Guard; the transport still checks the Content-Type.
        self.manager = StreamableHTTPSessionManager(
            app=build_server(registry, self.dispatcher, http_credential),
            stateless=True,
            json_response=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=MAX_BODY,
        )
        closed = self.settings.server.read_auth == "token"
        endpoint: Any = _Guard(
            StreamableHTTPASGIApp(self.manager),
            hosts=allowed_hosts(self.settings),
            origins=list(self.settings.server.cors_allowed_origins),
            credentials=app.state.credentials if closed else None,
        )
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
    """The REST app with ``/mcp`` beside it and the webhook delivery worker running: what
    ``quipu-server`` serves."""
    return create_app(settings, extensions=[McpHttp(settings)], deliver=True)
