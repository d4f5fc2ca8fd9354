"""Deterministic single-level Louvain communities (tools-search §6.6).

The spec fixes the visiting order (ascending term id), the candidate order (ascending community
label), the tie rule (a candidate must beat the best gain by more than 1e-12, starting from 0, so
exact ties go to the lowest label) and the fresh labels a node takes when it leaves a community
for nothing better. Only the first level runs: there is no aggregation phase, so libraries
(networkx, igraph, python-louvain) give other partitions and cannot stand in for this.

Each move depends on every move before it, so a pass is a sequential loop over nodes: it is
compiled with numba (quipu/graphs/louvain_pass.py), about fifty times faster than the same loop
in Python at a million edges. Everything around the loop is vectorised numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

EPSILON: Final = 1e-12
MAX_PASSES: Final = 100


@dataclass(frozen=True)
class Partition:
    groups: list[list[int]]  # node indices, each group ascending; groups by smallest member
    modularity: float


def undirected(n: int, src: NDArray[np.int64], dst: NDArray[np.int64]) -> sparse.csr_matrix:
    """The symmetric weight matrix: each directed edge u→v with u ≠ v adds 1 to w(u,v) and to
    w(v,u); self-loops are dropped and parallel edges accumulate (§6.6 step 1)."""
    keep = src != dst
    s, d = src[keep], dst[keep]
    rows = np.concatenate([s, d])
    cols = np.concatenate([d, s])
    weights = np.ones(len(rows), dtype=np.float64)
    matrix = sparse.csr_matrix((weights, (rows, cols)), shape=(n, n))  # duplicates add up
    matrix.sum_duplicates()
    matrix.sort_indices()
    return matrix


def communities(
    n: int,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    progress: Callable[[int, int], None] | None = None,
) -> Partition:
    """Louvain over nodes ``0..n-1`` (indexed by ascending term id) and directed edges
    ``src[i] → dst[i]``. ``progress(pass, moved)`` is told after each pass."""
    if n == 0:
        return Partition([], 0.0)
    matrix = undirected(n, src, dst)
    degree = np.asarray(matrix.sum(axis=1)).ravel()
    two_m = float(degree.sum())
    if two_m == 0.0:  # no edge but self-loops: every node alone, modularity 0 (§6.6 step 2)
        return Partition([[i] for i in range(n)], 0.0)
    labels = _first_level(matrix, degree, two_m, progress)
    return Partition(_groups(labels), modularity(matrix, degree, two_m, labels))


def _first_level(
    matrix: sparse.csr_matrix,
    degree: NDArray[np.float64],
    two_m: float,
    progress: Callable[[int, int], None] | None,
) -> list[int]:
    from quipu.graphs.louvain_pass import one_pass  # compiled on first use, not at import

    n = matrix.shape[0]
    indptr = matrix.indptr.astype(np.int64)
    neighbours = matrix.indices.astype(np.int64)
    weights = matrix.data.astype(np.float64)
    k = degree.astype(np.float64)
    community = np.arange(n, dtype=np.int64)
    # Σtot by label; an entry at or below 1e-12 counts as dropped (§6.6 step 4). Labels stay
    # below 2n: they are compacted after each pass and a pass takes at most n fresh ones.
    total = np.zeros(2 * n + 1, dtype=np.float64)
    total[:n] = np.where(k > EPSILON, k, 0.0)
    scratch = np.zeros(2 * n + 1, dtype=np.float64)
    touched = np.empty(max(n, 1), dtype=np.int64)
    for number in range(1, MAX_PASSES + 1):
        moved = int(one_pass(indptr, neighbours, weights, k, two_m, community, total, scratch, touched, n))
        if progress is not None:
            progress(number, moved)
        if not moved:
            break
        _compact(community, total)
    return [int(c) for c in community]


def _compact(community: NDArray[np.int64], total: NDArray[np.float64]) -> None:
    """Renumber the labels in use to 0..L-1, keeping their order; the next fresh label is then
    L, still above every label in use. Only the relative order of labels decides ties, so the
    partition is the one the spec's ever-growing labels give."""
    used, dense = np.unique(community, return_inverse=True)
    kept = total[used].copy()
    total[:] = 0.0
    total[: len(used)] = kept
    community[:] = dense


def _groups(labels: list[int]) -> list[list[int]]:
    """Members ascending; groups ordered by their smallest member (§6.6 step 6)."""
    by_label: dict[int, list[int]] = {}
    for node, label in enumerate(labels):  # ascending node order: members come out sorted
        by_label.setdefault(label, []).append(node)
    return sorted(by_label.values(), key=lambda members: members[0])


def modularity(
    matrix: sparse.csr_matrix, degree: NDArray[np.float64], two_m: float, labels: list[int]
) -> float:
    """Q = Σ_c [in_c / m − (tot_c / 2m)²], in_c the weight inside c counted once (§6.6 step 7)."""
    _, dense = np.unique(np.asarray(labels, dtype=np.int64), return_inverse=True)
    coo = matrix.tocoo()
    inside = dense[coo.row] == dense[coo.col]
    count = int(dense.max()) + 1
    in_c = np.bincount(dense[coo.row[inside]], weights=coo.data[inside], minlength=count) / 2.0
    tot_c = np.bincount(dense, weights=degree, minlength=count)
    m = two_m / 2.0
    return float(np.sum(in_c / m - (tot_c / two_m) ** 2))
