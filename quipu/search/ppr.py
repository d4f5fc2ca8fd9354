"""Personalized PageRank over ROOT's IRI-to-IRI projection, for context re-ranking
(tools-search §5.7 step 3, §6.5).

The projection and the walk are graph analytics' own (quipu/graphs/projection.py,
quipu/graphs/pagerank.py): every current ROOT claim whose object is an IRI is a directed edge
(``rdf:type`` included, parallel edges kept), memoised per store (one memo for both) until the transaction head moves.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from quipu.graphs import pagerank
from quipu.graphs.projection import Projection, Request, cache_of
from quipu.store.database import Database
from quipu.store.schema import ROOT

_ROOT: Request = Request(frozenset({ROOT}))


def root_projection(db: Database, conn: Connection) -> Projection:
    """ROOT's current projection as of ``conn``'s snapshot (the store's memo, shared with
    graph analytics, so the two never hold ROOT's edges twice)."""
    return cache_of(db).get(db, conn, _ROOT)


def personalized(projection: Projection, seeds: Iterable[int]) -> NDArray[np.float64] | None:
    """Scores over ``projection.nodes`` (summing to 1) restarting at ``seeds`` (term ids; a seed
    listed twice weighs twice); None when no seed is a node of the projection."""
    hits = [projection.position[s] for s in seeds if s in projection.position]
    if not hits:
        return None
    restart = pagerank.restart_vector(projection.size, np.asarray(hits, dtype=np.int64))
    return pagerank.rank(projection.walk, restart)


def scores_for(
    db: Database, conn: Connection, seeds: list[int], entities: Iterable[int]
) -> dict[int, float] | None:
    """The personalized PageRank of each of ``entities`` (0 when unreached or outside the
    projection), restarting at ``seeds``; None when no seed is in the projection."""
    projection = root_projection(db, conn)
    ranks = personalized(projection, seeds)
    if ranks is None:
        return None
    position = projection.position
    return {e: float(ranks[position[e]]) if e in position else 0.0 for e in entities}
