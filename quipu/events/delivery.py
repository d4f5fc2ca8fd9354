"""The webhook delivery worker that ``quipu-server`` runs (tools-core §3.13, docs/webhooks.md).

Every ``events.delivery_interval_s`` the worker makes one pass (``tick``) over the
subscriptions. Per subscription: skip it while its backoff lasts; take its delivery lock
(quipu.store.delivery_lock), so that two servers on one store never POST the same batch; read
its cursor ``sub:<consumer_id>`` fresh under the lock, and up to 500 matching events after it;
in batch mode hold them until enough are pending or the oldest is old enough; check the
receiver's addresses again after DNS; POST the batch to the checked address; and only on a 2xx
answer commit the cursor to the last delivered offset, in the write that records the success.
Anything else records a failure and a backoff, and the same events go again later: delivery is
at-least-once. All the state is in the store, so a restarted server resumes where it stopped.

``tick`` is public so that tests drive the worker one deterministic pass at a time.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import httpx
from sqlalchemy import Connection

import quipu
from quipu import times
from quipu.config import EventsSettings
from quipu.events import signing, webhook_guard
from quipu.events.service import Feeds
from quipu.store import event_feed, graph_scope
from quipu.store import subscriptions as rows
from quipu.store.database import Database
from quipu.store.delivery_lock import DeliveryLock, open_lock
from quipu.store.event_feed import WireEvent
from quipu.store.graph_scope import LabelFloorRefused
from quipu.store.schema import ROOT
from quipu.store.subscriptions import Subscription, cursor_id

log = logging.getLogger("quipu.events.delivery")

PAGE: Final = 500  # events per POST at most (the delivery-worker rule)
BACKOFF_BASE_S: Final = 2.0  # the first retry waits 1-2 s; each failure doubles it, up to the cap
PRUNE_EVERY_S: Final = 3600.0  # retention runs hourly (DM §11.2) ...
PRUNE_FIRST_S: Final = 10.0  # ... and once soon after start, not in the middle of start-up
SKIP_EVERY_S: Final = 60.0  # advancing a typed cursor past unmatched events, per subscription
ERROR_MAX: Final = 500  # characters of last_error
DELIVERY_HEADER: Final = "X-Quipu-Delivery"
USER_AGENT: Final = f"quipu/{quipu.__version__}"


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one tick did with one subscription.

    ``outcome``: ``delivered``, ``failed``, ``held`` (batch mode waits), ``idle`` (nothing
    pending), ``waiting`` (backoff), ``busy`` (another process holds the lock), ``gone``
    (deleted meanwhile) or ``error`` (the worker itself failed; logged).
    """

    subscription: int
    consumer_id: str
    outcome: str
    events: int = 0
    status: int | None = None
    error: str | None = None
    delivery_id: str | None = None


def backoff(failures: int, cap: float, rng: random.Random) -> float:
    """Seconds before the next attempt after ``failures`` in a row: 2 s doubled per failure,
    capped at ``cap``, then drawn uniformly from [half, all] of it, so that receivers that
    failed together are not retried in lockstep."""
    full = min(cap, BACKOFF_BASE_S * 2.0 ** min(failures - 1, 32))
    return rng.uniform(full / 2, full)


def _epoch(ts: Any) -> float | None:
    """An event's declared ``ts`` in epoch seconds; None when it does not parse."""
    if not isinstance(ts, str):
        return None
    try:
        moment = datetime.fromisoformat(ts.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:  # a bare date: midnight UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def batch_due(sub: Subscription, pending: Sequence[WireEvent], now: float) -> bool:
    """Batch mode delivers once ``batch_size`` events are pending or the oldest pending event's
    ``ts`` is ``batch_window_s`` old; an unparseable ``ts`` flushes by size only (the batch-mode
    rule)."""
    if len(pending) >= sub.batch_size:
        return True
    oldest = _epoch(pending[0].ts)
    return oldest is not None and now - oldest >= sub.batch_window_s


def _floor_refusal(db: Database, conn: Connection) -> str | None:
    """Why ROOT's label floor refuses reading the log now, or None when it admits it."""
    try:
        graph_scope.enforce(db, conn, (ROOT,))
    except LabelFloorRefused as exc:
        return exc.message
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_MAX else text[: ERROR_MAX - 1] + "…"


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, webhook_guard.WebhookRefused):
        return _short(f"refused: {exc.message}")
    if isinstance(exc, httpx.TimeoutException):
        return _short(f"{type(exc).__name__}: no answer within {timeout:g} s")
    detail = str(exc) or repr(exc)
    return _short(f"{type(exc).__name__}: {detail}")


