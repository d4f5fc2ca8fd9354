"""The ``queries.ttl`` member of a share: stored named queries carried as data (tools-graphs-governance
§4.0.4), and their installation on import (§4.2 step 10, the query-install rule).

A carried query is data, never code. Its form is decided by *parsing* the template (with every
placeholder filled by a probe value), both when the producer writes the member and when a
receiver reads it, and a SPARQL Update is refused at both ends. Nothing here evaluates a query.

* ``select`` picks what a share carries: the default rule (an unscoped query belongs to a ROOT,
  group or construct share; a dataset-scoped one only to a ``graph`` share whose graph is a
  member of that dataset), or an explicit list (``[]``: none).
* ``render`` writes the member byte for byte as §4.0.4 lays it out; the bytes are hashed into the
  share id, so the same queries always give the same text. The producer's dataset scope is
  dropped: it names producer-local layout.
* ``parse`` reads a member strictly: stored-query subjects and their parameter nodes only, a
  closed predicate set, and a declared form and target set equal to what the template yields.
  Each query must also pass the local registry's own load rules (a SELECT, each placeholder
  declared and placed by its kind), so an installed query is one ``quipu_queries`` could have
  loaded: a carried CONSTRUCT, ASK or DESCRIBE is read but refused, before anything is staged.
* ``install`` writes inside the importer's open write transaction: ``<namespace>/<name>``,
  never a bare local name; identical → unchanged, differing → collision (or replaced), and
  earlier installs this share no longer carries → stale (or closed and reported as removed).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import pyoxigraph as ox
from pyparsing import ParseException
from rdflib import URIRef
from rdflib.plugins.sparql.parser import parseUpdate

from quipu.errors import BadRequest, InvalidField, NotFound, QueryError, RdfParseError
from quipu.graphs import query_params, query_shape, stored_queries
from quipu.graphs.query_params import KINDS, MAX_PARAMS, Kind, NamedQuery, ParamSpec, fill
from quipu.rdfio.parse import read_quads
from quipu.rdfio.serialize import checked_iri_term, literal_term
from quipu.sparql.parse_lock import SPARQL_PARSE_LOCK
from quipu.sparql.tree import walk
from quipu.sparql.update import check_structure
from quipu.store import datasets, values
from quipu.store import stored_queries as rows
from quipu.store.context import WriteContext
from quipu.store.database import Database

FIELD: Final = "queries_turtle"
Q: Final = "https://quipu.dev/ontology/"
DCT_DESCRIPTION: Final = "http://purl.org/dc/terms/description"
RDF_TYPE: Final = values.RDF + "type"
SUBJECT_PREFIX: Final = "urn:quipu:query:"
STORED_QUERY, QUERY_PARAMETER = Q + "StoredQuery", Q + "QueryParameter"
FORMS: Final = {
    "SelectQuery": "SELECT",
    "ConstructQuery": "CONSTRUCT",
    "AskQuery": "ASK",
    "DescribeQuery": "DESCRIBE",
}
# What each kind of node may say; together the ten quipu: query predicates of §4.0.4.
QUERY_PREDICATES: Final = frozenset(
    {RDF_TYPE, DCT_DESCRIPTION}
    | {Q + p for p in ("queryName", "queryForm", "sparqlTemplate", "targetsClass", "parameter")}
)
PARAM_PREDICATES: Final = frozenset(
    {RDF_TYPE, DCT_DESCRIPTION}
    | {Q + p for p in ("parameterName", "parameterIndex", "parameterKind", "required", "defaultValue")}
)
_NAMESPACE: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")
_CONTINUATION: Final = " " * len("  quipu:parameter [ ")
# Probe values by kind, for deciding a template's form: any value its kind accepts will do.
_PROBES: Final[dict[Kind, str]] = {"iri": "urn:x-quipu-probe:form", "text": "probe", "int": "0"}


@dataclass(frozen=True, slots=True)
class CarriedQuery:
    """One query as a share carries it: the definition, and what parsing its template derived."""

    name: str
    description: str
    template: str
    params: tuple[ParamSpec, ...]
    form: str  # SELECT | CONSTRUCT | ASK | DESCRIBE
    targets: tuple[str, ...]  # constant rdf:type objects of the template, sorted


# -- the producer's half -------------------------------------------------------------------------


def select(
    db: Database, *, scope_kind: str, scope_value: str | None, names: list[str] | None
) -> list[NamedQuery]:
    """The stored queries a share of this scope carries, by name, their dataset scope dropped.

    ``names`` None applies the default rule; a list replaces it (``[]`` carries none). 400 for
    an unknown name ("no such stored query") and for a selected SPARQL Update."""
    if names is not None:
        chosen = []
        for name in sorted(set(names)):
            found = stored_queries.current(db, name)
            if found is None:
                raise NotFound(f"no such stored query: {name}", field="queries")
            chosen.append(found)
    else:
        chosen = [q for q in stored_queries.catalog(db) if _belongs(db, q, scope_kind, scope_value)]
    for query in chosen:
        form_and_targets(query.name, query.template, query.params, field="queries")
    return [dataclasses.replace(q, dataset=None) for q in chosen]


def _belongs(db: Database, query: NamedQuery, scope_kind: str, scope_value: str | None) -> bool:
    """The default rule: where ``quipu_ask`` would answer the query from the shared slice."""
    if query.dataset is None:
        return scope_kind in ("root", "group", "construct")
    if scope_kind != "graph" or scope_value is None:
        return False
    with db.read() as conn:
        members = datasets.members(conn, query.dataset)
    return any(graph == scope_value for graph, _ in members or ())


def render(queries: Sequence[NamedQuery | CarriedQuery]) -> str | None:
    """``queries.ttl`` in the exact layout of §4.0.4, sorted by name; None when there are none."""
    if not queries:
        return None
    out = ["@prefix dct: <http://purl.org/dc/terms/> .\n@prefix quipu: <https://quipu.dev/ontology/> .\n"]
    for query in sorted(queries, key=lambda q: q.name):
        form, targets = form_and_targets(query.name, query.template, query.params, field="queries")
        lines = [
            f"<{subject(query.name)}> a quipu:StoredQuery ;",
            f"  quipu:queryName {literal_term(query.name)} ;",
            f"  quipu:queryForm {literal_term(form)} ;",
        ]
        if query.description:
            lines.append(f"  dct:description {literal_term(query.description)} ;")
        lines += [f"  quipu:targetsClass {checked_iri_term(t)} ;" for t in targets]
        for index, spec in enumerate(query.params):
            lines += _parameter(index, spec)
        lines.append(f"  quipu:sparqlTemplate {_long(query.template)} .")
        out.append("\n" + "\n".join(lines) + "\n")
    return "".join(out)


def _parameter(index: int, spec: ParamSpec) -> list[str]:
    """One parameter's blank node on two or three lines, as §4.0.4 wraps it."""
    first = (
        f"  quipu:parameter [ a quipu:QueryParameter ; quipu:parameterName {literal_term(spec.name)} ; "
        f"quipu:parameterIndex {index} ;"
    )
    second = f"quipu:parameterKind {literal_term(spec.kind)} ; quipu:required {str(spec.required).lower()}"
    optional = []
    if spec.default is not None:
        optional.append(f"quipu:defaultValue {literal_term(spec.default)}")
    if spec.description:
        optional.append(f"dct:description {literal_term(spec.description)}")
    if not optional:
        return [first, f"{_CONTINUATION}{second} ] ;"]
    return [first, f"{_CONTINUATION}{second} ;", f"{_CONTINUATION}{' ; '.join(optional)} ] ;"]


