"""``GoldenPaths``: the per-store service behind ``/path/cone`` and ``/path/backtest``
(tools-graphs-governance §6).

Both are reads of current ROOT in one snapshot: its label floor applies, and nothing is ever
written. The vocabulary namespace is the request's ``base_ns``, else the store's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from quipu.errors import InvalidField
from quipu.governance import path_backtest, path_cone
from quipu.governance.trajectories import Trajectories, Vocabulary
from quipu.store import graph_scope, values
from quipu.store.database import Database
from quipu.store.schema import ROOT


class GoldenPaths:
    def __init__(self, db: Database, base_ns: str) -> None:
        self.db = db
        self.base_ns = base_ns

    def cone(
        self,
        trajectory: str,
        *,
        via: Sequence[str] | None = None,
        hops: int = path_cone.DEFAULT_HOPS,
        base_ns: str | None = None,
    ) -> dict[str, Any]:
        """Per-step InCone / OutOfCone / CannotEvaluate verdicts of a finished trajectory."""
        values.check_iri(trajectory, "trajectory")
        for predicate in via or ():
            values.check_iri(predicate, "via")
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise InvalidField(f"'hops' must be an integer >= 0, got {hops!r}", field="hops")
        vocabulary = self._vocabulary(base_ns)
        with self.db.read() as conn:
            graph_scope.enforce(self.db, conn, (ROOT,))
            return path_cone.cone(Trajectories(self.db, conn, vocabulary), trajectory, via or (), hops)

    def backtest(
        self, exemplar: str, *, omit: Sequence[str] | None = None, base_ns: str | None = None
    ) -> dict[str, Any]:
        """The exemplar minus ``omit``, replayed over the trajectories sharing its topic."""
        values.check_iri(exemplar, "exemplar")
        for step in omit or ():
            values.check_iri(step, "omit")
        vocabulary = self._vocabulary(base_ns)
        with self.db.read() as conn:
            graph_scope.enforce(self.db, conn, (ROOT,))
            return path_backtest.backtest(Trajectories(self.db, conn, vocabulary), exemplar, omit or ())

    def _vocabulary(self, base_ns: str | None) -> Vocabulary:
        if base_ns is None:
            return Vocabulary(self.base_ns)
        return Vocabulary(values.check_iri(base_ns, "base_ns"))
