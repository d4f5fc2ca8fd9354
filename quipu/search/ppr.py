"""Personalized PageRank over ROOT's IRI-to-IRI projection (tools-search §5.7 step 3, §6.5).

The projection is every current ROOT claim whose object is an IRI, as a directed edge subject ->
object (``rdf:type`` included, parallel edges kept). It is built with numpy and scipy.sparse and
cached per store until the transaction head moves. The ranking is a power iteration: each step
is one sparse matrix-vector product, and dangling mass goes back along the restart vector.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from sqlalchemy import Connection

from quipu.store import search_reads
from quipu.store.database import Database
from quipu.store.views import TemporalView

DAMPING: Final = 0.85
MAX_ITERS: Final = 100
TOLERANCE: Final = 1e-6


@dataclass(frozen=True)
class Projection:
    nodes: NDArray[np.int64]  # term ids, in order of first appearance as an edge endpoint
    position: dict[int, int]  # term id -> index into nodes
    transition: sparse.csr_matrix  # T[i, j] = (edges j -> i) / out-degree of j
    dangling: NDArray[np.bool_]  # nodes without out-edges

    @property
    def size(self) -> int:
        return len(self.nodes)


def project(edges: list[tuple[int, int]]) -> Projection:
    """The projection of ``(source, target)`` term-id edges, in scan order."""
    if not edges:
        empty = np.zeros(0, dtype=np.int64)
        return Projection(empty, {}, sparse.csr_matrix((0, 0)), np.zeros(0, dtype=np.bool_))
    pairs = np.asarray(edges, dtype=np.int64)
    ends = pairs.ravel()  # source, target, source, target, ... in scan order
    ids, first = np.unique(ends, return_index=True)
    order = np.argsort(first, kind="stable")
    nodes = ids[order]
    rank_of_sorted = np.empty(len(ids), dtype=np.int64)
    rank_of_sorted[order] = np.arange(len(ids))
    src = rank_of_sorted[np.searchsorted(ids, pairs[:, 0])]
    dst = rank_of_sorted[np.searchsorted(ids, pairs[:, 1])]
    n = len(nodes)
    out_degree = np.bincount(src, minlength=n).astype(np.float64)
    weights = 1.0 / out_degree[src]
    transition = sparse.csr_matrix((weights, (dst, src)), shape=(n, n))  # duplicates add up
    position = {int(node): i for i, node in enumerate(nodes)}
    return Projection(nodes, position, transition, out_degree == 0)


def personalized(
    projection: Projection,
    seeds: Iterable[int],
    *,
    damping: float = DAMPING,
    max_iters: int = MAX_ITERS,
    tolerance: float = TOLERANCE,
) -> NDArray[np.float64] | None:
    """Scores over ``projection.nodes`` (summing to 1) restarting at ``seeds`` (term ids; a seed
    listed twice weighs twice); None when no seed is a node of the projection."""
    hits = [projection.position[s] for s in seeds if s in projection.position]
    if not hits:
        return None
    n = projection.size
    restart = np.bincount(np.asarray(hits, dtype=np.int64), minlength=n).astype(np.float64) / len(hits)
    rank = restart.copy()
    for _ in range(max(max_iters, 1)):
        step = (1.0 - damping) * restart + damping * (projection.transition @ rank)
        lost = float(rank[projection.dangling].sum())
        if lost > 0:
            step += damping * lost * restart
        diff = float(np.abs(step - rank).sum())
        rank = step
        if diff < tolerance:
            break
    total = float(rank.sum())
    return rank / total if total > 0 else rank


# One cached projection per open store, rebuilt when a transaction has committed since.
_cache: weakref.WeakKeyDictionary[Database, tuple[int, Projection]] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def root_projection(db: Database, conn: Connection) -> Projection:
    """ROOT's current projection as of ``conn``'s snapshot (cached per transaction head)."""
    head = db.head_tx(conn)
    with _cache_lock:
        cached = _cache.get(db)
    if cached is not None and cached[0] == head:
        return cached[1]
    built = project(search_reads.reference_edges(conn, TemporalView()))
    with _cache_lock:
        _cache[db] = (head, built)
    return built


def scores_for(
    db: Database, conn: Connection, seeds: list[int], entities: Iterable[int]
) -> dict[int, float] | None:
    """The personalized PageRank of each of ``entities`` (0 when unreached or outside the
    projection), restarting at ``seeds``; None when no seed is in the projection."""
    projection = root_projection(db, conn)
    ranks = personalized(projection, seeds)
    if ranks is None:
        return None
    return {e: float(ranks[projection.position[e]]) if e in projection.position else 0.0 for e in entities}
