"""Walking rdflib's SPARQL algebra trees."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rdflib.paths import Path
from rdflib.plugins.sparql.parserutils import CompValue


def walk(node: Any) -> Iterator[CompValue]:
    """Every algebra node below ``node`` (itself included), depth first."""
    if isinstance(node, CompValue):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from walk(item)


def has_path(node: Any) -> bool:
    """Whether a basic graph pattern below ``node`` uses a property path."""
    return any(
        part.name == "BGP" and any(isinstance(t[1], Path) for t in part.triples) for part in walk(node)
    )


def leaves(node: Any) -> Iterator[Any]:
    """Every value below ``node`` that is not itself an algebra node or a list (terms, strings)."""
    if isinstance(node, CompValue):
        for value in node.values():
            yield from leaves(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from leaves(item)
    else:
        yield node
