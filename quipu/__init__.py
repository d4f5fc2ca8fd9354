"""quipu: a bitemporal RDF knowledge graph for AI agents.

import quipu
kb = quipu.open("kb.db")          # or ":memory:"
kb.knot(turtle_text, valid_from="2026-04-01T00:00:00Z")
rows = kb.query("SELECT ?s WHERE { ?s ?p ?o }", valid_at="2026-04-15T00:00:00Z")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quipu.api import KnowledgeBase

__version__ = "0.1.0"


def open(location: str, **options: Any) -> KnowledgeBase:
    """Open (creating or upgrading as needed) the store at ``location``."""
    from quipu.api import KnowledgeBase

    return KnowledgeBase(str(location), **options)


__all__ = ["__version__", "open"]
