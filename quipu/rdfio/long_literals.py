"""Literals longer than pyoxigraph's token buffer, read all the same.

pyoxigraph's Turtle, TriG, N-Triples, N-Quads and JSON-LD parsers hold one token in a buffer of
at most 16 MiB (``MAX_TOKEN``), and no option lifts it: a longer token raises ``MemoryError``
("Reached the buffer maximal size"). The request body limit (64 MiB) and a staged upload's
(128 MiB) already bound what a document may hold, so a long literal is accepted: when a parse
fails that way, ``lift`` takes every long string literal (and comment) out of the document,
leaving a short placeholder string of its own in each literal's place, and the document is
parsed again; ``Lifted.restore`` puts each literal's text back into the quad that carries it.

What pyoxigraph would check in such a literal is checked here the same way: valid UTF-8, known
escapes, escapes of Unicode scalar values only. Anything else that long (an IRI, a prefixed name,
a blank node label, a JSON-LD key) still cannot be read: that is a 413 naming the limit.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

import pyoxigraph as ox

from quipu.errors import PayloadTooLarge, RdfParseError

MAX_TOKEN: Final = 16 * 1024 * 1024  # pyoxigraph's buffer (oxttl's and oxjsonld's MAX_BUFFER_SIZE)
LIFT_OVER: Final = 1024 * 1024  # bytes of a string or comment worth taking out of the document
BUFFER_FULL: Final = "buffer maximal size"  # pyoxigraph's MemoryError message

# One token of interest at a time, each skipped whole: a comment, an IRI, a string, or an escape
# outside a string (a prefixed name's ``\#``). Possessive repeats: no backtracking on big input.
_TERSE: Final = re.compile(
    rb"#[^\n\r]*+"
    rb"|<[^>\n\r]*+>?"
    rb'|"""(?:[^"\\]++|\\.|"(?!""))*+"""'
    rb"|'''(?:[^'\\]++|\\.|'(?!''))*+'''"
    rb'|"(?:[^"\\\n\r]++|\\.)*+"'
    rb"|'(?:[^'\\\n\r]++|\\.)*+'"
    rb"|\\.",
    re.DOTALL,
)
_LINE: Final = re.compile(rb'#[^\n\r]*+|<[^>\n\r]*+>?|"(?:[^"\\\n\r]++|\\.)*+"', re.DOTALL)
_JSON_STRING: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_JSON_KEY_END: Final = re.compile(rb"[ \t\n\r]*+:")
_SCANNERS: Final = {"turtle": _TERSE, "trig": _TERSE, "nt": _LINE, "nq": _LINE, "jsonld": _JSON_STRING}

_ECHAR: Final = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_ESCAPE: Final = re.compile(r"\\(?:([tbnrf\"'\\])|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))?")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def too_large() -> PayloadTooLarge:
    mib = MAX_TOKEN // (1024 * 1024)
    return PayloadTooLarge(
        f"an RDF term longer than {mib} MiB (the parser's limit for an IRI, a name or a comment); "
        "only a literal may be longer, up to the request body limit"
    )


@dataclass
class Lifted:
    """A document with its long literals taken out, and those literals by placeholder."""

    document: bytes
    nonce: str
    texts: dict[str, str]  # placeholder -> the literal's text
    restored: set[str] = field(default_factory=set)

    def restore(self, quads: Iterable[ox.Quad]) -> Iterator[ox.Quad]:
        """``quads`` with each placeholder literal holding its text again; a placeholder anywhere
        else (an IRI, a datatype: JSON-LD can put a string there) is refused as too large."""
        texts, nonce = self.texts, self.nonce
        for quad in quads:
            s, p, o, g = quad.subject, quad.predicate, quad.object, quad.graph_name
            if any(nonce in getattr(t, "value", "") for t in (s, p, g)):
                raise too_large()
            if type(o) is ox.Literal:
                if nonce in o.datatype.value:
                    raise too_large()
                text = texts.get(o.value)
                if text is not None:
                    self.restored.add(o.value)
                    lang, direction = o.language, o.direction
                    if lang:
                        o = ox.Literal(text, language=lang, direction=direction)
                    else:
                        o = ox.Literal(text, datatype=o.datatype)
                    quad = ox.Quad(s, p, o, g)
            elif nonce in getattr(o, "value", ""):
                raise too_large()
            yield quad

    def check_complete(self) -> None:
        """Every long string came back as a literal: else it was a JSON-LD IRI or context entry."""
        if self.restored != self.texts.keys():
            raise too_large()


def lift(data: bytes, fmt: str) -> Lifted:
    """``data`` with every string literal and comment over ``LIFT_OVER`` bytes taken out."""
    scanner = _SCANNERS.get(fmt)
    if scanner is None:
        raise too_large()
    nonce = secrets.token_hex(8)
    while nonce.encode() in data:
        nonce = secrets.token_hex(8)
    texts: dict[str, str] = {}
    pieces: list[bytes] = []
    kept = 0
    for found in scanner.finditer(data):
        start, end = found.span()
        if end - start <= LIFT_OVER:
            continue
        token = found.group()
        if token[:1] == b"#":
            replacement = b"#"
        elif token[:1] in (b'"', b"'") and len(token) >= 2 and token[-1:] == token[:1]:
            if fmt == "jsonld":
                if _JSON_KEY_END.match(data, end):
                    continue  # a key: it names a term or an IRI, never a literal
                text = _json_text(token)
            else:
                quote = 3 if token[:3] in (b'"""', b"'''") and len(token) >= 6 else 1
                text = _turtle_text(token[quote:-quote])
            placeholder = f"quipu-long-literal-{nonce}-{len(texts)}"
            texts[placeholder] = text
            replacement = b'"' + placeholder.encode("ascii") + b'"'
        else:
            continue  # an IRI or an unterminated string: left as it is, for the parser to refuse
        pieces += (data[kept:start], replacement)
        kept = end
    if not pieces:
        raise too_large()  # nothing to lift: the long token is an IRI, a name or the like
    pieces.append(data[kept:])
    return Lifted(b"".join(pieces), nonce, texts)


def _turtle_text(content: bytes) -> str:
    """A Turtle/N-Triples string's text: UTF-8, then ECHAR and UCHAR escapes (as pyoxigraph)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RdfParseError(f"RDF parse error: invalid UTF-8 in a literal: {exc}") from None

    def unescape(m: re.Match[str]) -> str:
        simple, short, long = m.groups()
        if simple is not None:
            return _ECHAR[simple]
        if short is None and long is None:
            raise RdfParseError(f"RDF parse error: unexpected escape {m.string[m.start() : m.start() + 2]!r}")
        code = int(short or long, 16)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            raise RdfParseError(f"RDF parse error: the escape {m.group()!r} is not a Unicode character")
        return chr(code)

    return _ESCAPE.sub(unescape, text) if "\\" in text else text


def _json_text(token: bytes) -> str:
    try:
        text = json.loads(token)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RdfParseError(f"RDF parse error: invalid JSON string: {exc}") from None
    if not isinstance(text, str) or _SURROGATE.search(text):
        raise RdfParseError("RDF parse error: a JSON string holds a lone surrogate escape")
    return text
