"""Keeping a SQLite store's write-ahead log small while readers and writers keep going.

SQLite appends every commit to ``<db>-wal`` and copies it back into the database file at a
checkpoint. A PASSIVE checkpoint never waits, so readers that are always somewhere in the log
keep it from ever finishing, and the log only starts again from its beginning when a writer finds
it fully copied with no reader inside it. Under steady reads and writes that never happens: the
log grew to 813 MB in 35 s in a probe. Three things bound it here:

- ``journal_size_limit``: after the log starts over, its file is cut back to this size (4 MiB,
  or half the checkpointer's limit when that is smaller);
- a checkpointer thread beside the writer: PASSIVE checkpoints as commits accumulate, and a
  reset when the file passes ``limit_bytes``. The reset first copies what it can with a PASSIVE
  checkpoint while writes go on, then a RESTART checkpoint holds new writers back for at most
  ``reset_wait_ms`` while it copies the rest and the readers already inside the log finish (new
  readers then read the database file). The next commit starts the log over at its beginning
  and cuts the file back. A reader that starts during that wait still pins the log, so a stream
  of long queries would keep it from ever finishing: long reads (``LongReads``) are drained
  first, and new ones wait until the log is empty. Writes go on during the drain until the log
  reaches three times the limit; past that they wait too, which is what bounds the log when
  queries run for seconds;
- a TRUNCATE checkpoint when the store is opened (a crash leaves the log behind) and when it
  is closed cleanly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Final

log = logging.getLogger("quipu.store.wal")

MIB: Final = 1024 * 1024
JOURNAL_SIZE_LIMIT: Final = 4 * MIB  # the log file's size after it starts over
DEFAULT_LIMIT_MB: Final = 16  # past this, a checkpoint that empties the log
_TICK: Final = 0.1  # seconds between size checks: the log grows ~2 MB in one under heavy writes


class LongReads:
    """Reads that may run for seconds (SPARQL, exports), counted, and a gate that holds new ones
    back while the checkpointer empties the log."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._held = False

    @contextmanager
    def running(self, max_wait: float = 60.0) -> Iterator[None]:
        """Around one long read; waits (at most ``max_wait`` s) while the gate is held."""
        with self._cond:
            if self._held:
                self._cond.wait_for(lambda: not self._held, timeout=max_wait)
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def hold(self) -> None:
        """New long reads wait from now until ``release``."""
        with self._cond:
            self._held = True

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()

    def drained(self, timeout: float) -> bool:
        """Whether the long reads running now finished within ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: self._active == 0, timeout=timeout)


def journal_size_limit(limit_bytes: int) -> int:
    """What a log's file is cut back to when it starts over: below the checkpointer's limit, so
    that a log started over never looks full (the checkpointer reads the file's size)."""
    return min(JOURNAL_SIZE_LIMIT, limit_bytes // 2)


def wal_path(database: str) -> str:
    return database + "-wal"


def wal_bytes(database: str) -> int:
    """The size of ``database``'s write-ahead log file (0 when there is none)."""
    try:
        return os.stat(wal_path(database)).st_size
    except FileNotFoundError:
        return 0


def _connect(path: str, busy_timeout_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    return conn


def truncate(path: str, wait_ms: int, mode: str = "TRUNCATE") -> bool:
    """Copy the whole log into the database and cut its file to zero bytes, waiting at most
    ``wait_ms`` for readers inside the log and for a writer; True when it got that far.

    ``mode="RESTART"`` does the same but leaves the file: the next writer starts the log over at
    its beginning and cuts the file back to ``journal_size_limit``. That costs the writer about
    0.2 ms, where truncating to zero held writers back for up to 17 ms (measured, 16 MiB log).
    """
    conn = _connect(path, wait_ms)
    try:
        busy, _, _ = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        return not busy
    except sqlite3.Error:  # locked by another process past the wait: only tidying, try later
        return False
    finally:
        conn.close()


class WalCheckpointer:
    """Checkpoints from a thread of its own, so that no commit pays for one.

    With automatic checkpoints, every thousandth page or so a commit also ran a checkpoint and
    its fsync, which made the 99th-percentile small write ten times slower than the median. The
    writer runs with ``wal_autocheckpoint=0``; this thread runs a PASSIVE checkpoint every
    ``every`` commits or ``interval`` seconds, and resets the log when it is over
    ``limit_bytes`` (see the module's docstring for why both).
    """

    def __init__(
        self,
        path: str,
        busy_timeout_ms: int,
        *,
        long_reads: LongReads | None = None,
        write_lock: AbstractContextManager[object] | None = None,
        drain_timeout: float = 60.0,
        limit_bytes: int = DEFAULT_LIMIT_MB * MIB,
        reset_wait_ms: int = 15_000,
        every: int = 256,
        interval: float = 1.0,
    ) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.long_reads = long_reads or LongReads()
        # The store's in-process writer lock: SQLite's busy handler only polls for the write lock,
        # and a writer that commits and begins again in a loop would win every poll.
        self.write_lock = write_lock or threading.Lock()
        self.drain_timeout = drain_timeout  # long reads have deadlines; this only bounds a stuck one
        self.limit_bytes = limit_bytes
        # Never as long as a writer's own busy wait, or a held-back write would fail.
        self.reset_wait_ms = min(reset_wait_ms, busy_timeout_ms // 2)
        self.every = every
        self.interval = interval
        self.peak_bytes = 0
        self.resets = 0
        self._commits = 0
        # After a RESTART the file keeps its size until the next commit starts the log over.
        self._restarted = False
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._resetting = threading.Event()
        self._reset_done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quipu-wal-checkpoint", daemon=True)

    def start(self) -> None:
        """Empty a log a crashed process left behind, then start checkpointing."""
        left = wal_bytes(self.path)
        if left > JOURNAL_SIZE_LIMIT:
            began = time.monotonic()
            done = truncate(self.path, min(1_000, self.reset_wait_ms))  # another process may hold it
            log.info(
                "write-ahead log of %.1f MiB found at open: %s in %.0f ms",
                left / MIB,
                "checkpointed and truncated" if done else "still in use by another process, kept",
                (time.monotonic() - began) * 1000,
            )
        self._thread.start()

    def committed(self) -> None:
        """After each commit, on the writing thread: a look at the log's size (a stat call, ~2 µs
        against ~1 ms for the smallest write), so that the checkpointer hears of a full log at once
        and a writer past three times the limit waits for the truncation: a tick of the thread
        is long enough for fast writes to add tens of MiB."""
        self._commits += 1
        self._restarted = False
        size = wal_bytes(self.path)
        if size > self.limit_bytes or self._commits >= self.every:
            self._wake.set()
        if size > 3 * self.limit_bytes and self._resetting.is_set():
            self._reset_done.wait(self.reset_wait_ms / 1000)

    def _run(self) -> None:
        conn = _connect(self.path, self.busy_timeout_ms)
        last = time.monotonic()
        try:
            while not self._stopping.is_set():
                self._wake.wait(_TICK)
                self._wake.clear()
                size = wal_bytes(self.path)
                self.peak_bytes = max(self.peak_bytes, size)
                if size > self.limit_bytes and not self._restarted:
                    self._reset(size, conn)
                    last = time.monotonic()
                elif self._commits and (
                    self._commits >= self.every or time.monotonic() - last >= self.interval
                ):
                    self._commits = 0
                    last = time.monotonic()
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    except sqlite3.Error:  # busy or locked: the next round retries
                        continue
        finally:
            conn.close()

    def _reset(self, size: int, conn: sqlite3.Connection) -> None:
        """Empty the log: hold new long reads back, let the running ones finish while writes go
        on (until the log reaches ``3 * limit_bytes``), copy what it can, then RESTART, which
        holds writes back for at most ``reset_wait_ms`` while the readers still inside the log
        finish. RESTART rather than TRUNCATE: cutting a 16 MiB file to zero held writers back
        for about 17 ms, and the next commit cuts it back anyway (``truncate``)."""
        began = time.monotonic()
        self._commits = 0
        self._reset_done.clear()
        self._resetting.set()
        self.long_reads.hold()
        try:
            give_up = began + self.drain_timeout
            while not self.long_reads.drained(_TICK):
                if wal_bytes(self.path) > 3 * self.limit_bytes or time.monotonic() > give_up:
                    break
            # Copy what can be copied while writes go on, so that the RESTART, which holds
            # them back, copies only the frames committed since (the whole copy under the
            # writer lock was the 99th percentile of small writes: 42 ms with 16 MiB logs).
            with contextlib.suppress(sqlite3.Error):  # busy or locked: the RESTART copies it all
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            with self.write_lock:
                done = truncate(self.path, self.reset_wait_ms, "RESTART")
        finally:
            self.long_reads.release()
            self._resetting.clear()
            self._reset_done.set()
        took = (time.monotonic() - began) * 1000
        if done:
            self.resets += 1
            self._restarted = True
            log.info(
                "write-ahead log at %.1f MiB: checkpointed and started over in %.0f ms", size / MIB, took
            )
        else:
            log.warning(
                "write-ahead log at %.1f MiB: readers kept it in use for %.0f ms; retrying",
                size / MIB,
                took,
            )

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._thread.join()
        # A short wait: another process may keep the log open, and this is only tidying.
        truncate(self.path, min(1_000, self.busy_timeout_ms))
