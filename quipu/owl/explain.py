"""``quipu_explain``: why a current fact holds, rebuilt from the provenance the fact log keeps
(tools-graphs-governance §8.2, errata: ROOT plus its companion ``urn:quipu:graph:root#inferred``).

Support is re-matched against the current state (EX-1), never read from stored justifications;
every applicable OWL family is reported (EX-4); the depth falls by one per level (EX-3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rdflib import URIRef

from quipu.errors import InvalidField, MissingField, NotFound
from quipu.owl.axioms import Axioms
from quipu.owl.families import Triple, derivations
from quipu.owl.rule_match import RuleMatcher
from quipu.owl.store_facts import StoreFacts
from quipu.store import claim_reads, graph_scope, values
from quipu.store.database import Database
from quipu.store.owl_facts import Statement
from quipu.store.schema import ROOT, ROOT_IRI
from quipu.store.views import TemporalView
from quipu.store.writes import companion_iri

OWL_SOURCE = "owl:materialize"
RULE_PREFIX = "reasoner:"
MAX_DEPTH = 10  # the walk branches per family and premise: deeper is refused [designed here]


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():  # the route's model checks types first
        raise MissingField(f"missing '{field}' parameter", field=field)
    return value


class Explainer:
    """One explanation: a read snapshot, the ontology axioms and the stored rules."""

    def __init__(self, facts: StoreFacts, axioms: Axioms | None, rules: RuleMatcher) -> None:
        self.facts = facts
        self.axioms = axioms  # None: no ontology is stored
        self.rules = rules

    def node(self, st: Statement, depth: int) -> dict[str, Any]:
        e, a, v = st
        f = self.facts
        out: dict[str, Any] = {
            "fact": {"s": f.iri(e), "p": f.iri(a), "o": values.to_json(v, {r: f.iri(r) for r in _ref(v)})},
            "found": False,
        }
        claims = claim_reads.claims(f.conn, f.view, e, a, v)
        if not claims:
            return out
        base = [c for c in claims if not _derived(c.source)]
        claim = (base or claims)[0]  # a fact also asserted directly is a base fact [designed here]
        out.update(found=True, tx=claim.tx, source=claim.source, valid_from=claim.valid_from)
        if base:
            return out
        if depth <= 0:
            out["derivation"] = {"kind": "depth-capped"}
            return out
        source = claim.source or ""
        if source.startswith(RULE_PREFIX):
            out["derivation"] = self.rules.derivation(
                source[len(RULE_PREFIX) :], st, lambda p: self.node(p, depth - 1)
            )
        else:
            out["derivation"] = self._owl(st, depth)
        return out

    def _owl(self, st: Statement, depth: int) -> dict[str, Any]:
        if self.axioms is None:
            return {"kind": "owl", "note": "no ontologies are stored: nothing derives this fact any more"}
        f = self.facts
        fact: Triple = (URIRef(f.iri(st[0])), URIRef(f.iri(st[1])), f.term(st[2]))
        found = derivations(fact, f, self.axioms)
        if not found:
            return {"kind": "owl", "note": "no stored axiom derives this fact from the current facts"}
        families = []
        for d in found:
            premises = [self.node(self._statement(t), depth - 1) for t in d.premises]
            families.append({"family": d.family, "axiom": d.axiom, "premises": premises})
        return {"kind": "owl", "families": families}

    def _statement(self, t: Triple) -> Statement:
        f = self.facts
        e, a, v = f.id_of(str(t[0])), f.id_of(str(t[1])), f.encode(t[2])
        assert e is not None and a is not None and v is not None, "a premise was read from the store"
        return (e, a, v)


def _ref(v: bytes) -> list[int]:
    ref = values.ref_id(v)
    return [] if ref is None else [ref]


def _derived(source: str | None) -> bool:
    return source is not None and (source == OWL_SOURCE or source.startswith(RULE_PREFIX))


def explain(
    db: Database,
    s: object,
    p: object,
    o: object,
    depth: object = 5,
    *,
    axioms_of: Callable[[Any], Axioms | None],
    rules: Callable[[], list[str]],
    base_ns: str,
) -> dict[str, Any]:
    """The recursive node of §8.2 for (s, p, o); 400 for a missing field or an unknown s or p."""
    subject, predicate, obj = _text(s, "s"), _text(p, "p"), _text(o, "o")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= MAX_DEPTH:
        raise InvalidField(f"'depth' must be an integer from 0 to {MAX_DEPTH}", field="depth")
    with db.read() as conn:
        companion = companion_iri(ROOT_IRI)
        ids = db.terms.lookup(conn, (subject, predicate, obj, companion))
        for field, iri in (("s", subject), ("p", predicate)):
            if iri not in ids:
                raise NotFound(
                    f"unknown {'subject' if field == 's' else 'predicate'} IRI: {iri}", field=field
                )
        graphs = (ROOT, ids[companion]) if companion in ids else (ROOT,)
        graph_scope.enforce(db, conn, graphs)
        facts = StoreFacts(db, conn, TemporalView(graphs=frozenset(graphs)))
        # o names a known term: that node; anything else: a plain string literal (§8.2 input)
        v = values.ref(ids[obj]) if obj in ids else values.string(obj)
        walk = Explainer(facts, axioms_of(conn), RuleMatcher(facts, rules, base_ns))
        return walk.node((ids[subject], ids[predicate], v), depth)
