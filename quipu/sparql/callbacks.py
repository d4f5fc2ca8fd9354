"""rdflib's expression evaluator, called per row from inside a compiled SQL statement.

A FILTER or BIND function the compiler has no SQL for would otherwise send the whole query to
rdflib's evaluator. Instead the statement calls ``q_call(key, value, iri, ...)``: this module
turns the row's values into rdflib terms, evaluates just that expression with rdflib, and
encodes the answer. The query stays one SQL statement; the plan says "mixed".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rdflib import BNode, Literal, URIRef, Variable
from rdflib.plugins.sparql.evalutils import _eval
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import FrozenBindings, QueryContext, SPARQLError
from rdflib.term import Node

from quipu.errors import BadLiteral
from quipu.sparql.cells import literal_cell, to_node
from quipu.sparql.tree import leaves, walk
from quipu.store import values

# Functions whose answer can be an IRI or blank node: a literal encoding cannot carry it.
RETURNS_TERM = frozenset({"Builtin_IRI", "Builtin_URI", "Builtin_BNODE", "Builtin_DATATYPE", "Builtin_UUID"})
# Functions that need the dataset, which a per-row call does not have.
NEEDS_DATASET = frozenset({"Builtin_EXISTS", "Builtin_NOTEXISTS"})


def can_call(expr: Any) -> bool:
    """Whether ``expr`` can be evaluated per row from its variables' values alone."""
    for part in walk(expr):
        if isinstance(part, CompValue) and (
            part.name in NEEDS_DATASET or part.name.startswith("Aggregate_") or part.name in RETURNS_TERM
        ):
            return False
    return True


def free_variables(expr: Any) -> list[str]:
    return sorted({str(part) for part in leaves(expr) if isinstance(part, Variable)})


def _term(value: bytes | None, iri: str | None) -> Node | None:
    if iri is not None:
        return BNode(iri[2:]) if iri.startswith("_:") else URIRef(iri)
    if value is None:
        return None
    return to_node(literal_cell(bytes(value)))


def _encode(result: Any) -> bytes | None:
    if not isinstance(result, Literal):
        return None  # an error, an IRI or a blank node: unbound
    try:
        if result.language:
            return values.literal(str(result), None, result.language)
        return values.literal(str(result), str(result.datatype) if result.datatype else None)
    except BadLiteral:
        return None


def evaluator(expr: Any, names: list[str]) -> Callable[..., bytes | None]:
    """A row function: arguments are (encoding, IRI text) per name in ``names``."""
    variables = [Variable(n) for n in names]
    query_ctx = QueryContext()  # NOW() is fixed per query, as SPARQL wants

    def run(*args: Any) -> bytes | None:
        bound: dict[Variable, Node] = {}
        for k, var in enumerate(variables):
            term = _term(args[2 * k], args[2 * k + 1])
            if term is not None:
                bound[var] = term
        try:
            result = _eval(expr, FrozenBindings(query_ctx, bound))
        except (SPARQLError, TypeError, ValueError, ArithmeticError, KeyError):
            return None
        if isinstance(result, SPARQLError):
            return None
        return _encode(result)

    return run
