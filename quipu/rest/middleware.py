"""ASGI middleware: the request body limit, the lone-surrogate check of JSON bodies, and request
ids with one structured log line each.

All are plain ASGI callables (no ``BaseHTTPMiddleware``), so they add microseconds, not a task
per request.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Collection, Mapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from quipu.errors import InvalidField, PayloadTooLarge
from quipu.rest.problems import problem_response

MAX_BODY = 64 * 1024 * 1024  # bytes, on REST and MCP alike (tools-core §0.1)
REQUEST_ID = "x-request-id"
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
access_log = logging.getLogger("quipu.access")


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413 before any handler reads them.

    ``paths`` lowers the limit of single routes: a share import is refused by its declared
    size before its body is read whole (``[quipu.sharing] max_share_bytes``)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY, paths: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.paths = dict(paths or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = min(self.limit, self.paths.get(scope.get("path", ""), self.limit))
        declared = _header(scope, b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > limit:
                await self._refuse(scope, receive, send, limit)
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
            if size > limit:
                await self._refuse(scope, receive, send, limit)
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

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        size = f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"
        response = problem_response(PayloadTooLarge(f"request body larger than {size}"))
        await response(scope, receive, send)


# A JSON escape of a surrogate code point (``\\ud800``-``\\udfff``), or one encoded as UTF-8 bytes
# (which Python's JSON decoder lets through too). Either may be half of a valid pair: only a hint.
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonText:
    """Refuse a JSON request body whose text holds a lone surrogate (400 naming the field).

    Python's JSON decoder, which FastAPI and the logic routes use, turns ``"\\ud800"`` into a string
    that no UTF-8 encoder, driver or RDF term accepts: every route would meet it somewhere else,
    as a 500. This checks the POST bodies of ``paths`` (the REST routes: ``/mcp`` has its own
    JSON-RPC parser, which refuses one) once, before routing. A body without the bytes of a
    surrogate costs two scans; one that is not JSON is left to the route.
    """

    def __init__(self, app: ASGIApp, paths: Collection[str]) -> None:
        self.app = app
        self.paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before its body was in: no one to answer
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        field = lone_surrogate_field(body)
        if field is not None:
            where = "the request body" if field == "" else f"'{field}'"
            refused = InvalidField(
                f"{where} holds a lone surrogate (a \\ud800-\\udfff escape without its pair): "
                "that is not Unicode text, and UTF-8 cannot carry it",
                field=field or None,
            )
            await problem_response(refused)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def lone_surrogate_field(body: bytes) -> str | None:
    """Where a JSON ``body`` holds a lone surrogate, as a dotted path (``nodes.0.name``; ``""``
    for a top-level string), or None when it holds none or is not JSON."""
    if _ESCAPED_SURROGATE.search(body) is None and (
        b"\xed" not in body or not _ENCODED_SURROGATE.search(body)
    ):
        return None
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None  # not JSON: the route says so
    pending: list[tuple[tuple[str, ...], Any]] = [((), value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return ".".join(path)
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                name = _printable(key)
                if name != key:  # the key itself: named with the surrogate escaped
                    return ".".join((*path, name))
                pending.append(((*path, key), child))
        elif isinstance(item, list):
            pending.extend(((*path, str(i)), child) for i, child in reversed(list(enumerate(item))))
    return None


def _printable(text: str) -> str:
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
