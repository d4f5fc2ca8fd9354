"""The OWL write gate: ``owl:disjointWith`` and ``owl:FunctionalProperty`` on ROOT writes
(errata: only these two; ``[quipu.owl] validate_on_write``, default on with the extra).

It runs inside the write (``Database.staged_checks``), after the statements are staged and
before the events: it reads back what the write's ROOT transactions asserted.

* A subject newly typed with a class disjoint from one of its current types (either side read up
  the stored ``subClassOf``/``equivalentClass`` axioms [designed here]) is refused.
* Two different values of a functional property for one subject in one write are refused; a
  single new value replaces the current ones, closed in the writer's own transaction.

Every violation of the write is reported together (400 ``owl_violation``) and nothing is written.
The ontologies are re-read when the open versions change, so a load or remove takes effect on the
very next write (OL-3).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rdflib.namespace import RDF
from sqlalchemy import Connection

from quipu.errors import WriteRefused
from quipu.owl.axioms import Axioms, combined
from quipu.store import claim_reads, ontologies, owl_facts, values, writes
from quipu.store.context import Refusal, TxInfo, WriteContext
from quipu.store.database import Database
from quipu.store.schema import ROOT
from quipu.store.views import TemporalView

_ROOT_NOW = TemporalView(graphs=frozenset({ROOT}))


class OwlGate:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._key: tuple[tuple[str, str], ...] | None = None
        self._axioms = Axioms()

    def invalidate(self) -> None:
        """Forget the cached ontologies (OL-3): the next write reads them again."""
        self._key = None

    def axioms(self, conn: Connection) -> Axioms:
        key = ontologies.open_keys(conn)
        if key != self._key:
            self._axioms = combined(v.turtle for v in ontologies.open_versions(conn))
            self._key = key
        return self._axioms

    def __call__(self, ctx: WriteContext) -> None:
        root = [t for t in ctx.transactions if t.graph == ROOT]
        if not root:
            return
        ax = self.axioms(ctx.conn)
        if not ax.disjoint_with and not ax.functional:
            return
        type_iri = str(RDF.type)
        ids = self.db.terms.lookup_in(ctx, [type_iri, *sorted(ax.functional)])
        staged = owl_facts.asserted_in(ctx.conn, ROOT, [t.id for t in root], ids.values())
        type_id = ids.get(type_iri)
        functional = {ids[p] for p in ax.functional if p in ids}
        violations = self._disjoint(ctx, ax, type_id, [s for s in staged if s[1] == type_id])
        violations += self._functional(ctx, root[-1], [s for s in staged if s[1] in functional])
        if violations:
            tx = root[-1]
            refusal = Refusal("owl", None, None, tx.source, len(staged), tx.timestamp)
            with ctx.gate(refusal):
                shown = "; ".join(v["message"] for v in violations[:5])
                raise WriteRefused(
                    f"OWL constraints refused the write; nothing was written: {shown}",
                    reason="owl_violation",
                    extra={"violations": violations},
                )

    def _iri(self, ctx: WriteContext, tid: int) -> str:
        return self.db.terms.iris_in(ctx, (tid,))[tid]

    def _disjoint(
        self, ctx: WriteContext, ax: Axioms, type_id: int | None, staged: list[tuple[int, int, bytes]]
    ) -> list[dict[str, Any]]:
        if type_id is None or not ax.disjoint_with:
            return []
        new: dict[int, set[str]] = defaultdict(set)
        for e, _a, v in staged:
            ref = values.ref_id(v)
            if ref is not None:
                new[e].add(self._iri(ctx, ref))
        out: list[dict[str, Any]] = []
        for e, added in sorted(new.items()):
            current = claim_reads.objects(ctx.conn, _ROOT_NOW, e, type_id)
            held = {self._iri(ctx, r) for v in current if (r := values.ref_id(v)) is not None}
            seen: set[frozenset[str]] = set()
            for c in sorted(added):
                for d in sorted(held - {c}):
                    clash = _clash(ax, c, d)
                    if clash is not None and frozenset((c, d)) not in seen:
                        seen.add(frozenset((c, d)))
                        focus = self._iri(ctx, e)
                        out.append(
                            {
                                "kind": "disjoint_classes",
                                "focus_node": focus,
                                "classes": [c, d],
                                "axiom": f"<{clash[0]}> owl:disjointWith <{clash[1]}>",
                                "message": f"<{focus}> cannot be both <{c}> and <{d}> (disjoint classes)",
                            }
                        )
        return out

    def _functional(
        self, ctx: WriteContext, tx: TxInfo, staged: list[tuple[int, int, bytes]]
    ) -> list[dict[str, Any]]:
        by_key: dict[tuple[int, int], set[bytes]] = defaultdict(set)
        for e, a, v in staged:
            by_key[(e, a)].add(v)
        out: list[dict[str, Any]] = []
        for (e, a), vs in sorted(by_key.items()):
            if len(vs) > 1:
                focus, prop = self._iri(ctx, e), self._iri(ctx, a)
                out.append(
                    {
                        "kind": "functional_property",
                        "focus_node": focus,
                        "property": prop,
                        "count": len(vs),
                        "message": f"<{focus}> gets {len(vs)} values for functional property <{prop}> "
                        "in one write (max 1)",
                    }
                )
            else:  # the later value replaces the earlier ones, in the writer's transaction
                writes.close_claims(ctx, tx, e=e, a=a, keep=next(iter(vs)))
        return out


def _supers(ax: Axioms, cls: str) -> set[str]:
    """``cls`` and every class the stored axioms make it a subclass or equivalent of."""
    up = {cls}
    pending = [cls]
    while pending:
        c = pending.pop()
        for a, b in ax.subclass_of | ax.equivalent_classes:
            if a == c and b not in up:
                up.add(b)
                pending.append(b)
    return up


def _clash(ax: Axioms, c: str, d: str) -> tuple[str, str] | None:
    for x in sorted(_supers(ax, c)):
        for y in sorted(_supers(ax, d)):
            if (x, y) in ax.disjoint_with:
                return x, y
    return None
