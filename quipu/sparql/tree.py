"""Walking rdflib's SPARQL algebra trees.

Both walks keep their own stack rather than recursing: a query of a few thousand sequential
groups or unions is a tree that deep, and it must not end in a ``RecursionError`` here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rdflib.paths import Path
from rdflib.plugins.sparql.parserutils import CompValue


def _children(node: Any) -> list[Any]:
    if isinstance(node, CompValue):
        return list(node.values())
    if isinstance(node, list | tuple):
        return list(node)
    return []


def walk(node: Any) -> Iterator[CompValue]:
    """Every algebra node below ``node`` (itself included), depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, CompValue):
            yield current
        stack.extend(reversed(_children(current)))


def has_path(node: Any) -> bool:
    """Whether a basic graph pattern below ``node`` uses a property path."""
    return any(
        part.name == "BGP" and any(isinstance(t[1], Path) for t in part.triples) for part in walk(node)
    )


def leaves(node: Any) -> Iterator[Any]:
    """Every value below ``node`` that is not itself an algebra node or a list (terms, strings)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, CompValue | list | tuple):
            stack.extend(reversed(_children(current)))
        else:
            yield current
