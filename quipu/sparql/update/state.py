"""The request's state inside the write: the overlay, and the rdflib view a ``WHERE`` reads.

``State`` is the committed state, read through the write connection (so nothing can commit in
between), plus this request's pending changes; ``ScopeView`` is an rdflib store over it with one
operation's dataset.

Statements are compared the way the store compares them: subjects and predicates by IRI or skolem
key, objects by IRI/key or by their encoded literal bytes (DM §2), so ``"01"^^xsd:integer`` and
``"1"^^xsd:integer`` are one statement here as they are in the store. A literal the store cannot
encode (``"abc"^^xsd:integer``) is refused with ``BadLiteral`` in data and templates, as knot
refuses it; in a ``WHERE`` pattern it simply matches nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from rdflib import BNode, Literal, URIRef
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID, Graph
from rdflib.term import Node
from sqlalchemy import Connection, select

from quipu.errors import BadLiteral, QueryError
from quipu.sparql.update.parse import Triple, error
from quipu.store import values
from quipu.store.database import Database
from quipu.store.rdf_terms import TermMaker
from quipu.store.rdflib_store import ReadOnlyStore
from quipu.store.reads import named_graph_ids, statement_rows
from quipu.store.schema import ROOT, ROOT_IRI, facts, graphs
from quipu.store.views import TemporalView
from quipu.store.writes import is_companion

# A graph of the request: a named graph's IRI, or None for ROOT (the default graph).
GraphKey = str | None
# A statement as the store identifies it: subject key, predicate IRI, object (IRI or blank-node
# key as str, encoded literal as bytes).
Key = tuple[str, str, str | bytes]


# -- terms -----------------------------------------------------------------------------------


def _node_key(node: Node) -> str | None:
    """An IRI or blank node as its store key; None for anything else."""
    if isinstance(node, URIRef):
        return str(node)
    if isinstance(node, BNode):
        return "_:" + str(node)
    return None


def object_key(node: Node) -> str | bytes:
    """An object as the store identifies it; a literal the store cannot encode raises BadLiteral."""
    if isinstance(node, Literal):
        datatype = str(node.datatype) if node.datatype is not None else None
        return values.literal(str(node), datatype, node.language)
    key = _node_key(node)
    if key is None:
        raise error(f"not an RDF term: {node!r}")
    return key


def _pattern_object(node: Node | None) -> tuple[bool, str | bytes | None]:
    """(can match, key) for a pattern object; None matches anything. An IRI, blank node or
    literal the store cannot hold can match nothing."""
    if node is None:
        return True, None
    try:
        return True, object_key(node)
    except (BadLiteral, QueryError):
        return False, None


def graph_key(iri: Node) -> GraphKey:
    """A graph IRI of the request; ROOT's reserved IRI names ROOT (DM §1.6)."""
    text = str(iri)
    return None if text == ROOT_IRI else text


# -- the overlay -----------------------------------------------------------------------------


class _Index:
    """Statements of one graph with subject and predicate indexes, for pattern matching."""

    def __init__(self) -> None:
        self.all: set[Key] = set()
        self.by_s: dict[str, set[Key]] = defaultdict(set)
        self.by_p: dict[str, set[Key]] = defaultdict(set)

    def add(self, key: Key) -> None:
        if key not in self.all:
            self.all.add(key)
            self.by_s[key[0]].add(key)
            self.by_p[key[1]].add(key)

    def discard(self, key: Key) -> None:
        if key in self.all:
            self.all.discard(key)
            self.by_s[key[0]].discard(key)
            self.by_p[key[1]].discard(key)

    def match(self, s: str | None, p: str | None, o: str | bytes | None) -> Iterable[Key]:
        if s is not None:
            pool: Iterable[Key] = self.by_s.get(s, ())
        elif p is not None:
            pool = self.by_p.get(p, ())
        else:
            pool = self.all
        return [k for k in pool if (p is None or k[1] == p) and (o is None or k[2] == o)]


