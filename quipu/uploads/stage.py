"""``stage``: store one immutable part of an upload (tools-core §3.2).

Staging never parses Turtle and never touches the fact log (rule 4): it writes only the upload
tables, in one short write transaction that also holds the manifest and replay checks.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from quipu.errors import InvalidField
from quipu.store.database import Database
from quipu.uploads import records
from quipu.uploads.manifest import TTL_SECONDS, Part


@dataclass(frozen=True)
class StageResult:
    upload_id: str
    part_number: int
    received_parts: int
    total_parts: int
    idempotent: bool
    expires_in_seconds: int

    def as_json(self) -> dict[str, object]:
        return {
            "upload_id": self.upload_id,
            "part_number": self.part_number,
            "received_parts": self.received_parts,
            "total_parts": self.total_parts,
            "idempotent": self.idempotent,
            "expires_in_seconds": self.expires_in_seconds,
        }


def expire(db: Database, now: int, live: Collection[str]) -> None:
    """Delete what has expired (rule 5); writes only when a read found something to delete."""
    if records.anything_expired(db, now, live):
        with db.write() as ctx:
            records.purge(ctx.conn, now, live)


def stage(db: Database, part: Part, now: int) -> StageResult:
    """Store ``part`` (already checked by ``manifest.check_part``); a replay changes nothing."""
    with db.write() as ctx:
        conn = ctx.conn
        fixed = records.manifest(conn, part.upload_id)
        if fixed is None:
            records.create_upload(conn, part.upload_id, part.manifest, now, TTL_SECONDS)
        elif fixed != part.manifest:
            raise InvalidField(
                "upload_id already exists with a different immutable manifest",
                field="upload_id",
                reason="manifest_mismatch",
                extra={"mismatched": fixed.differences(part.manifest)},
            )
        stored = records.stored_part(conn, part.upload_id, part.part_number)
        if stored is None:
            records.add_part(conn, part.upload_id, part.part_number, part.part_hash, part.data)
        elif stored != (part.part_hash, part.data):
            # The stored part is kept (rule 2): raising rolls back nothing but this call.
            raise InvalidField(
                "part_number already exists with different bytes", field="part_number", reason="part_conflict"
            )
        received = records.progress(conn, part.upload_id).parts
        expires = records.expires_at(conn, part.upload_id)
    return StageResult(
        upload_id=part.upload_id,
        part_number=part.part_number,
        received_parts=received,
        total_parts=part.manifest.total_parts,
        idempotent=stored is not None,
        expires_in_seconds=max(0, expires - now),
    )
