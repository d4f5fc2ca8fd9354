"""The ``inference`` marker of a query (tools-core §1.1 rule 7, DM §13.3).

``?s a <T>`` matches asserted types only. When a query reads the ROOT default scope and uses
``rdf:type`` with a constant class that has subclasses, the response says which subclass
instances were withheld, so a caller who wanted them learns to write ``?s a/rdfs:subClassOf*
<T>``.

* **Scope**: ROOT default only: no ``graph`` parameter, no protocol dataset, no ``FROM`` /
  ``FROM NAMED`` and no ``GRAPH`` anywhere in the query.
* **Patterns**: triple patterns (also inside ``EXISTS``) whose predicate is exactly
  ``rdf:type`` and whose object is an IRI. A path such as ``a/rdfs:subClassOf*`` is not one.
* **Subclasses**: the transitive ``rdfs:subClassOf`` subclasses of each class in ROOT, at the
  same read point as the query (``tx`` / ``valid_at``), so the explicit form run at that read
  point matches exactly the listed subclasses' instances. A class is never its own subclass,
  even through a cycle; a class with none is a leaf and gets no entry.

The query text's part is cached per text, so a query without such a pattern costs one dict
lookup; the subclass walk costs one indexed lookup per level of the hierarchy.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any, Final
from weakref import WeakKeyDictionary

from rdflib import URIRef
from rdflib.plugins.sparql.parserutils import CompValue
from sqlalchemy import Connection, bindparam, select

from quipu.sparql import templates
from quipu.sparql.engine import prepare
from quipu.sparql.lru import LruCache
from quipu.sparql.tree import walk
from quipu.store import values
from quipu.store.database import Database
from quipu.store.dialect import Prepared
from quipu.store.schema import ROOT, facts
from quipu.store.views import TemporalView

RDF_TYPE: Final = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
SUBCLASS_OF: Final = "http://www.w3.org/2000/01/rdf-schema#subClassOf"


@lru_cache(maxsize=512)
def type_constants(text: str, base: str | None = None) -> tuple[str, ...]:
    """Sorted constant classes of the query's ``rdf:type`` patterns; () when there are none or
    the query scopes itself with ``FROM`` / ``FROM NAMED`` / ``GRAPH``."""
    template = templates.split(text)  # its parse is usually cached already (engine.run_query)
    algebra = prepare(text if template is None else template.text, base).algebra
    if dict.get(algebra, "datasetClause"):  # CompValue.get answers a missing key with its name
        return ()
    found: set[str] = set()
    for part in walk(algebra):
        if part.name == "Graph":
            return ()
        for _, p, o in _triples(part):
            if template is not None:
                p, o = template.original(p), template.original(o)
            if p == RDF_TYPE and isinstance(o, URIRef):
                found.add(str(o))
    return tuple(sorted(found))


def _triples(part: CompValue) -> list[tuple[Any, Any, Any]]:
    if part.name == "BGP":
        return list(part["triples"])
    if part.name == "TriplesBlock":  # EXISTS bodies stay in parser form: flat s p o runs
        out: list[tuple[Any, Any, Any]] = []
        for run in part["triples"]:
            out.extend((run[k], run[k + 1], run[k + 2]) for k in range(0, len(run) - 2, 3))
        return out
    return []


def subclasses(
    db: Database, conn: Connection, classes: tuple[str, ...], view: TemporalView
) -> dict[str, list[str]]:
    """class -> its sorted transitive ``rdfs:subClassOf`` subclasses in ROOT at ``view``'s
    read point; classes without any are left out. Never interns: unknown IRIs have none.

    Walked one level at a time by exact ``(g, a, vh)`` index lookups of the edges pointing at
    the level's classes, so the cost follows the hierarchy, never the number of instances."""
    ids = db.terms.lookup(conn, (SUBCLASS_OF, *classes))
    sub_of = ids.get(SUBCLASS_OF)
    reach: dict[int, set[int]] = {ids[c]: {ids[c]} for c in classes if c in ids}  # node -> its tops
    if sub_of is None or not reach:
        return {}
    frontier = list(reach)
    while frontier:
        following: list[int] = []
        for child, parent in _children(db, conn, sub_of, frontier, view):
            tops = reach[parent] - reach.setdefault(child, set())
            if tops:
                reach[child] |= tops
                following.append(child)
        frontier = following
    found = {(top, node) for node, tops in reach.items() for top in tops if top != node}
    if not found:
        return {}
    names = db.terms.iris(conn, {i for pair in found for i in pair})
    out: dict[str, list[str]] = {}
    for top, node in found:
        out.setdefault(names[top], []).append(names[node])
    return {cls: sorted(subs) for cls, subs in sorted(out.items())}


