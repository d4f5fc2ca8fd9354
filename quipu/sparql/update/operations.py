"""The operations of a request, run in order over the overlay (``State``); nothing is written here.

Dataset: the default graph is ROOT; ``WITH <g>`` makes ``g`` the default of ``WHERE`` and of the
templates; ``USING``/``USING NAMED`` replace the dataset of ``WHERE`` as ``FROM``/``FROM NAMED``
do in SPARQL (``USING`` alone activates no named graph, ``USING NAMED`` alone gives an empty
default graph). Graph management: a graph exists when it is registered or this request created
it; CLEAR/DROP retract statements (a dropped graph stays registered, rows are never deleted);
NAMED/ALL reach committed graphs that are not companions or overlays (and never the meta-graph);
graphs that receive inserts, or are CREATEd, are registered in the same database transaction.
``LOAD`` is refused (quipu never fetches); ``LOAD SILENT`` is a no-op, as SILENT asks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rdflib import BNode, Dataset, URIRef, Variable
from rdflib.plugins.sparql import algebra
from rdflib.plugins.sparql.evaluate import evalPart
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import QueryContext
from rdflib.term import Node

from quipu.errors import QuipuError
from quipu.rdfio.parse import skolem_prefix
from quipu.sparql.update.parse import Triple, error, template_triples
from quipu.sparql.update.state import GraphKey, Key, ScopeView, State, graph_key, object_key
from quipu.store.schema import ROOT_IRI

# -- running the operations ------------------------------------------------------------------


@dataclass
class Request:
    """One update request being evaluated: its text (the skolem scope) and the overlay."""

    text: str
    state: State
    written_labels: frozenset[str]
    # The protocol's using-graph-uri / using-named-graph-uri dataset (None: not given).
    dataset: tuple[tuple[GraphKey, ...], frozenset[GraphKey]] | None = None
    anonymous: dict[str, str] = field(default_factory=dict)  # parser id → anonN, in first-seen order
    prefixes: dict[GraphKey, str] = field(default_factory=dict)

    def skolem(self, node: BNode, graph: GraphKey, suffix: str = "") -> str:
        """A blank node of inserted data as a stored key (rule 11, DM §1.5).

        Scope = the update text's hash and the destination graph; the label is the one written
        in the text, or ``anonN`` in order of appearance for ``[]`` nodes. A template node gets
        ``suffix`` (operation and solution), so every solution makes its own node.
        """
        label = str(node)
        if label not in self.written_labels:
            label = self.anonymous.setdefault(label, f"anon{len(self.anonymous) + 1}")
        prefix = self.prefixes.get(graph)
        if prefix is None:
            prefix = self.prefixes[graph] = skolem_prefix(self.text.encode("utf-8"), graph or ROOT_IRI, None)
        return prefix + label + suffix

    def number_anonymous(self, ops: Sequence[CompValue]) -> None:
        """``anonN`` follows the order of the inserted data and templates in the text, so a
        node's name never depends on which earlier operation happened to match anything."""
        for op in ops:
            inserted = op if op.name == "InsertData" else op.insert if op.name == "Modify" else None
            for triple in template_triples(inserted):
                for term in triple:
                    if isinstance(term, BNode) and str(term) not in self.written_labels:
                        self.anonymous.setdefault(str(term), f"anon{len(self.anonymous) + 1}")


def _instantiate(
    request: Request,
    template: CompValue | None,
    default: GraphKey,
    solution: Mapping[Variable, Node],
    suffix: str,
) -> list[tuple[GraphKey, Key]]:
    """Ground a DELETE/INSERT template for one solution; unbound parts drop the triple."""
    if template is None:
        return []
    groups: list[tuple[Node | None, list[Triple]]] = [(None, list(template.triples or ()))]
    groups += [(g, list(q)) for g, q in (template.quads or {}).items()]
    out: list[tuple[GraphKey, Key]] = []
    for graph_term, triples in groups:
        graph: GraphKey = default
        if graph_term is not None:
            name = solution.get(graph_term) if isinstance(graph_term, Variable) else graph_term
            if not isinstance(name, URIRef):
                continue
            graph = graph_key(name)
        for triple in triples:
            ground: list[Node] = []
            for term in triple:
                value = solution.get(term) if isinstance(term, Variable) else term
                if value is None:
                    break
                ground.append(value)
            else:
                statement = _ground(request, graph, (ground[0], ground[1], ground[2]), triple, suffix)
                if statement is not None:
                    out.append((graph, statement))
    return out


def _ground(request: Request, graph: GraphKey, ground: Triple, template: Triple, suffix: str) -> Key | None:
    """Template blank nodes are skolemised; blank nodes bound from the data keep their keys."""
    s, p, o = ground
    if not isinstance(p, URIRef) or not isinstance(s, URIRef | BNode):
        return None

    def key(value: Node, written: Node) -> str | bytes:
        if isinstance(written, BNode):
            return request.skolem(written, graph, suffix)
        return object_key(value)

    sk = key(s, template[0])
    assert isinstance(sk, str)
    return (sk, str(p), key(o, template[2]))


def _solution_digest(solution: Mapping[Variable, Node]) -> str:
    """A stable name for one solution, so re-running the same update reuses its blank nodes."""
    parts = sorted(f"{var}={value.n3()}" for var, value in solution.items() if isinstance(value, Node))
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:12]


