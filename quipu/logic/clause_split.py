"""Splitting Prolog source text (snapshots, seed files) into clause texts without running a parser.

A clause ends at an *end token*: a ``.`` followed by layout, ``%`` or the end of the text, that
is not part of a longer symbol-char token (``=..``, ``+.``). Quoted items (``'...'``, ``"..."``,
`` `...` `` with ``\\`` escapes and doubled quotes), character codes (``0'.``, ``0'\\n``,
``0'''``), radix numbers (``16'FF``), line comments (``%``) and block comments (``/* */``, which
start a comment only outside a symbol-char token, as in SWI-Prolog) never end a clause.

Comments are replaced by one space; each clause text is stripped and has no trailing period.
Text after the last end token that is not layout or comments is returned as ``tail``: an
unterminated clause (or an unterminated quote or block comment).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SYMBOL_CHARS = frozenset("#$&*+-./:<=>?@^~\\")

# The next construct that matters; everything between two matches is plain clause text.
_SPECIAL = re.compile(
    r"""
      (?P<cc>(?<![A-Za-z0-9_])0')          # character code 0'c
    | (?P<radix>(?<![A-Za-z0-9_])\d+')     # radix number R'digits (or a quote after digits)
    | (?P<quote>['"`])
    | (?P<line>%)
    | (?P<block>/\*)
    | (?P<end>\.(?=\s|%|\Z))
    """,
    re.X,
)
_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]*\\?|[0-7]+\\?|.)", re.S)
_QUOTED_BODY = {
    q: re.compile(rf"[^{q}\\]*(?:\\(?:x[0-9a-fA-F]*\\?|[0-7]+\\?|.)[^{q}\\]*)*{q}", re.S) for q in "'\"`"
}
_RADIX_DIGITS = re.compile(r"[0-9A-Za-z]+")


@dataclass(frozen=True, slots=True)
class SourceClause:
    """One clause (or directive, text starting with ``:-``) and the 1-based line it starts on."""

    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Split:
    clauses: tuple[SourceClause, ...]
    tail: SourceClause | None  # unterminated text at the end, None when the text ends cleanly


def split_clauses(text: str) -> Split:
    """Split ``text`` into clauses at end tokens (see the module docstring)."""
    collector = _Collector(text)
    guard = 0  # text before this index was consumed by a quote or char code: not a symbol char
    pos = 0
    size = len(text)
    while True:
        match = _SPECIAL.search(text, pos)
        if match is None:
            break
        kind = match.lastgroup
        start = match.start()
        after_symbol = start - 1 >= guard and start > 0 and text[start - 1] in SYMBOL_CHARS
        if kind == "end":
            if after_symbol:
                pos = start + 1  # the period belongs to a symbol-char token such as =..
                continue
            collector.finish(start)
            pos = guard = start + 1
            collector.restart(pos)
            continue
        if kind == "line":
            newline = text.find("\n", start)
            pos = guard = size if newline < 0 else newline
            collector.skip(start, pos)
            continue
        if kind == "block":
            if after_symbol:
                pos = start + 1  # /* inside a symbol-char token is not a comment (SWI-Prolog)
                continue
            close = text.find("*/", start + 2)
            pos = guard = size if close < 0 else close + 2
            collector.skip(start, pos)  # an unclosed comment runs to the end of the text
            continue
        if kind == "cc":
            stop = _char_code_end(text, start + 2)
            if stop is None:
                pos = size
                break
            pos = guard = stop
            continue
        if kind == "radix":
            quote_at = match.end() - 1
            digits = _RADIX_DIGITS.match(text, quote_at + 1)
            if 2 <= int(text[start:quote_at]) <= 36 and digits is not None:
                pos = guard = digits.end()
                continue
            start = quote_at  # not a radix number: the quote opens a quoted atom
        stop = _quoted_end(text, start)
        if stop is None:
            pos = size
            break
        pos = guard = stop
    return Split(tuple(collector.clauses), collector.tail(size))


class _Collector:
    """Collects the text of the clause being scanned, with comments replaced by a space."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.clauses: list[SourceClause] = []
        self.parts: list[str] = []
        self.seg_start = 0
        self.first: int | None = None  # index of the clause's first non-layout character
        self._line_index = 0
        self._line_no = 1

    def _take(self, stop: int) -> None:
        segment = self.text[self.seg_start : stop]
        if self.first is None and segment.strip():
            self.first = self.seg_start + len(segment) - len(segment.lstrip())
        self.parts.append(segment)

    def skip(self, start: int, stop: int) -> None:
        self._take(start)
        self.parts.append(" ")
        self.seg_start = stop

    def finish(self, stop: int) -> None:
        self._take(stop)
        body = "".join(self.parts).strip()
        if body and self.first is not None:
            self.clauses.append(SourceClause(body, self._line(self.first)))

    def restart(self, at: int) -> None:
        self.parts = []
        self.seg_start = at
        self.first = None

    def tail(self, size: int) -> SourceClause | None:
        self._take(size)
        body = "".join(self.parts).strip()
        if self.first is None or not body:
            return None
        return SourceClause(body, self._line(self.first))

    def _line(self, index: int) -> int:
        # Clauses are found in order, so line numbers are counted incrementally.
        self._line_no += self.text.count("\n", self._line_index, index)
        self._line_index = index
        return self._line_no


def _char_code_end(text: str, at: int) -> int | None:
    """End of the character after ``0'`` (escape, doubled quote, or any one character)."""
    if at >= len(text):
        return None
    if text[at] == "\\":
        escape = _ESCAPE.match(text, at)
        return None if escape is None else escape.end()
    if text[at] == "'" and at + 1 < len(text) and text[at + 1] == "'":
        return at + 2
    return at + 1


def _quoted_end(text: str, start: int) -> int | None:
    """Index just after the closing quote of the quoted item opening at ``start``."""
    body = _QUOTED_BODY[text[start]].match(text, start + 1)
    return None if body is None else body.end()
