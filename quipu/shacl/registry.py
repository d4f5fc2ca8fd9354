"""The persistent registry of named SHACL shape sets (tools-core §2.2, DM §14.1).

Every load opens a new version of a name and closes the previous one; removal closes the open
version. Rows are never deleted, so the sets open at any earlier point stay readable for
``/validate``'s ``valid_at``/``as_of_tx``. Versions carry two watermarks: ``tx``, the latest
committed transaction when they opened, and ``closed_tx`` **[designed here]**, the same when
they closed, so "open as of tx N" is ``tx <= N < closed_tx``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from pyshacl.shapes_graph import ShapesGraph
from rdflib import RDFS, Graph, URIRef
from rdflib.namespace import SH
from rdflib.term import Node
from sqlalchemy import ColumnElement, Connection, and_, insert, or_, select, update

from quipu import times
from quipu.errors import InvalidField, MissingField, NotFound
from quipu.rdfio.curie import EMPTY, PrefixMap
from quipu.shacl.rdf import parse_field
from quipu.shacl.validate import normalise_shapes, prepare
from quipu.store.context import QueuedEvent, WriteContext
from quipu.store.database import Database
from quipu.store.schema import shapes as shapes_table
from quipu.store.versions import refuse_going_back

# Shapes annotated with this predicate and the literal "emit" report but do not gate writes.
QUIPU_NS = "https://quipu.dev/ontology/"
ON_VIOLATION_IRIS = frozenset({QUIPU_NS + "onViolation", "http://aegis.gastown.local/ontology/onViolation"})


@dataclass(frozen=True)
class ShapeSet:
    """One stored version of a named shape set."""

    name: str
    turtle: str
    prefixes: dict[str, str]
    loaded_at: str
    valid_from: str
    valid_to: str | None = None


@dataclass(frozen=True)
class Bundle:
    """Shape sets combined for validation: the graph, its sanctioned classes and emit shapes."""

    graph: Graph
    vocabulary: frozenset[str]
    emit: frozenset[object]  # shape nodes whose results never gate (quipu:onViolation "emit")
    prefixes: dict[str, str]
    class_axioms: tuple[tuple[Node, Node, Node], ...] = ()  # the sets' own rdfs:subClassOf triples
    prepared: ShapesGraph | None = None  # pySHACL's parsed shapes of ``graph``, built once


# -- parsing -------------------------------------------------------------------------------------


def parse_shapes(turtle: str, field: str = "shapes") -> Graph:
    """Turtle that must describe loadable SHACL shapes; 400 ``invalid_shapes`` otherwise.

    Cached by text (request shapes are checked up front on every write that carries them): the
    graph is shared by every caller of the same text, so read it, never change it.
    """
    return _parse_shapes(turtle, field)


@lru_cache(maxsize=64)
def _parse_shapes(turtle: str, field: str) -> Graph:
    graph = parse_field(turtle, field, problem="do not parse as Turtle", reason="invalid_shapes")
    probe = Graph(bind_namespaces="none")
    for triple in graph:  # pyshacl adds axioms to a shapes graph it loads: probe a copy
        probe.add(triple)
    try:
        ShapesGraph(probe).shapes  # noqa: B018 - building the shapes checks their constraints
    except Exception as exc:  # pyshacl's ShapeLoadError, ConstraintLoadError, ReportableRuntimeError
        message = getattr(exc, "message", None) or str(exc)
        raise InvalidField(
            f"'{field}' are not valid SHACL: {message}", field=field, reason="invalid_shapes"
        ) from None
    return graph


def declared_prefixes(graph: Graph) -> dict[str, str]:
    """The ``@prefix``/``PREFIX`` declarations of a parsed set (the graph binds nothing else)."""
    return {prefix: str(ns) for prefix, ns in graph.namespaces() if prefix}


@lru_cache(maxsize=32)
def _bundle(texts: tuple[str, ...]) -> Bundle:
    graph = Graph(store="SimpleMemory", bind_namespaces="none")  # no contexts: faster lookups
    prefixes: list[dict[str, str]] = []
    for text in texts:
        part = parse_shapes(text)
        prefixes.append(declared_prefixes(part))
        for triple in part:
            graph.add(triple)
    normalise_shapes(graph)
    axioms = tuple(graph.triples((None, RDFS.subClassOf, None)))
    # Prepared once per combination of texts, so gated writes reuse pySHACL's parsed shapes; the
    # key is the texts read inside each write, so a set loaded or removed (by any process) is a
    # new key on the very next write. Preparing adds pySHACL's two axioms: the graph is read-only
    # from here on.
    vocabulary, emit = sanctioned(graph), emit_shapes(graph)  # before pySHACL's axioms join
    return Bundle(graph, vocabulary, emit, _merged(prefixes), axioms, prepare(graph))


def bundle(texts: Iterable[str]) -> Bundle:
    """The combined shapes of several Turtle texts (cached: writes reuse the same stored sets)."""
    return _bundle(tuple(texts))


def _merged(sets: Sequence[dict[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for declarations in sets:
        for prefix, ns in declarations.items():
            out.setdefault(prefix, ns)
    return out


def sanctioned(graph: Graph) -> frozenset[str]:
    """Sanctioned classes: every ``sh:targetClass`` and ``rdfs:subClassOf`` object (DM §12 step 3)."""
    out = {str(o) for o in graph.objects(None, SH.targetClass) if isinstance(o, URIRef)}
    out |= {str(o) for o in graph.objects(None, RDFS.subClassOf) if isinstance(o, URIRef)}
    return frozenset(out)


def emit_shapes(graph: Graph) -> frozenset[object]:
    """Shapes annotated ``quipu:onViolation "emit"`` and the property shapes they own."""
    found: set[object] = set()
    for predicate in ON_VIOLATION_IRIS:
        for shape, value in graph.subject_objects(URIRef(predicate)):
            if str(value) == "emit":
                found.add(shape)
    pending = list(found)
    while pending:
        for prop in graph.objects(pending.pop(), SH.property):  # type: ignore[arg-type]
            if prop not in found:
                found.add(prop)
                pending.append(prop)
    return frozenset(found)


# -- reading -------------------------------------------------------------------------------------


def _row(row: object) -> ShapeSet:
    r = row._mapping  # type: ignore[attr-defined]
    return ShapeSet(
        r["name"], r["turtle"], json.loads(r["prefixes"]), r["loaded_at"], r["valid_from"], r["valid_to"]
    )


_c = shapes_table.c
_OPEN_NOW = (
    select(_c.name, _c.turtle, _c.prefixes, _c.loaded_at, _c.valid_from, _c.valid_to)
    .where(_c.valid_to.is_(None))
    .order_by(_c.name, _c.valid_from)
)
_open_now_sql: dict[str, str] = {}  # compiled once per backend


def _open_now(conn: Connection) -> list[ShapeSet]:
    """The open versions, straight on the driver: every write's gate asks, usually for nothing."""
    sql = _open_now_sql.get(conn.dialect.name)
    if sql is None:
        sql = _open_now_sql[conn.dialect.name] = str(_OPEN_NOW.compile(dialect=conn.dialect))
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    cursor.execute(sql)
    latest: dict[str, ShapeSet] = {}
    for name, turtle, prefixes, loaded_at, valid_from, valid_to in cursor.fetchall():
        latest[str(name)] = ShapeSet(
            str(name), str(turtle), json.loads(prefixes), str(loaded_at), str(valid_from), valid_to
        )
    return [latest[name] for name in sorted(latest)]


