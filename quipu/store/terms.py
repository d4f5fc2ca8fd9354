"""The term dictionary: IRI (or skolem ``_:`` key) <-> integer id.

Interning is append-only, so positive lookups can be cached without invalidation (DM §1.2).
Reads never intern; terms a write interns reach the cache only after that write commits, since a
rollback may hand the same id to another IRI.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import Connection, bindparam, insert, select

from quipu.store.schema import terms

if TYPE_CHECKING:
    from quipu.store.database import WriteContext

_CHUNK = 500  # bound parameters per IN (...) lookup; well under SQLite's limit


def iri_hash(iri: str) -> bytes:
    return hashlib.sha256(iri.encode("utf-8")).digest()[:16]


class TermDictionary:
    """A bounded positive cache in front of the ``terms`` table."""

    def __init__(self, capacity: int = 500_000) -> None:
        self.capacity = capacity
        self._ids: dict[str, int] = {}
        self._iris: dict[int, str] = {}

    def remember(self, mapping: dict[str, int]) -> None:
        if len(self._ids) + len(mapping) > self.capacity:
            self._ids.clear()
            self._iris.clear()
        self._ids.update(mapping)
        self._iris.update((v, k) for k, v in mapping.items())

    def lookup(self, conn: Connection, iris: Iterable[str]) -> dict[str, int]:
        """Ids of the IRIs that exist; absent ones are simply missing from the result."""
        found: dict[str, int] = {}
        missing: list[str] = []
        for iri in iris:
            tid = self._ids.get(iri)
            if tid is None:
                missing.append(iri)
            else:
                found[iri] = tid
        if missing:
            fetched: dict[str, int] = {}
            query = select(terms.c.id, terms.c.iri).where(
                terms.c.iri_hash.in_(bindparam("h", expanding=True))
            )
            for i in range(0, len(missing), _CHUNK):
                chunk = missing[i : i + _CHUNK]
                wanted = set(chunk)
                for row in conn.execute(query, {"h": [iri_hash(x) for x in chunk]}):
                    if row[1] in wanted:
                        fetched[row[1]] = int(row[0])
            self.remember(fetched)
            found.update(fetched)
        return found

    def lookup_one(self, conn: Connection, iri: str) -> int | None:
        return self.lookup(conn, (iri,)).get(iri)

    def lookup_in(self, ctx: WriteContext, iris: Iterable[str]) -> dict[str, int]:
        """``lookup`` inside a write: this transaction's own new terms are found, never cached."""
        wanted = set(iris)
        found = {i: ctx.pending_terms[i] for i in wanted if i in ctx.pending_terms}
        found.update(self.lookup(ctx.conn, wanted.difference(found)))
        return found

    def intern(self, ctx: WriteContext, iris: Iterable[str]) -> dict[str, int]:
        """Ids for every IRI, inserting the new ones inside the write transaction."""
        wanted = set(iris)
        found = self.lookup_in(ctx, wanted)
        new = sorted(wanted.difference(found))
        if new:
            hashes = {iri_hash(x): x for x in new}
            stmt = insert(terms).returning(terms.c.id, terms.c.iri_hash)
            rows = ctx.conn.execute(stmt, [{"iri": x, "iri_hash": h} for h, x in hashes.items()])
            created = {hashes[bytes(row[1])]: int(row[0]) for row in rows}
            ctx.pending_terms.update(created)
            found.update(created)
        return found

    def iris(self, conn: Connection, ids: Iterable[int]) -> dict[int, str]:
        """IRIs for ids (every id given must exist)."""
        out: dict[int, str] = {}
        missing: list[int] = []
        for tid in ids:
            iri = self._iris.get(tid)
            if iri is None:
                missing.append(tid)
            else:
                out[tid] = iri
        if missing:
            fetched: dict[str, int] = {}
            query = select(terms.c.id, terms.c.iri).where(terms.c.id.in_(bindparam("ids", expanding=True)))
            uniq = list(set(missing))
            for i in range(0, len(uniq), _CHUNK):
                for row in conn.execute(query, {"ids": uniq[i : i + _CHUNK]}):
                    fetched[row[1]] = int(row[0])
                    out[int(row[0])] = row[1]
            self.remember(fetched)
        return out
