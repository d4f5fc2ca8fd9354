"""What is true for a read: one temporal predicate and one graph scope (DM §6.2, §14.3).

Every read path (export, cord, unravel, entity, the rdflib Store, SPARQL) builds its SQL from a
``TemporalView``; a second copy of the predicate is how "as of tx" drifted in the original.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, SmallInteger, and_, false, literal, literal_column, or_
from sqlalchemy.sql import FromClause

from quipu.errors import InvalidField
from quipu.store.schema import OP_ASSERT, ROOT
from quipu.times import normalise_valid_at

# Written into the SQL as constants, not parameters: the live indexes (schema.LIVE) are partial,
# and a planner uses one only when the query's WHERE visibly implies the index's predicate.
_ASSERTED = literal_column(str(OP_ASSERT), SmallInteger)
_PRIMARY = literal_column("0", SmallInteger)


def primary(f: FromClause) -> ColumnElement[bool]:
    """SQL condition: this live claim is its statement's one primary claim (``facts.dup``)."""
    return f.c.dup == _PRIMARY


def visible(
    f: FromClause, as_of_tx: int | ColumnElement[int] | None, valid_at: str | ColumnElement[str] | None
) -> ColumnElement[bool]:
    """SQL condition: this claim row of ``facts`` (or an alias) is visible at the read point
    (each part a value, or a bound parameter for a statement built once and run many times)."""
    c = f.c
    cond: list[ColumnElement[bool]] = [c.op == _ASSERTED]
    if as_of_tx is None and valid_at is None:
        cond.append(c.valid_to.is_(None))
    elif valid_at is None:
        cond += [c.tx <= as_of_tx, or_(c.retracted_tx.is_(None), c.retracted_tx > as_of_tx)]
    elif as_of_tx is None:
        cond += [c.valid_from <= valid_at, or_(c.valid_to.is_(None), c.valid_to > valid_at)]
    else:
        cond += [
            c.tx <= as_of_tx,
            c.valid_from <= valid_at,
            or_(c.retracted_tx.is_(None), c.retracted_tx > as_of_tx, c.valid_to > valid_at),
        ]
    return and_(*cond)


@dataclass(frozen=True, slots=True)
class TemporalView:
    """A read point (current, ``as_of_tx``, ``valid_at`` or both) over a set of graphs."""

    as_of_tx: int | None = None
    valid_at: str | None = None
    graphs: frozenset[int] = frozenset({ROOT})

    @classmethod
    def at(
        cls,
        *,
        as_of_tx: int | None = None,
        valid_at: str | None = None,
        graphs: Iterable[int] = (ROOT,),
        tx_field: str = "tx",
    ) -> TemporalView:
        """Build a view from request values, normalising ``valid_at`` (DM §6.1). A refusal names
        the caller's field: ``tx_field`` is what its request calls ``as_of_tx`` (``/query``'s
        ``tx``, ``/graph``'s ``as_of_tx``)."""
        if as_of_tx is not None and (
            isinstance(as_of_tx, bool) or not isinstance(as_of_tx, int) or as_of_tx < 0
        ):
            raise InvalidField(f"'{tx_field}' must be an integer >= 0, got {as_of_tx!r}", field=tx_field)
        if valid_at is not None and (not isinstance(valid_at, str) or not valid_at.strip()):
            raise InvalidField("'valid_at' must be a non-empty string", field="valid_at")
        return cls(as_of_tx, normalise_valid_at(valid_at), frozenset(graphs))

    @property
    def is_current(self) -> bool:
        return self.as_of_tx is None and self.valid_at is None

    def where(self, f: FromClause) -> ColumnElement[bool]:
        """Visibility plus graph scope for ``facts`` or an alias of it."""
        if not self.graphs:
            scope: ColumnElement[bool] = false()
        elif len(self.graphs) == 1:
            (g,) = self.graphs
            scope = f.c.g == g
        else:
            # literal() items: a plain IN list, not an "expanding" parameter, so the statement
            # can be compiled once and run straight on the DBAPI cursor
            scope = f.c.g.in_([literal(g) for g in sorted(self.graphs)])
        return and_(scope, visible(f, self.as_of_tx, self.valid_at))

    def with_graphs(self, graphs: Iterable[int]) -> TemporalView:
        return TemporalView(self.as_of_tx, self.valid_at, frozenset(graphs))