def _long(text: str) -> str:
    """A long string literal: newlines stay readable; a backslash, every quote (so none can close
    the literal early) and a carriage return are escaped."""
    return '"""' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r") + '"""'


def subject(name: str) -> str:
    """``urn:quipu:query:`` and the name's UTF-8 bytes, all but ``[A-Za-z0-9-._~]`` percent-encoded."""
    return SUBJECT_PREFIX + quote(name, safe="")


def form_and_targets(
    name: str, template: str, params: Sequence[ParamSpec], *, field: str
) -> tuple[str, tuple[str, ...]]:
    """The template's read-only form and its target classes, decided by parsing it; 400 (on
    ``field``) for a SPARQL Update or a template that does not parse."""
    try:
        algebra = query_shape.probe_query(template, params).algebra
    except QueryError as exc:
        if _is_update(fill(template, params, {p.name: _PROBES[p.kind] for p in params})):
            raise BadRequest(
                f"stored query '{name}' is a SPARQL Update; a share carries read-only queries only "
                "(SELECT, CONSTRUCT, ASK, DESCRIBE)",
                field=field,
            ) from None
        raise BadRequest(
            f"stored query '{name}' does not parse as SPARQL: {exc.message}", field=field
        ) from None
    return FORMS[algebra.name], _targets(algebra)


