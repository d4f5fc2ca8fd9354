"""The request's net difference written, and ``run_update``, which parses, runs and writes.

``_write`` plans each changed graph (only what is not visible is asserted, only what is visible
is retracted), hands the inserts to the gates, then registers, interns and writes;
``run_update`` checks the declarations and the protocol dataset, and runs the operations and
the write in one ``Database.write``.

The protocol's ``using-graph-uri``/``using-named-graph-uri`` parameters give every
``DELETE/INSERT … WHERE`` of the request that dataset, exactly as ``USING``/``USING NAMED`` in
the text would; they are refused together with ``USING``/``WITH`` in the text, and when the
request has no such operation to scope.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rdflib import XSD, Literal, URIRef
from rdflib.plugins.sparql.parserutils import CompValue

from quipu import times
from quipu.errors import InvalidField, QueryError, WriteRefused
from quipu.identity import Authenticated
from quipu.shacl.update_gate import GraphDelta, check_update
from quipu.sparql.update.operations import Request, run
from quipu.sparql.update.parse import Triple, error, parse_update
from quipu.sparql.update.state import GraphKey, Key, State, graph_key
from quipu.store import graph_registry, values
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.reads import statement_rows
from quipu.store.schema import ROOT, facts
from quipu.store.stage import Row
from quipu.store.views import TemporalView
from quipu.store.writes import (
    assert_rows,
    close_statements,
    is_companion,
    open_transaction,
    refuse_unwritable,
    register_graph_in,
)

DEFAULT_SOURCE = "sparql-update"
_MAX_DECLARATION = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CHUNK = 500  # subject ids per IN (...) when checking what is visible
_RDF_TYPE = values.RDF + "type"
_WRITTEN_LABEL = re.compile(r"_:([^\s<>{}()\[\];,\"'#]+)")


# -- writing the difference ------------------------------------------------------------------


@dataclass
class _GraphPlan:
    key: GraphKey
    inserts: list[Key]
    deletes: list[Key]
    gid: int | None = None


def _visible(state: State, key: GraphKey, statements: Iterable[Key]) -> set[Key]:
    """Which of ``statements`` are visible now in the committed graph (set-wise, by subject)."""
    gid = state.gid(key)
    wanted = set(statements)
    if gid is None or not wanted:
        return set()
    names = {t for k in wanted for t in (k[0], k[1], k[2] if isinstance(k[2], str) else None) if t}
    ids = state.db.terms.lookup(state.conn, names)
    subjects = sorted({ids[k[0]] for k in wanted if k[0] in ids})
    found: set[Key] = set()
    view = TemporalView(graphs=frozenset({gid}))
    for i in range(0, len(subjects), _CHUNK):
        rows = statement_rows(state.conn, view, [facts.c.e.in_(subjects[i : i + _CHUNK])])
        found.update(k for k in state.keys_of(rows) if k in wanted)
    return found


def _plans(state: State) -> list[_GraphPlan]:
    """The net difference per graph: what must be asserted and what must be retracted."""
    plans: list[_GraphPlan] = []
    for key in sorted(set(state.added) | set(state.removed), key=lambda k: (k is not None, k or "")):
        added = state.added[key].all if key in state.added else set()
        removed = state.removed.get(key, set())
        visible = _visible(state, key, added | removed)
        inserts = sorted((k for k in added if k not in visible), key=_order)  # rule 4
        deletes = sorted((k for k in removed if k in visible), key=_order)
        if inserts or deletes:
            plans.append(_GraphPlan(key, inserts, deletes))
    return plans


def _order(statement: Key) -> tuple[str, str, int, str]:
    """A total order on statements (references before literals), for a stable write order."""
    s, p, o = statement
    return (s, p, 0, o) if isinstance(o, str) else (s, p, 1, o.hex())


def _check_writable(state: State, key: str) -> None:
    """Refusals before anything is interned (DM §1.4), as knot refuses these graphs."""
    if is_companion(key):
        raise WriteRefused(
            f"graph <{key}> is a reserved companion inferred graph; only the reasoner writes there",
            field="graph",
        )
    gid = state.gid(key)
    if gid is not None and state.registry().get(gid) == "overlay":
        raise WriteRefused(f"graph {key} is an overlay — write through overlay_write", field="graph")
    lifecycle = None if gid is None else graph_registry.record(state.conn, gid)
    refuse_unwritable(key, None if lifecycle is None else lifecycle.lifecycle)


def _check_inserted_iris(plans: Sequence[_GraphPlan], new_graphs: Iterable[str]) -> set[str]:
    """Every IRI the write will intern must be absolute; returns those of the statements."""
    keys: set[str] = set()
    for plan in plans:
        for s, p, o in plan.inserts:
            keys.update((s, p))
            if isinstance(o, str):
                keys.add(o)
    for key in keys | set(new_graphs):
        if key.startswith("_:"):
            continue
        try:
            values.check_iri(key, "update")
        except InvalidField:
            raise error(f"<{key}> is not an absolute IRI (give the update a BASE)") from None
    return keys


def _row(ids: Mapping[str, int], statement: Key) -> Row:
    s, p, o = statement
    v = values.ref(ids[o]) if isinstance(o, str) else o
    return (ids[s], ids[p], v, values.digest(v), values.ref_id(v), values.numeric(v))


def _write(
    db: Database,
    ctx: WriteContext,
    state: State,
    *,
    actor: str | None,
    source: str,
    guard: Callable[[Collection[str]], None] | None = None,
) -> dict[str, Any]:
    plans = _plans(state)
    if guard is not None:
        guard({p for plan in plans for _s, p, _o in (*plan.inserts, *plan.deletes)})
    new_graphs = {p.key for p in plans if p.key is not None and p.inserts}
    new_graphs |= state.created
    new_graphs = {k for k in new_graphs if k is not None and state.gid(k) is None}
    for key in sorted({p.key for p in plans if p.key is not None} | new_graphs):
        _check_writable(state, key)
    iris = _check_inserted_iris(plans, new_graphs)
    stamp = times.now()
    # Rule 8, before anything is interned or registered; free without stored shape sets.
    check_update(db, ctx, _gate_deltas(state, plans), actor=actor, source=source, timestamp=stamp)
    for key in sorted(new_graphs):
        register_graph_in(db, ctx, key, actor=actor, timestamp=stamp)
    ids = db.terms.intern(ctx, iris) if iris else {}
    for plan in plans:
        if plan.key is None:
            plan.gid = ROOT
        else:
            plan.gid = db.terms.intern(ctx, (plan.key,))[plan.key]
    plans.sort(key=lambda p: p.gid or 0)  # ROOT first, then ascending graph id (DM §3.6)
    known = db.terms.lookup_in(ctx, {t for p in plans for k in p.deletes for t in _names(k)})
    report: list[dict[str, Any]] = []
    last: int | None = None
    for plan in plans:
        assert plan.gid is not None
        tx = open_transaction(ctx, timestamp=stamp, actor=actor, source=source, graph=plan.gid)
        retracted = close_statements(ctx, tx, [_row(known, k) for k in plan.deletes])
        asserted = assert_rows(ctx, tx, [_row(ids, k) for k in plan.inserts], stamp)
        report.append({"graph": plan.key, "tx": tx.id, "asserted": asserted, "retracted": retracted})
        last = tx.id
    return {
        "tx": last,
        "asserted": sum(r["asserted"] for r in report),
        "retracted": sum(r["retracted"] for r in report),
        "graphs": report,
    }


def _gate_deltas(state: State, plans: Sequence[_GraphPlan]) -> Iterator[GraphDelta]:
    """Per graph with inserts, what the vocabulary and SHACL gates validate (rule 8): every
    statement the request inserts there, and the type changes that shape its store context."""

    def triple(statement: Key) -> Triple:
        s, p, o = statement
        value = state.node(o)
        if isinstance(value, Literal) and value.datatype is None and value.language is None:
            value = Literal(str(value), datatype=XSD.string)  # as a parsed document types it
        return state.node(s), URIRef(p), value

    def types(statements: Iterable[Key]) -> set[Triple]:
        return {triple(k) for k in statements if k[1] == _RDF_TYPE and isinstance(k[2], str)}

    root = state.added.get(None)
    root_added = sorted(types(root.all), key=str) if root is not None else []
    root_deleted = types(state.removed.get(None, ()))
    for plan in plans:
        if not plan.inserts:
            continue
        added = state.added.get(plan.key)
        inserted = sorted(added.all, key=_order) if added is not None else []
        gid = ROOT if plan.key is None else state.gid(plan.key)
        deleted = types(state.removed.get(plan.key, ()))
        yield GraphDelta(plan.key, gid, [triple(k) for k in inserted], deleted, root_deleted, root_added)


def _names(statement: Key) -> list[str]:
    s, p, o = statement
    return [s, p, o] if isinstance(o, str) else [s, p]


def _declaration(value: str | None, name: str) -> str | None:
    """``actor``/``source`` are declarations: absent, or 1-256 characters without controls."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidField(f"'{name}' must be a non-empty string", field=name)
    if len(value) > _MAX_DECLARATION:
        raise InvalidField(f"'{name}' is longer than {_MAX_DECLARATION} characters", field=name)
    if _CONTROL.search(value):
        raise InvalidField(f"'{name}' contains control characters", field=name)
    return value


