"""A read-only rdflib ``Store`` over one read snapshot and one ``TemporalView`` (DM §15).

rdflib's SPARQL evaluator and pyshacl run on it through ``rdflib.Dataset(store=...,
default_union=False)``. The default graph is the view's graph scope (ROOT unless the request
widened it); named graphs are the ones ``GRAPH`` may see. Every pattern becomes one SQL query.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from rdflib import BNode, Dataset, Literal, URIRef
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID, Graph
from rdflib.store import Store
from rdflib.term import Node
from sqlalchemy import Connection, func, select

from quipu.errors import BadLiteral, Forbidden
from quipu.store import budget as budgets
from quipu.store import values
from quipu.store.database import Database
from quipu.store.rdf_terms import TermMaker
from quipu.store.reads import named_graph_ids, statement_ids, statement_rows
from quipu.store.schema import facts
from quipu.store.views import TemporalView

_READ_ONLY = "this view is read-only: write through quipu's write pipeline, not through rdflib"


class ReadOnlyStore(Store):
    """An rdflib Store that refuses every change: quipu writes go through its write pipeline."""

    read_only_message = _READ_ONLY

    def add(self, triple: Any, context: Any = None, quoted: bool = False) -> None:
        raise Forbidden(self.read_only_message, reason="read_only_view")

    def addN(self, quads: Any) -> None:  # noqa: N802 - rdflib's name
        raise Forbidden(self.read_only_message, reason="read_only_view")

    def remove(self, triple: Any, context: Any = None) -> None:
        raise Forbidden(self.read_only_message, reason="read_only_view")

    def add_graph(self, graph: Graph) -> None:
        # rdflib's Dataset "adds" the default graph while listing contexts; that changes nothing.
        if graph.identifier == DATASET_DEFAULT_GRAPH_ID:
            return
        raise Forbidden(self.read_only_message, reason="read_only_view")

    def remove_graph(self, graph: Graph) -> None:
        raise Forbidden(self.read_only_message, reason="read_only_view")


class QuipuView(ReadOnlyStore):
    """rdflib Store answering ``triples()``/``contexts()`` from a temporal view."""

    context_aware = True
    graph_aware = True
    formula_aware = False
    transaction_aware = False

    def __init__(
        self,
        db: Database,
        conn: Connection,
        view: TemporalView,
        named_graphs: Iterable[int] | None = None,
    ) -> None:
        super().__init__()
        self.db = db
        self.conn = conn
        self.view = view
        self._named: frozenset[int] | None = None if named_graphs is None else frozenset(named_graphs)
        self.make = TermMaker(db, conn)
        self.subplans: Any = None  # set by the SPARQL engine to answer parts of a query in SQL
        self._ns: dict[str, URIRef] = {}

    # -- scope -----------------------------------------------------------------------------

    @property
    def named_graphs(self) -> frozenset[int]:
        """Graphs ``GRAPH`` may see; by default every graph but ROOT and the meta-graph."""
        if self._named is None:
            self._named = frozenset(named_graph_ids(self.conn, self.db))
        return self._named

    def _scope_for(self, context: Graph | None) -> frozenset[int]:
        ident = None if context is None else context.identifier
        if ident is None or ident == DATASET_DEFAULT_GRAPH_ID:
            return self.view.graphs
        if isinstance(ident, URIRef):
            gid = self.db.terms.lookup(self.conn, (str(ident),)).get(str(ident))
            if gid is not None and gid in self.named_graphs:
                return frozenset({gid})
        return frozenset()

    # -- terms -----------------------------------------------------------------------------

    def _lookup(self, term: Node) -> int | None:
        if isinstance(term, URIRef):
            key = str(term)
        elif isinstance(term, BNode):
            key = "_:" + str(term)
        else:
            return None
        return self.db.terms.lookup(self.conn, (key,)).get(key)

    def encode_object(self, term: Node) -> bytes | None:
        """A pattern object as stored bytes; None when it cannot match anything."""
        if isinstance(term, Literal):
            try:
                return values.literal(str(term), str(term.datatype) if term.datatype else None, term.language)
            except BadLiteral:
                return None
        tid = self._lookup(term)
        return None if tid is None else values.ref(tid)

    def decode(self, value: bytes) -> Node:
        return self.make.value(value)

    # -- the Store API ---------------------------------------------------------------------

    def triples(
        self, triple_pattern: tuple[Any, Any, Any], context: Graph | None = None
    ) -> Iterator[tuple[tuple[Node, Node, Node], Iterator[Graph | None]]]:
        s, p, o = triple_pattern
        gids = self._scope_for(context)
        if not gids:
            return
        c = facts.c
        where = []
        for col, term in ((c.e, s), (c.a, p)):
            if term is not None:
                tid = self._lookup(term)
                if tid is None:  # reads never intern: an unknown term matches nothing
                    return
                where.append(col == tid)
        if o is not None:
            enc = self.encode_object(o)
            if enc is None:
                return
            where += [c.vh == values.digest(enc), c.v == enc]
        rows = statement_rows(self.conn, self.view.with_graphs(gids), where)
        budget = budgets.current()  # set while run_query evaluates; None for other callers
        if budget is not None:
            budget.pulled(len(rows))
        make = self.make
        make.load(statement_ids(rows))
        if context is None:
            # No context asked means the default scope; name it, since rdflib's Dataset.quads
            # (pyshacl's report messages) reads the identifier of every yielded context.
            context = Graph(store=self, identifier=DATASET_DEFAULT_GRAPH_ID)
        if budget is None:
            for e, a, v in rows:
                yield (make.term(e), make.term(a), make.value(v)), iter([context])
            return
        # The evaluator's Python work happens between these yields, so the clock is read here
        # too; every CHECK_EVERY rows keeps the check off the per-row cost.
        for n, (e, a, v) in enumerate(rows, 1):
            if not n % budgets.CHECK_EVERY:
                budget.check_deadline()
            yield (make.term(e), make.term(a), make.value(v)), iter([context])

    def __len__(self, context: Graph | None = None) -> int:
        gids = self._scope_for(context)
        if not gids:
            return 0
        inner = (
            select(facts.c.e, facts.c.a, facts.c.v)
            .distinct()
            .where(self.view.with_graphs(gids).where(facts))
            .subquery()
        )
        return int(self.conn.execute(select(func.count()).select_from(inner)).scalar_one())

    def contexts(self, triple: tuple[Any, Any, Any] | None = None) -> Iterator[Graph]:  # type: ignore[override]
        ids = sorted(self.named_graphs)
        if not ids:
            return
        iris = self.db.terms.iris(self.conn, ids)
        for gid in ids:
            graph = Graph(store=self, identifier=URIRef(iris[gid]))
            if triple is not None and not any(True for _ in self.triples(triple, graph)):
                continue
            yield graph

    # Namespace bindings live with the view (pyshacl's sh:prefixes needs them to round-trip).
    def bind(self, prefix: str, namespace: Any, override: bool = True) -> None:
        if override or prefix not in self._ns:
            self._ns[prefix] = URIRef(namespace)

    def namespace(self, prefix: str) -> URIRef | None:
        return self._ns.get(prefix)

    def prefix(self, namespace: Any) -> str | None:
        for pfx, ns in self._ns.items():
            if ns == namespace:
                return pfx
        return None

    def namespaces(self) -> Iterator[tuple[str, URIRef]]:
        yield from self._ns.items()


def dataset(store: QuipuView) -> Dataset:
    """The rdflib Dataset over a view; its default graph is the view's scope, never a union."""
    return Dataset(store=store, default_union=False)