def _is_update(text: str) -> bool:
    """Whether ``text`` parses as a SPARQL Update with at least one operation."""
    try:
        check_structure(text)
        with SPARQL_PARSE_LOCK:  # rdflib's grammar is not thread-safe
            parsed = parseUpdate(text)
    except (QueryError, ParseException, RecursionError):
        return False
    return "request" in parsed and bool(parsed["request"])


def _targets(algebra: Any) -> tuple[str, ...]:
    """Every constant ``rdf:type`` object in the query's patterns (and a CONSTRUCT template); an
    IRI a placeholder fills is not constant."""
    triples: list[Any] = list(algebra.get("template") or ()) if algebra.name == "ConstructQuery" else []
    for node in walk(algebra):
        if node.name == "BGP":
            triples += node.triples
    found = {
        str(o)
        for _, p, o in triples
        if str(p) == RDF_TYPE and isinstance(o, URIRef) and not query_shape.reserved(str(o))
    }
    return tuple(sorted(found))


# -- the receiver's half: reading the member -----------------------------------------------------


def parse(text: str) -> list[CarriedQuery]:
    """The member's queries, sorted by name, or 400 (``queries_turtle``) naming what is wrong."""
    nodes = _nodes(text)
    queries = {key: node for key, node in nodes.items() if STORED_QUERY in _types(node)}
    named: dict[str, str] = {}  # name -> subject, every name first: a duplicate is named as one
    for key in sorted(queries):
        name = _one_string(queries[key], Q + "queryName", key, required=True) or ""
        if name in named:
            raise _refused(f"query '{name}' is described twice ({named[name]} and {key})")
        named[name] = key
    used: set[str] = set()
    out: list[CarriedQuery] = []
    for name, key in sorted(named.items()):
        if key != f"<{subject(name)}>":
            raise _refused(f"the subject {key} does not identify query '{name}' (expected <{subject(name)}>)")
        node = queries[key]
        _closed(key, node, QUERY_PREDICATES, {STORED_QUERY})
        used.add(key)
        out.append(_carried(name, node, _params(name, node, nodes, used)))
    stray = sorted(set(nodes) - used)
    if stray:
        raise _refused(f"{stray[0]} is neither a stored query nor one of its parameters")
    return out


def _nodes(text: str) -> dict[str, dict[str, list[Any]]]:
    """The member's triples grouped by subject (``<iri>`` or ``_:label``), then predicate."""
    try:
        quads, _ = read_quads(text.encode("utf-8", "surrogatepass"), "turtle", list)
    except (SyntaxError, ValueError) as exc:
        raise RdfParseError(f"queries.ttl does not parse as Turtle: {exc}", field=FIELD) from None
    nodes: dict[str, dict[str, list[Any]]] = {}
    for quad in quads:
        nodes.setdefault(str(quad.subject), {}).setdefault(quad.predicate.value, []).append(quad.object)
    return nodes


def _closed(key: str, node: dict[str, list[Any]], allowed: frozenset[str], types: set[str]) -> None:
    for predicate in sorted(node):
        if predicate not in allowed:
            raise _refused(f"{key} uses <{predicate}>, which a stored-query description does not have")
    if _types(node) != types:
        raise _refused(f"{key} must be typed exactly {', '.join(f'<{t}>' for t in sorted(types))}")