_BATCHES: Final = (1, 8, 64, 512)  # IN-list sizes compiled; shorter lists are padded
_CACHE_SIZE: Final = 256
_statements: WeakKeyDictionary[Database, LruCache[Any, Prepared]] = WeakKeyDictionary()
_lock = threading.Lock()


def _children(
    db: Database, conn: Connection, sub_of: int, parents: list[int], view: TemporalView
) -> list[tuple[int, int]]:
    """(subclass, class) id pairs of the live ROOT edges ``?sub rdfs:subClassOf <parent>``."""
    out: list[tuple[int, int]] = []
    size = _BATCHES[-1]
    for at in range(0, len(parents), size):
        chunk = parents[at : at + size]
        batch = next(n for n in _BATCHES if n >= len(chunk))
        digests = [values.digest(values.ref(p)) for p in chunk]
        params: dict[str, Any] = {"sub_of": sub_of}
        params.update((f"h{k}", digests[min(k, len(digests) - 1)]) for k in range(batch))
        rows = _edges(db, batch, view).run(conn, params).fetchall()
        out.extend((int(e), int(v)) for e, v in rows if v is not None)
    return out


def _edges(db: Database, batch: int, view: TemporalView) -> Prepared:
    """The edge lookup for ``batch`` digests at one read point, compiled once."""
    key = (batch, view.as_of_tx, view.valid_at)
    with _lock:
        cache = _statements.setdefault(db, LruCache(_CACHE_SIZE))
    _, found = cache.find(key)
    if found is not None:
        return found
    f = facts.alias("edge")
    found = db.dialect.compile_statement(
        select(f.c.e, f.c.v_ref).where(
            f.c.a == bindparam("sub_of"),
            f.c.vh.in_([bindparam(f"h{k}") for k in range(batch)]),
            view.with_graphs((ROOT,)).where(f),
        )
    )
    cache.put(key, found)
    return found


def marker(
    db: Database,
    text: str,
    *,
    graph: str | None = None,
    dataset: bool = False,
    valid_at: str | None = None,
    as_of_tx: int | None = None,
    base: str | None = None,
) -> dict[str, Any] | None:
    """The ``inference`` object for a query that ran at this read point, or None when the key
    is absent (a scoped query, no constant-class ``rdf:type`` pattern, or only leaf classes).

    ``graph`` is the request's graph parameter and ``dataset`` whether the request carried a
    protocol dataset (``default-graph-uri`` / ``named-graph-uri``)."""
    if graph or dataset:
        return None
    classes = type_constants(text, base)
    if not classes:
        return None
    view = TemporalView.at(as_of_tx=as_of_tx, valid_at=valid_at)
    with db.read() as conn:
        found = subclasses(db, conn, classes, view)
    if not found:
        return None
    named = ", ".join(f"?s a/rdfs:subClassOf* <{cls}>" for cls in found)
    return {
        "applied": False,
        "withheldTypes": [{"type": cls, "subclasses": subs} for cls, subs in found.items()],
        "note": (
            "rdf:type patterns match asserted types only; instances of the listed subclasses "
            f"were not included. To include them, write {named}."
        ),
    }


def header(inference: dict[str, Any]) -> str:
    """``X-Quipu-Inference`` for standard result formats: ``withheld: <iri>, <iri>`` naming the
    classes, with non-ASCII and control characters percent-encoded (header values are bytes)."""
    return "withheld: " + ", ".join(_header_safe(entry["type"]) for entry in inference["withheldTypes"])


def _header_safe(iri: str) -> str:
    if iri.isascii() and iri.isprintable():
        return iri
    return "".join(
        ch
        if ch.isascii() and ch.isprintable()
        else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "replace"))
        for ch in iri
    )