class Delivery:
    """The worker: ``start()`` runs ``tick()`` on a daemon thread until ``stop()``."""

    def __init__(
        self,
        db: Database,
        settings: EventsSettings,
        feeds: Feeds | None = None,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.feeds = feeds
        self.clock = clock  # wall-clock epoch seconds: retry_at is stored in them
        self.rng = rng or random.Random()
        self._lock: DeliveryLock = open_lock(db)
        # No keep-alive: every delivery connects to the address it has just checked, and a
        # pooled TLS connection is never reused for another name. No proxies from the
        # environment (they would connect elsewhere), no redirects (a 3xx is a failure).
        self._client = httpx.Client(
            timeout=settings.delivery_timeout_s,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self._skipped: dict[int, float] = {}  # subscription -> when its cursor last skipped ahead
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_prune = 0.0
        self._closed = False

    # -- the thread -----------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._next_prune = time.monotonic() + PRUNE_FIRST_S
        self._thread = threading.Thread(target=self._run, name="quipu-delivery", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> bool:
        """Stop after the POST in flight, if any; False when the thread outlived ``timeout``
        (it is a daemon thread and dies with the process)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("the delivery worker did not stop within %s s", timeout)
                return False
        self.close()
        return True

    def close(self) -> None:
        """Release the delivery lock and the HTTP client (``stop`` does it)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._lock.close()
        finally:
            self._client.close()

    def _run(self) -> None:
        log.info("delivery worker started (every %g s)", self.settings.delivery_interval_s)
        while not self._stop.is_set():
            catching_up = False
            try:
                attempts = self.tick()
                # A full page delivered: more is probably waiting, so go on without sleeping.
                catching_up = any(a.outcome == "delivered" and a.events >= PAGE for a in attempts)
            except Exception:
                log.exception("a delivery pass failed")
            try:
                self.prune_if_due()
            except Exception:
                log.exception("event retention failed")
            if not catching_up:
                self._stop.wait(self.settings.delivery_interval_s)

    # -- one pass ---------------------------------------------------------------------------

    def tick(self) -> list[Attempt]:
        """One pass over every subscription; one subscription's failure never stops the rest."""
        with self.db.read() as conn:
            subs = rows.every(conn)
        live = {s.id for s in subs}
        self._skipped = {k: v for k, v in self._skipped.items() if k in live}
        out: list[Attempt] = []
        for sub in subs:
            if self._stop.is_set():
                break
            try:
                out.append(self._one(sub))
            except Exception as exc:
                log.exception("delivery to subscription %s (%s) broke", sub.id, sub.consumer_id)
                out.append(Attempt(sub.id, sub.consumer_id, "error", error=_short(repr(exc))))
        return out

    def _one(self, listed: Subscription) -> Attempt:
        if listed.retry_at is not None and listed.retry_at > self.clock():
            return Attempt(listed.id, listed.consumer_id, "waiting")
        if not self._lock.acquire(listed.id):
            return Attempt(listed.id, listed.consumer_id, "busy")
        try:
            return self._locked(listed)
        finally:
            self._lock.release(listed.id)

    def _locked(self, listed: Subscription) -> Attempt:
        # Everything read again under the lock: another server may have delivered or failed
        # since the listing, and one snapshot keeps the page and the log's head consistent.
        with self.db.read() as conn:
            sub = rows.by_id(conn, listed.id)
            if sub is None:
                return Attempt(listed.id, listed.consumer_id, "gone")
            refused = _floor_refusal(self.db, conn)
            cursor = event_feed.committed_offset(conn, cursor_id(sub.consumer_id)) or 0
            page = event_feed.read_wire_page(conn, after=cursor, limit=PAGE, types=sub.types)
            latest = event_feed.latest_offset(conn)
        now = self.clock()
        if sub.retry_at is not None and sub.retry_at > now:
            return Attempt(sub.id, sub.consumer_id, "waiting")
        if refused is not None and page:
            # Delivery reads ROOT like any reader, so ROOT's label floor stops it too; it backs
            # off like any failure and resumes once the label meets the floor again.
            error = _short(f"refused: {refused}")
            delay = self._failed(sub, None, error)
            log.warning(
                "delivery to subscription %s (%s) %s; next attempt in %.1f s",
                sub.id,
                sub.consumer_id,
                error,
                delay,
            )
            return Attempt(sub.id, sub.consumer_id, "failed", len(page), None, error)
        if not page:
            self._skip_unmatched(sub, cursor, latest, now)
            return Attempt(sub.id, sub.consumer_id, "idle")
        if sub.mode == "batch" and not batch_due(sub, page, now):
            return Attempt(sub.id, sub.consumer_id, "held", events=len(page))
        return self._deliver(sub, cursor, page)

    def _skip_unmatched(self, sub: Subscription, cursor: int, latest: int, now: float) -> None:
        """[designed here] A typed subscription with nothing to deliver moves its cursor to the
        log's head, at most once a minute, so that a rarely matching filter does not hold back
        retention. Safe: the empty page and the head come from one snapshot, and offsets follow
        commit order, so no matching event lies below that head."""
        if not sub.types or latest <= cursor:
            return
        if now - self._skipped.get(sub.id, -math.inf) < SKIP_EVERY_S:
            return
        self._skipped[sub.id] = now
        self._advance(sub, cursor, latest)

    def _advance(
        self, sub: Subscription, cursor: int, offset: int, success: tuple[int, int] | None = None
    ) -> None:
        """Move the cursor from ``cursor`` to ``offset`` unless it was committed meanwhile (a
        deliberate rewind through quipu_events_commit wins); ``success`` (events, status)
        records the delivery in the same transaction, so cursor and state never disagree."""
        at = times.now()
        name = cursor_id(sub.consumer_id)
        with self.db.write() as ctx:
            current = event_feed.committed_offset(ctx.conn, name) or 0
            if current == cursor:
                event_feed.commit_offset(ctx.conn, name, offset, at)
            else:
                log.info(
                    "cursor %s moved from %d to %d meanwhile; keeping %d", name, cursor, current, current
                )
            if success is not None:
                count, status = success
                rows.record_success(ctx.conn, sub.id, events=count, status=status, at=at)

    # -- the POST -----------------------------------------------------------------------------

    def _deliver(self, sub: Subscription, cursor: int, page: Sequence[WireEvent]) -> Attempt:
        first, last = page[0].offset, page[-1].offset
        delivery_id = f"{sub.id}-{first}-{last}"  # the same batch resent keeps its id
        # {"subscription": ..., "events": [envelopes]} from the serialised envelopes, once: the
        # signature covers exactly the bytes sent.
        events = ",".join(event.json for event in page)
        name = json.dumps(sub.consumer_id, ensure_ascii=False)
        body = f'{{"subscription":{name},"events":[{events}]}}'.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            DELIVERY_HEADER: delivery_id,
        }
        if sub.secret is not None:
            headers[signing.HEADER] = signing.signature(sub.secret, body)
        status: int | None = None
        try:
            status, reason = self._post(sub.webhook_url, body, headers)
        except (webhook_guard.WebhookRefused, httpx.HTTPError, OSError) as exc:
            error = _describe(exc, self.settings.delivery_timeout_s)
        else:
            if 200 <= status < 300:
                self._advance(sub, cursor, last, success=(len(page), status))
                log.debug(
                    "delivered %d events (%s) to subscription %s (%s): HTTP %d",
                    len(page),
                    delivery_id,
                    sub.id,
                    sub.consumer_id,
                    status,
                )
                return Attempt(sub.id, sub.consumer_id, "delivered", len(page), status, None, delivery_id)
            error = f"HTTP {status} {reason}".strip()
            if 300 <= status < 400:
                error += " (redirects are not followed)"
        delay = self._failed(sub, status, error)
        log.warning(
            "delivery %s to subscription %s (%s) failed: %s; failure %d in a row, next attempt in %.1f s",
            delivery_id,
            sub.id,
            sub.consumer_id,
            error,
            sub.failures + 1,
            delay,
        )
        return Attempt(sub.id, sub.consumer_id, "failed", len(page), status, error, delivery_id)

    def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        """POST to an address that passed the SSRF check just now, keeping the URL's name in
        the Host header and (https) the TLS server name, so a DNS answer that changes between
        the check and the connection cannot steer the request elsewhere."""
        target = webhook_guard.parse(url)
        addresses = webhook_guard.allowed_addresses(target, allow_private=self.settings.webhook_allow_private)
        original = httpx.URL(target.url)
        pinned_headers = {**headers, "Host": original.netloc.decode("ascii")}
        extensions: dict[str, Any] = {}
        if target.scheme == "https" and webhook_guard.literal(target.host) is None:
            extensions["sni_hostname"] = target.host
        failure: httpx.ConnectError | None = None
        for address in addresses:  # the next address only when one refuses the connection
            request = self._client.build_request(
                "POST",
                original.copy_with(host=str(address)),
                content=body,
                headers=pinned_headers,
                extensions=extensions,
            )
            try:
                response = self._client.send(request, stream=True)
            except httpx.ConnectError as exc:
                failure = exc
                continue
            # The status is all we need: the body, however large, is never read.
            response.close()
            return response.status_code, response.reason_phrase
        assert failure is not None  # allowed_addresses never answers an empty list
        raise failure

    # -- recording ----------------------------------------------------------------------------

    def _failed(self, sub: Subscription, status: int | None, error: str) -> float:
        failures = sub.failures + 1
        delay = backoff(failures, self.settings.retry_max_s, self.rng)
        with self.db.write() as ctx:
            rows.record_failure(
                ctx.conn,
                sub.id,
                failures=failures,
                retry_at=self.clock() + delay,
                status=status,
                error=error,
                at=times.now(),
            )
        return delay

    # -- retention ----------------------------------------------------------------------------

    def prune_if_due(self) -> int | None:
        """Apply ``events.retention_days`` when an hour has passed (and once soon after start);
        the number of events pruned, or None when it was not time (or retention is off)."""
        if self.feeds is None or self.settings.retention_days is None:
            return None
        now = time.monotonic()
        if now < self._next_prune:
            return None
        self._next_prune = now + PRUNE_EVERY_S
        pruned = self.feeds.prune()
        log.info("retention: pruned %d events older than %d days", pruned, self.settings.retention_days)
        return pruned
