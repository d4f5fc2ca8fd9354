"""``quipu_spotlight`` (tools-search §5.9): mentions of known entities in a piece of text.

Every labeled ROOT entity (``labels.labeled_rows``) gives two surface forms: its lower-cased
label (confidence 0.95) and its lower-cased IRI local name (0.85). Each form's non-overlapping
occurrences in the lower-cased text are annotated, without a word-boundary check, at their UTF-8
byte offset. Annotations are ordered by offset, then confidence (best first), and only the first
per (offset, IRI) is kept, wherever the duplicates sort (§5.9: de-duplicating by the pair
throughout, not only adjacent ones).

The surface forms are cached per store, keyed on its latest transaction id, so any committed
write invalidates them. The store is read only to learn that id and, on a miss, to refill; the
scan runs on the cached forms with no lock held. A cold cache being refilled by another request
is not waited for: the call answers at once with no annotations (an empty list is no proof of
absence). A refill runs under the normal query deadline, ``search.query_timeout_ms`` (408 past it).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from quipu.search import labels
from quipu.store import budget
from quipu.store.database import Database

LABEL_CONFIDENCE: Final = 0.95
LOCAL_NAME_CONFIDENCE: Final = 0.85
_CHECK_EVERY: Final = 4096  # rows prepared between deadline checks


@dataclass(frozen=True, slots=True)
class Surface:
    form: str  # lower-cased, never empty
    confidence: float
    iri: str
    type: str  # the type's local name, "Thing" when the row has none


class SurfaceCache:
    """One store's surface forms, for the transaction id they were read at."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the two fields below
        self._refilling = threading.Lock()  # held by the one request refilling
        self._head = -1
        self._surfaces: tuple[Surface, ...] = ()

    def get(self, db: Database, timeout_ms: int) -> tuple[Surface, ...] | None:
        """The current surface forms; None when they are stale and another request is refilling."""
        with db.read() as conn:
            head = db.head_tx(conn)
        with self._lock:
            if self._head == head:
                return self._surfaces
        if not self._refilling.acquire(blocking=False):
            return None  # §5.9 cache discipline: never wait behind another refill
        try:
            with self._lock:
                if self._head == head:  # filled while this request was taking the lock
                    return self._surfaces
            with db.read() as conn, budget.enforce(db, conn, timeout_ms=timeout_ms, max_join_rows=None) as b:
                head = db.head_tx(conn)
                rows = labels.labeled_rows(db, conn)
                surfaces = _surfaces(rows, b)
            with self._lock:
                self._head, self._surfaces = head, surfaces
            return surfaces
        finally:
            self._refilling.release()


_caches: weakref.WeakKeyDictionary[Database, SurfaceCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def cache_of(db: Database) -> SurfaceCache:
    """The process-wide cache of one store."""
    with _caches_lock:
        cache = _caches.get(db)
        if cache is None:
            cache = _caches[db] = SurfaceCache()
        return cache


def _surfaces(rows: Sequence[labels.LabeledRow], b: budget.Budget) -> tuple[Surface, ...]:
    out: list[Surface] = []
    for n, row in enumerate(rows):
        if n % _CHECK_EVERY == 0:
            b.check_deadline()
        kind = labels.local_name(row.type) if row.type else "Thing"
        for form, confidence in (
            (row.label.lower(), LABEL_CONFIDENCE),
            (labels.local_name(row.iri).lower(), LOCAL_NAME_CONFIDENCE),
        ):
            if form:
                out.append(Surface(form, confidence, row.iri, kind))
    b.check_deadline()
    return tuple(out)


def _occurrences(text: str, form: str) -> list[int]:
    """Code-point indexes of the non-overlapping occurrences of ``form``, left to right."""
    found: list[int] = []
    at = text.find(form)
    while at >= 0:
        found.append(at)
        at = text.find(form, at + len(form))
    return found


class _Positions:
    """Maps code-point indexes of the lower-cased text to UTF-8 byte offsets in it, and to the
    caller's characters (lower-casing can lengthen a character: ``İ`` becomes ``i̇``)."""

    def __init__(self, text: str, lowered: str) -> None:
        self.text = text
        self.lowered = lowered
        self._bytes: list[int] | None = None
        self._original: list[int] | None = None
        if len(lowered) != len(text):
            self._original = [i for i, ch in enumerate(text) for _ in range(len(ch.lower()))]
            self._original.append(len(text))

    def byte_offset(self, at: int) -> int:
        if self._bytes is None:
            self._bytes = [0]
            for ch in self.lowered:
                self._bytes.append(self._bytes[-1] + len(ch.encode("utf-8")))
        return self._bytes[at]

    def surface(self, at: int, length: int) -> str:
        if self._original is None:
            return self.text[at : at + length]
        start = self._original[at]
        end = self._original[at + length - 1] + 1
        return self.text[start:end]


def annotate(text: str, confidence: float, surfaces: Sequence[Surface]) -> list[dict[str, Any]]:
    lowered = text.lower()
    positions = _Positions(text, lowered)
    found: dict[str, list[int]] = {}  # one scan per distinct form
    hits: list[tuple[int, float, Surface, int]] = []
    for surface in surfaces:
        if surface.confidence < confidence:
            continue
        at_all = found.get(surface.form)
        if at_all is None:
            at_all = found[surface.form] = _occurrences(lowered, surface.form)
        hits.extend((at, surface.confidence, surface, len(surface.form)) for at in at_all)
    hits.sort(key=lambda hit: (hit[0], -hit[1]))  # stable: row order otherwise
    seen: set[tuple[int, str]] = set()
    out: list[dict[str, Any]] = []
    for at, score, surface, length in hits:
        if (at, surface.iri) in seen:
            continue
        seen.add((at, surface.iri))
        out.append(
            {
                "surface": positions.surface(at, length),
                "iri": surface.iri,
                "type": surface.type,
                "confidence": score,
                "offset": positions.byte_offset(at),
            }
        )
    return out


def spotlight(db: Database, text: str, confidence: float, timeout_ms: int) -> dict[str, Any]:
    surfaces = cache_of(db).get(db, timeout_ms)
    annotations = [] if surfaces is None else annotate(text, confidence, surfaces)
    return {"text": text, "annotations": annotations}
