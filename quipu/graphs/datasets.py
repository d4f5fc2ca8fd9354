"""``quipu_datasets``: create, list, show and remove named datasets (tools-graphs-governance §1.6).

A dataset is never active by itself (rule DS-4): a read sees its graphs only by naming it, as
``FROM <dataset>`` or ``graph=<dataset>``, which quipu.store.graph_scope resolves.
"""

from __future__ import annotations

from typing import Any, Final

from quipu import times
from quipu.errors import InvalidField
from quipu.identity import Authenticated
from quipu.store import datasets, graph_facts, graph_registry, values
from quipu.store.database import Database
from quipu.store.graph_registry import META
from quipu.store.graph_scope import FROZEN_DATASET
from quipu.store.writes import open_transaction

Q: Final = "https://quipu.dev/ontology/"
RDF_TYPE: Final = values.RDF + "type"
ACTIONS: Final = ("create", "list", "show", "remove")


def run(
    db: Database,
    *,
    action: str | None = None,
    name: str | None = None,
    members: object = None,
    timestamp: str | None = None,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    action = "list" if action is None else action
    if action not in ACTIONS:  # never falls through to list
        raise InvalidField(f"unknown action {action!r} (known: {', '.join(ACTIONS)})", field="action")
    if action == "list":
        with db.read() as conn:
            return {"datasets": datasets.names(conn)}
    if name is None:
        raise InvalidField(f"missing 'name' (the dataset IRI) for action {action!r}", field="name")
    iri = values.check_iri(name, "name")
    if action == "show":
        with db.read() as conn:
            found = datasets.members(conn, iri)
        if found is None:
            raise InvalidField(f"no such dataset: <{iri}>", field="name", reason="not_found")
        return {"name": iri, "members": [{"graph": g, "ord": o} for g, o in found]}
    if iri == FROZEN_DATASET:  # rule DS-6: freeze and thaw maintain it
        raise InvalidField(f"<{FROZEN_DATASET}> is maintained by freeze and thaw", field="name")
    if action == "remove":
        with db.write(auth) as ctx:
            return {"removed": datasets.remove(ctx, iri)}
    parsed = _members(members)
    start = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        gid = db.terms.lookup_in(ctx, (iri,)).get(iri)
        if gid is not None and graph_registry.record(ctx.conn, gid) is not None:
            raise InvalidField(
                f"<{iri}> is a registered graph; a dataset needs a name of its own", field="name"
            )
        datasets.replace(ctx, iri, parsed, start)
        # The meta-graph mirror is history (rule DS-3): replacing never retracts earlier facts.
        tx = open_transaction(ctx, timestamp=start, actor=actor, source="dataset", graph=META)
        mirror: list[graph_facts.Triple] = [(iri, RDF_TYPE, Q + "Dataset")]
        mirror += [(iri, Q + "includesGraph", g) for g, _ in parsed]
        graph_facts.assert_triples(db, ctx, tx, mirror, start)
    return {"created": iri, "members": len(parsed)}


def _members(members: object) -> list[datasets.Member]:
    if members is None:
        raise InvalidField("missing 'members' for action 'create'", field="members")
    if not isinstance(members, list):
        raise InvalidField(
            "'members' must be an array of graph IRIs or {graph, ord} objects", field="members"
        )
    if not members:
        raise InvalidField("'members' is empty: an empty dataset names nothing", field="members")
    out: dict[str, int | None] = {}
    by_rank: dict[int, str] = {}
    for i, m in enumerate(members):
        if isinstance(m, str):
            graph, ord_ = m, None
        elif isinstance(m, dict) and isinstance(m.get("graph"), str) and set(m) <= {"graph", "ord"}:
            graph, ord_ = m["graph"], m.get("ord")
            if ord_ is not None and (isinstance(ord_, bool) or not isinstance(ord_, int)):
                raise InvalidField(f"'members[{i}].ord' must be an integer rank", field="members")
        else:
            raise InvalidField(
                f"'members[{i}]' must be a graph IRI string or an object with a string 'graph'",
                field="members",
            )
        graph = values.check_iri(graph, f"members[{i}]")
        if graph in out:
            raise InvalidField(f"graph <{graph}> is listed twice in 'members'", field="members")
        if ord_ is not None:
            if ord_ in by_rank:
                raise InvalidField(
                    f"members <{by_rank[ord_]}> and <{graph}> both declare ord {ord_}", field="members"
                )
            by_rank[ord_] = graph
        out[graph] = ord_
    return list(out.items())
