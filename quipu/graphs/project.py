"""``quipu_project``: one algorithm over one graph's projection (tools-search §5.14).

Counts, in-degree, PageRank (global or personalised), strongly connected components,
deterministic Louvain and shortest paths. Only ``persist`` writes, and it always writes to ROOT.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse import csgraph
from sqlalchemy import Connection

from quipu.errors import InvalidField
from quipu.graphs import louvain, pagerank
from quipu.graphs.projection import Projection
from quipu.store.database import Database

QUIPU: Final = "https://quipu.dev/ontology/"
COMMUNITY: Final = QUIPU + "community_"
PAGE_RANK: Final = QUIPU + "pageRank"
ALGORITHMS: Final = (
    "stats",
    "in_degree",
    "pagerank",
    "ppr",
    "components",
    "louvain",
    "community",
    "shortest_path",
)


def check_algorithm(name: str) -> str:
    if name not in ALGORITHMS:
        raise InvalidField(
            f"unknown algorithm: {name} (try: stats, in_degree, pagerank, components, louvain, shortest_path)",
            field="algorithm",
        )
    return "louvain" if name == "community" else name


@dataclass(frozen=True)
class Ranking:
    personalized: bool
    order: NDArray[np.int64]  # node indices, best first
    scores: NDArray[np.float64]  # by node index


def in_degree(db: Database, conn: Connection, p: Projection, limit: int) -> dict[str, Any]:
    """Incoming edges per node (parallel edges each count), descending, ties by IRI."""
    iri = _iris(db, conn, p)
    counts = p.in_degree.tolist()
    order = sorted(range(p.size), key=lambda i: (-counts[i], iri[i]))[:limit]
    results = [{"entity": iri[i], "in_degree": counts[i]} for i in order]
    return {"algorithm": "in_degree", "results": results, "count": len(results)}


def ranking(
    db: Database,
    conn: Connection,
    p: Projection,
    seeds: Sequence[str | int],
    *,
    damping: float,
    max_iters: int,
    tolerance: float,
) -> Ranking:
    """PageRank (§6.5): personalised when some seed resolves to a known term. Known seeds that
    are not nodes here fall back to the uniform restart, still reported as personalised."""
    known = resolve_seeds(db, conn, seeds)
    hits = np.asarray([p.position[t] for t in known if t in p.position], dtype=np.int64)
    restart = pagerank.restart_vector(p.size, hits if len(hits) else None)
    scores = pagerank.rank(p.walk, restart, damping=damping, max_iters=max_iters, tolerance=tolerance)
    order = np.argsort(-scores, kind="stable")  # equal scores keep projection order
    return Ranking(bool(known), order, scores)


def resolve_seeds(db: Database, conn: Connection, seeds: Sequence[str | int]) -> list[int]:
    """Seed IRIs as term ids (unknown IRIs dropped) and raw term ids as given."""
    iris = [s for s in seeds if isinstance(s, str)]
    found = db.terms.lookup(conn, iris)
    out: list[int] = []
    for seed in seeds:
        if isinstance(seed, str):
            if seed in found:
                out.append(found[seed])
        else:
            out.append(seed)
    return out


def ranking_payload(
    db: Database, conn: Connection, p: Projection, ranked: Ranking, limit: int, persisted: int | None
) -> dict[str, Any]:
    top = ranked.order[:limit].tolist()
    names = db.terms.iris(conn, [int(p.nodes[i]) for i in top])
    results = [{"entity": names[int(p.nodes[i])], "score": float(ranked.scores[i])} for i in top]
    return {
        "algorithm": "pagerank",
        "personalized": ranked.personalized,
        "results": results,
        "count": len(results),
        "persisted": persisted,
    }


def pagerank_facts(p: Projection, ranked: Ranking) -> list[tuple[int, float]]:
    """(entity, score) for every ranked node, in ascending entity order."""
    pairs = zip(p.nodes.tolist(), ranked.scores.tolist(), strict=True)
    return sorted((int(e), float(s)) for e, s in pairs)


def components(db: Database, conn: Connection, p: Projection) -> dict[str, Any]:
    """Strongly connected components (the original's behaviour, kept: a chain a→b→c is three
    singletons), by size descending, then smallest member IRI; members by IRI."""
    if p.size == 0:
        return {"algorithm": "components", "components": [], "count": 0}
    adjacency = sparse.csr_matrix((np.ones(p.edges), (p.src, p.dst)), shape=(p.size, p.size))
    _, label = csgraph.connected_components(adjacency, directed=True, connection="strong")
    iri = _iris(db, conn, p)
    groups: dict[int, list[str]] = {}
    for i, c in enumerate(label.tolist()):
        groups.setdefault(c, []).append(iri[i])
    ordered = sorted((sorted(members) for members in groups.values()), key=lambda m: (-len(m), m[0]))
    found = [{"entities": members, "size": len(members)} for members in ordered]
    return {"algorithm": "components", "components": found, "count": len(found)}


@dataclass(frozen=True)
class Communities:
    groups: list[list[int]]  # node indices; members ascending term id; groups by smallest member
    modularity: float

    def of_node(self, size: int) -> NDArray[np.int64]:
        """Community index of each node."""
        out = np.empty(size, dtype=np.int64)
        for k, members in enumerate(self.groups):
            out[members] = k
        return out


def communities(p: Projection, progress: Callable[[int, int], None] | None = None) -> Communities:
    """Louvain (§6.6) with nodes indexed by ascending term id, mapped back to node indices."""
    by_term = p.by_term  # Louvain index → node index
    rank = np.empty(p.size, dtype=np.int64)
    rank[by_term] = np.arange(p.size, dtype=np.int64)
    found = louvain.communities(p.size, rank[p.src], rank[p.dst], progress)
    groups = [by_term[np.asarray(g, dtype=np.int64)].tolist() for g in found.groups]
    return Communities(groups, found.modularity)


def communities_payload(
    db: Database, conn: Connection, p: Projection, found: Communities, persisted: int | None
) -> dict[str, Any]:
    iri = _iris(db, conn, p)
    listed = [
        {"community": f"{COMMUNITY}{k}", "entities": [iri[i] for i in members], "size": len(members)}
        for k, members in enumerate(found.groups)
    ]
    return {
        "algorithm": "louvain",
        "communities": listed,
        "count": len(listed),
        "modularity": found.modularity,
        "persisted": persisted,
    }


def membership_facts(p: Projection, found: Communities) -> list[tuple[int, str]]:
    """(entity, community IRI) for every member, in ascending (entity, community) order."""
    pairs = [(int(p.nodes[i]), f"{COMMUNITY}{k}") for k, members in enumerate(found.groups) for i in members]
    return sorted(pairs)


def shortest_path(db: Database, conn: Connection, p: Projection, source: str, target: str) -> dict[str, Any]:
    """Fewest directed edges from ``source`` to ``target``; ``path`` null when either is not a
    node of the projection or no path exists."""
    out: dict[str, Any] = {
        "algorithm": "shortest_path",
        "from": source,
        "to": target,
        "path": None,
        "length": None,
    }
    ids = db.terms.lookup(conn, [source, target])
    start, end = p.position.get(ids.get(source, -1)), p.position.get(ids.get(target, -1))
    if start is None or end is None:
        return out
    if start == end:
        out.update(path=[source], length=0)
        return out
    adjacency = sparse.csr_matrix((np.ones(p.edges), (p.src, p.dst)), shape=(p.size, p.size))
    adjacency.sum_duplicates()
    adjacency.sort_indices()  # neighbours in node order: the path found does not depend on scan noise
    _, predecessor = csgraph.breadth_first_order(adjacency, start, directed=True, return_predecessors=True)
    if predecessor[end] < 0:
        return out
    hops = [end]
    while hops[-1] != start:
        hops.append(int(predecessor[hops[-1]]))
    hops.reverse()
    names = db.terms.iris(conn, [int(p.nodes[i]) for i in hops])
    out.update(path=[names[int(p.nodes[i])] for i in hops], length=len(hops) - 1)
    return out


def _iris(db: Database, conn: Connection, p: Projection) -> list[str]:
    """IRI of each node, by node index."""
    names = db.terms.iris(conn, p.nodes.tolist())
    return [names[t] for t in p.nodes.tolist()]
