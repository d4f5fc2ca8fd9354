"""Which axiom families derive a statement, and from which premises: one definition for both the
counts of a materialisation and ``quipu_explain`` (EX-4: every applicable family).

Facts are read through ``Facts``: the in-memory closure of a materialisation, or the store's
current ROOT and companion for explain. A family is one step: its premises may themselves be
derived (explain recurses into them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from rdflib import Literal, URIRef
from rdflib.namespace import OWL, RDF
from rdflib.term import Node

from quipu.owl.axioms import Axioms, Pair

Triple = tuple[URIRef, URIRef, Node]

# family -> the materialisation count it adds to (§8.1 keys; the last three [designed here])
COUNTS = {
    "subClassOf": "subclass_inferences",
    "subPropertyOf": "sub_property_inferences",
    "inverseOf": "inverse_inferences",
    "symmetric": "symmetric_inferences",
    "equivalentClass": "equivalent_class_inferences",
    "domain": "domain_range_inferences",
    "range": "domain_range_inferences",
    "transitive": "transitive_inferences",
    "equivalentProperty": "equivalent_property_inferences",
    "sameAs": "same_as_inferences",
}
COUNT_KEYS = tuple(dict.fromkeys(COUNTS.values()))


def count(families: Iterable[str]) -> dict[str, int]:
    """The materialisation counts of statements derived by ``families`` (one name each)."""
    out = dict.fromkeys(COUNT_KEYS, 0)
    total = 0
    for name in families:
        out[COUNTS[name]] += 1
        total += 1
    out["total"] = total
    return out


class Facts(Protocol):
    def objects(self, p: URIRef, s: URIRef) -> Iterable[Node]: ...

    def subjects(self, p: URIRef, o: Node) -> Iterable[URIRef]: ...


@dataclass(frozen=True)
class Derivation:
    family: str
    axiom: str
    premises: tuple[Triple, ...]


class _Index:
    """The axioms keyed by what they conclude."""

    def __init__(self, ax: Axioms) -> None:
        self.supers = _by_second(ax.subclass_of)  # class -> its direct subclasses
        self.equivalent = _by_second(ax.equivalent_classes)
        self.domain_of = _by_second(ax.domains)  # class -> properties with it as domain
        self.range_of = _by_second(ax.ranges)
        self.sub_properties = _by_second(ax.subproperty_of)
        self.equivalent_properties = _by_second(ax.equivalent_properties)
        self.inverse = _by_second(ax.inverse_of)
        self.symmetric = ax.symmetric
        self.transitive = ax.transitive


def _by_second(pairs: frozenset[Pair]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(pairs):
        out[b].append(a)
    return out


@lru_cache(maxsize=8)
def _index(ax: Axioms) -> _Index:
    return _Index(ax)


def _first(items: Iterable[Node]) -> Node | None:
    return next(iter(sorted(items, key=str)), None)


def derivations(fact: Triple, facts: Facts, ax: Axioms, *, first: bool = False) -> list[Derivation]:
    """Every family that derives ``fact`` in one step from present premises (only the first with
    ``first``), in a fixed order."""
    found: list[Derivation] = []
    for derivation in _candidates(fact, facts, _index(ax)):
        found.append(derivation)
        if first:
            break
    return found


def _candidates(fact: Triple, facts: Facts, ix: _Index) -> Iterable[Derivation]:
    s, p, o = fact
    if p == RDF.type and isinstance(o, URIRef):
        yield from _type_families(s, o, facts, ix)
    elif p != OWL.sameAs:
        yield from _property_families(fact, facts, ix)
    yield from _same_as(fact, facts)


def _has(facts: Facts, s: URIRef, p: URIRef, o: Node) -> bool:
    return any(x == o for x in facts.objects(p, s))


def _type_families(s: URIRef, c: URIRef, facts: Facts, ix: _Index) -> Iterable[Derivation]:
    for d in ix.supers.get(str(c), ()):
        if _has(facts, s, RDF.type, URIRef(d)):
            yield Derivation("subClassOf", f"<{d}> rdfs:subClassOf <{c}>", ((s, RDF.type, URIRef(d)),))
    for d in ix.equivalent.get(str(c), ()):
        if _has(facts, s, RDF.type, URIRef(d)):
            yield Derivation(
                "equivalentClass", f"<{d}> owl:equivalentClass <{c}>", ((s, RDF.type, URIRef(d)),)
            )
    for q in ix.domain_of.get(str(c), ()):
        value = _first(facts.objects(URIRef(q), s))
        if value is not None:
            yield Derivation("domain", f"<{q}> rdfs:domain <{c}>", ((s, URIRef(q), value),))
    for q in ix.range_of.get(str(c), ()):
        subject = _first(facts.subjects(URIRef(q), s))
        if subject is not None:
            yield Derivation("range", f"<{q}> rdfs:range <{c}>", ((URIRef(str(subject)), URIRef(q), s),))


def _property_families(fact: Triple, facts: Facts, ix: _Index) -> Iterable[Derivation]:
    s, p, o = fact
    for q in ix.sub_properties.get(str(p), ()):
        if _has(facts, s, URIRef(q), o):
            yield Derivation("subPropertyOf", f"<{q}> rdfs:subPropertyOf <{p}>", ((s, URIRef(q), o),))
    for q in ix.equivalent_properties.get(str(p), ()):
        if _has(facts, s, URIRef(q), o):
            yield Derivation(
                "equivalentProperty", f"<{q}> owl:equivalentProperty <{p}>", ((s, URIRef(q), o),)
            )
    if isinstance(o, Literal):
        return  # the families below need a node in object position
    obj = URIRef(str(o))
    for q in ix.inverse.get(str(p), ()):
        if _has(facts, obj, URIRef(q), s):
            yield Derivation("inverseOf", f"<{q}> owl:inverseOf <{p}>", ((obj, URIRef(q), s),))
    if str(p) in ix.symmetric and _has(facts, obj, p, s):
        yield Derivation("symmetric", f"<{p}> a owl:SymmetricProperty", ((obj, p, s),))
    if str(p) in ix.transitive:
        for middle in sorted(facts.objects(p, s), key=str):
            if isinstance(middle, URIRef) and middle not in (s, o) and _has(facts, middle, p, o):
                yield Derivation(
                    "transitive", f"<{p}> a owl:TransitiveProperty", ((s, p, middle), (middle, p, o))
                )
                break  # one chain (§8.2)


def _same_as(fact: Triple, facts: Facts) -> Iterable[Derivation]:
    """sameAs closure and the copying of statements between co-referent nodes (errata)."""
    s, p, o = fact
    axiom = "owl:sameAs (symmetric, transitive, co-referent nodes share statements)"
    if p == OWL.sameAs:
        if _has(facts, URIRef(str(o)), OWL.sameAs, s):
            yield Derivation("sameAs", axiom, ((URIRef(str(o)), OWL.sameAs, s),))
            return
        for middle in sorted(facts.objects(OWL.sameAs, s), key=str):
            if isinstance(middle, URIRef) and middle not in (s, o) and _has(facts, middle, OWL.sameAs, o):
                yield Derivation("sameAs", axiom, ((s, OWL.sameAs, middle), (middle, OWL.sameAs, o)))
                return
        return
    for alias in sorted(facts.objects(OWL.sameAs, s), key=str):
        if isinstance(alias, URIRef) and alias != s and _has(facts, alias, p, o):
            yield Derivation("sameAs", axiom, ((s, OWL.sameAs, alias), (alias, p, o)))
            return
    if isinstance(o, URIRef):
        for alias in sorted(facts.objects(OWL.sameAs, o), key=str):
            if isinstance(alias, URIRef) and alias != o and _has(facts, s, p, alias):
                yield Derivation("sameAs", axiom, ((o, OWL.sameAs, alias), (s, p, alias)))
                return
