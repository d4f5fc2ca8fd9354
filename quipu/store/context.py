"""One open write transaction and what it collects: the records a write hands to the event log.

``Database.write`` creates a ``WriteContext``; writers, gates and the term dictionary add to it;
at commit the event log (``events.emit``) reads it. Kept apart from all three so that none of
them imports another to name these types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from quipu.identity import Authenticated
from quipu.store.dialect import Dialect


@dataclass(frozen=True, slots=True)
class TxInfo:
    """A transaction opened inside a write: its id, declared time, producer key and graph id."""

    id: int
    timestamp: str
    source: str | None
    graph: int


@dataclass(frozen=True)
class QueuedEvent:
    """An event queued during a write: a gate's advisory (``shacl.violation`` from an "emit"
    shape) or a registry change (``shapes.loaded``).

    Appended after the write's semantic events, in the same transaction; lost with it on rollback.
    ``ts`` defaults to the write's declared timestamp.
    """

    type: str
    subject: str | None
    payload: dict[str, Any] = field(default_factory=dict)
    ts: str | None = None


@dataclass(frozen=True)
class Refusal:
    """What a gate is checking, kept on the write context while it runs (``WriteContext.gate``).

    A ``WriteRefused`` raised while it is set is that gate's refusal, recorded as ``write.refused``.
    """

    gate: str
    graph: str | None  # the destination graph IRI; None for ROOT
    actor: str | None
    source: str | None
    datums: int  # statements the refused write carried
    timestamp: str | None = None


@dataclass(frozen=True)
class EpisodeMark:
    """Set by the episode writer: the activity node and group of the episode being written."""

    name: str
    activity: str
    group_id: str | None


@dataclass
class WriteContext:
    """One open write transaction. Terms interned here join the cache only after commit."""

    conn: Connection
    dialect: Dialect
    pending_terms: dict[str, int] = field(default_factory=dict)
    auth: Authenticated | None = None  # recorded in transaction_auth for every transaction opened
    advisories: list[QueuedEvent] = field(default_factory=list)  # queued by gates, emitted at commit
    transactions: list[TxInfo] = field(default_factory=list)  # opened here, in order (events)
    episode: EpisodeMark | None = None  # the episode being written, for episode.ingested
    refusal: Refusal | None = None  # set while a gate runs: a WriteRefused then is its refusal
    schema_terms: list[tuple[str, str]] = field(default_factory=list)  # first seen here (events)
    # (phase, done, total) for long work inside the write: index builds, the event log
    progress: Callable[[str, int, int], None] | None = None
    _pending_iris: dict[int, str] = field(default_factory=dict, repr=False)

    def pending_iris(self) -> dict[int, str]:
        """``pending_terms`` inverted (id -> IRI). Interning only ever adds terms, so the map is
        rebuilt only when it has grown: a bulk load's event log asks it once per batch."""
        if len(self._pending_iris) != len(self.pending_terms):
            self._pending_iris = {tid: iri for iri, tid in self.pending_terms.items()}
        return self._pending_iris

    @contextmanager
    def gate(self, refusal: Refusal) -> Iterator[None]:
        """Run a write gate: a ``WriteRefused`` it raises is recorded as ``write.refused``."""
        self.refusal = refusal
        yield
        self.refusal = None


def head_tx(conn: Connection) -> int:
    """The latest committed transaction id (0 for an empty store)."""
    value = conn.exec_driver_sql("SELECT MAX(id) FROM transactions").scalar()
    return int(value or 0)
