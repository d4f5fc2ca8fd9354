"""Quipu's own JSON result shape of a SPARQL query (tools-core §1.1), built from ``Cell`` tuples.

Values follow DM §2.1's output table (``values.to_json``): an IRI is a bare string
(CURIE-compacted when a prefix map is given), a blank node ``_:label``, a plain string a string,
``xsd:integer`` / ``xsd:double`` / ``xsd:boolean`` a JSON number or boolean, a language-tagged
string ``{"value", "lang"}`` and any other literal ``{"value", "datatype"}``.

A number is written as a JSON number only where the store would hold it as ``Int`` or ``Float``:
an integer within 64 bits, a finite double in its canonical lexical form. [changed from DM §2.1]
Any other (an integer past 64 bits, ``"1e3"``, ``"NaN"``, ``"INF"``) keeps the
``{"value", "datatype"}`` form, so no value is lost (DM §2.1 wrote ``null`` for INF and NaN).

A numeric or boolean literal whose lexical form is not valid for its datatype (only a query can
make one, e.g. ``BIND("x"^^xsd:integer AS ?v)``) keeps the ``{"value", "datatype"}`` form rather
than being guessed at. ``Bytes`` values reach a ``Cell`` as ``xsd:base64Binary`` literals and are
written like any other typed literal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from quipu.errors import BadLiteral
from quipu.rdfio.curie import PrefixMap
from quipu.sparql.cells import BNODE, URI, Cell
from quipu.store import values

if TYPE_CHECKING:
    from quipu.sparql.engine import QueryResult

_BOOLEANS: Final[dict[str, bool]] = {"true": True, "1": True, "false": False, "0": False}

Iri = Callable[[str], str]


def _as_is(iri: str) -> str:
    return iri


def _number(lexical: str, datatype: str) -> Any:
    """The JSON number of an ``Int`` or finite ``Float`` literal, else None (how the store
    encodes the literal decides, so a query answer and an entity read agree)."""
    try:
        d = values.decode(values.literal(lexical, datatype))
    except BadLiteral:
        return None
    if d.kind == "int" or (d.kind == "float" and math.isfinite(d.value)):
        return d.value
    return None


_NATIVE: Final[dict[str, Callable[[str], Any]]] = {
    values.XSD_INTEGER: lambda lexical: _number(lexical, values.XSD_INTEGER),
    values.XSD_DOUBLE: lambda lexical: _number(lexical, values.XSD_DOUBLE),
    values.XSD_BOOLEAN: _BOOLEANS.get,
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

    An unbound variable is absent from its row. ``labels`` is the composed label of the graphs
    the query read (``null`` when none declares one). ``prefixes`` compacts IRI values (pass None for ``verbose``).
    """
    iri = compactor(prefixes)
    if result.form == "ASK":
        return {"result": bool(result.boolean), "labels": result.labels}
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
            "labels": result.labels,
        }
    triples = [
        {"subject": value_json(s, iri), "predicate": value_json(p, iri), "object": value_json(o, iri)}
        for s, p, o in result.triples
    ]
    return {"triples": triples, "count": len(triples), "truncated": result.truncated, "labels": result.labels}