def _params(
    name: str, node: dict[str, list[Any]], nodes: dict[str, dict[str, list[Any]]], used: set[str]
) -> tuple[ParamSpec, ...]:
    refs = node.get(Q + "parameter", [])
    if len(refs) > MAX_PARAMS:
        raise _refused(f"query '{name}' declares more than {MAX_PARAMS} parameters")
    by_index: dict[int, ParamSpec] = {}
    for ref in refs:
        key = str(ref)
        if not key.startswith("_:"):
            raise _refused(f"query '{name}': a parameter must be a blank node, not {key}")
        if key in used or key not in nodes:
            raise _refused(f"query '{name}': parameter {key} is empty or belongs to another query")
        used.add(key)
        pnode = nodes[key]
        what = f"query '{name}' parameter {key}"
        _closed(what, pnode, PARAM_PREDICATES, {QUERY_PARAMETER})
        index = _one_typed(pnode, Q + "parameterIndex", what, values.XSD_INTEGER)
        if not index.isdigit() or int(index) in by_index:
            raise _refused(f"{what}: parameterIndex {index!r} is not a fresh index")
        by_index[int(index)] = _spec(name, pnode, what)
    if sorted(by_index) != list(range(len(by_index))):
        raise _refused(f"query '{name}': parameter indexes are not 0..{len(by_index) - 1}")
    specs = tuple(by_index[i] for i in range(len(by_index)))
    if len({s.name for s in specs}) != len(specs):
        raise _refused(f"query '{name}': two parameters share a name")
    return specs


def _spec(name: str, pnode: dict[str, list[Any]], what: str) -> ParamSpec:
    pname = _one_string(pnode, Q + "parameterName", what, required=True) or ""
    kind_text = _one_string(pnode, Q + "parameterKind", what, required=True)
    kind = next((k for k in KINDS if k == kind_text), None)
    if kind is None:
        raise _refused(f"{what}: parameterKind {kind_text!r} is not one of iri, text, int")
    required = _one_typed(pnode, Q + "required", what, values.XSD_BOOLEAN)
    if required not in ("true", "false"):
        raise _refused(f"{what}: required must be true or false, not {required!r}")
    spec = ParamSpec(
        pname,
        kind,
        required == "true",
        _one_string(pnode, Q + "defaultValue", what),
        _one_string(pnode, DCT_DESCRIPTION, what) or "",
    )
    if not spec.required and spec.default is None:
        raise _refused(f"query '{name}': optional parameter '{pname}' has no defaultValue")
    if spec.default is not None:
        try:
            query_params.render(spec, spec.default)
        except InvalidField as exc:
            raise _refused(f"query '{name}': {exc.message}") from None
    return spec


def _carried(name: str, node: dict[str, list[Any]], params: tuple[ParamSpec, ...]) -> CarriedQuery:
    template = _one_string(node, Q + "sparqlTemplate", f"query '{name}'", required=True) or ""
    form, targets = form_and_targets(name, template, params, field=FIELD)
    declared_form = _one_string(node, Q + "queryForm", f"query '{name}'", required=True)
    declared = tuple(sorted({_iri(o, name, "targetsClass") for o in node.get(Q + "targetsClass", [])}))
    if declared_form != form or declared != targets:
        raise _refused(
            f"query '{name}' declares form {declared_form} targeting {list(declared)}, but its "
            f"template is a {form} query targeting {list(targets)}"
        )
    try:  # the local registry's own rules: what quipu_queries would refuse is refused here
        stored_queries.check_template(template, list(params))
    except InvalidField as exc:
        raise _refused(f"query '{name}' cannot be a stored query here: {exc.message}") from None
    description = _one_string(node, DCT_DESCRIPTION, f"query '{name}'") or ""
    return CarriedQuery(name, description, template, params, form, targets)


def _one(node: dict[str, list[Any]], predicate: str, what: str, *, required: bool) -> Any:
    found = node.get(predicate, [])
    if len(found) > 1:
        raise _refused(f"{what} has more than one <{predicate}>")
    if not found:
        if required:
            raise _refused(f"{what} has no <{predicate}>")
        return None
    return found[0]


def _one_typed(node: dict[str, list[Any]], predicate: str, what: str, datatype: str) -> str:
    term = _one(node, predicate, what, required=True)
    if getattr(term, "datatype", None) is None or term.datatype.value != datatype:
        raise _refused(f"{what}: <{predicate}> must be an <{datatype}> literal")
    return str(term.value)


def _one_string(
    node: dict[str, list[Any]], predicate: str, what: str, *, required: bool = False
) -> str | None:
    """A single plain string literal (no language tag), or None when absent and optional."""
    term = _one(node, predicate, what, required=required)
    if term is None:
        return None
    if getattr(term, "datatype", None) is None or term.datatype.value != values.XSD_STRING:
        raise _refused(f"{what}: <{predicate}> must be a plain string literal")
    return str(term.value)


def _types(node: dict[str, list[Any]]) -> set[str]:
    return {term.value if isinstance(term, ox.NamedNode) else str(term) for term in node.get(RDF_TYPE, [])}


