"""An update request's operations: parsed, translated and checked before the store is read.

``check_structure`` refuses a request nested too deeply, too long or with too large expressions
before any parser sees it (``quipu.sparql.limits``); ``parse_update`` parses (literals kept as written) and translates it, then refuses what needs no
store to refuse: blank nodes where deletion names data, ``SERVICE``, property paths inside
``GRAPH ?g``, variables in ``INSERT DATA`` and ``LOAD`` without ``SILENT``.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterator, Sequence

import rdflib
from pyparsing import ParseException
from rdflib import BNode, Variable
from rdflib.plugins.sparql import algebra
from rdflib.plugins.sparql.parser import parseUpdate
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Node

from quipu.errors import QueryError
from quipu.sparql.limits import bound_slices, guard_expressions, update_problem
from quipu.sparql.parse_lock import SPARQL_PARSE_LOCK
from quipu.sparql.tree import has_path, walk

Triple = tuple[Node, Node, Node]

_PARSE_LOCK = SPARQL_PARSE_LOCK  # the grammar is shared with query parsing
_UNSUPPORTED = {"ServiceGraphPattern": "SERVICE"}


def error(message: str) -> QueryError:
    """A refusal of the update as written (``sparql_update_error``)."""
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
            for op in ops:
                bound_slices(op)
                guard_expressions(op)
        except ParseException as exc:
            raise error(str(exc)) from None
        except RecursionError:
            raise _too_complex() from None
        except Exception as exc:  # rdflib raises bare Exceptions for some translation failures
            raise error(str(exc) or type(exc).__name__) from None
        finally:
            rdflib.NORMALIZE_LITERALS = saved
    try:
        for op in ops:
            _check_operation(op)
    except RecursionError:
        raise _too_complex() from None
    return ops


def check_structure(text: str) -> None:
    """Refuse an update past the limits of ``quipu.sparql.limits`` (nesting, expression size,
    ``MAX_OPERATIONS``) before any parser sees it; the scan is lexical."""
    problem = update_problem(text)
    if problem is not None:
        raise error(problem)


def _too_complex() -> QueryError:
    return error("the update is nested too deeply or too long to parse; simplify it or split it up")


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
        raise error("a data block does not consist of whole triples")
    return [(terms[i], terms[i + 1], terms[i + 2]) for i in range(0, len(terms), 3)]


def _flat_quads(quads: CompValue) -> tuple[list[Triple], dict[Node, list[Triple]]]:
    named: dict[Node, list[Triple]] = defaultdict(list)
    for block in quads.quadsNotTriples or ():
        if block.triples:
            named[block.term] += _flat(block.triples)
    return (_flat(quads.triples) if quads.triples else []), named


def template_triples(template: CompValue | None) -> Iterator[Triple]:
    if template is None:
        return
    yield from template.triples or ()
    for quads in (template.quads or {}).values():
        yield from quads


def _check_operation(op: CompValue) -> None:
    """Refusals that need no store: blank nodes where deletion names data, SERVICE, paths."""
    deleting: list[Triple] = []
    if op.name in ("DeleteData", "DeleteWhere"):
        deleting = list(template_triples(op))
    elif op.name == "Modify":
        deleting = list(template_triples(op.delete))
    if any(isinstance(term, BNode) for triple in deleting for term in triple):
        # The grammar forbids them (a blank node would match nothing or anything).
        raise error(f"blank nodes are not allowed in {_label(op)}")
    if op.name == "Load" and not op.silent:
        raise QueryError(
            "LOAD is not supported: quipu never fetches remote data; "
            "parse the document yourself and send it to knot",
            reason="unsupported",
        )
    if op.name == "InsertData" and any(
        isinstance(term, Variable) for triple in template_triples(op) for term in triple
    ):
        raise error("variables are not allowed in INSERT DATA")
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