class State:
    """The committed state seen through the write connection, plus this request's changes.

    ``added`` and ``removed`` are kept disjoint per graph; the base (committed) statements are
    read on demand, so a large graph is only read when an operation asks for it.
    """

    def __init__(self, db: Database, conn: Connection) -> None:
        self.db = db
        self.conn = conn
        self.added: dict[GraphKey, _Index] = defaultdict(_Index)
        self.removed: dict[GraphKey, set[Key]] = defaultdict(set)
        self.created: set[str] = set()  # named graphs this request brought into existence
        self.dropped: set[str] = set()
        self._gids: dict[GraphKey, int | None] = {None: ROOT}
        self._classes: dict[int, str] | None = None
        self._base_named: set[str] | None = None
        self._maker = TermMaker(db, conn)

    # -- graphs ----------------------------------------------------------------------------

    def registry(self) -> dict[int, str]:
        """Registered graph id → class (read once: the request itself registers nothing yet)."""
        if self._classes is None:
            rows = self.conn.execute(select(graphs.c.g, graphs.c["class"]))
            self._classes = {int(r[0]): str(r[1]) for r in rows}
        return self._classes

    def gid(self, key: GraphKey) -> int | None:
        """The committed, registered graph behind a key; None when reads cannot see one."""
        if key not in self._gids:
            tid = self.db.terms.lookup(self.conn, (key,)).get(key) if key is not None else ROOT
            self._gids[key] = tid if tid is not None and tid in self.registry() else None
        return self._gids[key]

    def exists(self, key: GraphKey) -> bool:
        if key is None:
            return True
        if key in self.dropped:
            return False
        return key in self.created or self.gid(key) is not None

    def named(self) -> list[str]:
        """Named graphs ``GRAPH ?g`` ranges over: registered (not ROOT or the meta-graph) and new."""
        if self._base_named is None:
            ids = named_graph_ids(self.conn, self.db)
            iris = self.db.terms.iris(self.conn, ids)
            self._base_named = {iris[i] for i in ids}
        found = self._base_named | self.created
        return sorted(k for k in found if k not in self.dropped)

    def writable_named(self) -> list[str]:
        """The named graphs CLEAR/DROP NAMED and ALL reach: not overlays or companion graphs."""
        classes = self.registry()
        out = []
        for iri in self.named():
            gid = self.gid(iri)
            if is_companion(iri) or (gid is not None and classes.get(gid) == "overlay"):
                continue
            out.append(iri)
        return out

    # -- statements ------------------------------------------------------------------------

    def _base(self, key: GraphKey, s: str | None, p: str | None, o: str | bytes | None) -> list[Key]:
        gid = self.gid(key)
        if gid is None:
            return []
        names = [t for t in (s, p, o if isinstance(o, str) else None) if t is not None]
        ids = self.db.terms.lookup(self.conn, names) if names else {}
        if len(ids) < len(set(names)):  # an unknown term matches nothing (reads never intern)
            return []
        c = facts.c
        where = []
        if s is not None:
            where.append(c.e == ids[s])
        if p is not None:
            where.append(c.a == ids[p])
        if o is not None:
            enc = values.ref(ids[o]) if isinstance(o, str) else o
            where += [c.vh == values.digest(enc), c.v == enc]
        rows = statement_rows(self.conn, TemporalView(graphs=frozenset({gid})), where)
        return self.keys_of(rows)

    def keys_of(self, rows: Sequence[tuple[int, int, bytes]]) -> list[Key]:
        wanted: set[int] = set()
        for e, a, v in rows:
            wanted.update((e, a))
            ref = values.ref_id(v)
            if ref is not None:
                wanted.add(ref)
        iris = self.db.terms.iris(self.conn, wanted) if wanted else {}
        out: list[Key] = []
        for e, a, v in rows:
            ref = values.ref_id(v)
            out.append((iris[e], iris[a], iris[ref] if ref is not None else v))
        return out

    def match(self, key: GraphKey, s: str | None, p: str | None, o: str | bytes | None) -> list[Key]:
        """Statements of one graph in the request's current state."""
        base = self._base(key, s, p, o)
        removed = self.removed.get(key)
        out = [k for k in base if k not in removed] if removed else base
        added = self.added.get(key)
        if added is not None and added.all:
            seen = set(base)
            out += [k for k in added.match(s, p, o) if k not in seen]
        return out

    def add(self, key: GraphKey, statement: Key) -> None:
        self.removed[key].discard(statement)
        self.added[key].add(statement)
        if key is not None and not self.exists(key):
            self.created.add(key)
            self.dropped.discard(key)

    def remove(self, key: GraphKey, statement: Key) -> None:
        self.added[key].discard(statement)
        self.removed[key].add(statement)

    def clear(self, key: GraphKey) -> None:
        for statement in self.match(key, None, None, None):
            self.remove(key, statement)

    def drop(self, key: GraphKey) -> None:
        self.clear(key)
        if key is not None:
            self.dropped.add(key)
            self.created.discard(key)

    def create(self, key: str) -> None:
        self.created.add(key)
        self.dropped.discard(key)

    # -- rdflib terms ----------------------------------------------------------------------

    def node(self, term: str | bytes) -> Node:
        if isinstance(term, bytes):
            return self._maker.value(term)
        return BNode(term[2:]) if term.startswith("_:") else URIRef(term)


