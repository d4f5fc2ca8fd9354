"""``export``: deterministic RDF of exactly one scope (tools-core §1.3).

The scope is ROOT (the default), one graph, the ROOT statements of one episode provenance group
(DM §9.3), or the triples of a CONSTRUCT/DESCRIBE query. Every scope ends in the same sorted
serialisation, so the same store state always gives byte-identical output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from sqlalchemy import Connection

from quipu.episodes.iris import DEFAULT_BASE_NS, PROV_WAS_GENERATED_BY, group_predicates
from quipu.errors import BadRequest, InvalidField, NotFound, QueryError, UnknownGraph
from quipu.rdfio import serialize
from quipu.rdfio.formats import output_format
from quipu.sparql.cells import BNODE, LITERAL, URI, Cell
from quipu.sparql.engine import prepare, run_query
from quipu.store import datasets, graph_scope, values
from quipu.store.database import Database
from quipu.store.reads import (
    group_statement_rows,
    statement_ids,
    statement_rows,
    subject_statement_rows,
)
from quipu.store.schema import ROOT
from quipu.store.views import TemporalView

SCOPE_FIELDS: Final = ("graph", "group_id", "construct")

ScopeKind = Literal["root", "graph", "group", "construct"]


@dataclass(frozen=True)
class ExportResult:
    rdf: str
    format: str  # the canonical name: "turtle" or "ntriples"
    graph: str | None  # the named graph exported, None for every other scope
    triples: int
    scope_kind: ScopeKind = "root"
    scope_value: str | None = None


def export(
    db: Database,
    *,
    graph: str | None = None,
    group_id: str | None = None,
    construct: str | None = None,
    format: str = "turtle",
    base_ns: str = DEFAULT_BASE_NS,
    max_rows: int | None = None,
    timeout_ms: int | None = None,
    max_join_rows: int | None = None,
) -> ExportResult:
    """Sorted N-Triples or Turtle of one scope's current statements.

    At most one of ``graph``, ``group_id`` and ``construct`` may be given (None means absent).
    ``max_rows`` bounds a construct result: a larger one is refused, never cut; the two budgets
    apply to the construct query as to any other.
    """
    given = [
        name for name, v in zip(SCOPE_FIELDS, (graph, group_id, construct), strict=True) if v is not None
    ]
    if len(given) > 1:
        raise InvalidField(
            f"export takes one scope: give at most one of graph, group_id, construct (got {', '.join(given)})",
            field=given[1],
        )
    fmt = output_format(format)
    if construct is not None:
        rendered = _construct_triples(
            db, construct, max_rows=max_rows, timeout_ms=timeout_ms, max_join_rows=max_join_rows
        )
        return _result(rendered, fmt, None, "construct", construct)
    with db.read() as conn:
        if group_id is not None:
            graph_scope.enforce(db, conn, (ROOT,))
            rows = _group_rows(db, conn, group_id, base_ns)
            kind: ScopeKind = "group"
        else:
            # A graph, or a dataset standing for its registered members (tools-graphs-governance §1.6).
            gids = graph_scope.resolve(db, conn, graph)
            if not gids and (graph is None or not datasets.exists(conn, graph)):
                raise UnknownGraph(f"unknown graph: {graph}", field="graph")
            graph_scope.enforce(db, conn, gids)
            rows = statement_rows(conn, TemporalView(graphs=gids))
            kind = "root" if gids == {ROOT} else "graph"
        iri_of = db.terms.iris(conn, statement_ids(rows))
    rendered = [
        (serialize.iri_term(iri_of[e]), f"<{iri_of[a]}>", serialize.value_term(v, iri_of)) for e, a, v in rows
    ]
    value = group_id if kind == "group" else graph if kind == "graph" else None
    return _result(rendered, fmt, graph if kind == "graph" else None, kind, value)


def _result(
    rendered: list[tuple[str, str, str]], fmt: str, graph: str | None, kind: ScopeKind, value: str | None
) -> ExportResult:
    text = serialize.ntriples(rendered) if fmt == "ntriples" else serialize.turtle(rendered)
    return ExportResult(text, fmt, graph, len(set(rendered)), kind, value)


# -- group scope ------------------------------------------------------------------------------


def _group_rows(db: Database, conn: Connection, group_id: str, base_ns: str) -> list[tuple[int, int, bytes]]:
    """Current ROOT statements about the group's activities and the entities they generated."""
    known = db.terms.lookup(conn, (*group_predicates(base_ns), PROV_WAS_GENERATED_BY))
    group_ids = [known[p] for p in group_predicates(base_ns) if p in known]
    if not group_ids:
        return []  # no activity has ever carried a group
    return group_statement_rows(
        conn,
        TemporalView(),
        group_predicates=group_ids,
        group_id=group_id,
        generated_by=known.get(PROV_WAS_GENERATED_BY),
    )


# -- construct scope --------------------------------------------------------------------------


def _construct_triples(
    db: Database,
    text: str,
    *,
    max_rows: int | None,
    timeout_ms: int | None,
    max_join_rows: int | None,
) -> list[tuple[str, str, str]]:
    if not text.strip():
        raise QueryError("'construct' must be a CONSTRUCT or DESCRIBE query", field="construct")
    try:
        form = prepare(text).algebra.name  # parse errors are 400 before anything runs
    except QueryError as exc:
        exc.field = exc.field or "construct"
        raise
    if form not in ("ConstructQuery", "DescribeQuery"):
        raise QueryError(
            f"'construct' must be a CONSTRUCT or DESCRIBE query, not {form.removesuffix('Query').upper()}",
            field="construct",
        )
    result = run_query(db, text, max_rows=max_rows, timeout_ms=timeout_ms, max_join_rows=max_join_rows)
    if result.truncated:
        raise BadRequest(
            f"the construct result has more than {max_rows} triples (search.max_sparql_rows); "
            "narrow the query rather than export a cut result",
            reason="construct_too_large",
            field="construct",
        )
    return [(_cell_term(s), _cell_term(p), _cell_term(o)) for s, p, o in result.triples]


def _cell_term(cell: Cell) -> str:
    if cell.kind == URI:
        return serialize.checked_iri_term(cell.value)
    if cell.kind == BNODE:
        return serialize.blank_term(cell.value)
    assert cell.kind == LITERAL
    return serialize.literal_term(cell.value, cell.datatype, cell.lang)


# -- one entity -------------------------------------------------------------------------------


def entity_turtle(db: Database, iri: str) -> str:
    """Turtle of one subject's current ROOT statements; 400 when the IRI was never interned."""
    values.check_iri(iri, "iri", blank=True)
    with db.read() as conn:
        tid = db.terms.lookup(conn, (iri,)).get(iri)
        if tid is None:
            raise NotFound(f"entity not found: {iri}", field="iri")
        rows = subject_statement_rows(conn, TemporalView(), tid)
        iri_of = db.terms.iris(conn, statement_ids(rows))
    rendered = [
        (serialize.iri_term(iri_of[e]), f"<{iri_of[a]}>", serialize.value_term(v, iri_of)) for e, a, v in rows
    ]
    return serialize.turtle(rendered)