def open_sets(
    conn: Connection, *, valid_at: str | None = None, as_of_tx: int | None = None
) -> list[ShapeSet]:
    """Versions open at the point asked (now by default), by name."""
    if valid_at is None and as_of_tx is None:
        return _open_now(conn)
    c = shapes_table.c
    cond: list[ColumnElement[bool]] = []
    if valid_at is None and as_of_tx is None:
        cond.append(c.valid_to.is_(None))
    if valid_at is not None:
        at = times.normalise_valid_at(valid_at)
        cond += [c.valid_from <= at, or_(c.valid_to.is_(None), c.valid_to > at)]
    if as_of_tx is not None:
        cond += [c.tx <= as_of_tx, or_(c.closed_tx.is_(None), c.closed_tx > as_of_tx)]
    rows = conn.execute(select(shapes_table).where(and_(*cond)).order_by(c.name, c.valid_from))
    latest: dict[str, ShapeSet] = {}
    for row in rows:  # at most one per name is open; keep the newest should history overlap
        latest[row.name] = _row(row)
    return [latest[name] for name in sorted(latest)]


def current(db: Database) -> list[ShapeSet]:
    with db.read() as conn:
        return open_sets(conn)


def loaded_prefixes(db: Database) -> PrefixMap:
    """The CURIE prefix map of the currently open shape sets (each set's declarations, by name)."""
    sets = current(db)
    if not sets:
        return EMPTY
    return PrefixMap.from_declarations(s.prefixes for s in sets)


