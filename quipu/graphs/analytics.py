"""``Analytics``: the per-store service behind ``/graph``, ``/project``, ``/report`` and
``/impact`` (tools-search §5.13-§5.15, tools-core §1.12).

Its state is the projection memo: one read of the store's reference edges serves every
algorithm, report and impact ranking until a transaction commits. numpy, scipy and numba are
imported by the first call that needs them, not when the server starts.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from quipu import times
from quipu.errors import InvalidField
from quipu.graphs.pagerank import DAMPING, MAX_ITERS, TOLERANCE
from quipu.identity import Authenticated
from quipu.store import graph_scope, values
from quipu.store.database import Database
from quipu.store.reads import read_point_tx
from quipu.store.schema import ROOT
from quipu.store.views import TemporalView

if TYPE_CHECKING:
    from quipu.graphs.projection import Projection, ProjectionCache

DEFAULT_LIMIT: Final = 250  # quipu_graph's node budget (quipu.graphs.node_link)
DEFAULT_EDGE_BUDGET: Final = 4000
HUBS, SURPRISES, QUESTIONS = 10, 10, 8  # quipu_report's section sizes
_VIEWS: Final = 8

# (stage, done, total): a stage with total 0 has no known length.
Progress = Callable[[str, int, int], None]


def _silent(stage: str, done: int, total: int) -> None:
    del stage, done, total


class Analytics:
    def __init__(self, db: Database) -> None:
        self.db = db
        # The last node-link views by (transaction head, arguments): the explorer asks for the
        # same view again and again while nothing is written.
        self._views: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
        self._views_lock = threading.Lock()

    @cached_property
    def projections(self) -> ProjectionCache:
        from quipu.graphs.projection import cache_of

        return cache_of(self.db)

    # -- quipu_graph -------------------------------------------------------------------------

    def graph(
        self,
        *,
        limit: int = DEFAULT_LIMIT,
        edge_budget: int = DEFAULT_EDGE_BUDGET,
        type: str | None = None,
        include_episodes: bool = False,
        valid_at: str | None = None,
        as_of_tx: int | None = None,
    ) -> dict[str, Any]:
        """The render-ready node-link view of ROOT: now, or [designed here] as it was true at
        ``valid_at`` and/or as the store knew it after transaction ``as_of_tx``."""
        from quipu.graphs import node_link
        from quipu.store.projection import reference_claims

        at = TemporalView.at(as_of_tx=read_point_tx(as_of_tx), valid_at=valid_at, tx_field="as_of_tx")
        graph_scope.refuse_tx_travel(self.db, at.as_of_tx, field="as_of_tx")
        with self.db.read(long=True) as conn:
            graph_scope.enforce(self.db, conn, (ROOT,))
            key = (
                self.db.head_tx(conn),
                limit,
                edge_budget,
                type,
                include_episodes,
                at.as_of_tx,
                at.valid_at,
            )
            with self._views_lock:
                cached = self._views.get(key)
            if cached is not None:
                return copy.deepcopy(cached)  # callers may annotate their answer
            if at.is_current:  # the memo serves the current state only (it is keyed by head tx)
                claims = self.projections.claims(self.db, conn, frozenset({ROOT}))
            else:
                claims = reference_claims(self.db, conn, (ROOT,), at)
            view = node_link.node_link(
                self.db,
                conn,
                claims,
                limit=limit,
                edge_budget=edge_budget,
                type_iri=type,
                include_episodes=include_episodes,
                at=at,
            )
        with self._views_lock:
            self._views[key] = view
            while len(self._views) > _VIEWS:
                self._views.popitem(last=False)
        return copy.deepcopy(view)

    # -- quipu_project -----------------------------------------------------------------------

    def project(
        self,
        *,
        algorithm: str = "stats",
        type: str | None = None,
        predicate: str | None = None,
        graph: str | None = None,
        limit: int = 20,
        seeds: Sequence[str | int] = (),
        damping: float = DAMPING,
        max_iters: int = MAX_ITERS,
        tolerance: float = TOLERANCE,
        from_: str | None = None,
        to: str | None = None,
        persist: bool = False,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
        progress: Progress = _silent,
    ) -> dict[str, Any]:
        """One algorithm over the projection of ``graph`` (ROOT by default)."""
        from quipu.graphs import project
        from quipu.graphs.projection import MEMBER_OF_COMMUNITY

        name = project.check_algorithm(algorithm)
        if name == "shortest_path":
            if not from_:
                raise InvalidField("missing 'from' IRI for shortest_path", field="from")
            if not to:
                raise InvalidField("missing 'to' IRI for shortest_path", field="to")
        stamp = times.normalise_timestamp(timestamp) if persist else None
        db = self.db
        with db.read(long=True) as conn:
            p = self._projection(conn, graph, type, predicate, progress)
            progress(name, 0, 0)
            if name == "stats":
                return {"nodes": p.size, "edges": p.edges}
            if name == "in_degree":
                return project.in_degree(db, conn, p, limit)
            if name == "components":
                return project.components(db, conn, p)
            if name == "shortest_path":
                assert from_ is not None and to is not None
                return project.shortest_path(db, conn, p, from_, to)
            if name == "louvain":
                found = project.communities(p, lambda n, moved: progress("louvain pass", n, 0))
                written = None
                if persist:
                    facts = project.membership_facts(p, found)
                    written = self._persist(MEMBER_OF_COMMUNITY, facts, "algo:louvain", stamp, auth)
                return project.communities_payload(db, conn, p, found, written)
            ranked = project.ranking(
                db, conn, p, seeds, damping=damping, max_iters=max_iters, tolerance=tolerance
            )
            written = None
            if persist:
                if ranked.personalized:
                    raise InvalidField(
                        "'persist' applies to the global ranking; drop 'seeds' to persist PageRank",
                        field="persist",
                    )
                written = self._persist(
                    project.PAGE_RANK, project.pagerank_facts(p, ranked), "algo:pagerank", stamp, auth
                )
            return project.ranking_payload(db, conn, p, ranked, limit, written)

    def _projection(
        self, conn: Any, graph: str | None, type_iri: str | None, predicate: str | None, progress: Progress
    ) -> Projection:
        from quipu.graphs.projection import Request

        for field, iri in (("graph", graph), ("type", type_iri), ("predicate", predicate)):
            if iri is not None:
                values.check_iri(iri, field)
        gids = graph_scope.resolve(self.db, conn, graph)
        if not gids:
            raise InvalidField(f"unknown graph: {graph} (never written to)", field="graph")
        graph_scope.enforce(self.db, conn, gids)
        request = Request(gids, type_iri, predicate)
        return self.projections.get(self.db, conn, request, lambda stage: progress(stage, 0, 0))

    def _persist(
        self,
        predicate: str,
        facts: list[tuple[int, Any]],
        source: str,
        stamp: str | None,
        auth: Authenticated | None,
    ) -> int:
        from quipu.store import derived

        assert stamp is not None
        derived.replace(self.db, predicate, facts, source=source, timestamp=stamp, auth=auth)
        return len(facts)

    # -- quipu_report ------------------------------------------------------------------------

    def report(
        self,
        *,
        type: str | None = None,
        predicate: str | None = None,
        hubs: int = HUBS,
        surprises: int = SURPRISES,
        questions: int = QUESTIONS,
    ) -> dict[str, Any]:
        """Hubs, surprising bridges, questions and a summary of current ROOT."""
        from quipu.graphs import report

        with self.db.read(long=True) as conn:
            p = self._projection(conn, None, type, predicate, _silent)
            return report.report(self.db, conn, p, hubs=hubs, surprises=surprises, questions=questions)

    # -- quipu_impact ------------------------------------------------------------------------

    def impact(
        self,
        entity: str,
        *,
        remove: bool = False,
        hops: int = 5,
        predicates: Sequence[str] | None = None,
        rank_by_ppr: bool = False,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> dict[str, Any]:
        """The downstream walk from ``entity``, speculatively retracted with ``remove``."""
        from quipu.graphs import impact

        if hops < 0:
            raise InvalidField(f"'hops' must be >= 0, got {hops}", field="hops")
        stamp = times.normalise_timestamp(timestamp)
        graph_scope.enforce_root(self.db)  # the walk reads ROOT: its label floor applies
        return impact.impact(
            self.db,
            entity,
            remove=remove,
            hops=hops,
            predicates=predicates,
            timestamp=stamp,
            ppr=self._ppr if rank_by_ppr else None,
            auth=auth,
        )

    def _ppr(self, root: int, terms: list[int]) -> dict[int, float]:
        """Personalised PageRank from ``root`` over current ROOT; 0 outside the projection."""
        import numpy as np

        from quipu.graphs import pagerank
        from quipu.graphs.projection import Request

        with self.db.read() as conn:
            p = self.projections.get(self.db, conn, Request(frozenset({ROOT})))
        if root not in p.position:
            return {}
        restart = pagerank.restart_vector(p.size, np.asarray([p.position[root]], dtype=np.int64))
        scores = pagerank.rank(p.walk, restart)
        return {t: float(scores[p.position[t]]) for t in terms if t in p.position}
