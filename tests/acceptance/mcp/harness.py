"""Shared machinery of the MCP acceptance suite.

A *target* is one isolated store behind one transport: ``http`` is a live uvicorn serving
``create_server_app`` (REST + ``/mcp``) on a free loopback port, ``stdio`` starts a ``quipu mcp``
subprocess (the real console script) for every client. Both read the same kind of config file:
a shared token, two named credentials, one allowed browser Origin and one extra allowed Host.
Clients are the official SDK's ``mcp.Client``; every wait is bounded.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import secrets
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import anyio
import httpx2
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from quipu.config import load_settings
from quipu.mcp.http import create_server_app
from quipu.mcp.registry import Registry, build_registry
from quipu.rest.app import create_app
from quipu.rest.auth import hash_token
from tests.backends import store_location
from tests.rest.live_server import live_server

T = TypeVar("T")
Transport = Literal["http", "stdio"]
TRANSPORTS: Final[tuple[Transport, ...]] = ("http", "stdio")

QUIPU: Final = Path(sys.executable).parent / "quipu"
QUIPU_SERVER: Final = Path(sys.executable).parent / "quipu-server"
CALL_TIMEOUT: Final = 30.0  # one request, including a stdio server's start-up
TEST_TIMEOUT: Final = 60.0  # one test's whole conversation
PROCESS_TIMEOUT: Final = 30.0  # a `quipu` process that must refuse to start

LEGACY_ERA: Final = "2025-11-25"
MODERN_ERA: Final = "2026-07-28"
ALLOWED_ORIGIN: Final = "http://agents.example"
EXTRA_HOST: Final = "quipu.internal"


@dataclass(frozen=True)
class Principal:
    """A credential the test stores accept, and the identity /transactions records for it."""

    token: str
    identity: dict[str, str | None]


SHARED: Final = Principal(
    secrets.token_urlsafe(24),
    {"principal": "legacy-shared-bearer", "credential_id": None, "auth_class": "legacy_shared_bearer"},
)
ALICE: Final = Principal(
    secrets.token_urlsafe(24),
    {"principal": "alice", "credential_id": "alice-laptop", "auth_class": "named_bearer"},
)
BOB: Final = Principal(  # no explicit id: the credential id defaults to the principal
    secrets.token_urlsafe(24), {"principal": "bob", "credential_id": "bob", "auth_class": "named_bearer"}
)
PRINCIPALS: Final = (SHARED, ALICE, BOB)


def write_config(root: Path, extra: str = "") -> Path:
    """The ``[quipu]`` config of a test store (strings as JSON, which TOML basic strings accept),
    with ``extra`` TOML tables appended."""
    q = json.dumps
    text = f"""\
[quipu.store]
db = {q(store_location(root, "store.db"))}

[quipu.server]
auth_token = {q(SHARED.token)}
cors_allowed_origins = [{q(ALLOWED_ORIGIN)}]

[[quipu.server.credentials]]
principal = "alice"
id = "alice-laptop"
token_hash = {q(hash_token(ALICE.token))}

[[quipu.server.credentials]]
principal = "bob"
token_hash = {q(hash_token(BOB.token))}

[quipu.mcp]
allowed_hosts = [{q(EXTRA_HOST + ":*")}]
{extra}"""
    path = root / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables a child server gets beyond the SDK's default few: the session's empty user
    config directory (tests/conftest.py), so no developer config reaches it."""
    return {"XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME", ""), **(extra or {})}