def get(db: Database, name: str | None) -> ShapeSet:
    name = _name(name)
    for found in current(db):
        if found.name == name:
            return found
    raise NotFound(f"no shape set named '{name}'", field="name")


# -- writing -------------------------------------------------------------------------------------


def _name(name: str | None) -> str:
    if name is None or not name.strip():
        raise MissingField("missing 'name' parameter", field="name")
    return name


@contextmanager
def _within(db: Database, ctx: WriteContext | None) -> Iterator[WriteContext]:
    """The caller's open write transaction, else a new one."""
    if ctx is not None:
        yield ctx
    else:
        with db.write() as own:
            yield own


def _refuse_going_back(conn: Connection, name: str, ts: str) -> None:
    refuse_going_back(conn, shapes_table, name, ts, "shape set")


def load(
    db: Database,
    name: str | None,
    turtle: str | None,
    *,
    timestamp: str | None = None,
    ctx: WriteContext | None = None,
) -> ShapeSet:
    """Open a new version of ``name`` (closing the open one); the same instant replaces it.

    ``ctx`` is an open write transaction to load inside (accepting a shape proposal commits the
    load and the decision together); without it the load is its own transaction.
    """
    name = _name(name)
    if turtle is None or not turtle.strip():
        raise MissingField("missing 'turtle' parameter", field="turtle")
    graph = parse_shapes(turtle, "turtle")  # nothing is stored for shapes that do not load
    prefixes = json.dumps(declared_prefixes(graph), sort_keys=True)
    ts = times.normalise_timestamp(timestamp)
    loaded_at = times.now()
    c = shapes_table.c
    with _within(db, ctx) as write:
        conn = write.conn
        _refuse_going_back(conn, name, ts)
        head = db.head_tx(conn)
        conn.execute(
            update(shapes_table)
            .where(c.name == name, c.valid_to.is_(None), c.valid_from != ts)
            .values(valid_to=ts, closed_tx=head)
        )
        values = {
            "turtle": turtle,
            "prefixes": prefixes,
            "loaded_at": loaded_at,
            "valid_to": None,
            "tx": head,
        }
        same = conn.execute(select(c.name).where(c.name == name, c.valid_from == ts)).first()
        if same is not None:
            conn.execute(
                update(shapes_table)
                .where(c.name == name, c.valid_from == ts)
                .values(closed_tx=None, **values)
            )
        else:
            conn.execute(insert(shapes_table).values(name=name, valid_from=ts, **values))
        write.advisories.append(QueuedEvent("shapes.loaded", name, {"name": name, "tx": head}, ts))
    return ShapeSet(name, turtle, json.loads(prefixes), loaded_at, ts)


def remove(db: Database, name: str | None, *, timestamp: str | None = None) -> bool:
    """Close the open version of ``name``; False when none was open. History stays."""
    name = _name(name)
    ts = times.normalise_timestamp(timestamp)
    c = shapes_table.c
    with db.write() as ctx:
        _refuse_going_back(ctx.conn, name, ts)
        head = db.head_tx(ctx.conn)
        done = ctx.conn.execute(
            update(shapes_table)
            .where(c.name == name, c.valid_to.is_(None))
            .values(valid_to=ts, closed_tx=head)
        )
        if done.rowcount:
            ctx.advisories.append(QueuedEvent("shapes.removed", name, {"name": name, "tx": head}, ts))
        return bool(done.rowcount)
