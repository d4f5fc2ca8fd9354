"""The two spellings of the provenance vocabulary (tools-graphs-governance §0.10).

Work-item provenance (``implements``, ``modifies``, ``identifier``, ``filePath``) is written
under the legacy namespace or under Quechua's, chosen independently per triple. Readers match
both by name, with no reasoner; they count DISTINCT values so a fact asserted under both
spellings is counted once. Only these two namespaces count: the legacy one is this constant,
never the store's configurable ``base_ns``.
"""

from __future__ import annotations

from typing import Final

LEGACY: Final = "http://aegis.gastown.local/ontology/"
QUECHUA: Final = "https://scbrown.github.io/quechua/ns#"


def spellings(local: str) -> tuple[str, str]:
    """The legacy and the Quechua IRI of a vocabulary term."""
    return LEGACY + local, QUECHUA + local


def values_clause(variable: str, local: str) -> str:
    """``VALUES ?variable { <legacy> <quechua> }``: a SPARQL predicate variable bound to both
    spellings (compiled to SQL on every backend, unlike an alternative property path)."""
    legacy, quechua = spellings(local)
    return f"VALUES ?{variable} {{ <{legacy}> <{quechua}> }}"