class ScopeView(ReadOnlyStore):
    """An rdflib Store over the overlay with one operation's dataset (WITH, USING, USING NAMED)."""

    read_only_message = "the update's view is read-only; operations write through the overlay"

    context_aware = True
    graph_aware = True
    formula_aware = False
    transaction_aware = False

    def __init__(self, state: State, default: Sequence[GraphKey], named: frozenset[GraphKey] | None) -> None:
        super().__init__()
        self.state = state
        self.default = tuple(dict.fromkeys(default))
        self.named_scope = named  # None: every named graph

    def _keys_for(self, context: Graph | None) -> tuple[GraphKey, ...]:
        ident = None if context is None else context.identifier
        if ident is None or ident == DATASET_DEFAULT_GRAPH_ID:
            return self.default
        if not isinstance(ident, URIRef):
            return ()
        key = graph_key(ident)
        if self.named_scope is not None and key not in self.named_scope:
            return ()
        return (key,)

    def triples(
        self, triple_pattern: tuple[Any, Any, Any], context: Graph | None = None
    ) -> Iterator[tuple[Triple, Iterator[Graph | None]]]:
        s, p, o = triple_pattern
        keys = self._keys_for(context)
        sk = _node_key(s) if s is not None else None
        pk = _node_key(p) if p is not None else None
        can_match, ok = _pattern_object(o)
        if not keys or not can_match or (s is not None and sk is None) or (p is not None and pk is None):
            return
        seen: set[Key] = set()
        state = self.state
        for key in keys:
            for statement in state.match(key, sk, pk, ok):
                if len(keys) > 1:  # a statement in two default graphs is one solution
                    if statement in seen:
                        continue
                    seen.add(statement)
                triple = (state.node(statement[0]), state.node(statement[1]), state.node(statement[2]))
                yield triple, iter([context])

    def __len__(self, context: Graph | None = None) -> int:
        return sum(1 for _ in self.triples((None, None, None), context))

    def contexts(self, triple: tuple[Any, Any, Any] | None = None) -> Iterator[Graph]:  # type: ignore[override]
        scope = self.named_scope
        iris = sorted(k for k in scope if k is not None) if scope is not None else self.state.named()
        for iri in iris:
            graph = Graph(store=self, identifier=URIRef(iri))
            if triple is not None and not any(True for _ in self.triples(triple, graph)):
                continue
            yield graph
