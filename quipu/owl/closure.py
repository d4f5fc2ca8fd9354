"""The OWL 2 RL closure of the premises under the acted-on axioms, by the ``reasonable`` reasoner
(imported only here, only when a materialisation runs).

The reasoner is handed the axioms of the supported families only, so everything it can conclude
is one of them; of its closure quipu keeps the new statements about data nodes (not schema
statements, not OWL's own vocabulary, not ``x owl:sameAs x``) that a family derives in one step
from the closure (families.py), each counted under the first such family.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from rdflib import BNode, Graph, Literal, URIRef
from rdflib.namespace import OWL, RDF, RDFS, XSD
from rdflib.term import Node

from quipu.owl.axioms import Axioms
from quipu.owl.families import Triple, count, derivations

_SCHEMA_NS = (str(OWL), str(RDFS), str(RDF))


def axiom_graph(ax: Axioms) -> Graph:
    """The acted-on axioms as triples (never disjointness or functionality: they only gate)."""
    g = Graph(bind_namespaces="none")
    for predicate, pairs in (
        (RDFS.subClassOf, ax.subclass_of),
        (RDFS.subPropertyOf, ax.subproperty_of),
        (OWL.equivalentClass, ax.equivalent_classes),
        (OWL.equivalentProperty, ax.equivalent_properties),
        (OWL.inverseOf, ax.inverse_of),
        (RDFS.domain, ax.domains),
        (RDFS.range, ax.ranges),
    ):
        for a, b in pairs:
            g.add((URIRef(a), predicate, URIRef(b)))
    for cls, members in ((OWL.SymmetricProperty, ax.symmetric), (OWL.TransitiveProperty, ax.transitive)):
        for p in members:
            g.add((URIRef(p), RDF.type, cls))
    return g


def literal_key(term: Literal) -> tuple[str, str | None, str | None]:
    """A literal's identity across the reasoner, which types every plain literal xsd:string."""
    if term.language:
        return (str(term), term.language.lower(), None)
    return (str(term), None, str(term.datatype or XSD.string))


class _Closure:
    """The closure as the families read it: (p, s) -> objects and (p, o) -> subjects."""

    def __init__(self, triples: Iterable[Triple]) -> None:
        self.out: dict[tuple[Node, Node], set[Node]] = defaultdict(set)
        self.into: dict[tuple[Node, Node], set[URIRef]] = defaultdict(set)
        for s, p, o in triples:
            self.out[(p, s)].add(o)
            self.into[(p, o)].add(s)

    def objects(self, p: URIRef, s: URIRef) -> Iterable[Node]:
        return self.out.get((p, s), ())

    def subjects(self, p: URIRef, o: Node) -> Iterable[URIRef]:
        return self.into.get((p, o), ())


@dataclass
class Entailed:
    """New statements and the family each is counted under."""

    family: dict[Triple, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return count(self.family.values())


def _data_statement(s: Node, p: Node, o: Node) -> bool:
    if not isinstance(s, URIRef) or isinstance(o, BNode) or not isinstance(p, URIRef):
        return False
    if p == OWL.sameAs:
        return isinstance(o, URIRef) and s != o
    if p == RDF.type:
        return isinstance(o, URIRef) and not str(o).startswith(_SCHEMA_NS)
    return not str(p).startswith(_SCHEMA_NS)


def entail(ax: Axioms, premises: Iterable[Triple]) -> Entailed:
    """The new data statements the axioms entail from ``premises`` (literals as the premises
    spell them), each with its family."""
    import reasonable  # type: ignore[import-not-found, import-untyped, unused-ignore]  # the extra, when used

    data = list(premises)
    spelled = {literal_key(o): o for _s, _p, o in data if isinstance(o, Literal)}
    graph = axiom_graph(ax)
    for triple in data:
        graph.add(triple)
    reasoner = reasonable.PyReasoner()
    reasoner.from_graph(graph)
    known = set(data)
    closure: set[Triple] = set(data)
    fresh: list[Triple] = []
    for s, p, o in reasoner.reason():
        if not _data_statement(s, p, o):
            continue
        if isinstance(o, Literal):
            o = spelled.get(literal_key(o))
            if o is None:
                continue  # the families never invent a literal: nothing to keep
        triple = (URIRef(str(s)), URIRef(str(p)), o)
        if triple not in closure:
            closure.add(triple)
            if triple not in known:
                fresh.append(triple)
    view = _Closure(closure)
    out = Entailed()
    for triple in sorted(fresh, key=lambda t: (str(t[0]), str(t[1]), str(t[2]))):
        found = derivations(triple, view, ax, first=True)
        if found:
            out.family[triple] = found[0].family
    return out
