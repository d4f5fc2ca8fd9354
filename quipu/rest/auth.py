"""Bearer credentials, read-only mode and the route-class guard (tools-core §0.2).

Reads are open, unless ``server.read_auth`` is ``"token"``: then a read needs a valid credential
too (401 otherwise), except ``/health``, which stays open for probes. A write on a read-only
server is refused (403) whatever the credential; when any credential is configured, a write needs
a valid one (401 otherwise). Tokens are compared in constant time, and every configured
credential is checked on each request, so the time taken does not say which one (if any) nearly
matched.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request

from quipu.config import NamedCredential, ServerSettings
from quipu.errors import ConfigError, ReadOnly, Unauthorized
from quipu.identity import SHARED, Authenticated
from quipu.rest.route_table import READ, WRITE_REASONS, route_class
from quipu.secret_files import read_private

MAX_TOKEN_FILE = 4096  # bytes
OPEN_READS = frozenset({"/health"})  # served without a credential whatever read_auth says
MIN_TOKEN = 16  # characters
_HASH_SCHEME = "sha256"


def hash_token(token: str, salt: bytes | None = None) -> str:
    """The config form of a token: ``sha256:<salt hex>:<hex of sha256(salt || token)>``."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.sha256(salt + token.encode("utf-8")).hexdigest()
    return f"{_HASH_SCHEME}:{salt.hex()}:{digest}"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def _parse_hash(text: str, principal: str) -> tuple[bytes, bytes]:
    parts = text.split(":")
    try:
        if len(parts) != 3 or parts[0] != _HASH_SCHEME:
            raise ValueError
        salt, digest = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        if len(salt) < 8 or len(digest) != 32:
            raise ValueError
    except ValueError:
        raise ConfigError(
            f"credential {principal!r}: token_hash must be 'sha256:<salt hex>:<64 hex digits>' "
            "(make one with `quipu token`)"
        ) from None
    return salt, digest


def read_token_file(path_text: str, what: str) -> str:
    """A private, regular, small file holding one token (surrounding whitespace trimmed)."""
    data = read_private(path_text, what, kind="token file", max_bytes=MAX_TOKEN_FILE)
    token = data.decode("utf-8").strip()
    if len(token) < MIN_TOKEN:
        path = Path(path_text).expanduser()
        raise ConfigError(f"{what}: the token in {path} is shorter than {MIN_TOKEN} characters")
    return token


@dataclass(frozen=True, slots=True)
class _Named:
    identity: Authenticated
    salt: bytes
    digest: bytes


class Credentials:
    """Every bearer credential the server accepts, loaded once at start-up."""

    def __init__(self, shared: str | None, named: list[_Named]) -> None:
        self._shared = shared.encode("utf-8") if shared else None
        self._named = named

    @classmethod
    def from_settings(cls, server: ServerSettings) -> Credentials:
        return cls(server.auth_token, [_load(c) for c in server.credentials])

    @property
    def configured(self) -> bool:
        return self._shared is not None or bool(self._named)

    def verify(self, authorization: str | None) -> Authenticated | None:
        """The identity behind an ``Authorization`` header, or None when it names none we know."""
        token = bearer_token(authorization)
        if token is None:
            return None
        raw = token.encode("utf-8")
        found: Authenticated | None = None
        if self._shared is not None and hmac.compare_digest(raw, self._shared):
            found = SHARED
        for cred in self._named:  # no early exit: every credential costs the same
            if hmac.compare_digest(hashlib.sha256(cred.salt + raw).digest(), cred.digest):
                found = cred.identity
        return found


def _load(cred: NamedCredential) -> _Named:
    identity = Authenticated(cred.principal, cred.credential_id, "named_bearer")
    what = f"credential {cred.principal!r}"
    if cred.token_file is not None:
        salt = secrets.token_bytes(16)
        token = read_token_file(cred.token_file, what)
        return _Named(identity, salt, hashlib.sha256(salt + token.encode("utf-8")).digest())
    assert cred.token_hash is not None
    salt, digest = _parse_hash(cred.token_hash, cred.principal)
    return _Named(identity, salt, digest)


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Bearer <token>`` (scheme case-insensitive, token trimmed), else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def route_template(request: Request) -> str:
    """The matched route's path template (``/entity/{iri:path}``); FastAPI sets it on match."""
    path = getattr(request.scope.get("route"), "path", None)
    return path if isinstance(path, str) else request.url.path


async def guard(request: Request) -> Authenticated | None:
    """Enforce the route's class; the verified identity of a write (None when writes are open).

    Runs as a dependency of every route, so a handler never sees a request it must refuse. It is
    async (it never blocks) so that FastAPI does not send it to a worker thread.
    """
    app = request.app
    template = route_template(request)
    header = request.headers.get("authorization")
    credentials: Credentials = app.state.credentials
    if route_class(request.method, template) == READ:
        closed = app.state.settings.server.read_auth == "token" and template not in OPEN_READS
        if closed and credentials.verify(header) is None:
            raise Unauthorized(
                "this server's reads need a valid 'Authorization: Bearer <token>' header",
                extra={"endpoint": request.url.path},
            )
        return None
    if app.state.settings.server.read_only:
        why = WRITE_REASONS.get((request.method, template))
        raise ReadOnly(
            f"this server is read-only: {request.method} {request.url.path} is a write"
            + (f" ({why})" if why else ""),
            extra={"endpoint": request.url.path},
        )
    if not credentials.configured:
        return None
    identity = credentials.verify(header)
    if identity is None:
        raise Unauthorized(
            "this write needs a valid 'Authorization: Bearer <token>' header",
            extra={"endpoint": request.url.path},
        )
    return identity
