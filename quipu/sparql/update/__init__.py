"""SPARQL 1.1 Update written as bitemporal facts (tools-core §3.10, DM §3.6, §5, §7).

rdflib parses the request; the operations run here, in order, over an overlay: the committed
state (read through the write connection, so nothing can commit in between) plus this request's
pending changes, so each ``WHERE`` sees what the earlier operations did. Nothing is written until
every operation has run. Then the net difference per graph is written: deletions close every
owner's claims (closure stamp = now), insertions of statements that are not visible become
claims with ``valid_from`` = now under the declared source, one transaction per changed graph
(ROOT first, then ascending graph id), all inside one database transaction.

The package follows those steps, each module importing only the ones before it: ``parse`` (the
request's operations, and the refusals that need no store), ``state`` (the overlay and the rdflib
view a ``WHERE`` reads through), ``operations`` (each operation applied to the overlay) and
``write`` (the net difference written, and ``run_update``, which parses, runs and writes).

The vocabulary and SHACL gates (rule 8) validate each destination graph's inserts inside the
write, before anything is interned (``quipu.shacl.update_gate``). Semantic events (rule 12)
come from the store's event log, which only ROOT transactions feed. Not here yet (the feature
does not exist): the workflow guard (rule 9).
"""

from __future__ import annotations

from quipu.sparql.limits import MAX_NESTING, MAX_OPERATIONS
from quipu.sparql.update.parse import check_structure, parse_update
from quipu.sparql.update.write import DEFAULT_SOURCE, USING_GRAPH, USING_NAMED_GRAPH, run_update

__all__ = [
    "DEFAULT_SOURCE",
    "MAX_NESTING",
    "MAX_OPERATIONS",
    "USING_GRAPH",
    "USING_NAMED_GRAPH",
    "check_structure",
    "parse_update",
    "run_update",
]
