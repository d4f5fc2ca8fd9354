"""Promotion of a fully staged upload (tools-core §3.3): verify every part and the whole, then
replace the producer's snapshot exactly as ``/knot`` with ``replace_snapshot: true`` would.

Lifecycle of one promotion [designed here]:

* The starting call runs the cheap checks synchronously (unknown or expired ``upload_id``,
  missing parts or bytes: 400 at once), registers a worker thread in this process's table of
  live workers and answers ``pending``. Under one lock, a call that finds a live worker, or a
  persisted outcome, never starts another promotion.
* The worker first records ``running`` in ``snapshot_promotions``, then verifies the parts
  (numbered 0…n−1 with no gap, each matching its ``part_hash``, exactly ``total_bytes`` bytes in
  all, ``content_hash``, UTF-8) and calls the knot writer, which is one atomic transaction
  behind every ``/knot`` gate. The outcome (the ``/knot`` body, its SHACL refusal, or the
  failure) then replaces ``running`` in one write; on success the same write deletes the
  staged upload, otherwise the parts are kept. Outcomes expire an hour after they are written.
* Restart: if the process dies mid-promotion, the row still says ``running`` and no worker
  exists in the new process. The next promote call (a poll) for that ``upload_id`` finds the
  orphaned row, starts a new worker from the kept parts and answers ``pending``; later polls
  read the outcome. Because the knot write is atomic, the store holds either the old snapshot or
  the complete new one; a promotion whose write committed just before the kill re-runs as an
  identical replacement, which changes no facts (it records one more transaction).
  Uploads under a ``running`` row are never expired, so a restart always finds its parts; an
  orphaned ``running`` row is itself expired an hour after it started.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from quipu.documents.knot import response_body
from quipu.errors import BadRequest, InvalidField, MissingField, QuipuError, ShaclViolation
from quipu.identity import Authenticated
from quipu.store.database import Database
from quipu.store.writes import KnotResult
from quipu.uploads import records
from quipu.uploads.manifest import TTL_SECONDS, Manifest, sha256

log = logging.getLogger("quipu.uploads")


class Knot(Protocol):
    """The knot writer (``KnowledgeBase.knot``): every ``/knot`` gate applies to a promotion."""

    def __call__(
        self,
        data: str | bytes,
        format: str = "turtle",
        *,
        timestamp: str | None = None,
        actor: str | None = None,
        graph: str | None = None,
        auth: Authenticated | None = None,
        replace_snapshot: bool = False,
        snapshot: str | None = None,
    ) -> KnotResult: ...


def unknown_upload() -> InvalidField:
    return InvalidField("unknown or expired upload_id", field="upload_id", reason="unknown_upload")


def incomplete(m: Manifest, received: records.Progress) -> InvalidField:
    return InvalidField(
        f"upload incomplete: received {received.parts}/{m.total_parts} parts and "
        f"{received.bytes}/{m.total_bytes} bytes",
        field="upload_id",
        reason="upload_incomplete",
    )


def _corrupt(number: int) -> BadRequest:
    return BadRequest(f"missing or corrupt part {number}", reason="corrupt_part")


def assemble(db: Database, upload_id: str) -> tuple[Manifest, bytes]:
    """The verified snapshot of a staged upload (§3.3 rule 3); raises before anything is written."""
    with db.read() as conn:
        m = records.manifest(conn, upload_id)
        rows = records.all_parts(conn, upload_id)
    if m is None:
        raise unknown_upload()
    for expected, (number, part_hash, byte_count, payload) in enumerate(rows):
        if number != expected:  # a gap: part ``expected`` is missing
            raise _corrupt(expected)
        if number >= m.total_parts or len(payload) != byte_count or sha256(payload) != part_hash:
            raise _corrupt(number)
    if len(rows) < m.total_parts:
        raise _corrupt(len(rows))
    data = b"".join(payload for *_, payload in rows)
    if len(data) != m.total_bytes:
        raise incomplete(m, records.Progress(len(rows), len(data)))
    if sha256(data) != m.content_hash:
        raise BadRequest("content_hash does not match assembled payload", reason="content_hash_mismatch")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("assembled snapshot is not UTF-8 Turtle", reason="not_utf8") from None
    return m, data


def _instant(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _failure_body(exc: QuipuError) -> dict[str, Any]:
    return {"status": exc.status, **exc.body()}


def _failure(result: dict[str, Any] | None, error: str | None) -> QuipuError:
    """The persisted failure, raised again for every later poll."""
    body = dict(result or {})
    status = int(body.pop("status", 400))
    message = str(body.pop("error", error or "promotion failed"))
    reason = body.pop("reason", None)
    field = body.pop("field", None)
    exc = QuipuError(message, reason=reason, field=field, extra=body)
    exc.status = status
    return exc


class Promotions:
    """Starts promotions and reads them back; one per process, shared by every request."""

    def __init__(self, db: Database, knot: Knot, clock: Callable[[], int]) -> None:
        self.db = db
        self.knot = knot
        self.clock = clock
        self._lock = threading.Lock()
        self._live: dict[str, threading.Thread] = {}

    def live(self) -> frozenset[str]:
        """The uploads with a worker in this process."""
        with self._lock:
            return frozenset(self._live)

    def promote(self, upload_id: str, auth: Authenticated | None) -> dict[str, Any]:
        """Start or read back the promotion of ``upload_id``: a body, or the recorded failure raised."""
        if upload_id == "":
            raise MissingField("missing or empty required field 'upload_id'", field="upload_id")
        pending = {"upload_id": upload_id, "pending": True}
        with self._lock:
            # The live table is consulted before the row: a worker leaves it only after its
            # outcome committed, so "not live" plus "running" really means orphaned.
            if upload_id in self._live:
                return pending
            with self.db.read() as conn:
                found = records.outcome(conn, upload_id)
                m = records.manifest(conn, upload_id)
                received = records.progress(conn, upload_id)
            if found is not None and found.state == records.COMPLETE:
                return dict(found.result or {})
            if found is not None and found.state == records.FAILED:
                raise _failure(found.result, found.error)
            if found is None:  # a fresh start: the cheap checks answer now (rule 2)
                if m is None:
                    raise unknown_upload()
                if received.parts != m.total_parts or received.bytes != m.total_bytes:
                    raise incomplete(m, received)
            worker = threading.Thread(
                target=self._run, args=(upload_id, auth), name=f"quipu-promote-{upload_id[7:19]}", daemon=True
            )
            self._live[upload_id] = worker
            worker.start()
        return pending

    def join(self, timeout: float | None = None) -> None:
        """Wait for every live worker (shutdown, tests)."""
        for worker in list(self.live_threads()):
            worker.join(timeout)

    def live_threads(self) -> list[threading.Thread]:
        with self._lock:
            return list(self._live.values())

    # -- the worker ------------------------------------------------------------------------------

    def _run(self, upload_id: str, auth: Authenticated | None) -> None:
        try:
            started = self.clock()
            with self.db.write() as ctx:
                records.set_outcome(
                    ctx.conn,
                    upload_id,
                    records.RUNNING,
                    updated_at=_instant(started),
                    expires_at=started + TTL_SECONDS,
                )
            state, body, error, promoted = self._attempt(upload_id, auth)
            finished = self.clock()
            with self.db.write() as ctx:
                records.set_outcome(
                    ctx.conn,
                    upload_id,
                    state,
                    updated_at=_instant(finished),
                    expires_at=finished + TTL_SECONDS,
                    result=body,
                    error=error,
                )
                if promoted:
                    records.drop_upload(ctx.conn, upload_id)
        except Exception:
            # The row stays (or never became) ``running``: the next poll restarts from the parts.
            log.exception("promotion of %s could not record its outcome", upload_id)
        finally:
            with self._lock:
                self._live.pop(upload_id, None)

    def _attempt(
        self, upload_id: str, auth: Authenticated | None
    ) -> tuple[str, dict[str, Any], str | None, bool]:
        """``(state, result body, error, promoted)`` of one promotion run."""
        try:
            m, data = assemble(self.db, upload_id)
            result = self.knot(
                data,
                "turtle",
                replace_snapshot=True,
                snapshot=m.snapshot,
                timestamp=m.timestamp or None,
                actor=m.actor,
                graph=m.graph,
                auth=auth,
            )
        except ShaclViolation as refused:
            # The /knot refusal body (HTTP 200, conforms false); the parts are kept.
            return records.COMPLETE, {**refused.report, "upload_id": upload_id}, None, False
        except QuipuError as exc:
            return records.FAILED, _failure_body(exc), exc.message, False
        except Exception as exc:  # a bug or a storage fault: recorded, so polls do not spin forever
            log.exception("promotion of %s failed", upload_id)
            failed = QuipuError(f"promotion failed: {type(exc).__name__}")
            return records.FAILED, _failure_body(failed), failed.message, False
        body = response_body(result, replace_snapshot=True, snapshot=m.snapshot)
        body.update(
            upload_id=upload_id,
            content_hash=m.content_hash,
            parts=m.total_parts,
            total_bytes=m.total_bytes,
            promoted=True,
        )
        return records.COMPLETE, body, None, True
