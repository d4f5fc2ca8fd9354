"""The rule grammar: ``pred(arg, arg)`` atoms, comma-separated bodies, ``not`` for negation.

It follows the original Quipu's rule parser token for token (its reasoner reference,
``reference/reasoner.md``): an argument is a ``?variable``, a full IRI in ``<…>``, a quoted
string or a bare name, and a bare name (predicate or constant) is the rule's prefix plus the
name, by plain concatenation. Error messages are the original's, word for word, so that a rule
file moves between the two with the same diagnostics.

Beyond the original [designed here, docs/reasoning.md]: literals are values, not refusals.
A quoted string may carry a language tag (``"chat"@fr``) or a datatype (``"3"^^<…#integer>``),
and a bare numeral (``42``, ``-1.5``, ``2e3``) is a number, where the original made it an IRI
(``<prefix>42``), which no rule writer means.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

XSD: Final = "http://www.w3.org/2001/XMLSchema#"
_NUMERAL: Final = re.compile(r"[+-]?(\d+|\d*\.\d+([eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+\.\d*([eE][+-]?\d+)?)")
_TAGGED: Final = re.compile(r'"(.*)"@([A-Za-z]+(?:-[A-Za-z0-9]+)*)', re.DOTALL)
_TYPED: Final = re.compile(r'"(.*)"\^\^<([^<>]*)>', re.DOTALL)


class RuleSyntaxError(Exception):
    """One message of the parser (the caller adds the rule and the location)."""


@dataclass(frozen=True, slots=True)
class Var:
    name: str


@dataclass(frozen=True, slots=True)
class Iri:
    iri: str


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal constant: its lexical form and a datatype IRI, or a language tag (no datatype)."""

    lexical: str
    datatype: str | None = XSD + "string"
    lang: str | None = None


@dataclass(frozen=True, slots=True)
class Agg:
    """An aggregate in a head's object position [designed here]: ``count(?p)``, ``sum(?x)``,
    ``min(?x)``, ``max(?x)``, grouped by the head's subject."""

    fn: str
    var: str


AGGREGATES: Final = ("count", "sum", "min", "max")
_AGGREGATE: Final = re.compile(r"(count|sum|min|max)\(\s*\?([^\s()]+)\s*\)")

Term = Var | Iri | Lit | Agg


@dataclass(frozen=True, slots=True)
class Atom:
    predicate: str  # a full IRI
    args: tuple[Term, ...]
    negated: bool = False

    @property
    def variables(self) -> list[str]:
        return [a.name if isinstance(a, Var) else a.var for a in self.args if isinstance(a, Var | Agg)]

    @property
    def aggregate(self) -> Agg | None:
        return next((a for a in self.args if isinstance(a, Agg)), None)


COMPARISONS: Final = ("<=", ">=", "!=", "=", "<", ">")


@dataclass(frozen=True, slots=True)
class Comparison:
    """``left op right`` in a body [designed here]: typed comparison of two bound values."""

    left: Term
    op: str
    right: Term
    negated: bool = False

    @property
    def variables(self) -> list[str]:
        return [t.name for t in (self.left, self.right) if isinstance(t, Var)]


def debug(text: str) -> str:
    """A string as the original's messages quote it (Rust's Debug form: JSON-like quoting)."""
    return json.dumps(text, ensure_ascii=False)


def _top_level(text: str) -> Iterator[int]:
    """Positions of the characters outside double quotes and parentheses."""
    depth = 0
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            yield i


def split_top_level(src: str) -> list[str]:
    """Split on commas outside parentheses and double quotes; empty pieces are dropped."""
    pieces: list[str] = []
    start = 0
    for i in _top_level(src):
        if src[i] == ",":
            pieces.append(src[start:i])
            start = i + 1
    pieces.append(src[start:])
    return [p.strip() for p in pieces if p.strip()]


def parse_term(src: str, prefix: str) -> Term:
    token = src.strip()
    if not token:
        raise RuleSyntaxError("empty argument")
    if token.startswith("?"):
        if len(token) == 1:
            raise RuleSyntaxError("variable name missing after `?`")
        return Var(token[1:])
    if token.startswith("<") and token.endswith(">") and len(token) >= 2:
        return Iri(token[1:-1])
    if token.startswith('"'):
        if (tagged := _TAGGED.fullmatch(token)) is not None:
            return Lit(tagged.group(1), None, tagged.group(2).lower())
        if (typed := _TYPED.fullmatch(token)) is not None:
            return Lit(typed.group(1), typed.group(2))
        if token.endswith('"') and len(token) >= 2:
            return Lit(token[1:-1])
    if _NUMERAL.fullmatch(token):
        if re.fullmatch(r"[+-]?\d+", token):
            return Lit(token, XSD + "integer")
        if "e" in token.lower():
            return Lit(token, XSD + "double")
        return Lit(token, XSD + "decimal")
    return Iri(prefix + token)


def parse_atom(src: str, prefix: str, *, negated: bool = False, head: bool = False) -> Atom:
    text = src.strip()
    open_at = text.find("(")
    if open_at < 0:
        raise RuleSyntaxError(f"expected `(` in atom {debug(text)}")
    if not text.endswith(")"):
        raise RuleSyntaxError(f"expected trailing `)` in atom {debug(text)}")
    name = text[:open_at].strip()
    if not name:
        raise RuleSyntaxError(f"missing predicate name in atom {debug(text)}")
    args = tuple(
        Agg(found.group(1), found.group(2))
        if head and (found := _AGGREGATE.fullmatch(a.strip())) is not None
        else parse_term(a, prefix)
        for a in split_top_level(text[open_at + 1 : -1])
    )
    predicate = name[1:-1] if name.startswith("<") and name.endswith(">") else prefix + name
    return Atom(predicate, args, negated)


def _operator(text: str) -> tuple[int, str] | None:
    """Where a comparison operator stands in ``text``: written between spaces, outside quotes
    and parentheses (so ``<iri>`` and ``p(?x, ?y)`` never read as one)."""
    for i in _top_level(text):
        if i > 0 and text[i - 1] in " \t":
            for op in COMPARISONS:
                end = i + len(op)
                if text.startswith(op, i) and end < len(text) and text[end] in " \t":
                    return i, op
    return None


def parse_body(src: str, prefix: str) -> tuple[list[Atom], list[Comparison]]:
    """A body's atoms and its comparisons (``?age >= 39``, ``not ?a = ?b``), each in order."""
    pieces = split_top_level(src)
    if not pieces:
        raise RuleSyntaxError("empty body")
    atoms: list[Atom] = []
    tests: list[Comparison] = []
    for piece in pieces:
        text = piece.strip()
        if not text:
            raise RuleSyntaxError("empty body atom")
        negated = text.startswith(("not ", "not\t"))
        if negated:
            text = text[4:].lstrip()
        found = _operator(text)
        if found is not None and not text.endswith(")"):
            at, op = found
            tests.append(
                Comparison(
                    parse_term(text[:at], prefix), op, parse_term(text[at + len(op) :], prefix), negated
                )
            )
        else:
            atoms.append(parse_atom(text, prefix, negated=negated))
    return atoms, tests
