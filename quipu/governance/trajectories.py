"""Trajectories as current ROOT records them (tools-graphs-governance §6.0): the golden-path
vocabulary under a namespace, and the steps, work items, topics and outcomes read through it.

A completed work item leaves a Trajectory of Steps::

    <step> ns:stepOf <trajectory> ; ns:stepOrder 1 ; ns:actionKind "edit" ; ns:actionTarget <x> .
    <step> ns:verifiedBy <verification> .  <verification> ns:falsifier "…" .
    <trajectory> ns:trajectoryOf <workitem> .  <workitem> ns:about "topic" ; ns:outcome "done" .

Nothing is hard-coded to a hostname: every term is resolved against ``ns``. One ``Trajectories``
reads in one snapshot, bulk per question (the steps of many trajectories in a few queries).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from sqlalchemy import Connection

from quipu.governance.gp_grammar import Signature, Target, signature
from quipu.store import trajectory_reads as reads
from quipu.store import values
from quipu.store.database import Database

RDF_TYPE = values.RDF + "type"


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The golden-path terms this family reads, resolved against one namespace."""

    ns: str

    def term(self, local: str) -> str:
        return self.ns + local

    @property
    def verified_by(self) -> str:
        return self.ns + "verifiedBy"


@dataclass(frozen=True, slots=True)
class Step:
    term: int
    iri: str
    order: int | None  # None: no stepOrder that reads as an integer
    signature: Signature | None  # None: no actionKind, so unevaluable under gp-grammar/1


def _sort_key(step: Step) -> tuple[bool, int, str]:
    # By stepOrder ascending (ties by IRI); steps without an order last, by IRI (§6.0).
    return (step.order is None, step.order or 0, step.iri)


def _integer(value: bytes) -> int | None:
    """A stepOrder value as an integer: an integer literal, or a string that reads as one."""
    d = values.decode(value)
    if d.kind == "int":
        return int(d.value)
    readable = d.kind == "str" or (d.kind == "typed" and (d.datatype or "").startswith(values.XSD))
    if readable and values.INTEGER_LEX.fullmatch(d.lexical):
        return int(d.lexical)
    return None


def _string(value: bytes) -> str | None:
    d = values.decode(value)
    return str(d.value) if d.kind == "str" else None


