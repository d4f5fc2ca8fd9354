"""The ``X-Quipu-Signature`` of a webhook delivery [designed here]: ``sha256=<hex>``, the
HMAC-SHA256 of the exact body bytes under the subscription's secret (docs/webhooks.md).

``verify`` is what a receiver runs, before it parses the body: it compares in constant time.
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "X-Quipu-Signature"
PREFIX = "sha256="


def signature(secret: str, body: bytes) -> str:
    """The header value for ``body`` (the bytes sent, not a re-serialisation of them)."""
    return PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` under ``secret``."""
    if not header:
        return False
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode())
