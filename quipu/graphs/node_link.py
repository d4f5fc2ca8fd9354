"""The render-ready node-link view of ROOT (tools-search §5.13, ``quipu_graph``).

Ranked and capped nodes, edges addressed by node index, a type census and an explicit
statement of what the caps dropped. The explorer draws straight from it, so the output is fully
ordered: the same store always gives the same bytes.

[designed here] The view is of current ROOT unless ``at`` names a past read point (valid time,
transaction time or both); then the same rules run over the claims visible there.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from quipu.store import projection as reads
from quipu.store.database import Database
from quipu.store.values import RDF
from quipu.store.views import TemporalView

MAX_LIMIT: Final = 2000
MAX_EDGE_BUDGET: Final = 50_000
RDF_TYPE: Final = RDF + "type"
RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
RDFS_LABEL: Final = RDFS + "label"
PROV: Final = "http://www.w3.org/ns/prov#"
PROV_ACTIVITY: Final = PROV + "Activity"
# Scaffolding, not relationships: types are node attributes and provenance is drawn only as
# episodes (rule: rdf:type links never appear as edges).
_HIDDEN_NAMESPACES: Final = (RDF, RDFS, PROV)


def short(iri: str) -> str:
    """The text after the last ``#`` or ``/``."""
    return iri[max(iri.rfind("#"), iri.rfind("/")) + 1 :]


def node_link(
    db: Database,
    conn: Connection,
    claims: reads.Claims,
    *,
    limit: int,
    edge_budget: int,
    type_iri: str | None,
    include_episodes: bool,
    at: TemporalView = reads.CURRENT,
) -> dict[str, Any]:
    """The view of ROOT at ``at`` (default: now); ``claims`` are ROOT's reference claims visible
    there in ``conn``'s snapshot."""
    limit = min(limit, MAX_LIMIT)
    edge_budget = min(edge_budget, MAX_EDGE_BUDGET)
    known = db.terms.lookup(conn, [RDF_TYPE, RDFS_LABEL, PROV_ACTIVITY] + ([type_iri] if type_iri else []))
    entities = reads.subjects(db, conn, at)  # ascending term ids
    types = reads.last_types(db, conn, known[RDF_TYPE], at) if RDF_TYPE in known else {}
    type_of = np.full(len(entities), -1, dtype=np.int64)
    if types:
        typed = np.fromiter(types.keys(), dtype=np.int64, count=len(types))
        type_of[np.searchsorted(entities, typed)] = np.fromiter(
            types.values(), dtype=np.int64, count=len(types)
        )
    keep = np.ones(len(entities), dtype=np.bool_)
    episode_class = known.get(PROV_ACTIVITY)
    if not include_episodes and episode_class is not None:
        keep &= type_of != episode_class
    if type_iri:
        keep &= type_of == known.get(type_iri, -2)
    drawable, drawable_type = entities[keep], type_of[keep]

    source, target, predicate = _visible_edges(db, conn, claims, drawable)
    degree = np.bincount(source, minlength=len(drawable)) + np.bincount(target, minlength=len(drawable))
    shown = _ranked(db, conn, drawable, degree, max(limit, 0))
    position = np.full(len(drawable), -1, dtype=np.int64)
    position[shown] = np.arange(len(shown), dtype=np.int64)
    si, ti = position[source], position[target]
    both = (si >= 0) & (ti >= 0)
    si, ti, kept_predicates = si[both].tolist(), ti[both].tolist(), predicate[both].tolist()
    names = db.terms.iris(conn, set(kept_predicates))
    drawn = [(s, t, short(names[p])) for s, t, p in zip(si, ti, kept_predicates, strict=True)]
    edges_of = len(drawn)
    if edges_of > edge_budget:  # edges among the highest-ranked nodes survive
        drawn.sort(key=lambda e: (max(e[0], e[1]), e[0], e[1], e[2]))
        drawn = drawn[:edge_budget]

    terms = [int(t) for t in drawable[shown]]
    node_types = [int(t) for t in drawable_type[shown]]
    iri_of = db.terms.iris(conn, terms + [t for t in node_types if t >= 0])
    labels = reads.first_labels(db, conn, known[RDFS_LABEL], terms, at) if RDFS_LABEL in known else {}
    nodes = [
        {
            "iri": iri_of[e],
            "label": labels.get(e, short(iri_of[e])),
            "type": iri_of[t] if t >= 0 else None,
            "deg": int(degree[i]),
        }
        for e, t, i in zip(terms, node_types, shown.tolist(), strict=True)
    ]
    return {
        "nodes": nodes,
        "edges": [list(e) for e in drawn],
        "types": _census(nodes),
        "truncated": {
            "shown": len(nodes),
            "of": len(drawable),
            "edges_shown": len(drawn),
            "edges_of": edges_of,
        },
        "stats": {"nodes": len(nodes), "edges": len(drawn)},
    }


def _ranked(
    db: Database, conn: Connection, drawable: NDArray[np.int64], degree: NDArray[np.int64], limit: int
) -> NDArray[np.int64]:
    """Positions in ``drawable`` of the first ``limit`` entities by degree descending, then IRI.
    Only the entities that can make the cut have their IRIs read: those above the limit's degree
    and those tied with it."""
    if limit == 0 or len(drawable) == 0:
        return np.zeros(0, dtype=np.int64)
    if limit < len(drawable):
        floor = np.partition(degree, len(degree) - limit)[len(degree) - limit]
        contenders = np.flatnonzero(degree >= floor)
    else:
        contenders = np.arange(len(drawable), dtype=np.int64)
    iri = db.terms.iris(conn, [int(t) for t in drawable[contenders]])
    ordered = sorted(contenders.tolist(), key=lambda i: (-int(degree[i]), iri[int(drawable[i])]))
    return np.asarray(ordered[:limit], dtype=np.int64)


def _visible_edges(
    db: Database, conn: Connection, claims: reads.Claims, drawable: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """(source position, target position, predicate) in ``drawable`` of every statement between
    two drawable entities whose predicate is outside the rdf:, rdfs: and prov: namespaces, in
    store order. A statement claimed twice is one edge (its primary claim)."""
    subject, predicate, target = claims.subject, claims.predicate, claims.target
    keep = claims.primary & np.isin(subject, drawable) & np.isin(target, drawable)
    if keep.any():
        used = np.unique(predicate[keep]).tolist()
        hidden = [p for p, iri in db.terms.iris(conn, used).items() if iri.startswith(_HIDDEN_NAMESPACES)]
        keep &= ~np.isin(predicate, hidden)
    return np.searchsorted(drawable, subject[keep]), np.searchsorted(drawable, target[keep]), predicate[keep]


def _census(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for node in nodes:
        if node["type"] is not None:
            counts[node["type"]] = counts.get(node["type"], 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"iri": iri, "label": short(iri), "count": count} for iri, count in ordered]
