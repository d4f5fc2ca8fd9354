"""Fair reads: admitted reads wait in one of two lanes of bounded slots.

Reads need no credential, so anyone can send heavy queries; without a bound, a handful of cross
products held every reader connection and an unrelated ASK waited for a minute. Each read that
touches the store now takes a slot of its lane for as long as its handler runs:

* the **point** lane: entity lookups, ``/stats``, and ``/query`` when the query has the shape of a
  point lookup (``quipu.sparql.cost``);
* the **heavy** lane: every other read of the store (``/query``, ``/export``, ``/cord``,
  ``/unravel``, ``/fragments``, ``/transactions``, ``/validate``, the logic memory's reads...).

Each lane has ``server.max_concurrent_queries`` slots (default twice the CPU cores). A request
finding its lane full waits, first come first served, for at most ``server.queue_timeout_ms``, then
gets 503 ``server_busy`` with ``Retry-After``. ``/health`` and ``/version`` take no slot; writes
take none either (they queue on the single writer). Which route waits where is
``route_table.lane``. MCP tool calls are dispatched into these same routes, so they wait in the
same lanes.

Two more things a lane needs so that a point lookup never waits behind a heavy query: a reader
connection (the store's pool may grow to ``readers``: one per slot of both lanes, plus spares for
the reads a write makes) and a worker thread (``threads`` are added to the event loop's default
thread limiter, which writes share). Slots are waited for on the event loop, never in a thread.

Heavy ``/query`` answers run on a pool of their own (``Lanes.run_heavy``) whose threads have a
lower OS priority (nice 10, on Linux). The lanes bound how many heavy queries run, but the ones
that run still compete with everything else for the cores. A CPU-bound query now gets a core
only when nothing else wants it. On two cores with four of them running, this took the point
lookup p99 of the soak benchmark from 64 to 50 ms (docs/benchmarks-soak.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread
from fastapi import Request

from quipu.config import ServerSettings
from quipu.errors import ServerBusy
from quipu.rest import route_table
from quipu.rest.auth import route_template
from quipu.rest.route_table import HEAVY, POINT, Lane

T = TypeVar("T")

SPARE_READERS: Final = 2  # reader connections beyond the slots: a write's own reads, /health's none
HEAVY_NICE: Final = 10  # Linux gives a nice-10 thread about a tenth of a contended core
DEFAULT_THREADS: Final = 40  # anyio's default worker threads, which everything else shares


class Lanes:
    """The slots of both lanes for one app; made in its lifespan, on its event loop."""

    def __init__(self, slots: int, queue_timeout_ms: int) -> None:
        self.slots = slots
        self.wait = queue_timeout_ms / 1000
        self.retry_after = max(1, math.ceil(self.wait))
        self._free = {POINT: anyio.Semaphore(slots), HEAVY: anyio.Semaphore(slots)}
        self._heavy: ThreadPoolExecutor | None = None

    @classmethod
    def from_settings(cls, server: ServerSettings) -> Lanes:
        slots = server.max_concurrent_queries or 2 * (os.cpu_count() or 1)
        return cls(slots, server.queue_timeout_ms)

    @property
    def readers(self) -> int:
        """Reader connections the store's pool must be able to open."""
        return 2 * self.slots + SPARE_READERS

    def reserve_threads(self) -> None:
        """Raise the running loop's default thread limiter so admitted reads never wait for a thread."""
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, DEFAULT_THREADS + 2 * self.slots)

    async def run_heavy(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a thread of the heavy pool, whose threads run at a lower OS priority
        (``HEAVY_NICE``): a CPU-bound query then yields the cores to point lookups, the event
        loop and writes, and still has them whenever nothing else wants them."""
        if self._heavy is None:
            self._heavy = ThreadPoolExecutor(self.slots, "quipu-heavy", initializer=_lower_priority)
        context = contextvars.copy_context()
        work = asyncio.get_running_loop().run_in_executor(self._heavy, partial(context.run, fn, *args))
        # As anyio's worker threads: a cancelled request still holds its slot until the thread
        # is done, so no more queries run than there are slots.
        with anyio.CancelScope(shield=True):
            result = await work
        return result

    def close(self) -> None:
        if self._heavy is not None:
            self._heavy.shutdown(wait=False, cancel_futures=True)

    @asynccontextmanager
    async def slot(self, lane: Lane) -> AsyncIterator[None]:
        """Hold a slot of ``lane``; raises ServerBusy when none frees within the bounded wait."""
        free = self._free[lane]
        try:
            free.acquire_nowait()  # the common case, without a checkpoint
        except anyio.WouldBlock:
            with anyio.move_on_after(self.wait) as waited:
                await free.acquire()
            if waited.cancelled_caught:
                raise ServerBusy(
                    f"every {lane} read slot ({self.slots}) stayed taken for "
                    f"{self.wait:g} s (server.queue_timeout_ms): try again later",
                    retry_after=self.retry_after,
                ) from None
        try:
            yield
        finally:
            free.release()


def _lower_priority() -> None:
    try:  # on Linux a thread id names the thread alone; elsewhere this would renice the process
        if sys.platform == "linux":
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HEAVY_NICE)
    except OSError:  # not permitted here: the pool still keeps heavy queries off the shared one
        pass


async def admission(request: Request) -> AsyncIterator[None]:
    """Hold the route's lane slot while its handler runs (an app-wide dependency, function scope).

    Routes that pick their lane per request (``/query``) take the slot themselves."""
    lane = route_table.lane(request.method, route_template(request))
    if lane is None:
        yield
        return
    lanes: Lanes = request.app.state.lanes
    async with lanes.slot(lane):
        yield
