"""ASGI middleware: the request body limit, and request ids with one structured log line each.

Both are plain ASGI callables (no ``BaseHTTPMiddleware``), so they add microseconds, not a task
per request.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from quipu.errors import PayloadTooLarge
from quipu.rest.problems import problem_response

MAX_BODY = 64 * 1024 * 1024  # bytes, on REST and MCP alike (tools-core §0.1)
REQUEST_ID = "x-request-id"
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
access_log = logging.getLogger("quipu.access")


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413 before any handler reads them."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > self.limit:
                await self._refuse(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        # No length given (chunked): read up to the limit here, then replay it to the app.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        mib = self.limit // (1024 * 1024)
        response = problem_response(PayloadTooLarge(f"request body larger than {mib} MiB"))
        await response(scope, receive, send)


class AccessLog:
    """Give each request an id (the caller's ``X-Request-Id`` when sane) and log it on stderr."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = _header(scope, REQUEST_ID.encode())
        request_id = given if given is not None and _SAFE_ID.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID.encode(), request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            route = scope.get("route")
            fields: dict[str, Any] = {
                "request_id": request_id,
                "method": scope.get("method"),
                "route": getattr(route, "path", None),
                "path": scope.get("path"),
                "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            }
            access_log.info("request", extra={"fields": fields})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None
