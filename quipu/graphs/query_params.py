"""Named-query parameters: specs, placeholders, conversion and rendering by kind (tools-search §5.17).

A named query is a SPARQL template with ``{name}`` placeholders. A caller's value is turned into
SPARQL text by its declared kind, strictly:

* ``iri``: written as-is inside the template's angle brackets, so it may hold no whitespace,
  control character or any of ``< > " { } | \\ ^`` and backtick (each would end the IRI);
* ``text``: written inside the template's quotes with every character that could end or bend
  that string escaped as a SPARQL ECHAR: backslash, newline, carriage return, tab and the quote
  of the enclosing string (rdflib's grammar takes only a string's own quote escaped, so
  ``'a\\"b'`` would not parse); other control characters and lone surrogates are refused, and
  so is a value past ``MAX_VALUE``;
* ``int``: trimmed, parsed as a signed 64-bit integer and re-printed, so only digits reach the text.

Every placeholder is replaced in one pass over the template, so a text value that itself reads
``{limit}`` is never substituted again. quipu.graphs.query_shape then checks the rendered query
against the template's own shape.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from quipu.errors import InvalidField

Kind = Literal["iri", "text", "int"]
KINDS: Final[tuple[Kind, ...]] = ("iri", "text", "int")
MAX_VALUE: Final = 4096  # characters of one rendered value: no question needs a longer one
MAX_PARAMS: Final = 64  # declared parameters per query
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

_IRI_FORBIDDEN: Final = frozenset('<>"{}|\\^`')
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_PLACEHOLDER_NAME: Final = re.compile(r"[A-Za-z0-9_]+")
# ECHARs (SPARQL 1.1 rule 160) by the quote character of the enclosing string.
_BREAKS: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES: Final = {
    "'": str.maketrans({**_BREAKS, "'": "\\'"}),
    '"': str.maketrans({**_BREAKS, '"': '\\"'}),
}
# String literals (long ones first), IRIs and comments, leftmost first: which quote encloses a
# placeholder. IRIs are lexed so that a '#' inside one does not start a comment.
_LEXEMES: Final = re.compile(
    r"'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r'|"(?:[^"\\\n\r]|\\.)*"'
    r"|<[^<>\"'\s]*>"
    r"|#[^\n\r]*"
)


@dataclass(frozen=True, slots=True)
class ParamSpec:
    name: str
    kind: Kind
    required: bool
    default: str | None
    description: str

    def entry(self) -> dict[str, object]:
        """The spec as a catalog lists it."""
        return {
            "name": self.name,
            "type": self.kind,
            "required": self.required,
            "default": self.default,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class NamedQuery:
    name: str
    description: str
    template: str
    params: tuple[ParamSpec, ...]
    source: Literal["builtin", "stored"]
    dataset: str | None = None

    def entry(self) -> dict[str, object]:
        """The catalog entry of tools-search §5.17; stored ones add their dataset."""
        out: dict[str, object] = {
            "name": self.name,
            "description": self.description,
            "params": [p.entry() for p in self.params],
            "source": self.source,
        }
        if self.source == "stored":
            out["dataset"] = self.dataset
        return out


def placeholders(template: str) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of every placeholder, in order.

    The scan of §5.18: at each ``{`` take the text up to the next ``}``; a non-empty run of ASCII
    letters, digits and ``_`` is a placeholder and the scan resumes after its ``}``, anything
    else moves on by one character. So a group such as ``{ ?s ?p ?o }`` is never a placeholder.
    """
    found: list[tuple[int, int, str]] = []
    i = template.find("{")
    while i != -1:
        close = template.find("}", i + 1)
        if close == -1:
            break
        name = template[i + 1 : close]
        if name.isascii() and _PLACEHOLDER_NAME.fullmatch(name):
            found.append((i, close + 1, name))
            i = template.find("{", close + 1)
        else:
            i = template.find("{", i + 1)
    return found


