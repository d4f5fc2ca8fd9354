"""SPARQL 1.1 Update written as bitemporal facts (tools-core §3.10, DM §3.6, §5, §7).

rdflib parses the request; the operations run here, in order, over an overlay: the committed
state (read through the write connection, so nothing can commit in between) plus this request's
pending changes, so each ``WHERE`` sees what the earlier operations did. Nothing is written until
every operation has run. Then the net difference per graph is written: deletions close every
owner's claims (closure stamp = now), insertions of statements that are not visible become
claims with ``valid_from`` = now under the declared source, one transaction per changed graph
(ROOT first, then ascending graph id), all inside one database transaction.

Statements are compared the way the store compares them: subjects and predicates by IRI or skolem
key, objects by IRI/key or by their encoded literal bytes (DM §2), so ``"01"^^xsd:integer`` and
``"1"^^xsd:integer`` are one statement here as they are in the store. A literal the store cannot
encode (``"abc"^^xsd:integer``) is refused with ``BadLiteral`` in data and templates, as knot
refuses it; in a ``WHERE`` pattern it simply matches nothing.

Dataset: the default graph is ROOT; ``WITH <g>`` makes ``g`` the default of ``WHERE`` and of the
templates; ``USING``/``USING NAMED`` replace the dataset of ``WHERE`` as ``FROM``/``FROM NAMED``
do in SPARQL (``USING`` alone activates no named graph, ``USING NAMED`` alone gives an empty
default graph). Graph management: a graph exists when it is registered or this request created
it; CLEAR/DROP retract statements (a dropped graph stays registered, rows are never deleted);
NAMED/ALL reach committed graphs that are not companions or overlays (and never the meta-graph);
graphs that receive inserts, or are CREATEd, are registered in the same database transaction.
``LOAD`` is refused (quipu never fetches); ``LOAD SILENT`` is a no-op, as SILENT asks.

The protocol's ``using-graph-uri``/``using-named-graph-uri`` parameters give every
``DELETE/INSERT … WHERE`` of the request that dataset, exactly as ``USING``/``USING NAMED`` in
the text would; they are refused together with ``USING``/``WITH`` in the text, and when the
request has no such operation to scope.

The vocabulary and SHACL gates (rule 8) validate each destination graph's inserts inside the
write, before anything is interned (``quipu.shacl.update_gate``). Semantic events (rule 12)
come from the store's event log, which only ROOT transactions feed. Not here yet (the feature
does not exist): the workflow guard (rule 9).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import rdflib
from pyparsing import ParseException
from rdflib import XSD, BNode, Dataset, Literal, URIRef, Variable
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID, Graph
from rdflib.plugins.sparql import algebra
from rdflib.plugins.sparql.evaluate import evalPart
from rdflib.plugins.sparql.parser import parseUpdate
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import QueryContext
from rdflib.term import Node
from sqlalchemy import Connection, select

from quipu import times
from quipu.errors import BadLiteral, InvalidField, QueryError, QuipuError, WriteRefused
from quipu.identity import Authenticated
from quipu.rdfio.parse import skolem_prefix
from quipu.shacl.update_gate import GraphDelta, check_update
from quipu.sparql.parse_lock import SPARQL_PARSE_LOCK
from quipu.sparql.tree import has_path, walk
from quipu.store import values
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.rdf_terms import TermMaker
from quipu.store.rdflib_store import ReadOnlyStore
from quipu.store.reads import named_graph_ids, statement_rows
from quipu.store.schema import ROOT, ROOT_IRI, facts, graphs
from quipu.store.stage import Row
from quipu.store.views import TemporalView
from quipu.store.writes import (
    assert_rows,
    close_statements,
    is_companion,
    open_transaction,
    register_graph_in,
)

DEFAULT_SOURCE = "sparql-update"
_MAX_DECLARATION = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CHUNK = 500  # subject ids per IN (...) when checking what is visible
_RDF_TYPE = values.RDF + "type"

# A graph of the request: a named graph's IRI, or None for ROOT (the default graph).
GraphKey = str | None
# A statement as the store identifies it: subject key, predicate IRI, object (IRI or blank-node
# key as str, encoded literal as bytes).
Key = tuple[str, str, str | bytes]
Triple = tuple[Node, Node, Node]

_PARSE_LOCK = SPARQL_PARSE_LOCK  # the grammar is shared with query parsing
_WRITTEN_LABEL = re.compile(r"_:([^\s<>{}()\[\];,\"'#]+)")
_UNSUPPORTED = {"ServiceGraphPattern": "SERVICE"}


def _error(message: str) -> QueryError:
    return QueryError(f"SPARQL update error: {message}", reason="sparql_update_error")


# -- parsing ---------------------------------------------------------------------------------


def parse_update(text: str) -> list[CompValue]:
    """The request's operations, with every literal's lexical form kept as written (DM §2.3).

    rdflib's literal normalisation is a process-wide switch; it is turned off only for the
    parse (under a lock, so two updates never interleave their save/restore) because a
    normalised ``"2001-01-01T00:00:00.000Z"^^xsd:dateTime`` would be stored, and matched, as a
    different value than the one written.
    """
    check_structure(text)
    with _PARSE_LOCK:
        saved = rdflib.NORMALIZE_LITERALS
        rdflib.NORMALIZE_LITERALS = False
        try:
            ops = _translate(parseUpdate(text))
        except ParseException as exc:
            raise _error(str(exc)) from None
        except RecursionError:
            raise _too_complex() from None
        except Exception as exc:  # rdflib raises bare Exceptions for some translation failures
            raise _error(str(exc) or type(exc).__name__) from None
        finally:
            rdflib.NORMALIZE_LITERALS = saved
    try:
        for op in ops:
            _check_operation(op)
    except RecursionError:
        raise _too_complex() from None
    return ops


# The structural pre-check [designed here]: the parser recurses per nesting level and per
# operation, so a pathological request gets a clear refusal before it reaches the parser.
MAX_NESTING = 32  # brackets ({, (, [) open at once
MAX_OPERATIONS = 64  # operations separated by ';'
_LEXEME = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # long strings
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'  # short strings
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r'|<[^<>"{}|^`\\\x00-\x20]*>'  # IRIs (a lone '<' is the less-than operator)
    r"|#[^\n\r]*"  # comments
    r"|[{}()\[\];]"
)
_OPEN, _CLOSE = frozenset("{(["), frozenset("})]")


def check_structure(text: str) -> None:
    """Refuse an update nested deeper than ``MAX_NESTING`` or longer than ``MAX_OPERATIONS``.

    A lexical scan, run before any parser: brackets and ``;`` inside strings, IRIs and
    comments do not count.
    """
    depth = deepest = 0
    operations = 1
    for match in _LEXEME.finditer(text):
        token = match.group()
        if token in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif token in _CLOSE:
            depth = max(depth - 1, 0)
        elif token == ";" and depth == 0:
            operations += 1
    if deepest > MAX_NESTING:
        raise _error(f"nesting too deep: {deepest} levels of brackets (at most {MAX_NESTING})")
    if operations > MAX_OPERATIONS:
        raise _error(f"too long: {operations} operations (at most {MAX_OPERATIONS}); split the request")


def _too_complex() -> QueryError:
    return _error("the update is nested too deeply or too long to parse; simplify it or split it up")


def _translate(parsed: CompValue) -> list[CompValue]:
    """rdflib's ``translateUpdate``, except for INSERT DATA and DELETE DATA.

    rdflib reorders every quad block as if it were a pattern to join, which is quadratic in its
    size (minutes for ten thousand triples); ground data needs no join order, so those blocks
    are only flattened.
    """
    ops: list[CompValue] = []
    prologue = None
    for raw_prologue, raw in zip(parsed.prologue, parsed.request or (), strict=False):
        prologue = algebra.translatePrologue(raw_prologue, None, None, prologue)
        op = algebra.traverse(raw, visitPost=functools.partial(algebra.translatePName, prologue=prologue))
        if op.name in ("InsertData", "DeleteData"):
            op["triples"], op["quads"] = _flat_quads(op.quads)
            op.prologue = prologue
        else:
            op = algebra._traverse(op, algebra._simplifyFilters)
            op = algebra.traverse(op, visitPost=algebra.translatePath)
            op = algebra.translateUpdate1(op, prologue)
        ops.append(op)
    return ops


def _flat(parts: Sequence[Sequence[Node]]) -> list[Triple]:
    terms = [term for part in parts for term in part]
    if len(terms) % 3:
        raise _error("a data block does not consist of whole triples")
    return [(terms[i], terms[i + 1], terms[i + 2]) for i in range(0, len(terms), 3)]


def _flat_quads(quads: CompValue) -> tuple[list[Triple], dict[Node, list[Triple]]]:
    named: dict[Node, list[Triple]] = defaultdict(list)
    for block in quads.quadsNotTriples or ():
        if block.triples:
            named[block.term] += _flat(block.triples)
    return (_flat(quads.triples) if quads.triples else []), named


def _template_triples(template: CompValue | None) -> Iterator[Triple]:
    if template is None:
        return
    yield from template.triples or ()
    for quads in (template.quads or {}).values():
        yield from quads


def _check_operation(op: CompValue) -> None:
    """Refusals that need no store: blank nodes where deletion names data, SERVICE, paths."""
    deleting: list[Triple] = []
    if op.name in ("DeleteData", "DeleteWhere"):
        deleting = list(_template_triples(op))
    elif op.name == "Modify":
        deleting = list(_template_triples(op.delete))
    if any(isinstance(term, BNode) for triple in deleting for term in triple):
        # The grammar forbids them (a blank node would match nothing or anything).
        raise _error(f"blank nodes are not allowed in {_label(op)}")
    if op.name == "Load" and not op.silent:
        raise QueryError(
            "LOAD is not supported: quipu never fetches remote data; "
            "parse the document yourself and send it to knot",
            reason="unsupported",
        )
    if op.name == "InsertData" and any(
        isinstance(term, Variable) for triple in _template_triples(op) for term in triple
    ):
        raise _error("variables are not allowed in INSERT DATA")
    if op.name != "Modify":
        return
    for part in walk(op.where):
        if part.name in _UNSUPPORTED:
            raise QueryError(f"unsupported SPARQL construct: {_UNSUPPORTED[part.name]}", reason="unsupported")
        if part.name == "Graph" and isinstance(part.term, Variable) and has_path(part.p):
            # Same rule as queries (DM §13.2 rule 7): a path never crosses graphs.
            raise QueryError(
                "a property path inside GRAPH ?g is not supported; name the graph",
                reason="unsupported",
            )


def _label(op: CompValue) -> str:
    return {"DeleteData": "DELETE DATA", "DeleteWhere": "DELETE WHERE"}.get(op.name, "a DELETE template")


# -- terms -----------------------------------------------------------------------------------


def _node_key(node: Node) -> str | None:
    """An IRI or blank node as its store key; None for anything else."""
    if isinstance(node, URIRef):
        return str(node)
    if isinstance(node, BNode):
        return "_:" + str(node)
    return None


def _object_key(node: Node) -> str | bytes:
    """An object as the store identifies it; a literal the store cannot encode raises BadLiteral."""
    if isinstance(node, Literal):
        datatype = str(node.datatype) if node.datatype is not None else None
        return values.literal(str(node), datatype, node.language)
    key = _node_key(node)
    if key is None:
        raise _error(f"not an RDF term: {node!r}")
    return key


def _pattern_object(node: Node | None) -> tuple[bool, str | bytes | None]:
    """(can match, key) for a pattern object; None matches anything. An IRI, blank node or
    literal the store cannot hold can match nothing."""
    if node is None:
        return True, None
    try:
        return True, _object_key(node)
    except (BadLiteral, QueryError):
        return False, None


def _graph_key(iri: Node) -> GraphKey:
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


class _State:
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


class _ScopeView(ReadOnlyStore):
    """An rdflib Store over the overlay with one operation's dataset (WITH, USING, USING NAMED)."""

    read_only_message = "the update's view is read-only; operations write through the overlay"

    context_aware = True
    graph_aware = True
    formula_aware = False
    transaction_aware = False

    def __init__(self, state: _State, default: Sequence[GraphKey], named: frozenset[GraphKey] | None) -> None:
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
        key = _graph_key(ident)
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