def _iri(term: Any, what: str, predicate: str) -> str:
    if not isinstance(term, ox.NamedNode):
        raise _refused(f"{what}: {predicate} must be an IRI, not {term}")
    return str(term.value)


def _refused(message: str) -> BadRequest:
    return BadRequest(f"queries.ttl: {message}", field=FIELD)


# -- the receiver's half: installing -------------------------------------------------------------


def default_namespace(store_id: str) -> str:
    """``pack-`` and 12 hex of the producer's store id: stable across that producer's shares."""
    return "pack-" + hashlib.sha256(store_id.encode("utf-8")).hexdigest()[:12]


def check_namespace(namespace: str) -> None:
    """400 unless ``namespace`` is one path segment: 1-64 of ``[A-Za-z0-9._-]``, never ``.``-only,
    so ``<namespace>/<name>`` cannot climb out of its prefix."""
    if not _NAMESPACE.fullmatch(namespace) or ".." in namespace or set(namespace) == {"."}:
        raise InvalidField(
            f"'query_namespace' {namespace!r} must be a single segment of 1-64 characters from "
            "[A-Za-z0-9._-], with no '/' and no '..'",
            field="query_namespace",
        )


def off_vocabulary_targets(carried: Iterable[CarriedQuery], sanctioned: frozenset[str]) -> list[str]:
    """The target classes of ``carried`` that nothing loaded locally sanctions, sorted."""
    return sorted({t for q in carried for t in q.targets if t not in sanctioned})


def install(
    db: Database,
    ctx: WriteContext,
    carried: list[CarriedQuery],
    *,
    namespace: str,
    replace: bool,
    at: str,
    eligible: bool,
    off_vocabulary_of: Callable[[CarriedQuery], list[str]],
) -> dict[str, Any]:
    """The query-install rule, inside the importer's write transaction; the response's ``queries``.

    A quarantined import (``eligible`` false) installs nothing and holds every query back."""
    check_namespace(namespace)
    report: dict[str, Any] = {
        "namespace": namespace,
        "installed": [],
        "unchanged": [],
        "replaced": [],
        "removed": [],
        "stale": [],
        "collisions": [],
        "quarantined": [],
    }
    ordered = sorted(carried, key=lambda q: q.name)
    if not eligible:
        report["quarantined"] = [{"name": q.name, "off_vocabulary": off_vocabulary_of(q)} for q in ordered]
        return report
    prefix = namespace + "/"
    existing = {row.name: row for row in rows.current(ctx.conn) if row.name.startswith(prefix)}
    tx = db.head_tx(ctx.conn)
    for query in ordered:
        local = prefix + query.name
        row = _row(local, query, at, tx)
        found = existing.get(local)
        if found is None:
            rows.open_version(ctx, row)
            report["installed"].append(local)
        elif _same(found, row):
            report["unchanged"].append(local)
        elif replace:
            _refuse_going_back(found, at)
            rows.open_version(ctx, row)
            report["replaced"].append(local)
        else:
            report["collisions"].append({"name": query.name, "local": local})
    carried_names = {prefix + q.name for q in carried}
    for local in sorted(set(existing) - carried_names):
        if replace:
            _refuse_going_back(existing[local], at)
            rows.close(ctx, local, at)
            report["removed"].append(local)
        else:
            report["stale"].append(local)
    return report


def _row(local: str, query: CarriedQuery, at: str, tx: int) -> rows.QueryRow:
    params = tuple(rows.ParamRow(p.name, p.kind, p.required, p.default, p.description) for p in query.params)
    return rows.QueryRow(local, query.description, query.template, None, at, None, tx, params)


def _same(found: rows.QueryRow, row: rows.QueryRow) -> bool:
    """Identical definitions: what ``quipu_ask`` would run is the same (instants and tx aside)."""
    return (found.description, found.template, found.dataset, found.params) == (
        row.description,
        row.template,
        row.dataset,
        row.params,
    )


def _refuse_going_back(found: rows.QueryRow, at: str) -> None:
    """A version cannot end before it began: replacing or closing one opened after ``at`` would
    leave two current versions, so the import is refused (and rolled back)."""
    if at < found.valid_from:
        raise BadRequest(
            f"stored query '{found.name}' has a version from {found.valid_from}, after this import's "
            f"instant {at}; versions only move forward",
            field="replace_queries",
        )