def fill(template: str, specs: Sequence[ParamSpec], values: Mapping[str, str]) -> str:
    """The template with each placeholder replaced by its value in a single pass, a text value
    escaped for the string it sits in; a placeholder without a value stays as written."""
    kinds = {spec.name: spec.kind for spec in specs}
    spans: list[tuple[int, int, str]] | None = None
    parts: list[str] = []
    last = 0
    for start, end, name in placeholders(template):
        if name not in values:
            continue
        value = values[name]
        if kinds.get(name) == "text":
            spans = _string_spans(template) if spans is None else spans
            value = value.translate(_ESCAPES[_quote_at(spans, start)])
        parts += [template[last:start], value]
        last = end
    parts.append(template[last:])
    return "".join(parts)


def _string_spans(template: str) -> list[tuple[int, int, str]]:
    """(start, end, quote character) of every string literal of the template."""
    return [(m.start(), m.end(), m.group()[0]) for m in _LEXEMES.finditer(template) if m.group()[0] in "'\""]


def _quote_at(spans: list[tuple[int, int, str]], position: int) -> str:
    for start, end, quote in spans:
        if start < position < end:
            return quote
    return "'"  # outside any string: loading refuses that (quipu.graphs.query_shape)


def as_string(key: str, value: object) -> str:
    """A caller's JSON value as the string a parameter renders: a string as-is, a number by its
    JSON text, a boolean as ``true``/``false``; arrays, objects and null are refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):  # before int: a JSON boolean is a Python int too
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)  # 5 -> "5", 5.0 -> "5.0": what the JSON text said
    raise InvalidField(f"param '{key}': unsupported value type", field="params")


def render(spec: ParamSpec, raw: str) -> str:
    """``raw`` checked by ``spec.kind``, in canonical form (an int re-printed), or 400 naming the
    parameter; ``fill`` writes it into the template (escaping a text value there)."""
    if len(raw) > MAX_VALUE:
        raise InvalidField(
            f"param '{spec.name}': value is {len(raw)} characters long; at most {MAX_VALUE} are accepted",
            field="params",
        )
    if spec.kind == "iri":
        return _iri(spec.name, raw)
    if spec.kind == "int":
        return str(parse_int(spec.name, raw))
    return _text(spec.name, raw)


def parse_int(name: str, raw: str) -> int:
    text = raw.strip()
    if not (text.isascii() and _INTEGER.fullmatch(text)) or not INT_MIN <= int(text) <= INT_MAX:
        raise InvalidField(
            f"param '{name}': {raw!r} is not an integer (a signed 64-bit decimal is expected)",
            field="params",
        )
    return int(text)


def _iri(name: str, raw: str) -> str:
    if not raw:
        raise InvalidField(f"param '{name}': empty IRI", field="params")
    for ch in raw:
        if ch in _IRI_FORBIDDEN or ch.isspace() or unicodedata.category(ch) in ("Cc", "Cs"):
            raise InvalidField(
                f"param '{name}': invalid character in IRI (U+{ord(ch):04X}); an IRI may not hold "
                'whitespace, control characters or any of < > " { } | \\ ^ `',
                field="params",
            )
    return raw


def _text(name: str, raw: str) -> str:
    for ch in raw:
        category = unicodedata.category(ch)
        if (category == "Cc" and ch not in "\n\r\t") or category == "Cs":
            raise InvalidField(
                f"param '{name}': control character U+{ord(ch):04X} is not allowed in text",
                field="params",
            )
    return raw


def resolve(query: NamedQuery, given: Mapping[str, object] | None) -> dict[str, str]:
    """Each declared parameter's value in declaration order: the caller's, else the default, else
    (required) 400. Undeclared keys are ignored; a value of an unsupported type is refused."""
    given = given or {}
    out: dict[str, str] = {}
    for spec in query.params:
        raw = as_string(spec.name, given[spec.name]) if spec.name in given else spec.default
        if raw is None:
            if spec.required:
                raise InvalidField(f"named query '{query.name}' requires param '{spec.name}'", field="params")
            continue  # unreachable for a validated query: an optional parameter has a default
        out[spec.name] = raw
    return out


def render_all(query: NamedQuery, values: Mapping[str, str]) -> dict[str, str]:
    by_name = {spec.name: spec for spec in query.params}
    return {name: render(by_name[name], raw) for name, raw in values.items()}
