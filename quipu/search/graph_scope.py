"""The graph selectors of ``quipu_search`` (tools-search §5.1.6): ``graph``, ``graphs``, ``all_graphs``.

An explicit scope names ROOT (``urn:quipu:graph:root``) or registered named graphs; an unknown
graph is refused, never quietly replaced by ROOT. No selector means ROOT only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from quipu.errors import InvalidField
from quipu.store import datasets, graph_members, values
from quipu.store import graph_scope as store_scope
from quipu.store.database import Database
from quipu.store.graph_registry import META
from quipu.store.schema import ROOT, ROOT_IRI

SELECTORS = ("graph", "graphs", "all_graphs")


@dataclass(frozen=True, slots=True)
class GraphScope:
    explicit: bool  # a selector was given (results then carry graph and graphs)
    ids: tuple[int, ...]  # ascending
    iris: Mapping[int, str]  # display IRI of each id

    @staticmethod
    def root_only() -> GraphScope:
        return GraphScope(False, (ROOT,), {ROOT: ROOT_IRI})


def requested(body: Mapping[str, Any]) -> bool:
    """Whether the request carries a selector (``graph: null`` is absent)."""
    return body.get("graph") is not None or "graphs" in body or body.get("all_graphs") not in (None, False)


def parse(db: Database, conn: Connection, body: Mapping[str, Any]) -> GraphScope:
    """The request's scope, refused when it falls below the store's label floor (the same
    check every reader makes, quipu.store.graph_scope)."""
    scope = _parse(db, conn, body)
    store_scope.enforce(db, conn, scope.ids)
    return scope


def _parse(db: Database, conn: Connection, body: Mapping[str, Any]) -> GraphScope:
    graph, graph_list, all_graphs = body.get("graph"), body.get("graphs"), body.get("all_graphs")
    if all_graphs is not None and not isinstance(all_graphs, bool):
        raise InvalidField("'all_graphs' must be a boolean", field="all_graphs")
    given = [name for name, value in (("graph", graph), ("graphs", graph_list)) if value is not None]
    if all_graphs:
        given.append("all_graphs")
    if len(given) > 1:
        raise InvalidField("choose graph, graphs, or all_graphs, not multiple selectors", field=given[1])
    if not given:
        return GraphScope.root_only()
    if all_graphs or graph == "all":
        return _scope(db, conn, [ROOT, *(g for g in graph_members.registered(conn) if g != META)])
    if graph is not None:
        if not isinstance(graph, str):
            raise InvalidField("'graph' must be a graph IRI string, \"all\" or null", field="graph")
        return _scope(db, conn, list(_graph_ids(db, conn, graph, "graph")))
    if not isinstance(graph_list, list) or not graph_list or not all(isinstance(g, str) for g in graph_list):
        raise InvalidField("'graphs' must be a non-empty array of graph IRI strings", field="graphs")
    return _scope(db, conn, [g for iri in graph_list for g in _graph_ids(db, conn, iri, "graphs")])


def _graph_ids(db: Database, conn: Connection, iri: str, field: str) -> frozenset[int]:
    """A graph IRI, or a dataset IRI standing for its registered members."""
    if iri != ROOT_IRI:
        values.check_iri(iri, field)
    gids = store_scope.resolve(db, conn, iri)
    if not gids and not datasets.exists(conn, iri):
        raise InvalidField(f"unknown graph: {iri}; search refuses rather than searching ROOT", field=field)
    return gids


def _scope(db: Database, conn: Connection, ids: list[int]) -> GraphScope:
    unique = tuple(sorted(set(ids)))
    named = db.terms.iris(conn, [g for g in unique if g != ROOT])
    return GraphScope(True, unique, {g: ROOT_IRI if g == ROOT else named[g] for g in unique})
