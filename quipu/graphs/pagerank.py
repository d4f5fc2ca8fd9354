"""PageRank, global and personalised, over a directed multigraph (tools-search §6.5).

A power iteration where each step is one sparse matrix-vector product. Parallel edges each
carry weight (an out-degree counts every edge), and the rank held by dangling nodes (no
out-edges) goes back along the restart vector rather than uniformly, so a personalised run
never leaks mass to nodes the seeds cannot reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from scipy import sparse

DAMPING: Final = 0.85
MAX_ITERS: Final = 100
TOLERANCE: Final = 1e-6


@dataclass(frozen=True)
class Walk:
    """The random walk of a graph: ``transition[i, j]`` = (edges j → i) / out-degree of j."""

    transition: sparse.csr_matrix
    dangling: NDArray[np.bool_]

    @property
    def size(self) -> int:
        return int(self.transition.shape[0])


def walk(n: int, src: NDArray[np.int64], dst: NDArray[np.int64]) -> Walk:
    """The walk over nodes ``0..n-1`` and edges ``src[i] → dst[i]`` (parallel edges add up)."""
    from scipy import sparse  # here: the constants above are read at start-up, scipy is not

    out_degree = np.bincount(src, minlength=n).astype(np.float64)
    weights = 1.0 / out_degree[src] if len(src) else np.zeros(0, dtype=np.float64)
    transition = sparse.csr_matrix((weights, (dst, src)), shape=(n, n))
    return Walk(transition, out_degree == 0)


def restart_vector(n: int, seeds: NDArray[np.int64] | None) -> NDArray[np.float64]:
    """Uniform without seeds; otherwise each node's share of the seed list (a node listed twice
    weighs twice)."""
    if seeds is None or len(seeds) == 0:
        return np.full(n, 1.0 / n) if n else np.zeros(0)
    return np.bincount(seeds, minlength=n).astype(np.float64) / len(seeds)


def rank(
    graph: Walk,
    restart: NDArray[np.float64],
    *,
    damping: float = DAMPING,
    max_iters: int = MAX_ITERS,
    tolerance: float = TOLERANCE,
) -> NDArray[np.float64]:
    """Scores summing to 1 (an empty graph gives an empty array). ``max_iters`` below 1 runs
    one iteration; iteration stops once the L1 change falls under ``tolerance``."""
    if graph.size == 0:
        return np.zeros(0)
    teleport = (1.0 - damping) * restart
    scores = restart.copy()
    has_dangling = bool(graph.dangling.any())
    for _ in range(max(max_iters, 1)):
        step = teleport + damping * (graph.transition @ scores)
        if has_dangling:
            lost = float(scores[graph.dangling].sum())
            if lost > 0:
                step += (damping * lost) * restart
        diff = float(np.abs(step - scores).sum())
        scores = step
        if diff < tolerance:
            break
    total = float(scores.sum())
    return scores / total if total > 0 else scores
