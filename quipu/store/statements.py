"""Statements on their way into the store, before the term dictionary gives them ids.

Parsers (``quipu.rdfio``) produce these; ``writes.assert_statements`` interns and stores them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# An object is a str (an IRI or skolem key, stored as a Ref) or bytes (an encoded literal).
Obj = str | bytes
# (graph IRI, or None for the batch's destination graph; subject key; predicate IRI; object)
Statement = tuple[str | None, str, str, Obj]


@dataclass(frozen=True)
class StatementBatch:
    statements: list[Statement]
    graphs: frozenset[str]  # named graphs the batch mentions itself (N-Quads, TriG)
    iris: set[str]  # every IRI and blank-node key in subject, predicate or object position


@contextmanager
def gc_paused(active: bool = True) -> Iterator[None]:
    """Pause the cyclic GC while building millions of acyclic tuples (it rescans them all)."""
    if not active or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
