"""``Uploads``: the per-store service behind ``/knot/stage`` and ``/knot/promote``.

It owns the clock (injectable, epoch seconds) and the process's table of live promotion
workers, so it is created once per open store (``KnowledgeBase.uploads``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Unpack

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

    def stage(self, **fields: Unpack[manifest.StageFields]) -> StageResult:
        """Stage one immutable part of a large snapshot upload (tools-core §3.2); no facts change.

        Expired uploads are deleted first (§3.2 rule 5)."""
        now = self.now()
        expire(self.db, now, self.promotions.live())
        part = manifest.check_part(**fields)
        return stage(self.db, part, now)

    def promote(self, upload_id: str, *, auth: Authenticated | None = None) -> dict[str, Any]:
        """Start or read back the atomic promotion of a staged upload (tools-core §3.3); expired
        state is deleted first.

        Answers ``{"upload_id", "pending": True}`` while it runs in the background, then the
        ``/knot`` body plus the upload's identity (or the SHACL refusal body); a recorded
        failure is raised again on every call until it expires.
        """
        expire(self.db, self.now(), self.promotions.live())
        return self.promotions.promote(upload_id, auth)

    def close(self) -> None:
        """Let running promotions finish before the store closes (their writes are atomic anyway)."""
        self.promotions.join()
