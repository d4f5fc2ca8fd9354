"""The algorithms on their own (tools-search §6.5, §6.6): the compiled Louvain pass against a
plain reading of the spec's steps, and PageRank against networkx with the same settings."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from quipu.graphs import louvain, pagerank

# These never touch a store: the PostgreSQL half of the suite skips them.
pytestmark = pytest.mark.backend_independent


def spec_louvain(n: int, edges: list[tuple[int, int]]) -> tuple[list[list[int]], float]:
    """§6.6 read literally: dicts, ever-growing fresh labels, no compaction, no numba."""
    w: dict[int, dict[int, float]] = {i: {} for i in range(n)}
    for u, v in edges:
        if u != v:
            w[u][v] = w[u].get(v, 0.0) + 1
            w[v][u] = w[v].get(u, 0.0) + 1
    k = [sum(w[i].values()) for i in range(n)]
    two_m = sum(k)
    if two_m == 0:
        return [[i] for i in range(n)], 0.0
    comm = list(range(n))
    tot = {i: k[i] for i in range(n) if k[i] > 1e-12}
    fresh = n
    for _ in range(100):
        moved = False
        for i in range(n):
            old = comm[i]
            alone = abs(tot.get(old, 0.0) - k[i]) <= 1e-12
            left = tot.get(old, 0.0) - k[i]
            if left <= 1e-12:
                tot.pop(old, None)
            else:
                tot[old] = left
            k_in: dict[int, float] = {}
            for j, weight in w[i].items():
                k_in[comm[j]] = k_in.get(comm[j], 0.0) + weight
            best, target = 0.0, None
            for c in sorted(k_in):
                gain = k_in[c] - k[i] * tot.get(c, 0.0) / two_m
                if gain > best + 1e-12:
                    best, target = gain, c
            if target is None:
                if alone:
                    target = old
                else:
                    target, fresh = fresh, fresh + 1
            tot[target] = tot.get(target, 0.0) + k[i]
            comm[i] = target
            moved |= target != old
        if not moved:
            break
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(comm):
        groups.setdefault(c, []).append(i)
    ordered = sorted(groups.values(), key=lambda g: g[0])
    m = two_m / 2
    q = 0.0
    for group in ordered:
        members = set(group)
        inside = sum(weight for i in group for j, weight in w[i].items() if j in members) / 2
        q += inside / m - (sum(k[i] for i in group) / two_m) ** 2
    return ordered, q


def random_graph(seed: int, n: int, edges: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    block = rng.integers(0, max(n // 8, 1), n)  # planted communities: most edges stay inside one
    src = rng.integers(0, n, edges)
    same = np.array([rng.choice(np.flatnonzero(block == block[s])) for s in src])
    dst = np.where(rng.random(edges) < 0.7, same, rng.integers(0, n, edges))
    return src.astype(np.int64), dst.astype(np.int64)


def test_the_two_triangle_check_of_the_spec() -> None:
    src = np.array([0, 1, 2, 3, 4, 5, 2])
    dst = np.array([1, 2, 0, 4, 5, 3, 3])
    found = louvain.communities(6, src, dst)
    assert found.groups == [[0, 1, 2], [3, 4, 5]]
    assert found.modularity == pytest.approx(0.357142857142857, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_compiled_louvain_equals_the_spec_read_literally(seed: int) -> None:
    n = [5, 12, 40, 90][seed % 4]
    src, dst = random_graph(seed, n, n * 3)
    found = louvain.communities(n, src, dst)
    groups, q = spec_louvain(n, list(zip(src.tolist(), dst.tolist(), strict=True)))
    assert found.groups == groups
    assert found.modularity == pytest.approx(q, abs=1e-12)


def test_louvain_edge_cases() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert louvain.communities(0, empty, empty) == louvain.Partition([], 0.0)
    # self-loops only: 2m = 0, every node alone, modularity 0
    loops = louvain.communities(2, np.array([0, 1]), np.array([0, 1]))
    assert loops.groups == [[0], [1]] and loops.modularity == 0.0
    # parallel edges accumulate weight; one pair is one community
    pair = louvain.communities(2, np.array([0, 0, 1]), np.array([1, 1, 0]))
    assert pair.groups == [[0, 1]]


def test_exact_ties_go_to_the_lowest_label() -> None:
    # node 2 joins 0 or 1 with equal gain: the lower label wins and takes node 2 with it
    found = louvain.communities(3, np.array([0, 1]), np.array([2, 2]))
    assert found.groups == spec_louvain(3, [(0, 2), (1, 2)])[0]


def networkx_pagerank(
    n: int, src: np.ndarray, dst: np.ndarray, restart: dict[int, float] | None
) -> np.ndarray:
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    found = nx.pagerank(
        graph, alpha=0.85, personalization=restart, dangling=restart, tol=1e-13, max_iter=2000
    )
    return np.array([found[i] for i in range(n)])


@pytest.mark.parametrize("seed", range(6))
def test_pagerank_equals_networkx_global_and_personalised(seed: int) -> None:
    n = 30 + seed * 10
    src, dst = random_graph(seed, n, n * 2)
    keep = dst % 7 != 0  # some nodes never have out-edges: dangling mass
    src, dst = src[keep], dst[keep]
    walk = pagerank.walk(n, src, dst)
    assert walk.dangling.any()
    glob = pagerank.rank(walk, pagerank.restart_vector(n, None), tolerance=1e-13, max_iters=2000)
    np.testing.assert_allclose(glob, networkx_pagerank(n, src, dst, None), rtol=1e-5)
    seeds = np.array([1, 1, 4], dtype=np.int64)
    personal = pagerank.rank(walk, pagerank.restart_vector(n, seeds), tolerance=1e-13, max_iters=2000)
    expected = networkx_pagerank(
        n, src, dst, {i: (2 / 3 if i == 1 else 1 / 3 if i == 4 else 0.0) for i in range(n)}
    )
    np.testing.assert_allclose(
        personal, expected, rtol=1e-5, atol=1e-10
    )  # networkx leaves ~1e-13 noise on unreachable nodes
    assert personal.sum() == pytest.approx(1.0)


def test_pagerank_runs_at_least_one_iteration_and_handles_an_empty_graph() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert len(pagerank.rank(pagerank.walk(0, empty, empty), np.zeros(0))) == 0
    walk = pagerank.walk(2, np.array([0]), np.array([1]))
    one = pagerank.rank(walk, pagerank.restart_vector(2, None), max_iters=0)
    # rank 1/2 each; after one step: 0 gets 0.075 + dangling share, 1 gets 0.075 + 0.425 + share
    expected = np.array([0.075 + 0.2125, 0.075 + 0.425 + 0.2125])
    np.testing.assert_allclose(one, expected / expected.sum())