def write_token_file(path: Path, token: str, mode: int = 0o600) -> Path:
    path.write_text(token + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


@dataclass
class Target:
    """One store behind one transport; ``client()`` connects an SDK client to it."""

    transport: Transport
    root: Path
    config: Path
    url: str | None = None  # the HTTP server's base URL
    args: tuple[str, ...] = ()  # extra `quipu mcp` flags (stdio)
    env: dict[str, str] = field(default_factory=dict)  # extra variables for `quipu mcp` (stdio)
    _labels: Iterator[int] = field(default_factory=itertools.count)

    @property
    def db(self) -> str:
        """The store: a SQLite file, or a PostgreSQL database in the suite's PostgreSQL half."""
        return store_location(self.root, "store.db")

    def stdio_command(self, *extra: str) -> list[str]:
        return [str(QUIPU), "mcp", "--config", str(self.config), "--db", self.db, *self.args, *extra]

    def stderr_of(self, label: str) -> str:
        """What the stdio server of client ``label`` wrote to stderr."""
        return (self.root / f"{label}.stderr").read_text(encoding="utf-8")

    @asynccontextmanager
    async def client(
        self,
        token: str | None = None,
        *,
        mode: str = "auto",
        label: str | None = None,
        token_mode: int = 0o600,
    ) -> AsyncIterator[Client]:
        """An SDK client: over HTTP the token is an ``Authorization`` header, over stdio a token file."""
        if self.transport == "http":
            assert self.url is not None
            headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
            async with httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT) as http:
                connection = streamable_http_client(self.url + "/mcp", http_client=http)
                async with Client(connection, mode=mode, read_timeout_seconds=CALL_TIMEOUT) as client:
                    yield client
            return
        label = label or f"client-{next(self._labels)}"
        extra: list[str] = []
        if token is not None:
            token_file = write_token_file(self.root / f"{label}.token", token, token_mode)
            extra = ["--mcp-token-file", str(token_file)]
        command = self.stdio_command(*extra)
        params = StdioServerParameters(
            command=command[0], args=command[1:], env=child_env(self.env), cwd=str(self.root)
        )
        with (self.root / f"{label}.stderr").open("w", encoding="utf-8") as errlog:
            async with Client(
                stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=CALL_TIMEOUT
            ) as client:
                yield client


@contextmanager
def serve(
    transport: Transport,
    root: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    extra_config: str = "",
) -> Iterator[Target]:
    """A fresh store under ``root`` behind ``transport``. HTTP takes settings ``overrides`` (as
    ``load_settings`` does); stdio takes ``quipu mcp`` flags and ``QUIPU_*`` variables; both read
    ``extra_config`` (TOML tables) from the config file."""
    root.mkdir(parents=True, exist_ok=True)
    config = write_config(root, extra_config)
    if transport == "http":
        settings = load_settings(str(config), **dict(overrides or {}))
        with live_server(settings, factory=create_server_app) as url:
            yield Target("http", root, config, url=url)
    else:
        yield Target("stdio", root, config, args=args, env=dict(env or {}))


def registry(config: Path, *, toolsets: list[str] | None = None, read_only: bool = False) -> Registry:
    """What the server should list: the registry of the REST app's own OpenAPI, narrowed."""
    app = create_app(load_settings(str(config)))
    return build_registry(app.openapi()).select(toolsets=toolsets, read_only=read_only)


def run(main: Callable[[], Awaitable[T]], timeout: float = TEST_TIMEOUT) -> T:
    """Run an async conversation from a sync test, bounded by ``timeout`` seconds."""

    async def bounded() -> T:
        with anyio.fail_after(timeout):
            return await main()

    return anyio.run(bounded)


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def body_of(result: types.CallToolResult) -> Any:
    return json.loads(text_of(result))


def error_body(result: types.CallToolResult) -> dict[str, Any]:
    """The REST problem body of an ``isError`` result (asserting it is one)."""
    assert result.is_error is True, text_of(result)
    assert result.structured_content is None
    body = body_of(result)
    assert isinstance(body, dict)
    return body


def ok_body(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON object of a successful result, which is also its ``structuredContent``."""
    assert not result.is_error, text_of(result)
    body = body_of(result)
    assert isinstance(body, dict)
    assert result.structured_content == body
    return body


def turtle(subject: str, value: str) -> str:
    return f'<{subject}> <http://example.org/acceptance/label> "{value}" .'


def access_paths(stderr: str) -> list[str]:
    """REST paths in a server's JSON access log (stderr), ``/mcp`` itself left out."""
    paths = []
    for line in stderr.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(record, dict)
            and record.get("logger") == "quipu.access"
            and record.get("path") != "/mcp"
        ):
            paths.append(str(record.get("path")))
    return paths


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.paths: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", {})
        path = fields.get("path") if isinstance(fields, dict) else None
        if path != "/mcp":
            self.paths.append(str(path))


@contextmanager
def recorded_paths() -> Iterator[list[str]]:
    """REST paths the in-thread HTTP server's app answers meanwhile (its access log), ``/mcp`` left out."""
    logger = logging.getLogger("quipu.access")
    handler, level = _Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.paths
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
