"""Quipu's own JSON result shape of a SPARQL query (tools-core §1.1), built from ``Cell`` tuples.

Values follow DM §2.1's output table: an IRI is a bare string (CURIE-compacted when a prefix map
is given), a blank node ``_:label``, a plain string a string, ``xsd:integer`` / ``xsd:double`` /
``xsd:boolean`` a JSON number or boolean (a non-finite double ``null``), a language-tagged string
``{"value", "lang"}`` and any other literal ``{"value", "datatype"}``.

A numeric or boolean literal whose lexical form is not valid for its datatype (only a query can
make one, e.g. ``BIND("x"^^xsd:integer AS ?v)``) keeps the ``{"value", "datatype"}`` form rather
than being guessed at. ``Bytes`` values reach a ``Cell`` as ``xsd:base64Binary`` literals and are
written like any other typed literal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from quipu.rdfio.curie import PrefixMap
from quipu.sparql.cells import BNODE, URI, Cell

if TYPE_CHECKING:
    from quipu.sparql.engine import QueryResult

XSD: Final = "http://www.w3.org/2001/XMLSchema#"
XSD_INTEGER: Final = XSD + "integer"
XSD_DOUBLE: Final = XSD + "double"
XSD_BOOLEAN: Final = XSD + "boolean"

_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_DOUBLE: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?INF|NaN")
_BOOLEANS: Final[dict[str, bool]] = {"true": True, "1": True, "false": False, "0": False}

Iri = Callable[[str], str]


def _as_is(iri: str) -> str:
    return iri


def _integer(lexical: str) -> Any:
    return int(lexical) if _INTEGER.fullmatch(lexical) else None


def _double(lexical: str) -> Any:
    if not _DOUBLE.fullmatch(lexical):
        return None
    x = float(lexical)
    return x if math.isfinite(x) else _NON_FINITE


def _boolean(lexical: str) -> Any:
    return _BOOLEANS.get(lexical)


_NON_FINITE: Final = object()  # a valid INF/NaN lexical: JSON null, not the typed-object fallback
_NATIVE: Final[dict[str, Callable[[str], Any]]] = {
    XSD_INTEGER: _integer,
    XSD_DOUBLE: _double,
    XSD_BOOLEAN: _boolean,
}


def value_json(cell: Cell, iri: Iri = _as_is) -> Any:
    """One term in DM §2.1's output form; ``iri`` rewrites IRI values (CURIE compaction)."""
    kind, value, datatype, lang = cell
    if kind == URI:
        return iri(value)
    if kind == BNODE:
        return "_:" + value
    if lang:
        return {"value": value, "lang": lang}
    if datatype is None:
        return value
    native = _NATIVE.get(datatype)
    if native is not None:
        found = native(value)
        if found is _NON_FINITE:
            return None
        if found is not None:
            return found
    return {"value": value, "datatype": datatype}


def compactor(prefixes: PrefixMap | None) -> Iri:
    """The IRI rewrite for one response: identity without prefixes, else memoised compaction."""
    if not prefixes:
        return _as_is
    memo: dict[str, str] = {}

    def compact(iri: str) -> str:
        found = memo.get(iri)
        if found is None:
            found = memo[iri] = prefixes.compact(iri)
        return found

    return compact


def result_json(result: QueryResult, prefixes: PrefixMap | None = None) -> dict[str, Any]:
    """The JSON shape of a result: SELECT ``{variables, rows, count, truncated, labels}``, ASK
    ``{result, labels}``, CONSTRUCT/DESCRIBE ``{triples, count, truncated, labels}``.

    An unbound variable is absent from its row. ``labels`` is always ``null`` here: no graph
    can declare labels yet. ``prefixes`` compacts IRI values (pass None for ``verbose``).
    """
    iri = compactor(prefixes)
    if result.form == "ASK":
        return {"result": bool(result.boolean), "labels": None}
    if result.form == "SELECT":
        names = result.variables
        rows = [
            {name: value_json(cell, iri) for name, cell in zip(names, row, strict=True) if cell is not None}
            for row in result.table
        ]
        return {
            "variables": list(names),
            "rows": rows,
            "count": len(rows),
            "truncated": result.truncated,
            "labels": None,
        }
    triples = [
        {"subject": value_json(s, iri), "predicate": value_json(p, iri), "object": value_json(o, iri)}
        for s, p, o in result.triples
    ]
    return {"triples": triples, "count": len(triples), "truncated": result.truncated, "labels": None}
