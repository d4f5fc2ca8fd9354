"""The projection of a graph's current facts into a directed multigraph (tools-search §5.14).

Every live claim whose object is an IRI is an edge subject → object labelled with its predicate,
``rdf:type`` included (so classes become nodes); literal-valued facts add nothing, and nodes
exist only as edge endpoints. Node indices follow first appearance as an endpoint while scanning
the claims in store order (source before target), which is the order PageRank ties keep.

Projections are memoised per (graphs, type, predicate) and dropped when the transaction head
moves, so a report, a project call and a context re-rank in a row read the store once.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Final

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from quipu.graphs import pagerank
from quipu.store import projection as reads
from quipu.store.database import Database
from quipu.store.values import RDF

RDF_TYPE: Final = RDF + "type"
# Community membership is analytics' own output. Projected back in, every community would be a
# hub joining its members, and a persisted re-run over an unchanged graph would churn (§5.14
# rule 6: it must write nothing) [designed here].
MEMBER_OF_COMMUNITY: Final = "https://quipu.dev/ontology/memberOfCommunity"
NOTHING: Final = -1  # a filter IRI the store never interned: matches no edge
_KEEP: Final = 8  # memoised projections per store


@dataclass(frozen=True)
class Projection:
    nodes: NDArray[np.int64]  # term id of each node, in projection order
    src: NDArray[np.int64]  # node index of each edge's source, in store order
    dst: NDArray[np.int64]
    predicate: NDArray[np.int64]  # term id of each edge's predicate

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def edges(self) -> int:
        return len(self.src)

    @cached_property
    def position(self) -> dict[int, int]:
        """Term id → node index."""
        return {int(t): i for i, t in enumerate(self.nodes.tolist())}

    @cached_property
    def walk(self) -> pagerank.Walk:
        return pagerank.walk(self.size, self.src, self.dst)

    @cached_property
    def by_term(self) -> NDArray[np.int64]:
        """Node indices in ascending term id order (the order Louvain indexes nodes in)."""
        return np.argsort(self.nodes, kind="stable")

    @cached_property
    def in_degree(self) -> NDArray[np.int64]:
        """Incoming edges per node, each parallel edge counted."""
        return np.bincount(self.dst, minlength=self.size)


def build(
    claims: reads.Claims,
    *,
    typed: int | None = None,
    rdf_type: int | None = None,
    predicate: int | None = None,
    derived: int | None = None,
) -> Projection:
    """Project ``claims``. ``predicate`` keeps only edges with that predicate; ``typed`` keeps
    only edges whose source has an ``rdf:type`` claim to that class among ``claims`` (the target
    may be anything). ``NOTHING`` for either filter gives the empty projection. Edges of the
    ``derived`` predicate (community membership) are left out."""
    subject, pred, target = claims.subject, claims.predicate, claims.target
    keep = np.ones(len(subject), dtype=np.bool_) if derived is None else pred != derived
    if predicate is not None:
        keep &= pred == predicate
    if typed is not None:
        if typed == NOTHING or rdf_type is None:
            keep[:] = False
        else:
            members = np.unique(subject[(pred == rdf_type) & (target == typed)])
            keep &= np.isin(subject, members)
    if not keep.all():
        subject, pred, target = subject[keep], pred[keep], target[keep]
    return _indexed(subject, pred, target)


def _indexed(subject: NDArray[np.int64], pred: NDArray[np.int64], target: NDArray[np.int64]) -> Projection:
    if len(subject) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Projection(empty, empty, empty, empty)
    ends = np.empty(2 * len(subject), dtype=np.int64)
    ends[0::2], ends[1::2] = subject, target  # source, target, source, target, ... in scan order
    ids, first, inverse = np.unique(ends, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # sorted-id position → appearance rank
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids), dtype=np.int64)
    index = rank[inverse]
    return Projection(ids[order], index[0::2].copy(), index[1::2].copy(), pred.copy())


@dataclass(frozen=True)
class Request:
    graphs: frozenset[int]
    type_iri: str | None = None
    predicate_iri: str | None = None


class ProjectionCache:
    """Projections of one store, valid while its transaction head stays where it was read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._head = -1
        self._claims: dict[frozenset[int], reads.Claims] = {}
        self._built: OrderedDict[Request, Projection] = OrderedDict()

    def get(
        self, db: Database, conn: Connection, request: Request, progress: Callable[[str], None] | None = None
    ) -> Projection:
        """The projection ``request`` names, as of ``conn``'s snapshot."""
        head = db.head_tx(conn)
        with self._lock:
            found = self._built.get(request) if self._at(head) else None
            if found is not None:
                self._built.move_to_end(request)
                return found
        if progress is not None:
            progress("reading edges")
        claims = self.claims(db, conn, request.graphs)
        if progress is not None:
            progress("projecting")
        built = _build_for(db, conn, claims, request)
        with self._lock:
            if self._at(head):
                self._built[request] = built
                while len(self._built) > _KEEP:
                    self._built.popitem(last=False)
        return built

    def claims(self, db: Database, conn: Connection, graphs: frozenset[int]) -> reads.Claims:
        """The reference claims of ``graphs`` as of ``conn``'s snapshot (memoised alike)."""
        head = db.head_tx(conn)
        with self._lock:
            found = self._claims.get(graphs) if self._at(head) else None
        if found is not None:
            return found
        claims = reads.reference_claims(db, conn, graphs)
        with self._lock:
            if self._at(head):
                self._claims[graphs] = claims
        return claims

    def _at(self, head: int) -> bool:
        """Whether the memo holds ``head``'s work (a newer head drops an older memo; a snapshot
        older than the memo is answered without it). Called under the lock."""
        if head > self._head:
            self._head, self._claims, self._built = head, {}, OrderedDict()
        return head == self._head


_caches: weakref.WeakKeyDictionary[Database, ProjectionCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def cache_of(db: Database) -> ProjectionCache:
    """The one projection memo of an open store, shared by analytics and context re-ranking."""
    with _caches_lock:
        cache = _caches.get(db)
        if cache is None:
            cache = _caches[db] = ProjectionCache()
        return cache


def _build_for(db: Database, conn: Connection, claims: reads.Claims, request: Request) -> Projection:
    wanted = [i for i in (request.type_iri, request.predicate_iri, RDF_TYPE, MEMBER_OF_COMMUNITY) if i]
    ids = db.terms.lookup(conn, wanted)
    typed = None if request.type_iri is None else ids.get(request.type_iri, NOTHING)
    predicate = None if request.predicate_iri is None else ids.get(request.predicate_iri, NOTHING)
    return build(
        claims,
        typed=typed,
        rdf_type=ids.get(RDF_TYPE),
        predicate=predicate,
        derived=ids.get(MEMBER_OF_COMMUNITY),
    )
