"""The checks of one staged part that need no store (tools-core §3.2): required fields, hash
forms, the derived ``upload_id``, part bounds and sizes, and the part's own hash."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import NotRequired, TypedDict, Unpack

from quipu import times
from quipu.errors import InvalidField, MissingField

MAX_PART_BYTES = 512 * 1024
MAX_PARTS = 512
MAX_TOTAL_BYTES = 128 * 1024 * 1024
TTL_SECONDS = 3600  # uploads and promotion outcomes expire one hour after they start

_HASH = re.compile(r"sha256:[0-9a-f]{64}")


def sha256(data: bytes) -> str:
    """``sha256:`` + the lowercase hex digest of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def derive_upload_id(snapshot: str, content_hash: str) -> str:
    return sha256((snapshot + "\n" + content_hash).encode("utf-8"))


@dataclass(frozen=True)
class Manifest:
    """What the first part of an upload fixes; every later part must carry the same values."""

    snapshot: str
    content_hash: str
    total_parts: int
    total_bytes: int
    timestamp: str  # "" = the promotion's own time
    actor: str | None
    source: str | None
    graph: str | None

    def differences(self, other: Manifest) -> list[str]:
        """The names of the fields where ``other`` differs from this manifest."""
        return [name for name in self.__dataclass_fields__ if getattr(self, name) != getattr(other, name)]


@dataclass(frozen=True)
class Part:
    """One checked part: its manifest, number, hash and UTF-8 bytes."""

    upload_id: str
    manifest: Manifest
    part_number: int
    part_hash: str
    data: bytes


def _required(name: str, value: str) -> None:
    if value == "" or (name == "snapshot" and not value.strip()):
        raise MissingField(f"missing or empty required field '{name}'", field=name)


def _hash_form(name: str, value: str) -> None:
    if not _HASH.fullmatch(value):
        raise InvalidField(
            f"'{name}' must be 'sha256:' followed by 64 lowercase hex digits",
            field=name,
            reason="invalid_hash",
        )


def _in_range(name: str, value: int, low: int, high: int, what: str, reason: str) -> None:
    if not low <= value <= high:
        raise InvalidField(f"'{name}' must be {what}; got {value}", field=name, reason=reason)


class StageFields(TypedDict):
    """The fields of one stage request (the body of ``POST /knot/stage``)."""

    upload_id: str
    snapshot: str
    content_hash: str
    part_hash: str
    payload: str
    part_number: int
    total_parts: int
    total_bytes: int
    timestamp: NotRequired[str | None]  # transaction time used at promotion (empty = then)
    actor: NotRequired[str | None]
    source: NotRequired[str | None]
    graph: NotRequired[str | None]


def check_part(**fields: Unpack[StageFields]) -> Part:
    """Validate one stage request in the order of §3.2's error list; raises a 400 on the first fault."""
    upload_id, snapshot, content_hash = fields["upload_id"], fields["snapshot"], fields["content_hash"]
    part_hash, payload, part_number = fields["part_hash"], fields["payload"], fields["part_number"]
    total_parts, total_bytes = fields["total_parts"], fields["total_bytes"]
    for name, value in (
        ("upload_id", upload_id),
        ("snapshot", snapshot),
        ("content_hash", content_hash),
        ("part_hash", part_hash),
        ("payload", payload),
    ):
        _required(name, value)
    for name, value in (("upload_id", upload_id), ("content_hash", content_hash), ("part_hash", part_hash)):
        _hash_form(name, value)
    if upload_id != derive_upload_id(snapshot, content_hash):
        raise InvalidField(
            'upload_id is not derived as "sha256:" + hex(SHA-256(snapshot + "\\n" + content_hash))',
            field="upload_id",
            reason="upload_id_mismatch",
        )
    _in_range("total_parts", total_parts, 1, MAX_PARTS, f"from 1 to {MAX_PARTS}", "part_out_of_range")
    _in_range(
        "part_number", part_number, 0, total_parts - 1, f"from 0 to {total_parts - 1}", "part_out_of_range"
    )
    # Parts arrive as JSON strings, so they are whole characters; sizes are UTF-8 bytes (rule 3).
    data = payload.encode("utf-8")
    _in_range(
        "payload", len(data), 1, MAX_PART_BYTES, f"1 to {MAX_PART_BYTES} UTF-8 bytes", "size_out_of_range"
    )
    _in_range(
        "total_bytes",
        total_bytes,
        len(data),
        MAX_TOTAL_BYTES,
        f"from this part's size ({len(data)} bytes) to {MAX_TOTAL_BYTES} bytes",
        "size_out_of_range",
    )
    if sha256(data) != part_hash:
        raise InvalidField(
            "part_hash does not match payload bytes", field="part_hash", reason="hash_mismatch"
        )
    times.check_timestamp(fields.get("timestamp"))  # used at promotion: refused now, not then
    manifest = Manifest(
        snapshot=snapshot,
        content_hash=content_hash,
        total_parts=total_parts,
        total_bytes=total_bytes,
        timestamp=fields.get("timestamp") or "",
        actor=fields.get("actor"),
        source=fields.get("source"),
        graph=fields.get("graph"),
    )
    return Part(upload_id, manifest, part_number, part_hash, data)