def _evaluate(
    request: Request,
    op: CompValue,
    where: CompValue,
    default: Sequence[GraphKey],
    named: frozenset[GraphKey] | None,
) -> list[Mapping[Variable, Node]]:
    store = ScopeView(request.state, default, named)
    ds = Dataset(store=store, default_union=False)
    ctx = QueryContext(ds, initBindings={})  # rdflib reads it even when empty
    ctx.prologue = op.prologue
    try:
        return [dict(solution) for solution in evalPart(ctx, where)]
    except QuipuError:
        raise
    except Exception as exc:  # rdflib raises bare Exceptions for evaluation failures
        raise error(str(exc) or type(exc).__name__) from None


def _modify(request: Request, index: int, op: CompValue) -> None:
    """DELETE/INSERT … WHERE with WITH, USING and USING NAMED (SPARQL 1.1 Update §3.1.3)."""
    target: GraphKey = graph_key(op.withClause) if op.withClause is not None else None
    default: list[GraphKey] = [target]
    named: frozenset[GraphKey] | None = None
    if request.dataset is not None:  # checked: the text has no USING or WITH
        default, named = list(request.dataset[0]), request.dataset[1]
    elif op.using:
        # USING/USING NAMED replace the dataset of WHERE (and WITH's role in it), like FROM.
        default = [graph_key(u.default) for u in op.using if u.default is not None]
        named = frozenset(graph_key(u.named) for u in op.using if u.named is not None)
    solutions = _evaluate(request, op, op.where, default, named)
    _apply(request, index, op.delete, op.insert, target, solutions)


def _apply(
    request: Request,
    index: int,
    delete: CompValue | None,
    insert: CompValue | None,
    target: GraphKey,
    solutions: list[Mapping[Variable, Node]],
) -> None:
    """Every deletion of every solution, then every insertion (the Halloween problem)."""
    deletions: list[tuple[GraphKey, Key]] = []
    insertions: list[tuple[GraphKey, Key]] = []
    for solution in solutions:
        deletions += _instantiate(request, delete, target, solution, "")
        if insert is not None:
            suffix = f"_{index}_{_solution_digest(solution)}"
            insertions += _instantiate(request, insert, target, solution, suffix)
    state = request.state
    for graph, statement in deletions:
        state.remove(graph, statement)
    for graph, statement in insertions:
        state.add(graph, statement)


def _delete_where(request: Request, index: int, op: CompValue) -> None:
    """DELETE WHERE: the quad pattern is both the WHERE and the DELETE template."""
    where: CompValue = algebra.BGP(list(op.triples or ()))
    for graph, quads in (op.quads or {}).items():
        where = algebra.Join(where, algebra.Graph(graph, algebra.BGP(list(quads))))
    solutions = _evaluate(request, op, where, [None], None)
    _apply(request, index, op, None, None, solutions)


def _data(request: Request, op: CompValue, insert: bool) -> None:
    """INSERT DATA / DELETE DATA: ground quads; inserted blank nodes are skolemised."""
    state = request.state
    groups: list[tuple[GraphKey, list[Triple]]] = [(None, list(op.triples or ()))]
    groups += [(graph_key(g), list(q)) for g, q in (op.quads or {}).items()]
    for graph, triples in groups:
        for triple in triples:
            statement = _ground(request, graph, triple, triple, "")
            if statement is None:
                continue
            if insert:
                state.add(graph, statement)
            else:
                state.remove(graph, statement)


def _targets(state: State, spec: Any) -> list[GraphKey]:
    """The graphs of CLEAR/DROP: DEFAULT, NAMED, ALL or one graph IRI."""
    if spec == "DEFAULT":
        return [None]
    if spec == "NAMED":
        return list(state.writable_named())
    if spec == "ALL":
        return [None, *state.writable_named()]
    return [graph_key(spec)]


def _graph_management(request: Request, op: CompValue) -> None:
    """CLEAR, DROP, CREATE, ADD, MOVE and COPY as statement retractions and assertions.

    A graph "exists" when it is registered or this request created it; DROP retracts its
    statements but never removes the registration (nothing is ever deleted, DM §5.3).
    """
    state = request.state
    silent = bool(op.silent)
    if op.name in ("Clear", "Drop"):
        for key in _targets(state, op.graphiri):
            if not state.exists(key):
                if silent:
                    continue
                raise error(f"graph <{key}> does not exist")
            if op.name == "Drop":
                state.drop(key)
            else:
                state.clear(key)
        return
    if op.name == "Create":
        key = graph_key(op.graphiri)
        if state.exists(key):
            if silent:
                return
            raise error(f"graph <{key or ROOT_IRI}> already exists")
        assert key is not None
        state.create(key)
        return
    src, dst = (None if g == "DEFAULT" else graph_key(g) for g in op.graph)
    if src == dst:
        return  # ADD/COPY/MOVE of a graph onto itself changes nothing
    if not state.exists(src):
        if silent:
            return
        raise error(f"graph <{src}> does not exist")
    statements = state.match(src, None, None, None)
    if op.name in ("Copy", "Move"):
        state.clear(dst)
    if dst is not None and not state.exists(dst):
        state.create(dst)
    for statement in statements:
        state.add(dst, statement)
    if op.name == "Move":
        state.drop(src)


def run(request: Request, index: int, op: CompValue) -> None:
    name = op.name
    if name == "InsertData":
        _data(request, op, insert=True)
    elif name == "DeleteData":
        _data(request, op, insert=False)
    elif name == "DeleteWhere":
        _delete_where(request, index, op)
    elif name == "Modify":
        _modify(request, index, op)
    elif name == "Load":
        pass  # LOAD SILENT (LOAD alone was refused at parse time): the load cannot succeed and
        # SILENT asks for that failure to be ignored, so it changes nothing.
    elif name in ("Clear", "Drop", "Create", "Add", "Move", "Copy"):
        _graph_management(request, op)
    else:
        raise error(f"unknown update operation {name}")
