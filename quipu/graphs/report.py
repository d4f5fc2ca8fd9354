"""``quipu_report``: hubs, surprising bridges, template questions and a summary of current ROOT
(tools-search §5.15).

Hubs are the PageRank leaders; a surprising connection is an edge between two Louvain
communities, rarest community pair first. Communities are clustering for surfacing, never an
access boundary. Everything is ordered down to term ids, so two calls give the same JSON.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import Connection

from quipu.graphs import pagerank
from quipu.graphs.project import COMMUNITY, communities
from quipu.graphs.projection import Projection
from quipu.store.database import Database


def name(iri: str) -> str:
    """The text after the last ``#``, ``/`` or ``:``."""
    return iri[max(iri.rfind("#"), iri.rfind("/"), iri.rfind(":")) + 1 :]


def report(
    db: Database, conn: Connection, p: Projection, *, hubs: int, surprises: int, questions: int
) -> dict[str, Any]:
    scores = pagerank.rank(p.walk, pagerank.restart_vector(p.size, None))
    found = communities(p)
    community = found.of_node(p.size)
    # Hubs: score descending, ties by term id ascending.
    hub_order = np.lexsort((p.nodes, -scores))[:hubs] if p.size else np.zeros(0, dtype=np.int64)
    rarity = _rarity(p, community)
    bridges = _bridges(p, scores, rarity)[:surprises]
    wanted = {int(p.nodes[i]) for i in hub_order.tolist()}
    for e in bridges.tolist():
        wanted.update((int(p.nodes[p.src[e]]), int(p.nodes[p.dst[e]])))
    wanted.update(int(p.predicate[e]) for e in bridges.tolist())
    largest = _largest(found.groups)
    if largest is not None:
        wanted.add(int(p.nodes[found.groups[largest][0]]))
    iri = db.terms.iris(conn, wanted)

    hub_rows = [
        {
            "entity": iri[int(p.nodes[i])],
            "pagerank": float(scores[i]),
            "in_degree": int(p.in_degree[i]),
        }
        for i in hub_order.tolist()
    ]
    bridge_rows = []
    for e in bridges.tolist():
        s, t = int(p.src[e]), int(p.dst[e])
        bridge_rows.append(
            {
                "from": iri[int(p.nodes[s])],
                "to": iri[int(p.nodes[t])],
                "predicate": iri[int(p.predicate[e])],
                "community_from": f"{COMMUNITY}{int(community[s])}",
                "community_to": f"{COMMUNITY}{int(community[t])}",
                "bridge_rarity": int(rarity[e]),
            }
        )
    asked = [f"What is {name(str(h['entity']))}, and why is it so central?" for h in hub_rows]
    asked += [
        f"Why is {name(str(b['from']))} connected to {name(str(b['to']))} across otherwise-separate clusters?"
        for b in bridge_rows
    ]
    if largest is not None:
        members = found.groups[largest]
        example = name(iri[int(p.nodes[members[0]])])
        asked.append(f"What ties together the largest cluster ({len(members)} entities, e.g. {example})?")
    return {
        "graph": {
            "nodes": p.size,
            "edges": p.edges,
            "communities": len(found.groups),
            "modularity": found.modularity,
        },
        "hubs": hub_rows,
        "surprising_connections": bridge_rows,
        "suggested_questions": asked[:questions],
    }


def _rarity(p: Projection, community: np.ndarray) -> np.ndarray:
    """For each edge between two communities, how many edges join the same unordered pair of
    communities (0 for an edge inside one community)."""
    a, b = community[p.src], community[p.dst]
    low, high = np.minimum(a, b), np.maximum(a, b)
    crossing = a != b
    if not crossing.any():
        return np.zeros(p.edges, dtype=np.int64)
    pair = low * (int(community.max(initial=0)) + 1) + high
    _, inverse, counts = np.unique(pair[crossing], return_inverse=True, return_counts=True)
    out = np.zeros(p.edges, dtype=np.int64)
    out[crossing] = counts[inverse]
    return out


def _bridges(p: Projection, scores: np.ndarray, rarity: np.ndarray) -> np.ndarray:
    """Edge indices of the crossing edges: rarest pair first, then the endpoints' PageRank sum
    descending, then source and target term ids ascending, then projection edge order."""
    crossing = np.flatnonzero(rarity > 0)
    s, t = p.src[crossing], p.dst[crossing]
    weight = scores[s] + scores[t]
    keys = (crossing, p.nodes[t], p.nodes[s], -weight, rarity[crossing])  # last key sorts first
    return crossing[np.lexsort(keys)]


def _largest(groups: list[list[int]]) -> int | None:
    """The largest community; among equals, the last in canonical order."""
    if not groups:
        return None
    best = 0
    for k, members in enumerate(groups):
        if len(members) >= len(groups[best]):
            best = k
    return best
