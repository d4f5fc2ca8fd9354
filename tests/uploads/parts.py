"""Building staged uploads in tests: character-boundary splitting and the hashes, computed here
with hashlib (not with quipu's helpers) so a wrong derivation in quipu fails the tests."""

from __future__ import annotations

import hashlib
from typing import Any


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def split(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` UTF-8 bytes, each cut on a character boundary."""
    data = text.encode("utf-8")
    out, start = [], 0
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # never cut inside a character
            end -= 1
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out


def upload_id(snapshot: str, content_hash: str) -> str:
    return sha((snapshot + "\n" + content_hash).encode("utf-8"))


def parts_of(text: str, snapshot: str, limit: int, **optional: Any) -> list[dict[str, Any]]:
    """The stage bodies of ``text`` split into ``limit``-byte parts, in order."""
    content_hash = sha(text.encode("utf-8"))
    pieces = split(text, limit)
    return [
        {
            "upload_id": upload_id(snapshot, content_hash),
            "snapshot": snapshot,
            "content_hash": content_hash,
            "part_hash": sha(piece.encode("utf-8")),
            "payload": piece,
            "part_number": number,
            "total_parts": len(pieces),
            "total_bytes": len(text.encode("utf-8")),
            **optional,
        }
        for number, piece in enumerate(pieces)
    ]


def document(count: int, tag: str = "v") -> str:
    """Turtle with multi-byte text: ``count`` subjects, each a label and a value."""
    lines = ["@prefix ex: <http://ex.org/> ."]
    for i in range(count):
        lines.append(f'ex:e{i} ex:label "Ñandú {tag} {i} — 東京 🦙" ; ex:n {i} .')
    return "\n".join(lines) + "\n"
