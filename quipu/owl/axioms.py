"""OWL ontologies as Turtle: parsing, the axiom Summary (§8.1) and the axioms quipu acts on.

Only IRI-to-IRI axioms of the supported families are acted on: class expressions (restrictions,
unions) are counted by the Summary but neither materialised nor enforced.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from rdflib import Graph, URIRef
from rdflib.namespace import OWL, RDF, RDFS

from quipu.errors import InvalidField, MissingField
from quipu.shacl.rdf import parse_field

Pair = tuple[str, str]


@dataclass(frozen=True)
class Axioms:
    """The acted-on axioms of one ontology or of the union of the stored ones."""

    subclass_of: frozenset[Pair] = frozenset()  # (sub, super)
    subproperty_of: frozenset[Pair] = frozenset()  # (sub, super)
    equivalent_classes: frozenset[Pair] = frozenset()  # both directions
    equivalent_properties: frozenset[Pair] = frozenset()  # both directions
    inverse_of: frozenset[Pair] = frozenset()  # both directions
    domains: frozenset[Pair] = frozenset()  # (property, class)
    ranges: frozenset[Pair] = frozenset()  # (property, class)
    disjoint_with: frozenset[Pair] = frozenset()  # both directions
    functional: frozenset[str] = frozenset()
    symmetric: frozenset[str] = frozenset()
    transitive: frozenset[str] = frozenset()
    summary: dict[str, int] = field(default_factory=dict, compare=False)

    def union(self, other: Axioms) -> Axioms:
        return Axioms(
            **{name: getattr(self, name) | getattr(other, name) for name in _SETS},
            summary={},
        )

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name in _SETS)

    def properties(self) -> set[str]:
        """Every property a materialisation family reads facts of."""
        pairs = self.subproperty_of | self.equivalent_properties | self.inverse_of
        out = {p for pair in pairs for p in pair}
        out |= {p for p, _c in self.domains | self.ranges}
        return out | self.symmetric | self.transitive

    def classes(self) -> set[str]:
        pairs = self.subclass_of | self.equivalent_classes
        return {c for pair in pairs for c in pair} | {c for _p, c in self.domains | self.ranges}


_SETS = tuple(name for name in Axioms.__dataclass_fields__ if name != "summary")


def _iri_pairs(graph: Graph, predicate: URIRef, both: bool = False) -> frozenset[Pair]:
    out: set[Pair] = set()
    for s, o in graph.subject_objects(predicate):
        if isinstance(s, URIRef) and isinstance(o, URIRef) and s != o:
            out.add((str(s), str(o)))
            if both:
                out.add((str(o), str(s)))
    return frozenset(out)


def _typed(graph: Graph, cls: URIRef) -> frozenset[str]:
    return frozenset(str(s) for s in graph.subjects(RDF.type, cls) if isinstance(s, URIRef))


def _unordered(graph: Graph, predicate: URIRef) -> int:
    return len({frozenset((s, o)) for s, o in graph.subject_objects(predicate)})


def summarise(graph: Graph) -> dict[str, int]:
    """§8.1 Summary: counts over the document as written; symmetric pair relations (disjointness,
    inverses) once per pair."""

    def count(predicate: URIRef) -> int:
        return sum(1 for _ in graph.triples((None, predicate, None)))

    def typed(cls: URIRef) -> int:
        return len(set(graph.subjects(RDF.type, cls)))

    return {
        "subclass_of": count(RDFS.subClassOf),
        "subproperty_of": count(RDFS.subPropertyOf),
        "disjoint_with": _unordered(graph, OWL.disjointWith),
        "inverse_of": _unordered(graph, OWL.inverseOf),
        "functional_properties": typed(OWL.FunctionalProperty),
        "symmetric_properties": typed(OWL.SymmetricProperty),
        "transitive_properties": typed(OWL.TransitiveProperty),
        "equivalent_classes": count(OWL.equivalentClass),
        "equivalent_properties": count(OWL.equivalentProperty),
        "domains": count(RDFS.domain),
        "ranges": count(RDFS.range),
        "total_triples": len(graph),
    }


def parse(turtle: str | None, field: str = "turtle") -> Axioms:
    """An ontology's axioms; 400 naming ``field`` when it is missing or does not parse."""
    if turtle is None or not turtle.strip():
        raise MissingField(f"missing '{field}' parameter", field=field)
    return _parse(turtle, field)


@lru_cache(maxsize=32)
def _parse(turtle: str, field: str) -> Axioms:
    problem = "does not parse as an OWL ontology in Turtle"
    graph = parse_field(turtle, field, problem=problem, reason="invalid_ontology")
    if len(graph) == 0:
        raise InvalidField(
            f"'{field}' holds no statements: not an ontology", field=field, reason="invalid_ontology"
        )
    return Axioms(
        subclass_of=_iri_pairs(graph, RDFS.subClassOf),
        subproperty_of=_iri_pairs(graph, RDFS.subPropertyOf),
        equivalent_classes=_iri_pairs(graph, OWL.equivalentClass, both=True),
        equivalent_properties=_iri_pairs(graph, OWL.equivalentProperty, both=True),
        inverse_of=_iri_pairs(graph, OWL.inverseOf, both=True),
        domains=_iri_pairs(graph, RDFS.domain),
        ranges=_iri_pairs(graph, RDFS.range),
        disjoint_with=_iri_pairs(graph, OWL.disjointWith, both=True),
        functional=_typed(graph, OWL.FunctionalProperty),
        symmetric=_typed(graph, OWL.SymmetricProperty),
        transitive=_typed(graph, OWL.TransitiveProperty),
        summary=summarise(graph),
    )


def combined(texts: Iterable[str]) -> Axioms:
    """The union of several stored ontologies (what the gate and materialisation act on)."""
    out = Axioms()
    for text in texts:
        out = out.union(parse(text))
    return out


def summary_or_error(turtle: str) -> dict[str, object]:
    """A stored ontology's Summary for ``list``; one that no longer parses shows the §8.1 error."""
    try:
        return dict(parse(turtle).summary)
    except InvalidField:
        return {"error": "parse failed"}
