"""Current vectors as one float32 matrix, ranked by a single matrix product (tools-search §3, §6.1).

``VectorIndex`` caches the store's current vectors. ``refresh`` compares the store's vector
generation with the cached one (one row read): when it moved, only the rows changed since are
read and applied (a new vector replaces or joins, a closed one leaves), so the cache follows
writes incrementally, also those of another process. Removed rows are masked and compacted once
they are a quarter of the matrix.

``rank`` scores every cached vector against the query in one BLAS matrix-vector product and
divides by the norms in float64; rows outside the caller's allow-list are masked before the cut,
so a small scope is never starved by a global top-N (§5.1.3); ties keep entity-id order. No
Python loop runs per row.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from quipu.errors import InvalidField
from quipu.store import vectors as store_vectors
from quipu.store.vectors import VectorRow

_INITIAL_CAPACITY: Final = 1024


@dataclass(frozen=True)
class Ranked:
    entity_ids: NDArray[np.int64]  # best first
    similarities: NDArray[np.float64]  # the raw cosine of each


def dimension_error(stored: int, query: int) -> InvalidField:
    return InvalidField(
        f"embedding dimension mismatch: the query has {query} dimensions, the stored vectors {stored}; "
        "re-embed the store with the configured model, or send a vector of the stored dimension",
        field="embedding",
    )


def rank(
    matrix: NDArray[np.float32],
    norms: NDArray[np.float64],
    ids: NDArray[np.int64],
    query: NDArray[np.floating],
    limit: int,
    allowed: NDArray[np.bool_] | None = None,
) -> Ranked:
    """The ``limit`` best rows by cosine with ``query``, among the ``allowed`` ones."""
    if matrix.shape[0] == 0:  # nothing stored: no dimension to disagree with, and no rows
        return Ranked(ids[:0], np.zeros(0, dtype=np.float64))
    if query.shape[0] != matrix.shape[1]:
        raise dimension_error(matrix.shape[1], query.shape[0])
    q = np.asarray(query, dtype=np.float32)
    q_norm = float(np.linalg.norm(q.astype(np.float64)))
    dots = (matrix @ q).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = np.where((norms > 0) & (q_norm > 0), dots / (norms * q_norm), 0.0)
    candidates = np.arange(len(ids)) if allowed is None else np.flatnonzero(allowed)
    if limit < len(candidates):
        # The cut must keep every row tied with the last one, so ties can be ordered by id.
        scores = cosines[candidates]
        kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        candidates = candidates[scores >= kth]
    order = np.lexsort((ids[candidates], -cosines[candidates]))[:limit]
    best = candidates[order]
    return Ranked(ids[best], cosines[best])


class VectorIndex:
    """The current vectors of one store, kept in step with its vector table (thread-safe)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._lock = threading.Lock()
        self._generation = -1
        self._matrix = np.zeros((0, dimension), dtype=np.float32)
        self._norms = np.zeros(0, dtype=np.float64)
        self._ids = np.zeros(0, dtype=np.int64)
        self._named_only = np.zeros(0, dtype=np.bool_)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._size = 0  # rows in use (alive or masked)
        self._row_of: dict[int, int] = {}  # entity id -> row
        self._valid_from: list[str] = []  # of each row: tells a closed row from its successor

    @property
    def generation(self) -> int:
        return self._generation

    def __len__(self) -> int:
        return len(self._row_of)

    def refresh(self, conn: Connection) -> None:
        """Bring the cache up to the store's current vectors (a no-op when nothing changed)."""
        with self._lock:
            stored = store_vectors.generation(conn)
            if stored == self._generation:
                return
            if self._generation < 0:
                self._load(store_vectors.current(conn))
            else:
                self._apply(store_vectors.changed_since(conn, self._generation))
            self._generation = stored

    def rank(
        self, query: NDArray[np.floating], limit: int, *, include_named_only: bool = False,
        allowed_ids: NDArray[np.int64] | None = None,
    ) -> Ranked:  # fmt: skip
        """The best ``limit`` entities for ``query``: named-only entities only when asked, and
        only ids in ``allowed_ids`` when given."""
        with self._lock:
            n = self._size
            mask = self._alive[:n].copy()
            if not include_named_only:
                mask &= ~self._named_only[:n]
            if allowed_ids is not None:
                mask &= np.isin(self._ids[:n], allowed_ids)
            return rank(self._matrix[:n], self._norms[:n], self._ids[:n], query, limit, mask)

    # -- maintenance (under the lock) --------------------------------------------------------

    def _load(self, rows: list[VectorRow]) -> None:
        self._row_of = {}
        self._size = 0
        self._reserve(len(rows))
        self._append(rows)

    def _apply(self, rows: list[VectorRow]) -> None:
        # A closed row leaves (unless the cache already holds a newer one for its entity); then
        # each current row replaces its entity's row or joins.
        for row in rows:
            if row.valid_to is not None:
                at = self._row_of.get(row.entity_id)
                if at is not None and self._valid_from[at] == row.valid_from:
                    self._alive[at] = False
                    del self._row_of[row.entity_id]
        fresh = [row for row in rows if row.valid_to is None]
        joining = []
        for row in fresh:
            at = self._row_of.get(row.entity_id)
            if at is None:
                joining.append(row)
            else:
                self._set(at, row)
        self._reserve(self._size + len(joining))
        self._append(joining)
        if self._size - len(self._row_of) > max(self._size // 4, 64):
            self._compact()

    def _reserve(self, rows: int) -> None:
        capacity = self._matrix.shape[0]
        if rows <= capacity and capacity:
            return
        grown = max(rows, 2 * capacity, _INITIAL_CAPACITY)

        def grow(old: NDArray[np.generic], shape: tuple[int, ...]) -> NDArray[np.generic]:
            new = np.zeros(shape, dtype=old.dtype)
            new[: self._size] = old[: self._size]
            return new

        self._matrix = grow(self._matrix, (grown, self.dimension))  # type: ignore[assignment]
        self._norms = grow(self._norms, (grown,))  # type: ignore[assignment]
        self._ids = grow(self._ids, (grown,))  # type: ignore[assignment]
        self._named_only = grow(self._named_only, (grown,))  # type: ignore[assignment]
        self._alive = grow(self._alive, (grown,))  # type: ignore[assignment]
        self._valid_from = self._valid_from[: self._size] + [""] * (grown - self._size)

    def _append(self, rows: list[VectorRow]) -> None:
        for row in rows:
            self._set(self._size, row)
            self._row_of[row.entity_id] = self._size
            self._size += 1

    def _set(self, at: int, row: VectorRow) -> None:
        if len(row.embedding) != 4 * self.dimension:
            raise dimension_error(len(row.embedding) // 4, self.dimension)
        vector = np.frombuffer(row.embedding, dtype="<f4")
        self._matrix[at] = vector
        self._norms[at] = float(np.linalg.norm(vector.astype(np.float64)))
        self._ids[at] = row.entity_id
        self._named_only[at] = row.named_only
        self._alive[at] = True
        self._valid_from[at] = row.valid_from

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._size])
        self._matrix[: len(keep)] = self._matrix[keep]
        self._norms[: len(keep)] = self._norms[keep]
        self._ids[: len(keep)] = self._ids[keep]
        self._named_only[: len(keep)] = self._named_only[keep]
        self._valid_from[: len(keep)] = [self._valid_from[i] for i in keep]
        self._alive[: len(keep)] = True
        self._alive[len(keep) : self._size] = False
        self._size = len(keep)
        self._row_of = {int(entity): row for row, entity in enumerate(self._ids[: self._size])}
