"""The graph explorer's static files, served at ``/ui/`` (docs/ui.md).

The explorer is plain JavaScript modules and one vendored library (d3-force, with its licence),
shipped as package data in ``quipu/rest/ui_assets``: nothing is fetched from a CDN, so it works
air-gapped. The files carry no data, so they are served without credentials, like ``/health``;
every read the page makes goes through the REST routes and their bearer check. A strict
Content-Security-Policy keeps the page to its own scripts and this origin: graph data is only ever
inserted as text, and the policy is the second line of defence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

ASSETS: Final = Path(__file__).resolve().parent / "ui_assets"
PREFIX: Final = "/ui"
_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS: Final = [
    (b"content-security-policy", _POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    # Revalidate every time: an upgraded server must never run with a stale module.
    (b"cache-control", b"no-cache"),
]


class _Assets(StaticFiles):
    """Starlette's static files (index.html for the directory, ETag revalidation), with the
    explorer's security headers on every answer."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await super().__call__(scope, receive, with_headers)


def install(app: FastAPI) -> None:
    """Mount the explorer at ``/ui`` (``/ui`` itself redirects to ``/ui/``). A mount is outside
    the route table and the app's dependencies: serving files needs no credential."""
    app.mount(PREFIX, _Assets(directory=ASSETS, html=True, follow_symlink=False), name="ui")
