"""The three-way merge model of ``quipu_merge_decisions`` / ``quipu_merge_apply``
(tools-graphs-governance §4.4): slots, bounds and conflicts, as a pure function of three graphs.

A graph here is a set of triples ``(subject term, predicate IRI, object term)`` whose terms are
the N-Triples spellings of a canonical export, so two graphs compare by text. Triples are grouped
into slots ``(subject, predicate)``; per slot the merge starts from the base values, drops what
either side removed and adds what either side added. Only a slot bounded by ``sh:maxCount`` in
the incoming share's shapes can conflict: when the merged count exceeds the bound, or (bound 1,
non-empty base) one side deleted the value while the other replaced it. A conflicting slot is
held at its base values until someone decides it.

Blank nodes are compared by their canonical (RDFC-1.0) labels, which are local to each graph;
``quipu.sharing.merge`` refuses to write a triple that names one (ROOT cannot address it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from quipu.errors import BadRequest

SH: Final = "http://www.w3.org/ns/shacl#"
SH_PATH: Final = SH + "path"
SH_MAX_COUNT: Final = SH + "maxCount"
MAX_COUNT_EXCEEDED: Final = "max_count_exceeded"
DELETE_REPLACE: Final = "delete_replace"

Triple = tuple[str, str, str]  # subject term, predicate IRI (bare), object term
Slot = tuple[str, str]  # subject term, predicate IRI (bare)


def parse_lines(text: str, where: str) -> set[Triple]:
    """The triples of canonical N-Triples (one ``S <P> O .`` line each, single spaces).

    Canonical output spells every term without inner spaces except inside a literal, which is
    always the object: the first two spaces therefore split subject, predicate and object.
    """
    out: set[Triple] = set()
    # "\n" only: a literal may hold other line separators (U+2028, U+0085) verbatim.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line:
            continue
        parts = line.split(" ", 2)
        if len(parts) != 3 or not line.endswith(" .") or not _is_node(parts[0]) or not _is_iri(parts[1]):
            raise BadRequest(
                f"{where} line {number} is not a canonical N-Triples triple: {line[:200]!r}",
                reason="rdf_parse_error",
            )
        obj = parts[2][: -len(" .")]
        if not obj:
            raise BadRequest(f"{where} line {number} has no object", reason="rdf_parse_error")
        out.add((parts[0], parts[1][1:-1], obj))
    return out


def _is_iri(term: str) -> bool:
    return len(term) > 2 and term.startswith("<") and term.endswith(">")


def _is_node(term: str) -> bool:
    return _is_iri(term) or (term.startswith("_:") and len(term) > 2)


def is_blank(term: str) -> bool:
    return term.startswith("_:")


def max_counts(shapes_turtle: str) -> dict[str, int]:
    """``sh:maxCount`` bounds by predicate: a node with ``sh:path <p>`` (an IRI) and an integer
    ``sh:maxCount n`` bounds ``p``. Two shapes bounding one predicate: the tighter bound holds."""
    if not shapes_turtle.strip():
        return {}
    from rdflib import Graph, Literal, URIRef

    graph = Graph(bind_namespaces="none")
    try:
        graph.parse(data=shapes_turtle, format="turtle")
    except Exception as exc:  # rdflib raises many types for bad Turtle
        raise BadRequest(
            f"the incoming share's shapes.ttl does not parse: {exc}",
            reason="rdf_parse_error",
            field="incoming.shapes_turtle",
        ) from None
    bounds: dict[str, int] = {}
    for node, count in graph.subject_objects(URIRef(SH_MAX_COUNT)):
        value = count.toPython() if isinstance(count, Literal) else None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            continue  # not an integer bound: nothing to enforce
        for path in graph.objects(node, URIRef(SH_PATH)):
            if isinstance(path, URIRef):
                bounds[str(path)] = min(value, bounds.get(str(path), value))
    return bounds


def by_slot(triples: Iterable[Triple]) -> dict[Slot, set[str]]:
    slots: dict[Slot, set[str]] = {}
    for s, p, o in triples:
        slots.setdefault((s, p), set()).add(o)
    return slots


# What identifies a conflict: a decisions file is stale unless its rows carry the same set.
ConflictKey = tuple[str, str, int, tuple[str, ...], tuple[str, ...], tuple[str, ...], str]


@dataclass(frozen=True, slots=True)
class Conflict:
    """One slot that cannot merge automatically; value tuples are sorted by code point."""

    subject: str
    predicate: str
    max_count: int
    base: tuple[str, ...]
    ours: tuple[str, ...]
    theirs: tuple[str, ...]
    kind: str

    @property
    def slot(self) -> Slot:
        return (self.subject, self.predicate)

    @property
    def key(self) -> ConflictKey:
        return (self.subject, self.predicate, self.max_count, self.base, self.ours, self.theirs, self.kind)

    def side(self, name: str) -> tuple[str, ...]:
        """The values of one side: ``base``, ``ours`` or ``theirs``."""
        return {"base": self.base, "ours": self.ours, "theirs": self.theirs}[name]


@dataclass(frozen=True, slots=True)
class Merge:
    merged: set[Triple]  # conflicting slots held at their base values
    conflicts: list[Conflict]  # by (subject, predicate)


def combine(base: set[str], ours: set[str], theirs: set[str]) -> set[str]:
    """One slot merged: the base values neither side removed, plus what either side added."""
    return (base & ours & theirs) | (ours - base) | (theirs - base)


def _deleted_and_replaced(gone: set[str], other: set[str], base: set[str]) -> bool:
    """One side emptied the slot while the other put different values in it."""
    return not gone and bool(other) and other != base


def merge(base: set[Triple], ours: set[Triple], theirs: set[Triple], bounds: Mapping[str, int]) -> Merge:
    b, o, t = by_slot(base), by_slot(ours), by_slot(theirs)
    merged: set[Triple] = set()
    conflicts: list[Conflict] = []
    for slot in sorted(b.keys() | o.keys() | t.keys()):
        bv, ov, tv = b.get(slot, set()), o.get(slot, set()), t.get(slot, set())
        values = combine(bv, ov, tv)
        bound = bounds.get(slot[1])
        kind: str | None = None
        if bound is not None and len(values) > bound:
            kind = MAX_COUNT_EXCEEDED
        elif bound == 1 and bv and (_deleted_and_replaced(ov, tv, bv) or _deleted_and_replaced(tv, ov, bv)):
            kind = DELETE_REPLACE
        if kind is not None and bound is not None:
            conflicts.append(
                Conflict(
                    slot[0], slot[1], bound, tuple(sorted(bv)), tuple(sorted(ov)), tuple(sorted(tv)), kind
                )
            )
            values = bv  # held at base until decided
        merged.update((slot[0], slot[1], v) for v in values)
    return Merge(merged, conflicts)