USING_GRAPH = "using-graph-uri"
USING_NAMED_GRAPH = "using-named-graph-uri"


def _protocol_dataset(
    ops: Sequence[CompValue], using: Sequence[str], using_named: Sequence[str]
) -> tuple[tuple[GraphKey, ...], frozenset[GraphKey]] | None:
    """The dataset the protocol parameters give every DELETE/INSERT … WHERE (None: not given).

    As with ``USING`` in the text, only the listed graphs are visible: ``using-graph-uri``
    alone activates no named graph, ``using-named-graph-uri`` alone leaves the default empty.
    """
    if not using and not using_named:
        return None
    given = USING_GRAPH if using else USING_NAMED_GRAPH
    for name, iris in ((USING_GRAPH, using), (USING_NAMED_GRAPH, using_named)):
        for iri in iris:
            values.check_iri(iri, name)
    modify = [op for op in ops if op.name == "Modify"]
    if not modify:
        raise InvalidField(
            f"'{given}' scopes the WHERE of a DELETE/INSERT … WHERE operation, and this update has none",
            field=given,
        )
    if any(op.using or op.withClause is not None for op in modify):
        raise InvalidField(
            f"'{given}' cannot be combined with USING, USING NAMED or WITH in the update text",
            field=given,
        )
    default = tuple(dict.fromkeys(graph_key(URIRef(iri)) for iri in using))
    return default, frozenset(graph_key(URIRef(iri)) for iri in using_named)


