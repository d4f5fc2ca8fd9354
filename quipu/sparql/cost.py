"""Which SPARQL queries are point lookups: cheap enough never to wait behind heavy ones.

A point lookup is a SELECT or ASK over one basic graph pattern of a few triples, each anchored by
a constant subject or object and all joined through shared variables, with nothing around it but
projection, DISTINCT, LIMIT/OFFSET and filters. Every triple then reads one index range, whatever
the store's size. Anything else (unanchored triples, anchored triples that share no variable and
so multiply into a cross product, paths, aggregates, subqueries, unions, optionals) may run for
seconds, and counts as a long read. The WAL checkpointer never holds a point lookup back
(``Database.read(long=...)``), and a server answers it in a read lane of its own
(quipu/rest/lanes.py).
"""

from __future__ import annotations

from typing import Any, Final

from rdflib.paths import Path
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Variable

_MAX_TRIPLES: Final = 4
_WRAPPERS: Final = frozenset({"SelectQuery", "AskQuery", "Project", "Distinct", "Reduced", "Slice", "Filter"})


def _anchored(triple: tuple[Any, Any, Any]) -> bool:
    subject, predicate, obj = triple
    if isinstance(predicate, Path):  # a property path may walk the whole graph
        return False
    return not isinstance(subject, Variable) or not isinstance(obj, Variable)


def _has_pattern(expr: Any) -> bool:
    """Whether a filter expression holds a graph pattern (EXISTS, NOT EXISTS)."""
    if isinstance(expr, CompValue):
        return expr.name in ("Builtin_EXISTS", "Builtin_NOTEXISTS") or any(
            _has_pattern(v) for v in expr.values()
        )
    if isinstance(expr, list | tuple):
        return any(_has_pattern(v) for v in expr)
    return False


def is_point_lookup(algebra: Any) -> bool:
    """Whether the query's algebra (rdflib's) is a point lookup, as the module describes."""
    node = algebra
    while getattr(node, "name", None) in _WRAPPERS:
        if node.name == "Filter" and _has_pattern(node.get("expr")):
            return False
        node = node.get("p") if "p" in node else None
    if getattr(node, "name", None) != "BGP":
        return False
    triples = node.get("triples") or []
    return 0 < len(triples) <= _MAX_TRIPLES and all(_anchored(t) for t in triples) and _joined(triples)


def _joined(triples: list[tuple[Any, Any, Any]]) -> bool:
    """Whether the triples with variables form one group through shared variables: two anchored
    ranges that share none are a cross product (``?x a :A . ?y a :B``: |A| x |B| rows)."""
    groups: list[set[Variable]] = []
    for triple in triples:
        names = {term for term in triple if isinstance(term, Variable)}
        if not names:
            continue  # a constant triple only tests that a fact exists
        touching = [g for g in groups if g & names]
        groups = [g for g in groups if not g & names] + [names.union(*touching)]
    return len(groups) <= 1
