"""The term dictionary: IRI (or skolem ``_:`` key) <-> integer id.

Interning is append-only, so positive lookups can be cached without invalidation (DM §1.2).
Reads never intern; terms a write interns reach the cache only after that write commits, since a
rollback may hand the same id to another IRI.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import Connection, and_, bindparam, exists, func, insert, select

from quipu.errors import StorageError
from quipu.store.dialect import Prepared
from quipu.store.schema import terms
from quipu.store.stage import fill, term_stage

if TYPE_CHECKING:
    from quipu.store.context import WriteContext

_CHUNK = 500  # bound parameters per IN (...) lookup; well under SQLite's limit
_BULK = 2_000  # above this many unknown IRIs, resolve them set-wise through a staged table
# Up to this many uncached IRIs, a lookup probes each one with a prepared statement on the driver:
# an expanding IN goes through SQLAlchemy's compile-and-execute path (~0.08 ms a call, measured).
_FEW = 8

_BY_HASH = select(terms.c.id, terms.c.iri).where(terms.c.iri_hash.in_(bindparam("h", expanding=True)))
_BY_ID = select(terms.c.id, terms.c.iri).where(terms.c.id.in_(bindparam("ids", expanding=True)))
_BY_ONE_HASH = select(terms.c.id, terms.c.iri).where(terms.c.iri_hash == bindparam("h"))
_INSERT_ONE = insert(terms).values(iri=bindparam("iri"), iri_hash=bindparam("iri_hash")).returning(terms.c.id)
_STAGED_IDS = select(terms.c.id, term_stage.c.iri).join_from(
    term_stage, terms, and_(terms.c.iri_hash == term_stage.c.iri_hash, terms.c.iri == term_stage.c.iri)
)
_INSERT_STAGED = insert(terms).from_select(
    ["iri", "iri_hash"],
    select(term_stage.c.iri, term_stage.c.iri_hash).where(
        ~exists().where(terms.c.iri_hash == term_stage.c.iri_hash)
    ),
)
_MAX_ID = select(func.coalesce(func.max(terms.c.id), 0))
_by_one_hash: dict[str, Prepared] = {}  # _BY_ONE_HASH compiled once per backend


def iri_hash(iri: str) -> bytes:
    return hashlib.sha256(iri.encode("utf-8")).digest()[:16]


class TermDictionary:
    """A bounded positive cache in front of the ``terms`` table."""

    def __init__(self, capacity: int = 2_000_000) -> None:
        self.capacity = capacity
        self._ids: dict[str, int] = {}
        self._iris: dict[int, str] = {}

    def remember(self, mapping: dict[str, int]) -> None:
        if len(self._ids) + len(mapping) > self.capacity:
            self._ids.clear()
            self._iris.clear()
        self._ids.update(mapping)
        self._iris.update((v, k) for k, v in mapping.items())

    def _split(self, iris: Iterable[str]) -> tuple[dict[str, int], list[str]]:
        found: dict[str, int] = {}
        missing: list[str] = []
        ids = self._ids
        for iri in iris:
            tid = ids.get(iri)
            if tid is None:
                missing.append(iri)
            else:
                found[iri] = tid
        return found, missing

    def _fetch(self, conn: Connection, missing: list[str]) -> dict[str, int]:
        fetched: dict[str, int] = {}
        if len(missing) <= _FEW:
            find = _by_one_hash.get(conn.dialect.name)
            if find is None:
                find = _by_one_hash[conn.dialect.name] = Prepared(_BY_ONE_HASH, conn.dialect)
            for iri in missing:
                row = find.run(conn, {"h": iri_hash(iri)}).fetchone()
                if row is not None and row[1] == iri:
                    fetched[iri] = int(row[0])
            return fetched
        for i in range(0, len(missing), _CHUNK):
            chunk = missing[i : i + _CHUNK]
            wanted = set(chunk)
            for row in conn.execute(_BY_HASH, {"h": [iri_hash(x) for x in chunk]}):
                if row[1] in wanted:
                    fetched[row[1]] = int(row[0])
        return fetched

    def lookup(self, conn: Connection, iris: Iterable[str]) -> dict[str, int]:
        """Ids of the IRIs that exist; absent ones are simply missing from the result."""
        found, missing = self._split(iris)
        if missing:
            fetched = self._fetch(conn, missing)
            self.remember(fetched)
            found.update(fetched)
        return found

    def lookup_in(self, ctx: WriteContext, iris: Iterable[str]) -> dict[str, int]:
        """``lookup`` inside a write: this transaction's own new terms are found, never cached."""
        pending = ctx.pending_terms
        wanted = [i for i in set(iris) if i not in pending]
        found = {i: pending[i] for i in set(iris) if i in pending}
        found.update(self.lookup(ctx.conn, wanted))
        return found

    def intern(self, ctx: WriteContext, iris: Iterable[str]) -> dict[str, int]:
        """Ids for every IRI, inserting the new ones inside the write transaction."""
        pending = ctx.pending_terms
        found, missing = self._split(set(iris))
        if missing:
            rest = [i for i in missing if i not in pending]
            found.update((i, pending[i]) for i in missing if i in pending)
            if len(rest) > _BULK:
                found.update(self._intern_bulk(ctx, rest))
            elif len(rest) > 1 and ctx.dialect.round_trips_costly:
                found.update(self._intern_batched(ctx, rest))
            elif rest:
                found.update(self._intern_few(ctx, rest))
        return found

    def _intern_few(self, ctx: WriteContext, iris: list[str]) -> dict[str, int]:
        """One indexed probe (and maybe one insert) per IRI, straight on the driver."""
        find = ctx.dialect.prepared(_BY_ONE_HASH)
        add = ctx.dialect.prepared(_INSERT_ONE)
        existing: dict[str, int] = {}
        created: dict[str, int] = {}
        for iri in sorted(iris):
            h = iri_hash(iri)
            row = find.run(ctx.conn, {"h": h}).fetchone()
            if row is None:
                created[iri] = int(add.run(ctx.conn, {"iri": iri, "iri_hash": h}).fetchone()[0])
            elif row[1] == iri:
                existing[iri] = int(row[0])
            else:
                raise StorageError(f"term dictionary digest collision for {iri!r}")
        self.remember(existing)
        ctx.pending_terms.update(created)
        existing.update(created)
        return existing

    def _intern_batched(self, ctx: WriteContext, iris: list[str]) -> dict[str, int]:
        """Two statements for the whole batch, one lookup and one multi-row insert: for a server
        backend, where each statement is a network round trip."""
        iris.sort()  # ids follow IRI order, as in the other paths
        existing = self._fetch(ctx.conn, iris) if len(iris) > _FEW else self._fetch_all(ctx.conn, iris)
        new = [iri for iri in iris if iri not in existing]
        created: dict[str, int] = {}
        if new:
            rows = [{"iri": iri, "iri_hash": iri_hash(iri)} for iri in new]
            statement = insert(terms).values(rows).returning(terms.c.id, terms.c.iri)
            created = {row[1]: int(row[0]) for row in ctx.conn.execute(statement)}
        self.remember(existing)
        ctx.pending_terms.update(created)
        return {**existing, **created}

    def _fetch_all(self, conn: Connection, iris: list[str]) -> dict[str, int]:
        """``_fetch`` in one statement however few the IRIs are."""
        wanted = set(iris)
        rows = conn.execute(_BY_HASH, {"h": [iri_hash(x) for x in iris]})
        found = {row[1]: int(row[0]) for row in rows if row[1] in wanted}
        return found

    def _intern_bulk(self, ctx: WriteContext, iris: list[str]) -> dict[str, int]:
        """Stage the IRIs, insert the unknown ones and read every id back with one join each."""
        iris.sort()  # ids follow IRI order, which keeps related terms close in the indexes
        fill(ctx.conn, ctx.dialect, term_stage, [(iri_hash(x), x) for x in iris])
        before = int(ctx.conn.execute(_MAX_ID).scalar_one())
        ctx.conn.execute(_INSERT_STAGED)
        out = {row[1]: int(row[0]) for row in ctx.conn.execute(_STAGED_IDS)}
        if len(out) != len(iris):
            raise StorageError("term dictionary digest collision: an IRI could not be interned")
        created = {iri: tid for iri, tid in out.items() if tid > before}
        ctx.pending_terms.update(created)
        self.remember({iri: tid for iri, tid in out.items() if tid <= before})
        return out

    def iris_in(self, ctx: WriteContext, ids: Iterable[int]) -> dict[int, str]:
        """``iris`` inside a write: this transaction's own new terms are found, never cached."""
        pending = ctx.pending_iris()
        out: dict[int, str] = {}
        rest: list[int] = []
        for tid in set(ids):
            iri = pending.get(tid)
            if iri is None:
                rest.append(tid)
            else:
                out[tid] = iri
        if rest:
            out.update(self.iris(ctx.conn, rest))
        return out

    def iris(self, conn: Connection, ids: Iterable[int]) -> dict[int, str]:
        """IRIs for ids (every id given must exist)."""
        out: dict[int, str] = {}
        missing: list[int] = []
        cache = self._iris
        for tid in ids:
            iri = cache.get(tid)
            if iri is None:
                missing.append(tid)
            else:
                out[tid] = iri
        if missing:
            fetched: dict[str, int] = {}
            uniq = list(set(missing))
            for i in range(0, len(uniq), _CHUNK):
                for row in conn.execute(_BY_ID, {"ids": uniq[i : i + _CHUNK]}):
                    fetched[row[1]] = int(row[0])
                    out[int(row[0])] = row[1]
            self.remember(fetched)
        return out
