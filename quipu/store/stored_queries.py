"""Rows of the stored named-query registry (tools-search §5.18; migrations/versions/0008).

A version of a name is current while its ``valid_to`` is NULL. Loading closes the current
version and opens a new one; removing closes it. History is kept: the only rows ever deleted
are those of a version that a load at the very same instant replaces. Validation is the graphs
package's business; this module only reads and writes rows, always inside the caller's
transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, and_, delete, insert, select, tuple_, update

from quipu.store.context import WriteContext
from quipu.store.schema import stored_queries as queries_table
from quipu.store.schema import stored_query_params as params_table

_q = queries_table.c
_p = params_table.c


@dataclass(frozen=True, slots=True)
class ParamRow:
    name: str
    kind: str  # iri | text | int
    required: bool
    default: str | None
    description: str


@dataclass(frozen=True, slots=True)
class QueryRow:
    name: str
    description: str
    template: str
    dataset: str | None
    valid_from: str
    valid_to: str | None
    tx: int
    params: tuple[ParamRow, ...]


def current(conn: Connection, name: str | None = None) -> list[QueryRow]:
    """The current version of every stored query (or of ``name`` only), by name."""
    where: list[ColumnElement[bool]] = [_q.valid_to.is_(None)]
    if name is not None:
        where.append(_q.name == name)
    rows = conn.execute(
        select(_q.name, _q.description, _q.template, _q.dataset, _q.valid_from, _q.valid_to, _q.tx)
        .where(and_(*where))
        .order_by(_q.name)
    ).all()
    if not rows:
        return []
    keys = [(str(r.name), str(r.valid_from)) for r in rows]
    specs = _params(conn, keys)
    return [
        QueryRow(
            str(r.name),
            str(r.description),
            str(r.template),
            None if r.dataset is None else str(r.dataset),
            str(r.valid_from),
            r.valid_to,
            int(r.tx),
            tuple(specs.get((str(r.name), str(r.valid_from)), ())),
        )
        for r in rows
    ]


def _params(conn: Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[ParamRow]]:
    found: dict[tuple[str, str], list[ParamRow]] = defaultdict(list)
    rows = conn.execute(
        select(_p.name, _p.valid_from, _p.param, _p.kind, _p.required, _p.default_value, _p.description)
        .where(tuple_(_p.name, _p.valid_from).in_(keys))
        .order_by(_p.name, _p.valid_from, _p.ord)
    )
    for r in rows:
        found[(str(r.name), str(r.valid_from))].append(
            ParamRow(str(r.param), str(r.kind), bool(r.required), r.default_value, str(r.description))
        )
    return found


def current_start(conn: Connection, name: str) -> str | None:
    """When the current version of ``name`` opened; None when nothing is current."""
    found = conn.execute(select(_q.valid_from).where(_q.name == name, _q.valid_to.is_(None))).scalar()
    return None if found is None else str(found)


def open_version(ctx: WriteContext, row: QueryRow) -> None:
    """Make ``row`` the current version of its name at ``row.valid_from``: close the current
    version when it opened earlier, replace any version opened at the same instant, insert."""
    conn, at = ctx.conn, row.valid_from
    conn.execute(
        update(queries_table)
        .where(_q.name == row.name, _q.valid_to.is_(None), _q.valid_from < at)
        .values(valid_to=at)
    )
    same = and_(_p.name == row.name, _p.valid_from == at)
    conn.execute(delete(params_table).where(same))
    conn.execute(delete(queries_table).where(_q.name == row.name, _q.valid_from == at))
    conn.execute(
        insert(queries_table).values(
            name=row.name,
            valid_from=at,
            description=row.description,
            template=row.template,
            dataset=row.dataset,
            valid_to=None,
            tx=row.tx,
        )
    )
    if row.params:
        conn.execute(
            insert(params_table),
            [
                {
                    "name": row.name,
                    "valid_from": at,
                    "ord": i,
                    "param": p.name,
                    "kind": p.kind,
                    "required": 1 if p.required else 0,
                    "default_value": p.default,
                    "description": p.description,
                }
                for i, p in enumerate(row.params)
            ],
        )


def close(ctx: WriteContext, name: str, at: str) -> bool:
    """Close the current version of ``name`` at ``at``; False when nothing was current."""
    done = ctx.conn.execute(
        update(queries_table).where(_q.name == name, _q.valid_to.is_(None)).values(valid_to=at)
    )
    return bool(done.rowcount)
