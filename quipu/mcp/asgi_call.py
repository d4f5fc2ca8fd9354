"""One HTTP request into an ASGI app in process, without an HTTP client or a socket.

``asgi_request(app, method, path, body)`` builds the HTTP scope an ASGI server would, feeds the
body through ``receive``, collects what the app ``send``s and returns it as an ``AsgiResponse``.
It is what an MCP adapter needs to dispatch a tool call into a REST route and nothing more: no
URL parsing, cookies, redirects or streaming. That costs a fraction of ``httpx.ASGITransport``
(which builds and parses a full client request and response around the same ASGI call), and
the app sees the same request: its middleware, routing, auth dependency, error handlers and
response serialisation all run.

The app's lifespan is not run here (neither does ``httpx.ASGITransport``): enter
``app.router.lifespan_context(app)`` around the calls. An exception the app raises after its
error middleware (an unhandled one) propagates to the caller, as with ``httpx.ASGITransport``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
from starlette.types import ASGIApp, Message

HOST: Final = "in-process"


@dataclass(frozen=True, slots=True)
class AsgiResponse:
    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of a header (``name`` in any case), or None."""
        key = name.lower().encode("latin-1")
        for found, value in self.headers:
            if found.lower() == key:
                return value.decode("latin-1")
        return None

    def json(self) -> Any:
        """The body parsed as JSON (ValueError when it is not)."""
        return json.loads(self.body)


def http_scope(
    method: str,
    path: str,
    body: bytes,
    headers: Iterable[tuple[str, str]] = (),
    query_string: bytes = b"",
    host: str = HOST,
) -> dict[str, Any]:
    """The ``http`` scope of one request (ASGI 3, HTTP/1.1); ``content-length`` is always set."""
    raw_headers = [(b"host", host.encode("latin-1"))]
    raw_headers.extend((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers)
    raw_headers.append((b"content-length", str(len(body)).encode("ascii")))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method.upper(),
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8"),
        "query_string": query_string,
        "root_path": "",
        "headers": raw_headers,
        "client": None,
        "server": (host, 80),
        "extensions": {},
    }


async def asgi_request(
    app: ASGIApp,
    method: str,
    path: str,
    body: bytes = b"",
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
) -> AsgiResponse:
    """Send one request into ``app`` and return its complete response.

    ``headers`` are sent as given (plus ``host`` and ``content-length``). A response the app
    never started is a RuntimeError."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    scope = http_scope(method, path, body, pairs)
    status: int | None = None
    response_headers: tuple[tuple[bytes, bytes], ...] = ()
    chunks: list[bytes] = []
    delivered = False
    finished: anyio.Event | None = None
    complete = False

    async def receive() -> Message:
        nonlocal delivered, finished
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        # Asked again (an app listening for disconnects): the client goes once the answer is in.
        if not complete:
            if finished is None:
                finished = anyio.Event()
            await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, response_headers, complete
        kind = message["type"]
        if kind == "http.response.start":
            status = int(message["status"])
            response_headers = tuple((bytes(k), bytes(v)) for k, v in message.get("headers", ()))
        elif kind == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                complete = True
                if finished is not None:
                    finished.set()

    await app(scope, receive, send)
    if status is None:
        raise RuntimeError(f"{method} {path}: the app returned without starting a response")
    return AsgiResponse(status, response_headers, b"".join(chunks))