# -- running the operations ------------------------------------------------------------------


@dataclass
class _Request:
    """One update request being evaluated: its text (the skolem scope) and the overlay."""

    text: str
    state: _State
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
            for triple in _template_triples(inserted):
                for term in triple:
                    if isinstance(term, BNode) and str(term) not in self.written_labels:
                        self.anonymous.setdefault(str(term), f"anon{len(self.anonymous) + 1}")


def _instantiate(
    request: _Request,
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
            graph = _graph_key(name)
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


def _ground(request: _Request, graph: GraphKey, ground: Triple, template: Triple, suffix: str) -> Key | None:
    """Template blank nodes are skolemised; blank nodes bound from the data keep their keys."""
    s, p, o = ground
    if not isinstance(p, URIRef) or not isinstance(s, URIRef | BNode):
        return None

    def key(value: Node, written: Node) -> str | bytes:
        if isinstance(written, BNode):
            return request.skolem(written, graph, suffix)
        return _object_key(value)

    sk = key(s, template[0])
    assert isinstance(sk, str)
    return (sk, str(p), key(o, template[2]))


def _solution_digest(solution: Mapping[Variable, Node]) -> str:
    """A stable name for one solution, so re-running the same update reuses its blank nodes."""
    parts = sorted(f"{var}={value.n3()}" for var, value in solution.items() if isinstance(value, Node))
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:12]


