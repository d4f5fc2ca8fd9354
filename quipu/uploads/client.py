"""A client of a running server's staged uploads (tools-core §3.2-§3.3) [designed here].

``push`` splits a snapshot into parts of at most 512 KiB on UTF-8 character boundaries, stages
them, starts the promotion and polls until it is no longer pending. Re-running after an
interruption is safe: an identical part is an idempotent replay, and a promotion that already
ran answers its recorded outcome.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from quipu.errors import BadRequest, InvalidField, QuipuError, StorageError
from quipu.uploads.manifest import MAX_PART_BYTES, MAX_PARTS, MAX_TOTAL_BYTES

Progress = Callable[[int, int], None]  # (bytes sent, total bytes)


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def upload_id(snapshot: str, content_hash: str) -> str:
    """The id the server derives from the snapshot key and the whole payload's hash."""
    return _sha256(f"{snapshot}\n{content_hash}".encode())


def split_parts(text: str, limit: int = MAX_PART_BYTES) -> list[bytes]:
    """UTF-8 parts of at most ``limit`` bytes, each cut on a character boundary."""
    data = text.encode("utf-8")
    parts: list[bytes] = []
    start = 0
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # a continuation byte: step back
            end -= 1
        parts.append(data[start:end])
        start = end
    return parts


@dataclass(frozen=True)
class Plan:
    """The manifest every part repeats, and the parts themselves."""

    upload_id: str
    snapshot: str
    content_hash: str
    parts: list[bytes]
    total_bytes: int
    optional: dict[str, str]

    def bodies(self) -> Iterator[dict[str, Any]]:
        for number, part in enumerate(self.parts):
            yield {
                "upload_id": self.upload_id,
                "snapshot": self.snapshot,
                "content_hash": self.content_hash,
                "part_hash": _sha256(part),
                "payload": part.decode("utf-8"),
                "part_number": number,
                "total_parts": len(self.parts),
                "total_bytes": self.total_bytes,
                **self.optional,
            }


def plan(
    text: str,
    snapshot: str,
    *,
    timestamp: str | None = None,
    actor: str | None = None,
    graph: str | None = None,
    part_bytes: int = MAX_PART_BYTES,
) -> Plan:
    """Check the sizes and build the parts; refuses what the server would refuse."""
    if not snapshot.strip():
        raise InvalidField("a non-empty snapshot key is required", field="snapshot")
    if not 1 <= part_bytes <= MAX_PART_BYTES:
        raise InvalidField(f"part size must be 1 to {MAX_PART_BYTES} bytes", field="part_bytes")
    data = text.encode("utf-8")
    if not 1 <= len(data) <= MAX_TOTAL_BYTES:
        raise InvalidField(f"a staged snapshot holds 1 byte to {MAX_TOTAL_BYTES} bytes", field="FILE")
    parts = split_parts(text, part_bytes)
    if len(parts) > MAX_PARTS:
        raise InvalidField(
            f"{len(parts)} parts of at most {part_bytes} bytes; the limit is {MAX_PARTS}", field="part_bytes"
        )
    digest = _sha256(data)
    optional = {k: v for k, v in (("timestamp", timestamp), ("actor", actor), ("graph", graph)) if v}
    return Plan(upload_id(snapshot, digest), snapshot, digest, parts, len(data), optional)


def _refused(status: int, body: dict[str, Any]) -> QuipuError:
    """The server's refusal as quipu's own error: its message, reason and field."""
    message = f"HTTP {status}: {body.get('error') or 'refused'}"
    reason, field = body.get("reason"), body.get("field")
    error: QuipuError = BadRequest(message) if status < 500 else StorageError(message)
    error.reason = str(reason) if reason else error.reason
    error.field = str(field) if field else None
    error.status = status
    return error


def _post(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        response = client.post(path, json=body)
    except httpx.HTTPError as exc:
        raise StorageError(f"cannot reach the server: {exc}") from None
    try:
        answer: dict[str, Any] = response.json()
    except ValueError:
        raise BadRequest(f"{path} answered HTTP {response.status_code} without JSON") from None
    if response.status_code >= 300:
        raise _refused(response.status_code, answer)
    return answer


def push(
    staged: Plan,
    server: str,
    *,
    token: str | None = None,
    progress: Progress | None = None,
    poll_seconds: float = 0.25,
    timeout_seconds: float = 3600.0,
) -> dict[str, Any]:
    """Stage every part, promote, and poll; returns the promotion's final answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    sent = 0
    with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=60.0) as client:
        for body, part in zip(staged.bodies(), staged.parts, strict=True):
            _post(client, "/knot/stage", body)
            sent += len(part)
            if progress is not None:
                progress(sent, staged.total_bytes)
        deadline = time.monotonic() + timeout_seconds
        while True:
            answer = _post(client, "/knot/promote", {"upload_id": staged.upload_id})
            if answer.get("pending") is not True:
                return answer
            if time.monotonic() > deadline:
                raise StorageError(
                    f"promotion of {staged.upload_id} still pending after {timeout_seconds:.0f} s"
                )
            time.sleep(poll_seconds)