def run_update(
    db: Database,
    text: str,
    *,
    actor: str | None = None,
    source: str | None = None,
    auth: Authenticated | None = None,
    using_graphs: Sequence[str] = (),
    using_named_graphs: Sequence[str] = (),
    guard: Callable[[Collection[str]], None] | None = None,
) -> dict[str, Any]:
    """Execute a SPARQL 1.1 Update request atomically (tools-core §3.10).

    ``using_graphs``/``using_named_graphs`` are the protocol's ``using-graph-uri`` and
    ``using-named-graph-uri`` parameters. ``guard`` (the workflow guard, rule 9) is called with
    the predicates the update would insert or delete, before anything is written; it refuses by
    raising. Returns ``{"tx", "asserted", "retracted", "graphs":
    [{"graph", "tx", "asserted", "retracted"}]}``; ``tx`` is None when nothing changed, and
    then no transaction was written.
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError("missing 'update' parameter", reason="missing_field")
    actor = _declaration(actor, "actor")
    source = _declaration(source, "source") or DEFAULT_SOURCE
    ops = parse_update(text)
    dataset = _protocol_dataset(ops, using_graphs, using_named_graphs)
    labels = frozenset(m.rstrip(".") for m in _WRITTEN_LABEL.findall(text))
    with db.write(auth) as ctx:
        request = Request(text, State(db, ctx.conn), labels, dataset)
        request.number_anonymous(ops)
        for index, op in enumerate(ops):
            run(request, index, op)
        return _write(db, ctx, request.state, actor=actor, source=source, guard=guard)
