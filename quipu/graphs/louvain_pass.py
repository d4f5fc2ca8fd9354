"""One pass of the deterministic Louvain first level (tools-search §6.6 step 4), compiled.

Kept apart from quipu/graphs/louvain.py so that numba is imported, and the kernel compiled
(or loaded from numba's on-disk cache), only when communities are first asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

EPSILON = 1e-12
# An explicit signature compiles (or loads from numba's on-disk cache) once, at import, rather
# than on a first call's type dispatch.
SIGNATURE = (
    "int64(int64[::1], int64[::1], float64[::1], float64[::1], float64, int64[::1], float64[::1], "
    "float64[::1], int64[::1], int64)"
)


def _compiled(kernel: Callable[..., int]) -> Any:
    try:
        return njit(SIGNATURE, cache=True, nogil=True)(kernel)
    except RuntimeError:  # no writable cache directory anywhere: compile for this process only
        return njit(SIGNATURE, nogil=True)(kernel)


def _one_pass(
    indptr: NDArray[np.int64],
    neighbours: NDArray[np.int64],
    weights: NDArray[np.float64],
    k: NDArray[np.float64],
    two_m: float,
    community: NDArray[np.int64],
    total: NDArray[np.float64],
    scratch: NDArray[np.float64],
    touched: NDArray[np.int64],
    fresh: int,
) -> int:
    """Visit every node in index order, moving it to the neighbouring community of best
    positive gain (exact ties to the lowest label); return how many nodes moved.

    ``community`` and ``total`` (Σtot by label, 0 meaning no entry) are updated in place;
    ``fresh`` is the first label above every label in use. ``scratch`` must be all zeros and is
    left so; ``touched`` is workspace."""
    n = k.shape[0]
    moved = 0
    for i in range(n):
        old = community[i]
        ki = k[i]
        left = total[old]
        alone = abs(left - ki) <= EPSILON
        left -= ki
        total[old] = left if left > EPSILON else 0.0
        count = 0
        for q in range(indptr[i], indptr[i + 1]):
            c = community[neighbours[q]]
            if scratch[c] == 0.0:  # weights are positive: zero means not seen yet
                touched[count] = c
                count += 1
            scratch[c] += weights[q]
        candidates = np.sort(touched[:count])  # ascending label order decides exact ties
        best = 0.0
        target = -1
        share = ki / two_m
        for t in range(count):
            c = candidates[t]
            gain = scratch[c] - share * total[c]
            if gain > best + EPSILON:
                best = gain
                target = c
            scratch[c] = 0.0
        if target < 0:
            if alone:
                target = old
            else:  # nothing gains: i becomes a singleton under a label never used before
                target = fresh
                fresh += 1
        total[target] += ki
        community[i] = target
        if target != old:
            moved += 1
    return moved


one_pass = _compiled(_one_pass)