def _evaluate(
    request: _Request,
    op: CompValue,
    where: CompValue,
    default: Sequence[GraphKey],
    named: frozenset[GraphKey] | None,
) -> list[Mapping[Variable, Node]]:
    store = _ScopeView(request.state, default, named)
    ds = Dataset(store=store, default_union=False)
    ctx = QueryContext(ds, initBindings={})  # rdflib reads it even when empty
    ctx.prologue = op.prologue
    try:
        return [dict(solution) for solution in evalPart(ctx, where)]
    except QuipuError:
        raise
    except Exception as exc:  # rdflib raises bare Exceptions for evaluation failures
        raise _error(str(exc) or type(exc).__name__) from None


def _modify(request: _Request, index: int, op: CompValue) -> None:
    """DELETE/INSERT … WHERE with WITH, USING and USING NAMED (SPARQL 1.1 Update §3.1.3)."""
    target: GraphKey = _graph_key(op.withClause) if op.withClause is not None else None
    default: list[GraphKey] = [target]
    named: frozenset[GraphKey] | None = None
    if request.dataset is not None:  # checked: the text has no USING or WITH
        default, named = list(request.dataset[0]), request.dataset[1]
    elif op.using:
        # USING/USING NAMED replace the dataset of WHERE (and WITH's role in it), like FROM.
        default = [_graph_key(u.default) for u in op.using if u.default is not None]
        named = frozenset(_graph_key(u.named) for u in op.using if u.named is not None)
    solutions = _evaluate(request, op, op.where, default, named)
    _apply(request, index, op.delete, op.insert, target, solutions)


