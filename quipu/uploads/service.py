"""``Uploads``: the per-store service behind ``/knot/stage`` and ``/knot/promote``.

It owns the clock (injectable, epoch seconds) and the process's table of live promotion
workers, so it is created once per open store (``KnowledgeBase.uploads``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from quipu.identity import Authenticated
from quipu.store.database import Database
from quipu.uploads import manifest
from quipu.uploads.promote import Knot, Promotions
from quipu.uploads.stage import StageResult, expire, stage


def _wall_clock() -> int:
    return int(time.time())


class Uploads:
    def __init__(self, db: Database, knot: Knot, clock: Callable[[], int] = _wall_clock) -> None:
        self.db = db
        self.promotions = Promotions(db, knot, self.now)
        self.clock = clock

    def now(self) -> int:
        return int(self.clock())

    def stage(
        self,
        *,
        upload_id: str,
        snapshot: str,
        content_hash: str,
        part_hash: str,
        payload: str,
        part_number: int,
        total_parts: int,
        total_bytes: int,
        timestamp: str | None = None,
        actor: str | None = None,
        source: str | None = None,
        graph: str | None = None,
    ) -> StageResult:
        """Stage one part; expired uploads are deleted first (§3.2 rule 5)."""
        now = self.now()
        expire(self.db, now, self.promotions.live())
        part = manifest.check_part(
            upload_id=upload_id,
            snapshot=snapshot,
            content_hash=content_hash,
            part_hash=part_hash,
            payload=payload,
            part_number=part_number,
            total_parts=total_parts,
            total_bytes=total_bytes,
            timestamp=timestamp,
            actor=actor,
            source=source,
            graph=graph,
        )
        return stage(self.db, part, now)

    def promote(self, upload_id: str, *, auth: Authenticated | None = None) -> dict[str, Any]:
        """Start, or read back, the promotion of ``upload_id`` (expired state is deleted first)."""
        expire(self.db, self.now(), self.promotions.live())
        return self.promotions.promote(upload_id, auth)

    def close(self) -> None:
        """Let running promotions finish before the store closes (their writes are atomic anyway)."""
        self.promotions.join()
