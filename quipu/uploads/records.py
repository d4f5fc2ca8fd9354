"""Rows of the staged-upload tables (DM §14.1): manifests, parts, promotion outcomes, expiry."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, delete, func, insert, not_, or_, select, update

from quipu.store.database import Database
from quipu.store.schema import snapshot_promotions as promotions
from quipu.store.schema import snapshot_upload_parts as parts
from quipu.store.schema import snapshot_uploads as uploads
from quipu.uploads.manifest import Manifest

RUNNING, COMPLETE, FAILED = "running", "complete", "failed"


@dataclass(frozen=True)
class Progress:
    """How much of an upload has arrived."""

    parts: int
    bytes: int


@dataclass(frozen=True)
class Outcome:
    """A promotion's persisted state; ``result`` is the JSON body (or the failure's problem members)."""

    state: str
    result: dict[str, Any] | None
    error: str | None


def manifest(conn: Connection, upload_id: str) -> Manifest | None:
    row = conn.execute(select(uploads).where(uploads.c.upload_id == upload_id)).first()
    if row is None:
        return None
    return Manifest(
        snapshot=row.snapshot,
        content_hash=row.content_hash,
        total_parts=int(row.total_parts),
        total_bytes=int(row.total_bytes),
        timestamp=row.timestamp,
        actor=row.actor,
        source=row.source,
        graph=row.graph,
    )


def create_upload(conn: Connection, upload_id: str, m: Manifest, now: int, ttl: int) -> None:
    conn.execute(
        insert(uploads).values(
            upload_id=upload_id,
            snapshot=m.snapshot,
            content_hash=m.content_hash,
            total_parts=m.total_parts,
            total_bytes=m.total_bytes,
            timestamp=m.timestamp,
            actor=m.actor,
            source=m.source,
            graph=m.graph,
            created_at=now,
            expires_at=now + ttl,
        )
    )


def expires_at(conn: Connection, upload_id: str) -> int:
    value: int = conn.execute(
        select(uploads.c.expires_at).where(uploads.c.upload_id == upload_id)
    ).scalar_one()
    return int(value)


def stored_part(conn: Connection, upload_id: str, number: int) -> tuple[str, bytes] | None:
    row = conn.execute(
        select(parts.c.part_hash, parts.c.payload).where(
            parts.c.upload_id == upload_id, parts.c.part_number == number
        )
    ).first()
    return None if row is None else (row.part_hash, bytes(row.payload))


def add_part(conn: Connection, upload_id: str, number: int, part_hash: str, data: bytes) -> None:
    conn.execute(
        insert(parts).values(
            upload_id=upload_id, part_number=number, part_hash=part_hash, byte_count=len(data), payload=data
        )
    )


def progress(conn: Connection, upload_id: str) -> Progress:
    row = conn.execute(
        select(func.count(), func.coalesce(func.sum(parts.c.byte_count), 0)).where(
            parts.c.upload_id == upload_id
        )
    ).one()
    return Progress(int(row[0]), int(row[1]))


def all_parts(conn: Connection, upload_id: str) -> list[tuple[int, str, int, bytes]]:
    """``(part_number, part_hash, byte_count, payload)`` in part order."""
    rows = conn.execute(
        select(parts.c.part_number, parts.c.part_hash, parts.c.byte_count, parts.c.payload)
        .where(parts.c.upload_id == upload_id)
        .order_by(parts.c.part_number)
    )
    return [(int(r[0]), str(r[1]), int(r[2]), bytes(r[3])) for r in rows]


def drop_upload(conn: Connection, upload_id: str) -> None:
    # Foreign keys are off on SQLite: delete the parts explicitly.
    conn.execute(delete(parts).where(parts.c.upload_id == upload_id))
    conn.execute(delete(uploads).where(uploads.c.upload_id == upload_id))


def outcome(conn: Connection, upload_id: str) -> Outcome | None:
    row = conn.execute(select(promotions).where(promotions.c.upload_id == upload_id)).first()
    if row is None:
        return None
    result = json.loads(row.result) if row.result is not None else None
    return Outcome(row.state, result, row.error)


def set_outcome(
    conn: Connection,
    upload_id: str,
    state: str,
    *,
    updated_at: str,
    expires_at: int,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> None:
    """Insert or overwrite the promotion row of ``upload_id``."""
    values = {
        "state": state,
        "result": None if result is None else json.dumps(result, sort_keys=True),
        "error": error,
        "updated_at": updated_at,
        "expires_at": expires_at,
    }
    done = conn.execute(update(promotions).where(promotions.c.upload_id == upload_id).values(**values))
    if done.rowcount == 0:
        conn.execute(insert(promotions).values(upload_id=upload_id, **values))


# -- expiry (§3.2 rule 5) -------------------------------------------------------------------------


def _expired_outcomes(now: int, live: Collection[str]) -> Any:
    # A running promotion with a worker in this process is never cut short.
    return and_(
        promotions.c.expires_at <= now,
        or_(promotions.c.state != RUNNING, not_(promotions.c.upload_id.in_(list(live)))),
    )


def _expired_uploads(now: int) -> Any:
    # Parts a running promotion may still need (or restart from) are kept until it is settled.
    running = select(promotions.c.upload_id).where(promotions.c.state == RUNNING)
    return and_(uploads.c.expires_at <= now, not_(uploads.c.upload_id.in_(running)))


def anything_expired(db: Database, now: int, live: Collection[str]) -> bool:
    """A cheap read first, so that a poll never waits for the writer when there is nothing to delete."""
    with db.read() as conn:
        outcome_hit = conn.execute(select(promotions.c.upload_id).where(_expired_outcomes(now, live))).first()
        upload_hit = conn.execute(select(uploads.c.upload_id).where(_expired_uploads(now))).first()
    return outcome_hit is not None or upload_hit is not None


def purge(conn: Connection, now: int, live: Collection[str]) -> None:
    """Delete expired promotion outcomes, then expired uploads with their parts."""
    conn.execute(delete(promotions).where(_expired_outcomes(now, live)))
    gone = select(uploads.c.upload_id).where(_expired_uploads(now))
    conn.execute(delete(parts).where(parts.c.upload_id.in_(gone)))
    conn.execute(delete(uploads).where(_expired_uploads(now)))
