"""SPARQL REGEX patterns that PostgreSQL can run with exactly Python's answers.

``sqlfunctions.regex`` searches with Python's ``re``; PostgreSQL's ARE differs in syntax and
matching (class escapes, Unicode, ``$`` before a final newline, case folding, lookarounds,
possessive quantifiers...). A server function cannot decline per row, so the choice is static:
``pg_regex_ok`` accepts a pattern and flags only inside a subset where ``re.search`` and
PostgreSQL's ``~`` on ``to_pg``'s translation agree on every string, and the compiler calls
``q_pgregex`` (``pg_functions``) for those and leaves the rest to rdflib's evaluator.

The subset, after the ``q`` flags have escaped the pattern as Python does:

- literal characters: any character not special to ``re``; ``\\`` before an ASCII character
  that is not a letter or digit, or before a non-ASCII one; ``\\n \\t \\r \\f \\v \\a``;
- ``.`` (``[^\\n]`` without the ``s`` flag, any character with it);
- ``^`` (start of string) and ``$`` (end, or before a final newline, as in Python), not
  quantified, and neither with the ``m`` flag;
- groups ``(...)`` and ``(?:...)``, alternation ``|``;
- ``* + ?`` and ``{m}``, ``{m,}``, ``{m,n}`` (at most 255), each optionally lazy; not possessive;
- bracket expressions, negated or not, of such literal characters (``\\b`` is a backspace there)
  and ranges between two ASCII digits, two lowercase or two uppercase ASCII letters;
- flags ``s``, ``m`` and ``q`` only (``i`` folds Unicode in Python, ``x`` is rejected too).

Search answers yes or no, so which of several matches an engine prefers does not matter.
REPLACE (``pg_replace_ok``, ``to_pg_replace``, run by ``q_pgreplace``) depends on which match is
taken (Python's first alternative against PostgreSQL's longest), so it takes only the patterns of
the subset without quantifiers or ``|``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

_MAX_PATTERN: Final = 1000  # characters, after the q flags
_MAX_SIZE: Final = 2000  # atoms once bounds are expanded: keeps PostgreSQL's automaton small
_MAX_BOUND: Final = 255  # PostgreSQL's DUPMAX
_CONTROL_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_SPECIAL: Final = frozenset(".^$*+?{}[]\\|()")
_QUANTIFIERS: Final = frozenset("*+?{")
_BOUND: Final = re.compile(r"\{(0|[1-9][0-9]{0,2})(,(0|[1-9][0-9]{0,2})?)?\}")
_END: Final = r"(?=\n?\Z)"  # Python's $: at the end or before a newline that ends the string


class _Reject(Exception):
    """The pattern is outside the subset."""


@dataclass
class _Parser:
    text: str
    dotall: bool
    capture: bool = False  # REPLACE: keep Python's groups, numbered alike, for $1..$9
    pos: int = 0
    anchors: bool = False
    choices: bool = False  # a quantifier or |: where the engines' preferred matches can differ
    consuming: int = 0  # atoms that each match one character
    groups: int = 0
    out: list[str] = field(default_factory=list)

    def peek(self) -> str | None:
        return self.text[self.pos] if self.pos < len(self.text) else None

    def take(self) -> str:
        c = self.peek()
        if c is None:
            raise _Reject
        self.pos += 1
        return c

    def alternation(self) -> tuple[str, int]:
        pg, size = self.sequence()
        parts, total = [pg], size
        while self.peek() == "|":
            self.pos += 1
            self.choices = True
            pg, size = self.sequence()
            parts.append(pg)
            total += size
        return "|".join(parts), total

    def sequence(self) -> tuple[str, int]:
        parts: list[str] = []
        total = 0
        while (c := self.peek()) is not None and c not in "|)":
            if c in _QUANTIFIERS:
                raise _Reject  # nothing to repeat, or a second quantifier
            if c in "^$":
                self.pos += 1
                self.anchors = True
                if self.peek() in _QUANTIFIERS:
                    raise _Reject
                parts.append("^" if c == "^" else _END)
                total += 1
                continue
            pg, size = self.atom()
            pg, size = self.quantified(pg, size)
            parts.append(pg)
            total += size
            if total > _MAX_SIZE:
                raise _Reject
        return "".join(parts), total

    def quantified(self, pg: str, size: int) -> tuple[str, int]:
        c = self.peek()
        if c is None or c not in _QUANTIFIERS:
            return pg, size
        if c == "{":
            m = _BOUND.match(self.text, self.pos)
            if m is None:
                raise _Reject  # Python reads such a brace as a literal; keep away from it
            low = int(m.group(1))
            high = low if m.group(2) is None else (int(m.group(3)) if m.group(3) is not None else None)
            if max(low, high or 0) > _MAX_BOUND or (high is not None and low > high):
                raise _Reject
            self.pos = m.end()
            quantifier = m.group(0)
            size *= max(low, high or 0, 1)
        else:
            self.pos += 1
            quantifier = c
        self.choices = True
        if self.peek() == "?":
            self.pos += 1
            quantifier += "?"
        if self.peek() in _QUANTIFIERS:
            raise _Reject  # possessive (Python 3.11) or a repeated repeat
        if size > _MAX_SIZE:
            raise _Reject
        return f"(?:{pg}){quantifier}", size

    def atom(self) -> tuple[str, int]:
        c = self.take()
        if c == "(":
            capturing = self.peek() != "?"
            if not capturing:
                self.pos += 1
                if self.take() != ":":
                    raise _Reject  # lookarounds, named groups, inline flags, atomic groups...
            capturing = capturing and self.capture
            self.groups += capturing
            pg, size = self.alternation()
            if self.take() != ")":
                raise _Reject
            return (f"({pg})" if capturing else f"(?:{pg})"), size
        if c == ")":
            raise _Reject
        self.consuming += 1
        if c == ".":
            return ("." if self.dotall else "[^\\n]"), 1
        if c == "[":
            return self.bracket(), 1
        if c == "\\":
            return _literal(self.escape(in_bracket=False)), 1
        if c in _SPECIAL:
            raise _Reject
        return _literal(c), 1

    def escape(self, in_bracket: bool) -> str:
        e = self.take()
        if e in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[e]
        if in_bracket and e == "b":
            return "\b"
        if e.isascii() and e.isalnum():
            raise _Reject  # class escapes, anchors, back references, octal, \x \u \N ...
        return e

    def member(self) -> str:
        c = self.take()
        if c == "\\":
            return self.escape(in_bracket=True)
        if c == "[":
            raise _Reject  # PostgreSQL's [: [. [= and Python's future set syntax
        return c

    def bracket(self) -> str:
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        if self.peek() == "]":
            raise _Reject  # a leading ] is a literal in Python; keep away from it
        items: list[str] = []
        previous_raw = ""
        while True:
            c = self.peek()
            if c is None:
                raise _Reject
            if c == "]":
                self.pos += 1
                break
            raw = c
            if raw in "-&~|" and previous_raw == raw:
                raise _Reject  # Python warns: a possible future set operation
            low = self.member()
            previous_raw = raw
            if self.peek() == "-" and self.pos + 1 < len(self.text) and self.text[self.pos + 1] != "]":
                self.pos += 1
                if self.peek() == "\\":
                    raise _Reject
                high = self.member()
                if not _same_kind(low, high) or low > high:
                    raise _Reject
                items.append(f"{low}-{high}")
                previous_raw = ""
                continue
            items.append(_literal(low))
        return "[" + ("^" if negated else "") + "".join(items) + "]"


def _same_kind(a: str, b: str) -> bool:
    def kind(c: str) -> int:
        if "0" <= c <= "9":
            return 1
        if "a" <= c <= "z":
            return 2
        if "A" <= c <= "Z":
            return 3
        return 0

    return kind(a) != 0 and kind(a) == kind(b)


def _literal(c: str) -> str:
    """The ARE for one character: ``\\`` makes any ASCII non-alphanumeric character literal, in
    and out of brackets; the rest (other controls, non-ASCII) stand for themselves."""
    if c.isascii() and c.isalnum():
        return c
    if " " <= c <= "~":
        return "\\" + c
    return c


def _parse(pattern: str, flags: str | None, capture: bool) -> tuple[_Parser, str] | None:
    dotall = multiline = False
    for f in flags or "":
        if f == "s":
            dotall = True
        elif f == "m":
            multiline = True
        elif f == "q":
            pattern = re.escape(pattern)  # each q escapes again, as sqlfunctions._pattern does
        else:
            return None  # i: Python folds Unicode (K, ſ); x; and unknown flags (an error there)
    if len(pattern) > _MAX_PATTERN:
        return None
    parser = _Parser(pattern, dotall, capture)
    try:
        pg, _ = parser.alternation()
    except _Reject:
        return None
    if parser.pos != len(pattern):  # an unmatched )
        return None
    if multiline and parser.anchors:
        return None
    return parser, "***:" + pg


def _translate(pattern: str, flags: str | None) -> str | None:
    parsed = _parse(pattern, flags, capture=False)
    return None if parsed is None else parsed[1]


def pg_regex_ok(pattern: str, flags: str | None) -> bool:
    """Whether ``q_pgregex(x, to_pg(pattern, flags))`` answers what ``re`` does for every string."""
    return _translate(pattern, flags) is not None


def to_pg(pattern: str, flags: str | None) -> str:
    """The PostgreSQL ARE for a pattern ``pg_regex_ok`` accepts (ValueError otherwise)."""
    pg = _translate(pattern, flags)
    if pg is None:
        raise ValueError(f"not a pattern PostgreSQL can run as Python does: {pattern!r} {flags!r}")
    return pg


def _translate_replace(pattern: str, flags: str | None, replacement: str) -> tuple[str, str] | None:
    parsed = _parse(pattern, flags, capture=True)
    if parsed is None:
        return None
    parser, are = parsed
    # Without a choice a match has one length, and at least one character (Python refuses a
    # pattern matching ""), so both engines replace the same leftmost, non-overlapping matches.
    if parser.choices or parser.consuming == 0:
        return None
    out: list[str] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "$" and i + 1 < len(replacement) and "0" <= replacement[i + 1] <= "9":
            group = int(replacement[i + 1])
            if group > parser.groups:
                return None  # Python fails on every string: an invalid group reference
            out.append("\\&" if group == 0 else f"\\{group}")
            i += 2
            continue
        out.append("\\\\" if c == "\\" else c)  # sqlfunctions._replace keeps \ literal
        i += 1
    return are, "".join(out)


def pg_replace_ok(pattern: str, flags: str | None, replacement: str) -> bool:
    """Whether ``q_pgreplace(x, *to_pg_replace(...))`` answers what ``sqlfunctions._replace``
    does for every string: the REGEX subset without quantifiers or ``|``, matching at least one
    character, and ``$N`` in the replacement only for groups the pattern has."""
    return _translate_replace(pattern, flags, replacement) is not None


def to_pg_replace(pattern: str, flags: str | None, replacement: str) -> tuple[str, str]:
    """The ARE and the ``regexp_replace`` replacement for what ``pg_replace_ok`` accepts."""
    pair = _translate_replace(pattern, flags, replacement)
    if pair is None:
        raise ValueError(f"not a REPLACE PostgreSQL can run as Python does: {pattern!r} {flags!r}")
    return pair
