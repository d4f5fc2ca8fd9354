"""Bounds on SPARQL text that keep a hostile request from costing seconds or ending in a 500.

rdflib's parser is a recursive-descent pyparsing grammar: it recurses per level of brackets and
spends 1-5 ms per token of an expression (``FILTER(?o != 3 && ...)`` with 10,000 terms took
50 s, holding the process-wide parse lock). ``check_query`` and ``check_update`` refuse, before
any parser sees it, a request whose shape is past these limits [designed here]:

* ``MAX_NESTING`` brackets (``{``, ``(``, ``[``) open at once;
* ``MAX_EXPRESSION_TOKENS`` tokens inside parentheses (FILTER, BIND and projected expressions,
  function arguments, ``IN`` lists), a VALUES block's rows excepted: it bounds the parse of the
  expensive part of the grammar to a few seconds;
* ``MAX_OPERATIONS`` operations in one update request.

The scan is lexical: brackets, operators and ``;`` inside strings, IRIs and comments do not
count. What the scan cannot see (a long chain of ``.``-separated triple patterns, which the
parser also recurses on) still ends as a ``RecursionError``, which ``too_complex`` turns into the
same 400. The rest of the module makes a parsed tree safe to evaluate: ``bound_slices`` clamps
LIMIT and OFFSET to what a database can bind, and ``guard_expressions`` turns rdflib's own
failures on ill-formed values into SPARQL errors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from rdflib.plugins.sparql.parserutils import CompValue, Expr
from rdflib.plugins.sparql.sparql import SPARQLError

from quipu.errors import QueryError
from quipu.sparql.tree import walk

log = logging.getLogger(__name__)

MAX_NESTING: Final = 32  # brackets ({, (, [) open at once
MAX_OPERATIONS: Final = 64  # operations separated by ';' in one update request
MAX_EXPRESSION_TOKENS: Final = 2048  # tokens inside parentheses, VALUES rows excepted
# LIMIT and OFFSET past this are clamped: no store holds 2^63 rows, so the answer is the same,
# and neither SQLite, PostgreSQL nor Python's islice takes a larger number.
MAX_SLICE: Final = 2**63 - 1
REASON: Final = "query_too_complex"

_STRINGS = (
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # long strings
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'  # short strings
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r"|#[^\n\r]*"  # comments
)
_IRI = r'|<[^<>"{}|^`\\\x00-\x20]*>'
_WORDS = (
    r"|[?$]\w+"  # variables
    r"|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?"  # numbers (1-1-1 is five tokens)
    r"|[^\W\d]\w*(?::[\w.:-]*)?|:[\w.:-]*"  # keywords, prefixed names, blank node labels
    r"|&&|\|\||[!<>=]=|\^\^|\S"  # operators; anything else, one character at a time
)
_WITH_IRIS = re.compile(r"\s*(" + _STRINGS + _IRI + _WORDS + ")")
# In an expression, a '<' right after an operand is "less than", as rdflib's parser reads it:
# ``?o<1&&?o!=2&&...&&?o>0`` is IRI-shaped, yet thousands of tokens to parse.
_WITHOUT_IRIS = re.compile(r"\s*(" + _STRINGS + _WORDS + ")")
_OPEN, _CLOSE = frozenset("{(["), frozenset("})]")
_OPERATORS = frozenset(
    {"(", "[", ",", "&&", "||", "=", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "!", "^^"}
)


@dataclass(frozen=True, slots=True)
class Shape:
    """What the lexical scan found: the deepest bracket nesting, the number of operations
    (``;`` outside brackets, plus one) and the tokens inside parentheses."""

    deepest: int
    operations: int
    expression_tokens: int


def measure(text: str) -> Shape:
    open_: list[str] = []  # the brackets open at this point, innermost last
    deepest = tokens = 0
    operations = 1
    values_next = False  # a VALUES keyword was seen: its next '{' opens a data block
    data_depth: int | None = None  # the depth a VALUES data block closes back to
    after_operand = False  # the last token was a value, not an operator or an open bracket
    pos, size = 0, len(text)
    while pos < size:
        # An expression is what the innermost parenthesis holds (EXISTS { ... } inside one is
        # a graph pattern again, where an IRI follows a subject).
        expression = bool(open_) and open_[-1] == "("
        match = (_WITHOUT_IRIS if expression and after_operand else _WITH_IRIS).match(text, pos)
        if match is None:  # only whitespace is left
            break
        pos = match.end()
        token = match.group(1)
        if token.startswith("#"):  # a comment
            continue
        after_operand = token not in _OPERATORS
        if token in _OPEN:
            if token == "{" and values_next:
                data_depth, values_next = len(open_), False
            open_.append(token)
            deepest = max(deepest, len(open_))
        elif token in _CLOSE:
            if open_:
                open_.pop()
            if data_depth is not None and len(open_) <= data_depth:
                data_depth = None
        elif token == ";" and not open_:
            operations += 1
        elif token.upper() == "VALUES":
            values_next = True
        elif expression and data_depth is None and token != ",":
            tokens += 1
    return Shape(deepest, operations, tokens)


def check_query(text: str) -> None:
    """Refuse a query past ``MAX_NESTING`` or ``MAX_EXPRESSION_TOKENS`` (400 query_too_complex)."""
    problem = _problem(measure(text))
    if problem is not None:
        raise QueryError(f"the query is too complex: {problem}", reason=REASON)


def update_problem(text: str) -> str | None:
    """Why an update request is past the limits (``MAX_OPERATIONS`` too), or None."""
    shape = measure(text)
    problem = _problem(shape)
    if problem is None and shape.operations > MAX_OPERATIONS:
        problem = f"too long: {shape.operations} operations (at most {MAX_OPERATIONS}); split the request"
    return problem


def _problem(shape: Shape) -> str | None:
    if shape.deepest > MAX_NESTING:
        return f"nesting too deep: {shape.deepest} levels of brackets (at most {MAX_NESTING})"
    if shape.expression_tokens > MAX_EXPRESSION_TOKENS:
        return (
            f"expressions too large: {shape.expression_tokens} tokens inside parentheses (at most "
            f"{MAX_EXPRESSION_TOKENS}); pass a long list of values as VALUES rather than IN or ||"
        )
    return None


def too_complex(what: str = "query") -> QueryError:
    """What a ``RecursionError`` while parsing, compiling or evaluating becomes."""
    return QueryError(
        f"the {what} is nested too deeply or too long to handle; simplify it or split it up",
        reason=REASON,
    )


def bound_slices(algebra: CompValue) -> None:
    """Clamp every LIMIT and OFFSET in place: OFFSET to ``MAX_SLICE`` (past every row), and a
    LIMIT that would end past ``MAX_SLICE`` to none. The answers do not change."""
    for part in walk(algebra):
        if part.name != "Slice":
            continue
        start = min(int(part.start or 0), MAX_SLICE)
        length = part.length
        if length is not None and start + int(length) > MAX_SLICE:
            length = None
        part["start"], part["length"] = start, length


# What rdflib's operators raise on an ill-formed value instead of a SPARQLError: YEAR() of an
# ill-formed xsd:dateTime reads an attribute its Literal lacks, REGEX() compiles a bad pattern,
# ROUND() of an overflowing xsd:float hits a decimal error, and subtracting two ill-formed
# xsd:date literals recurses until Python stops it.
_VALUE_FAILURES: Final = (
    ArithmeticError,
    AttributeError,
    LookupError,
    RecursionError,
    TypeError,
    ValueError,
    re.error,
)


def guard_expressions(algebra: Any) -> None:
    """Make every expression in the tree answer a SPARQL error (unbound in BIND, the row
    dropped by FILTER) where rdflib's evaluator would raise on an ill-formed value."""
    for part in walk(algebra):
        evaluate = getattr(part, "_evalfn", None) if isinstance(part, Expr) else None
        if evaluate is not None and not getattr(evaluate, "guarded", False):
            part._evalfn = _guarded(part.name, evaluate)


def _guarded(name: str, evaluate: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(ctx: Any) -> Any:
        try:
            return evaluate(ctx)
        except SPARQLError:
            raise
        except _VALUE_FAILURES as exc:
            log.debug("SPARQL %s: %s is an expression error", name, exc)
            raise SPARQLError(f"{name}: {exc}") from exc

    run.guarded = True  # type: ignore[attr-defined]
    return run
