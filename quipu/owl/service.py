"""The owl family's service: ``/ontology`` (load, list, remove, materialize) and ``/explain``.

Without the extra installed both answer 400 ``owl_not_installed`` naming the missing feature
(never 404, §8), and no write is gated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from rdflib.namespace import OWL, RDF
from sqlalchemy import Connection

from quipu import times
from quipu.config import OwlSettings
from quipu.errors import BadRequest, InvalidField, MissingField
from quipu.identity import Authenticated
from quipu.owl import axioms as owl_axioms
from quipu.owl.explain import explain
from quipu.owl.gate import OwlGate
from quipu.owl.materialise import materialise
from quipu.store import ontologies, owl_facts
from quipu.store.context import TxInfo
from quipu.store.database import Database
from quipu.store.schema import ROOT

log = logging.getLogger("quipu.owl")
ACTIONS = ("load", "list", "remove", "materialize")


def _name(name: str | None) -> str:
    if name is None or not name.strip():
        raise MissingField("missing 'name' parameter", field="name")
    return name


class Owl:
    def __init__(
        self,
        db: Database,
        *,
        installed: bool,
        settings: OwlSettings,
        stored_rules: Callable[[], list[str]],
        base_ns: str,
    ) -> None:
        self.db = db
        self.installed = installed
        self.stored_rules = stored_rules
        self.base_ns = base_ns
        self.gate = OwlGate(db)
        # The gate is on with the extra unless [quipu.owl] validate_on_write = false.
        self.gating = installed and settings.validate_on_write is not False
        if self.gating:
            db.staged_checks.append(self.gate)
        if installed and settings.reactive_materialize:
            db.committed_listeners.append(self.committed)

    def _require(self) -> None:
        if not self.installed:
            raise BadRequest(
                "OWL support is not installed: the 'owl' feature is missing; "
                "install it with pip install 'quipu[owl]'",
                reason="owl_not_installed",
            )

    def ontology(
        self,
        action: str | None = None,
        name: str | None = None,
        turtle: str | None = None,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> dict[str, Any]:
        """``quipu_load_ontology`` (§8.1): one action; an unknown one is refused, never listed."""
        self._require()
        act = "list" if action is None else action
        if act == "load":
            return self.load(_name(name), turtle, timestamp, auth)
        if act == "list":
            return self.listing()
        if act == "remove":
            return self.remove(_name(name), timestamp, auth)
        if act == "materialize":
            return self.materialize(timestamp, auth)
        raise InvalidField(
            f"unknown action '{act}'; use 'load', 'list', 'remove' or 'materialize'",
            field="action",
            reason="unknown_action",
        )

    def load(
        self, name: str, turtle: str | None, timestamp: str | None, auth: Authenticated | None
    ) -> dict[str, Any]:
        parsed = owl_axioms.parse(turtle)  # 400 before anything is written
        assert turtle is not None
        ts = times.normalise_timestamp(timestamp)
        with self.db.write(auth) as ctx:
            ontologies.store(ctx, name, turtle, ts, times.now())
            self.gate.invalidate()  # OL-3
            union = owl_axioms.combined(v.turtle for v in ontologies.open_versions(ctx.conn))
            counts = materialise(self.db, ctx, union, ts, retract_stale=False)
        self.gate.invalidate()
        return {"action": "load", "name": name, "axioms": dict(parsed.summary), "materialized": counts}

    def listing(self) -> dict[str, Any]:
        with self.db.read() as conn:
            stored = ontologies.open_versions(conn)
        items = [
            {"name": v.name, "loaded_at": v.loaded_at, "axioms": owl_axioms.summary_or_error(v.turtle)}
            for v in stored
        ]
        return {"action": "list", "ontologies": items, "count": len(items)}

    def remove(self, name: str, timestamp: str | None, auth: Authenticated | None) -> dict[str, Any]:
        ts = times.normalise_timestamp(timestamp)
        with self.db.write(auth) as ctx:
            removed = ontologies.close(ctx, name, ts)  # OL-4: what it materialised stays
            self.gate.invalidate()
        self.gate.invalidate()
        return {"action": "remove", "name": name, "removed": removed}

    def materialize(self, timestamp: str | None, auth: Authenticated | None) -> dict[str, Any]:
        """Re-derive from every stored ontology (errata): new entailments are asserted, what
        ``owl:materialize`` holds and no longer follows is retracted [designed here]."""
        ts = times.normalise_timestamp(timestamp)
        with self.db.write(auth) as ctx:
            stored = ontologies.open_versions(ctx.conn)
            if not stored:
                return {
                    "action": "materialize",
                    "ontologies": 0,
                    "materialized": None,
                    "note": "no ontologies are loaded: load one with action 'load' first",
                }
            union = owl_axioms.combined(v.turtle for v in stored)
            counts = materialise(self.db, ctx, union, ts, retract_stale=True)
        return {"action": "materialize", "ontologies": len(stored), "materialized": counts}

    def committed(self, txs: Sequence[TxInfo], advisories: Sequence[str] = ()) -> None:
        """``[quipu.owl] reactive_materialize``: after a committed write whose ROOT transactions
        touched ``rdf:type``, ``owl:sameAs`` or a property the stored ontologies name, the
        ``materialize`` action runs in a write of its own. The write has committed, so a failure
        here is logged, never raised. Materialisation writes only the companion: no loop."""
        root = [tx.id for tx in txs if tx.graph == ROOT]
        if not root:
            return
        try:
            if self._touched(root):
                self.materialize(None, None)
        except Exception:
            log.exception("reactive OWL materialisation failed after transaction %s", root[-1])

    def _touched(self, tx_ids: list[int]) -> bool:
        with self.db.read() as conn:
            stored = self._stored_axioms(conn)
            if stored is None:
                return False
            wanted = sorted({str(RDF.type), str(OWL.sameAs), *stored.properties()})
            ids = set(self.db.terms.lookup(conn, wanted).values())
            return not ids.isdisjoint(owl_facts.predicates_in(conn, ROOT, tx_ids))

    def _stored_axioms(self, conn: Connection) -> owl_axioms.Axioms | None:
        stored = ontologies.open_versions(conn)
        return owl_axioms.combined(v.turtle for v in stored) if stored else None

    def explain(
        self, s: object = None, p: object = None, o: object = None, depth: object = 5
    ) -> dict[str, Any]:
        """``quipu_explain`` (§8.2)."""
        self._require()
        return explain(
            self.db,
            s,
            p,
            o,
            depth,
            axioms_of=self._stored_axioms,
            rules=self.stored_rules,
            base_ns=self.base_ns,
        )
