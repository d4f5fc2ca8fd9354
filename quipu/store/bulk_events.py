"""The entity and edge events of a large ROOT transaction, written by the database (DM §11.1).

A bulk load of a million statements has about 600,000 of them. Reading its claims back into
Python, looking up every IRI and writing each payload there cost more than a quarter of the load;
here each kind of event is one ``INSERT … SELECT`` (edges in ranges of claim ids, for progress),
with the same rows, in the same order, and payloads byte for byte what ``events._add_edges``
writes. Small transactions keep the Python path, whose few prepared statements are cheaper.

"Preexisting" is the rule of ``events._seen_before``: the term was the subject of a fact row, in
any graph, before the write's first transaction. A term interned by this write (id at or above
``new_from``) cannot have been, so it is decided without a probe: in a bulk load into a new
store, that is every term.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from sqlalchemy import TextClause, text

from quipu.store.context import WriteContext

# A ROOT transaction's logical transitions, for both event paths: a claim that made its statement
# visible, or a retraction after which no live claim of it remains.
LOGICAL = """
    f.tx = :tx AND f.g = 0 AND (
        (f.op = 1 AND f.dup = 0 AND f.valid_to IS NULL)
        OR (f.op = 0 AND NOT EXISTS (
            SELECT 1 FROM facts l
            WHERE l.g = 0 AND l.e = f.e AND l.a = f.a AND l.vh = f.vh AND l.v = f.v
              AND l.op = 1 AND l.valid_to IS NULL)))
"""
_EDGE = "f.v_ref IS NOT NULL AND f.a <> :rdf_type"
EDGE_RANGE = 50_000  # claim ids per edge INSERT: one progress report each


def _preexisting(term: str) -> str:
    """SQL truth of "``term`` had fact rows before this write" (see the module docstring)."""
    return (
        f"({term} < :new_from AND EXISTS (SELECT 1 FROM facts p "
        f"WHERE p.g IN (SELECT g FROM graphs) AND p.e = {term} AND p.tx < :before))"
    )


_COUNTS = text(
    f"SELECT COUNT(*), COUNT(DISTINCT f.e), COALESCE(SUM(CASE WHEN {_EDGE} THEN 1 ELSE 0 END), 0), "
    f"MIN(f.id), MAX(f.id) FROM facts f WHERE {LOGICAL}"
)
# Predicates and classes asserted, in order of first appearance (for predicate.new / type.new).
_ASSERTED = text(
    "SELECT is_type, term FROM ("
    f" SELECT 0 AS is_type, f.a AS term, MIN(f.id) AS first FROM facts f"
    f" WHERE {LOGICAL} AND f.op = 1 AND f.a <> :rdf_type GROUP BY f.a"
    " UNION ALL"
    f" SELECT 1, f.v_ref, MIN(f.id) FROM facts f"
    f" WHERE {LOGICAL} AND f.op = 1 AND f.a = :rdf_type AND f.v_ref IS NOT NULL GROUP BY f.v_ref"
    ") x ORDER BY first"
)


@cache
def _entities(dialect: str) -> TextClause:
    """entity.added / entity.updated, once per touched subject, in first-touch order."""
    del dialect  # the same SQL on both backends; keyed like _edges for one cache shape
    return text(
        "INSERT INTO events (type, ts, subject, group_id, tx_id, payload) "
        f"SELECT CASE WHEN {_preexisting('x.e')} THEN 'entity.updated' ELSE 'entity.added' END, "
        ":ts, t.iri, :grp, :tx, '{}' "
        f"FROM (SELECT f.e AS e, MIN(f.id) AS first FROM facts f WHERE {LOGICAL} GROUP BY f.e) x "
        "JOIN terms t ON t.id = x.e ORDER BY x.first"
    )


@cache
def _edges(dialect: str) -> TextClause:
    """edge.added / edge.retracted for the claims with ids in [:lo, :hi], in claim order."""

    def quoted(column: str) -> str:  # a JSON string, escaped as json.dumps escapes it
        return f"json_quote({column})" if dialect == "sqlite" else f"to_json({column})::text"

    def flag(term: str) -> str:
        return f"CASE WHEN {_preexisting(term)} THEN 'true' ELSE 'false' END"

    payload = (
        f"""'{{"subject":' || {quoted("s.iri")} || ',"predicate":' || {quoted("p.iri")} """
        f"""|| ',"object":' || {quoted("o.iri")} || ',"subject_preexisting":' || {flag("f.e")} """
        f"""|| ',"object_preexisting":' || {flag("f.v_ref")} || '}}'"""
    )
    return text(
        "INSERT INTO events (type, ts, subject, group_id, tx_id, payload) "
        "SELECT CASE WHEN f.op = 1 THEN 'edge.added' ELSE 'edge.retracted' END, "
        f":ts, s.iri, :grp, :tx, {payload} "
        "FROM facts f JOIN terms s ON s.id = f.e JOIN terms p ON p.id = f.a JOIN terms o ON o.id = f.v_ref "
        f"WHERE f.id BETWEEN :lo AND :hi AND {LOGICAL} AND {_EDGE} ORDER BY f.id"
    )


@dataclass(frozen=True)
class Shape:
    transitions: int  # logical asserts and retracts
    subjects: int  # distinct touched subjects: one entity event each
    edges: int  # one edge event each
    first_id: int
    last_id: int


class LargeTransaction:
    """One large ROOT transaction's transitions, asked and written in SQL."""

    def __init__(self, ctx: WriteContext, tx: int, rdf_type: int | None, before: int) -> None:
        self.ctx = ctx
        new = ctx.pending_terms.values()
        self.params: dict[str, object] = {
            "tx": tx,
            "rdf_type": -1 if rdf_type is None else rdf_type,
            "before": before,
            # Term ids only grow and writers are serialised: every id from the smallest this
            # write interned on is new. With none, no term is.
            "new_from": min(new) if new else 1 << 62,
        }

    def shape(self) -> Shape:
        row = self.ctx.dialect.prepared(_COUNTS).run(self.ctx.conn, self.params).fetchone()
        count, subjects, edges, first, last = (int(x or 0) for x in row)
        return Shape(count, subjects, edges, first, last)

    def asserted(self) -> list[tuple[bool, int]]:
        """(is a class, term id) of every predicate and class asserted, first appearance first."""
        rows = self.ctx.dialect.prepared(_ASSERTED).run(self.ctx.conn, self.params)
        return [(bool(is_type), int(term)) for is_type, term in rows]

    def write(self, shape: Shape, ts: str, group: str | None) -> None:
        """Insert the entity events, then the edge events range by range, reporting progress."""
        ctx = self.ctx
        report = ctx.progress
        total = shape.subjects + shape.edges
        params = {**self.params, "ts": ts, "grp": group}
        if report is not None:
            report("event log", 0, total)
        ctx.dialect.prepared(_entities(ctx.dialect.name)).run(ctx.conn, params)
        done = shape.subjects
        if report is not None:
            report("event log", done, total)
        edges = ctx.dialect.prepared(_edges(ctx.dialect.name))
        for lo in range(shape.first_id, shape.last_id + 1, EDGE_RANGE):
            done += edges.run(ctx.conn, {**params, "lo": lo, "hi": lo + EDGE_RANGE - 1}).rowcount
            if report is not None and done < total:
                report("event log", done, total)
        if report is not None:
            report("event log", total, total)
