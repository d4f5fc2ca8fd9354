"""Prolog values on the Python side: decoding the engine's tagged results, the JSON encoding
of query solutions (spec §3.5) and the Prolog string literals that carry user text.

The helper module (prolog/quipu_logic.pl) tags every value so that atoms, strings and
variables stay distinct; the MQI then sends the tagged term as JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias


@dataclass(frozen=True, slots=True)
class Atom:
    name: str


@dataclass(frozen=True, slots=True)
class PlString:
    text: str


@dataclass(frozen=True, slots=True)
class Variable:
    """An unbound variable in a solution; the name is fresh (``_G1``...), not the author's."""

    name: str


@dataclass(frozen=True, slots=True)
class Compound:
    name: str
    args: tuple[Term, ...]


# A proper list is a tuple of its elements; [] is the empty tuple.
Term: TypeAlias = Atom | PlString | Variable | int | float | Compound | tuple["Term", ...]


@dataclass(frozen=True, slots=True)
class Solutions:
    """The answer to a query: variable names in order of first occurrence (R-J1), without
    ``_``-prefixed names (R-J2), and one row of values per solution."""

    names: tuple[str, ...]
    rows: tuple[tuple[Term, ...], ...]

    def as_dicts(self) -> list[dict[str, Term]]:
        return [dict(zip(self.names, row, strict=True)) for row in self.rows]


class DecodeError(ValueError):
    """The engine sent a value this module does not know (a helper/engine mismatch)."""


def decode(value: Any) -> Term:
    """One tagged value from the helper into a Term."""
    if isinstance(value, bool):
        raise DecodeError(f"unexpected boolean {value!r}")
    if isinstance(value, int | float):
        return value
    if isinstance(value, dict):
        tag = value.get("functor")
        args = value.get("args")
        if not isinstance(args, list):
            raise DecodeError(f"unexpected value {value!r}")
        if tag == "a" and len(args) == 1:
            return Atom(_text(args[0]))
        if tag == "s" and len(args) == 1:
            return PlString(_text(args[0]))
        if tag == "v" and len(args) == 1:
            return Variable(_text(args[0]))
        if tag == "o" and len(args) == 1:
            return Atom(_text(args[0]))
        if tag == "i" and len(args) == 1:
            return int(_text(args[0]))
        if tag == "x" and len(args) == 1:
            return _special_float(_text(args[0]))
        if tag == "l" and len(args) == 1 and isinstance(args[0], list):
            return tuple(decode(item) for item in args[0])
        if tag == "c" and len(args) == 2 and isinstance(args[1], list):
            return Compound(_text(args[0]), tuple(decode(a) for a in args[1]))
    raise DecodeError(f"unexpected value {value!r}")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise DecodeError(f"expected text, got {value!r}")
    return value


def _special_float(text: str) -> float:
    # SWI writes 1.0Inf, -1.0Inf and 1.5NaN.
    if "inf" in text.lower():
        return -math.inf if text.startswith("-") else math.inf
    return math.nan


def to_json(term: Term) -> Any:
    """R-J3: atoms and strings as JSON strings, numbers as numbers, proper lists as arrays,
    other compounds as {"functor", "args"}, unbound variables as their fresh ``_`` names.
    Non-finite floats have no JSON number, so they become the strings "inf", "-inf", "nan"
    [designed here]."""
    if isinstance(term, Atom):
        return term.name
    if isinstance(term, PlString):
        return term.text
    if isinstance(term, Variable):
        return term.name
    if isinstance(term, bool):
        raise TypeError("booleans are not Prolog terms")
    if isinstance(term, int):
        return term
    if isinstance(term, float):
        if math.isfinite(term):
            return term
        return "nan" if math.isnan(term) else ("inf" if term > 0 else "-inf")
    if isinstance(term, tuple):
        return [to_json(item) for item in term]
    return {"functor": term.name, "args": [to_json(a) for a in term.args]}


def compacted(solutions: Solutions, compact: Callable[[str], str]) -> Solutions:
    """The solutions with every atom passed through ``compact`` (an IRI as a CURIE through the
    store's prefixes), except inside ``literal(...)``: a literal's text stays as stored."""

    def walk(term: Term) -> Term:
        if isinstance(term, Atom):
            return Atom(compact(term.name))
        if isinstance(term, tuple):
            return tuple(walk(item) for item in term)
        if isinstance(term, Compound) and term.name != "literal":
            return Compound(term.name, tuple(walk(arg) for arg in term.args))
        return term

    return Solutions(solutions.names, tuple(tuple(walk(v) for v in row) for row in solutions.rows))


def any_colon_atom(solutions: Solutions) -> bool:
    """Whether an atom outside ``literal(...)`` has a colon: only then can ``compacted`` change
    a thing, so only then are the store's prefixes read."""

    def colon(term: Term) -> bool:
        if isinstance(term, Atom):
            return ":" in term.name
        if isinstance(term, tuple):
            return any(colon(item) for item in term)
        if isinstance(term, Compound) and term.name != "literal":
            return any(colon(arg) for arg in term.args)
        return False

    return any(colon(value) for row in solutions.rows for value in row)


def solutions_json(solutions: Solutions) -> str:
    """The text of a query_logic success (R-J1..R-J4): compact, UTF-8 rather than escapes."""
    rows = [
        {name: to_json(value) for name, value in zip(solutions.names, row, strict=True)}
        for row in solutions.rows
    ]
    return json.dumps(rows, separators=(",", ":"), ensure_ascii=False)


def decode_solutions(names: Sequence[Any], rows: Sequence[Any]) -> Solutions:
    keys = tuple(_text(n) for n in names)
    decoded: list[tuple[Term, ...]] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(keys):
            raise DecodeError(f"unexpected solution row {row!r}")
        decoded.append(tuple(decode(v) for v in row))
    return Solutions(keys, tuple(decoded))


def prolog_string(text: str) -> str:
    """``text`` as a double-quoted Prolog string literal that reads back as exactly ``text``.
    User text only ever reaches the engine this way, never as goal syntax (R-P3)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:x}\\")
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError("text contains a lone surrogate, which is not valid Unicode")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
