"""The write of a three-way merge (tools-graphs-governance §4.5, rule MA-1): exact ROOT
statements retracted and others asserted, in ONE transaction opened inside the caller's write.

Statements arrive as the parser's (graph, subject key, predicate IRI, object key or encoded literal),
the shape ``quipu.rdfio`` produces, so a literal is matched by the same encoded bytes the store keeps.
Retraction closes every owner's live claim of exactly those statements, as SPARQL Update's
``DELETE DATA`` does; assertion writes a claim of this transaction's source.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.schema import ROOT
from quipu.store.statements import Statement
from quipu.store.writes import assert_rows, close_statements, grouped_rows, open_transaction


@dataclass(frozen=True, slots=True)
class Delta:
    tx_id: int | None  # None when there was nothing to write (no transaction was opened)
    asserted: int
    retracted: int


def _names(statement: Statement) -> list[str]:
    _g, s, p, o = statement
    return [s, p, o] if isinstance(o, str) else [s, p]


def _order(statement: Statement) -> tuple[str, str, int, str]:
    """A total order on statements (references before literals), for a stable write order."""
    _g, s, p, o = statement
    return (s, p, 0, o) if isinstance(o, str) else (s, p, 1, o.hex())


def write_delta(
    db: Database,
    ctx: WriteContext,
    *,
    additions: Collection[Statement],
    removals: Collection[Statement],
    timestamp: str,
    actor: str | None,
    source: str,
) -> Delta:
    """Retract ``removals`` and assert ``additions`` (statements of the default graph) in ROOT
    as one transaction stamped ``timestamp``, also the asserted claims' valid_from."""
    if not additions and not removals:
        return Delta(None, 0, 0)
    known = db.terms.lookup_in(ctx, {n for st in removals for n in _names(st)})
    # A statement naming a term the store never interned cannot be live: nothing to close.
    closing = sorted((st for st in removals if all(n in known for n in _names(st))), key=_order)
    ids = db.terms.intern(ctx, {n for st in additions for n in _names(st)}) if additions else {}
    tx = open_transaction(ctx, timestamp=timestamp, actor=actor, source=source, graph=ROOT)
    retracted = close_statements(
        ctx, tx, list(grouped_rows(closing, known, {None: ROOT}).get(ROOT, {}).values())
    )
    rows = grouped_rows(sorted(additions, key=_order), ids, {None: ROOT}).get(ROOT, {})
    return Delta(tx.id, assert_rows(ctx, tx, list(rows.values()), timestamp), retracted)