class Trajectories:
    """The trajectory records of current ROOT, read through one connection's snapshot."""

    def __init__(self, db: Database, conn: Connection, vocabulary: Vocabulary) -> None:
        self.db = db
        self.conn = conn
        self.vocabulary = vocabulary
        self._known: dict[str, int] = {}

    def ids(self, iris: Iterable[str]) -> dict[str, int]:
        """The term ids of those of ``iris`` the store has interned (others are left out)."""
        wanted = [iri for iri in iris if iri not in self._known]
        if wanted:
            self._known.update(self.db.terms.lookup(self.conn, wanted))
        return {iri: self._known[iri] for iri in iris if iri in self._known}

    def id(self, iri: str) -> int | None:
        return self.ids((iri,)).get(iri)

    def _predicate(self, local: str) -> int | None:
        return self.id(self.vocabulary.term(local))

    def iris(self, terms: Iterable[int]) -> dict[int, str]:
        return self.db.terms.iris(self.conn, set(terms))

    # -- steps ---------------------------------------------------------------------------------

    def steps(self, trajectories: Collection[int]) -> dict[int, list[Step]]:
        """Each trajectory's steps in order (a trajectory without steps is absent)."""
        step_of = self._predicate("stepOf")
        if step_of is None or not trajectories:
            return {}
        membership = reads.referrers(self.conn, step_of, trajectories)
        step_ids = {step for step, _ in membership}
        details = self._step_details(step_ids)
        names = self.iris(step_ids)
        out: dict[int, list[Step]] = defaultdict(list)
        for step, trajectory in membership:
            order, sig = details.get(step, (None, None))
            out[trajectory].append(Step(step, names[step], order, sig))
        return {t: sorted(found, key=_sort_key) for t, found in out.items()}

    def _step_details(self, steps: Collection[int]) -> dict[int, tuple[int | None, Signature | None]]:
        """Each step's order and signature, from its stepOrder, actionKind and actionTarget."""
        terms = {name: self.vocabulary.term(name) for name in ("stepOrder", "actionKind", "actionTarget")}
        found = self.ids(terms.values())
        local = {found[iri]: name for name, iri in terms.items() if iri in found}  # id -> local name
        orders: dict[int, list[int]] = defaultdict(list)
        kinds: dict[int, list[str]] = defaultdict(list)
        targets: dict[int, list[int | None]] = defaultdict(list)  # an IRI target's id, None: literal
        for step, predicate, value in reads.statements_of(self.conn, steps, local):
            name = local[predicate]
            if name == "stepOrder" and (n := _integer(value)) is not None:
                orders[step].append(n)
            elif name == "actionKind" and (kind := _string(value)) is not None:
                kinds[step].append(kind)
            elif name == "actionTarget":
                targets[step].append(values.ref_id(value))
        types = self._types({t for found in targets.values() for t in found if t is not None})

        def target_of(ref: int | None) -> Target:
            return None if ref is None else types.get(ref, frozenset())

        return {
            # [designed here] Several stepOrder values: the smallest.
            step: (min(orders[step], default=None), signature(kinds[step], map(target_of, targets[step])))
            for step in steps
        }

    def _types(self, terms: Collection[int]) -> dict[int, frozenset[str]]:
        """The rdf:type IRIs of each of ``terms`` that has any."""
        rdf_type = self.id(RDF_TYPE)
        if rdf_type is None or not terms:
            return {}
        found: dict[int, set[int]] = defaultdict(set)
        for term, _, value in reads.statements_of(self.conn, terms, (rdf_type,)):
            ref = values.ref_id(value)
            if ref is not None:
                found[term].add(ref)
        names = self.iris({t for refs in found.values() for t in refs})
        return {term: frozenset(names[r] for r in refs) for term, refs in found.items()}

    # -- verifications -------------------------------------------------------------------------

    def verified_by(self, steps: Collection[int]) -> list[tuple[int, int]]:
        """``(step, verification)`` of every IRI-valued ``verifiedBy`` of these steps."""
        predicate = self.id(self.vocabulary.verified_by)
        if predicate is None:
            return []
        found = reads.statements_of(self.conn, steps, (predicate,))
        return [(step, ref) for step, _, value in found if (ref := values.ref_id(value)) is not None]

    def falsifier_gated(self, verifications: Collection[int]) -> set[int]:
        """Those of ``verifications`` that carry any ``falsifier`` value."""
        falsifier = self._predicate("falsifier")
        if falsifier is None:
            return set()
        return {v for v, _, _ in reads.statements_of(self.conn, verifications, (falsifier,))}

    def derivation_edges(self, steps: Collection[int], predicates: Collection[int]) -> dict[int, int]:
        """How many IRI-valued statements each step has under ``predicates`` (absent: none)."""
        counts: dict[int, int] = defaultdict(int)
        for step, _, value in reads.statements_of(self.conn, steps, predicates):
            if values.ref_id(value) is not None:
                counts[step] += 1
        return counts

    # -- work items ----------------------------------------------------------------------------

    def work_items(self) -> list[tuple[int, int]]:
        """``(trajectory, work item)`` of every IRI-valued ``trajectoryOf`` in the store."""
        predicate = self._predicate("trajectoryOf")
        return [] if predicate is None else reads.reference_statements(self.conn, predicate)

    def strings(self, local: str, subjects: Collection[int]) -> dict[int, list[str]]:
        """Each subject's plain-string values of the term ``local`` (``about``, ``outcome``)."""
        predicate = self._predicate(local)
        if predicate is None:
            return {}
        found: dict[int, list[str]] = defaultdict(list)
        for subject, _, value in reads.statements_of(self.conn, subjects, (predicate,)):
            text = _string(value)
            if text is not None:
                found[subject].append(text)
        return found
