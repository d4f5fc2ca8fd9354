"""Query templates: one parse and one compiled plan for queries that differ only in their IRIs.

Agents look up one entity after another, so nearly every point lookup is a query text the
server has not seen: parsing it costs about 3 ms and compiling it 2.5 ms, where running the
compiled plan costs a tenth of a millisecond. A template is the query with each absolute IRI of
its pattern (after the first ``{``; not a datatype after ``^^``, nor a FROM graph, which picks
the dataset before the plan is made) replaced by a placeholder IRI.
The template is parsed and compiled once, and each query of that shape runs the same SQL with the
ids of its own IRIs bound in.

The compiler decides how a constant IRI enters the statement, so a template is trusted only
after a differential check: it is compiled twice, with two different sets of placeholder texts
and ids. The two statements must be the same SQL, and every bound value that differs must be a
placeholder's id or its ``Ref`` encoding. Otherwise (an IRI used as a string, a rendered constant,
a per-row rdflib function, a plan that depends on missing terms) the template is refused and
its queries take the ordinary path. So does any query naming an IRI the store has never seen,
since the compiler plans those differently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from rdflib import URIRef

from quipu.store import values

# Comments, strings (long ones first) and absolute IRIs, in the order a SPARQL lexer meets them.
_TOKENS: Final = re.compile(
    r"""(?P<skip>\#[^\n]*|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'''(?:[^\\]|\\.)*?'''"""
    r"""|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
    r"""|(?P<dt>\^\^\s*<[^<>"{}|^`\\\x00-\x20]*>)"""
    r"""|(?P<from>(?i:\bFROM\s+(?:NAMED\s+)?)<[^<>"{}|^`\\\x00-\x20]*>)"""
    r"""|(?P<iri><[A-Za-z][A-Za-z0-9+.\-]*:[^<>"{}|^`\\\x00-\x20]*>)"""
    r"""|(?P<open>\{)"""
)
PLACEHOLDER: Final = "urn:quipu:template:"
_OTHER: Final = "urn:quipu:template-check:"
_IDS: Final = (1 << 61, (1 << 61) + (1 << 40))  # placeholder ids of the two compilations
_MAX_IRIS: Final = 64
_SHORT: Final = 4096  # characters: texts up to this long have their template remembered


@dataclass(frozen=True)
class Template:
    """A query text split into its template and the IRIs it takes (slot k is ``iris[k]``)."""

    parts: tuple[str, ...]  # text around the slots: len(parts) == len(slots) + 1
    slots: tuple[int, ...]  # the slot each gap takes (an IRI used twice takes one slot)
    iris: tuple[str, ...]

    def render(self, prefix: str = PLACEHOLDER) -> str:
        out = [self.parts[0]]
        for slot, part in zip(self.slots, self.parts[1:], strict=True):
            out.append(f"<{prefix}{slot}>{part}")
        return "".join(out)

    @property
    def text(self) -> str:
        return self.render()

    def original(self, term: Any) -> Any:
        """``term`` of the template's parse as the query wrote it (a placeholder IRI restored)."""
        if isinstance(term, URIRef) and term.startswith(PLACEHOLDER):
            return URIRef(self.iris[int(term[len(PLACEHOLDER) :])])
        return term


def split(text: str) -> Template | None:
    """The template of ``text``, or None when it has no IRI to take out (or too many). A short
    text's answer is remembered: a request asks for it three times (lane, query, inference
    marker), and a client repeats its texts."""
    return _split_short(text) if len(text) <= _SHORT else _split(text)


@lru_cache(maxsize=1024)
def _split_short(text: str) -> Template | None:
    return _split(text)


def _split(text: str) -> Template | None:
    if PLACEHOLDER in text or _OTHER in text:
        return None  # a caller's own placeholder-like IRI would be ambiguous
    parts: list[str] = []
    slots: list[int] = []
    iris: dict[str, int] = {}
    begun = False
    last = 0
    for match in _TOKENS.finditer(text):
        kind = match.lastgroup
        if kind == "open":
            begun = True
        elif kind == "iri" and begun:
            iri = match.group()[1:-1]
            if not iri.isascii() and not values.encodable(iri):
                return None  # the ordinary parse refuses it with its own message
            parts.append(text[last : match.start()])
            slots.append(iris.setdefault(iri, len(iris)))
            last = match.end()
    if not slots or len(iris) > _MAX_IRIS:
        return None
    parts.append(text[last:])
    return Template(tuple(parts), tuple(slots), tuple(iris))


# How a slot's id is bound: as the id, as its Ref encoding, or as that encoding's digest (the
# facts' value hash).
_FORMS: Final[dict[str, Callable[[int], Any]]] = {
    "id": lambda tid: tid,
    "ref": values.ref,
    "digest": lambda tid: values.digest(values.ref(tid)),
}


@dataclass
class Checked:
    """A template's plan and where each slot's id is bound: parameter name -> (slot, form)."""

    plan: Any
    slots: dict[str, tuple[int, str]]

    def parameters(self, ids: Mapping[int, int]) -> dict[str, Any]:
        return {name: _FORMS[form](ids[k]) for name, (k, form) in self.slots.items()}


def check(
    template: Template,
    compile_with: Callable[[str, Mapping[str, int]], tuple[Any, Any, Mapping[str, Any], Any]],
) -> Checked | None:
    """Compile the template twice and compare (module docstring).

    ``compile_with(text, pinned)`` compiles one rendering with the placeholder ids pinned; it
    returns (plan, sql text, bound values, everything else the plan's answers depend on), or
    raises to refuse."""
    n = len(template.iris)
    runs = []
    for prefix, base in zip((PLACEHOLDER, _OTHER), _IDS, strict=True):
        pinned = {f"{prefix}{k}": base + k for k in range(n)}
        try:
            runs.append(compile_with(template.render(prefix), pinned))
        except Exception:
            return None
    (plan, sql_a, bound_a, rest_a), (_, sql_b, bound_b, rest_b) = runs
    if sql_a != sql_b or rest_a != rest_b or bound_a.keys() != bound_b.keys():
        return None
    known_a, known_b = (
        {form(base + k): (k, name) for k in range(n) for name, form in _FORMS.items()} for base in _IDS
    )
    slots: dict[str, tuple[int, str]] = {}
    for name, a in bound_a.items():
        b = bound_b[name]
        if a == b:
            continue
        found = _find(known_a, a)
        if found is None or found != _find(known_b, b):
            return None
        slots[name] = found
    return Checked(plan, slots)


def _find(known: dict[Any, tuple[int, str]], value: Any) -> tuple[int, str] | None:
    try:
        return known.get(value)
    except TypeError:  # an unhashable bound value is never a slot
        return None
