"""``quipu_graph_list`` and ``quipu_graph_create`` (tools-graphs-governance §1.1-§1.2)."""

from __future__ import annotations

from typing import Any

from quipu import times
from quipu.errors import InvalidField
from quipu.identity import Authenticated
from quipu.store import graph_registry, values
from quipu.store.database import Database
from quipu.store.graph_registry import META, GraphRecord
from quipu.store.graph_scope import check_kind
from quipu.store.writes import is_companion


def row_json(rec: GraphRecord, now: str) -> dict[str, Any]:
    """One registry row on the wire; an expired or undeclared axis is null (rule GL-5)."""
    return {
        "iri": rec.iri,
        "g": rec.g,
        "class": rec.cls,
        "source": rec.source,
        "lifecycle": rec.lifecycle,
        "creation": {"timestamp": rec.created_at, "actor": rec.actor},
        "labels": rec.labels.in_effect(now).as_json(),
    }


def list_graphs(db: Database, *, kind: str | None = None, lifecycle: str | None = None) -> dict[str, Any]:
    """Every registered graph but the meta-graph, by id, filtered on the label cache (GL-2)."""
    if kind is not None:
        check_kind(kind, "kind")
    if lifecycle is not None and lifecycle != "frozen":
        raise InvalidField(
            f"'lifecycle' must be 'frozen' (the only lifecycle state is 'frozen'), got {lifecycle!r}",
            field="lifecycle",
        )
    now = times.now()
    with db.read() as conn:
        found = [r for r in graph_registry.records(conn) if r.g != META]
    rows = [
        row_json(r, now)
        for r in found
        if (kind is None or r.labels.in_effect(now).kind == kind)
        and (lifecycle is None or r.lifecycle == lifecycle)
    ]
    return {"count": len(rows), "graphs": rows}


def check_graph_iri(graph: object, field: str = "graph") -> str:
    """A graph IRI a caller may register: not ROOT, the meta-graph or a companion (GC-5)."""
    iri = values.check_iri(graph, field)
    if graph_registry.is_reserved(iri) or is_companion(iri):
        raise InvalidField(f"'{field}' <{iri}> is a reserved graph IRI", field=field, reason="reserved_graph")
    return iri


def check_actor(actor: object) -> str | None:
    if actor is not None and (not isinstance(actor, str) or not actor.strip()):
        raise InvalidField("'actor' must be a non-empty string when given", field="actor")
    return actor


def create_graph(
    db: Database,
    graph: str,
    *,
    timestamp: str | None = None,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    """Register a committed graph; a repeat returns the first call's provenance (GC-1), and
    ``created`` means this call inserted the registry row (GC-2)."""
    iri = check_graph_iri(graph)
    check_actor(actor)
    created_at = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        gid, created = graph_registry.register(db, ctx, iri, created_at=created_at, actor=actor)
        rec = graph_registry.record(ctx.conn, gid)
        assert rec is not None
        if rec.cls != "committed":
            raise InvalidField(
                f"<{iri}> is registered as an overlay: a graph's class is fixed at create", field="graph"
            )
    return {
        "graph": iri,
        "g": gid,
        "created": created,
        "creation": {"timestamp": rec.created_at, "actor": rec.actor},
    }
