"""IRI compaction for search results (tools-search §0.7).

Without ``verbose``, entity IRIs become CURIEs under the prefixes the currently loaded SHACL shape
sets declare (the same map and the same memoised rewrite ``/query`` compacts with); an IRI in an
unknown namespace stays full.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from quipu.rdfio.curie import PrefixMap
from quipu.shacl.registry import open_sets
from quipu.sparql import quipu_json
from quipu.store.database import Database


def compactor(db: Database, conn: Connection) -> Callable[[str], str]:
    """The IRI rewrite for one response, read on ``conn``: memoised compaction, or the identity
    when no shape set declares a prefix."""
    return quipu_json.compactor(PrefixMap.from_declarations(s.prefixes for s in open_sets(conn)))


def identity() -> Callable[[str], str]:
    """The rewrite of a ``verbose`` request: full IRIs."""
    return quipu_json.compactor(None)