def _apply(
    request: _Request,
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


def _delete_where(request: _Request, index: int, op: CompValue) -> None:
    """DELETE WHERE: the quad pattern is both the WHERE and the DELETE template."""
    where: CompValue = algebra.BGP(list(op.triples or ()))
    for graph, quads in (op.quads or {}).items():
        where = algebra.Join(where, algebra.Graph(graph, algebra.BGP(list(quads))))
    solutions = _evaluate(request, op, where, [None], None)
    _apply(request, index, op, None, None, solutions)


def _data(request: _Request, op: CompValue, insert: bool) -> None:
    """INSERT DATA / DELETE DATA: ground quads; inserted blank nodes are skolemised."""
    state = request.state
    groups: list[tuple[GraphKey, list[Triple]]] = [(None, list(op.triples or ()))]
    groups += [(_graph_key(g), list(q)) for g, q in (op.quads or {}).items()]
    for graph, triples in groups:
        for triple in triples:
            statement = _ground(request, graph, triple, triple, "")
            if statement is None:
                continue
            if insert:
                state.add(graph, statement)
            else:
                state.remove(graph, statement)


def _targets(state: _State, spec: Any) -> list[GraphKey]:
    """The graphs of CLEAR/DROP: DEFAULT, NAMED, ALL or one graph IRI."""
    if spec == "DEFAULT":
        return [None]
    if spec == "NAMED":
        return list(state.writable_named())
    if spec == "ALL":
        return [None, *state.writable_named()]
    return [_graph_key(spec)]


def _graph_management(request: _Request, op: CompValue) -> None:
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
                raise _error(f"graph <{key}> does not exist")
            if op.name == "Drop":
                state.drop(key)
            else:
                state.clear(key)
        return
    if op.name == "Create":
        key = _graph_key(op.graphiri)
        if state.exists(key):
            if silent:
                return
            raise _error(f"graph <{key or ROOT_IRI}> already exists")
        assert key is not None
        state.create(key)
        return
    src, dst = (None if g == "DEFAULT" else _graph_key(g) for g in op.graph)
    if src == dst:
        return  # ADD/COPY/MOVE of a graph onto itself changes nothing
    if not state.exists(src):
        if silent:
            return
        raise _error(f"graph <{src}> does not exist")
    statements = state.match(src, None, None, None)
    if op.name in ("Copy", "Move"):
        state.clear(dst)
    if dst is not None and not state.exists(dst):
        state.create(dst)
    for statement in statements:
        state.add(dst, statement)
    if op.name == "Move":
        state.drop(src)


def _run(request: _Request, index: int, op: CompValue) -> None:
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
        raise _error(f"unknown update operation {name}")


# -- writing the difference ------------------------------------------------------------------


@dataclass
class _GraphPlan:
    key: GraphKey
    inserts: list[Key]
    deletes: list[Key]
    gid: int | None = None


def _visible(state: _State, key: GraphKey, statements: Iterable[Key]) -> set[Key]:
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


def _plans(state: _State) -> list[_GraphPlan]:
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


def _check_writable(state: _State, key: str) -> None:
    """Refusals before anything is interned (DM §1.4), as knot refuses these graphs."""
    if is_companion(key):
        raise WriteRefused(
            f"graph <{key}> is a reserved companion inferred graph; only the reasoner writes there",
            field="graph",
        )
    gid = state.gid(key)
    if gid is not None and state.registry().get(gid) == "overlay":
        raise WriteRefused(f"graph {key} is an overlay — write through overlay_write", field="graph")


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
            raise _error(f"<{key}> is not an absolute IRI (give the update a BASE)") from None
    return keys


def _row(ids: Mapping[str, int], statement: Key) -> Row:
    s, p, o = statement
    v = values.ref(ids[o]) if isinstance(o, str) else o
    return (ids[s], ids[p], v, values.digest(v), values.ref_id(v), values.numeric(v))


def _write(
    db: Database, ctx: WriteContext, state: _State, *, actor: str | None, source: str
) -> dict[str, Any]:
    plans = _plans(state)
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


def _gate_deltas(state: _State, plans: Sequence[_GraphPlan]) -> Iterator[GraphDelta]:
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
    default = tuple(dict.fromkeys(_graph_key(URIRef(iri)) for iri in using))
    return default, frozenset(_graph_key(URIRef(iri)) for iri in using_named)


def run_update(
    db: Database,
    text: str,
    *,
    actor: str | None = None,
    source: str | None = None,
    auth: Authenticated | None = None,
    using_graphs: Sequence[str] = (),
    using_named_graphs: Sequence[str] = (),
) -> dict[str, Any]:
    """Execute a SPARQL 1.1 Update request atomically (tools-core §3.10).

    ``using_graphs``/``using_named_graphs`` are the protocol's ``using-graph-uri`` and
    ``using-named-graph-uri`` parameters. Returns ``{"tx", "asserted", "retracted", "graphs":
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
        request = _Request(text, _State(db, ctx.conn), labels, dataset)
        request.number_anonymous(ops)
        for index, op in enumerate(ops):
            _run(request, index, op)
        return _write(db, ctx, request.state, actor=actor, source=source)
