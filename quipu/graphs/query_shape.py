"""The injection guard of named queries: a parameter value may change terms, never the query's shape.

Rendering by kind (quipu.graphs.query_params) already keeps each value inside its IRI, string
or number. This module checks the outcome instead of trusting it. The template is parsed once
with a distinct *marker* in every placeholder (an IRI, a string or an integer that names the
parameter); the rendered query is parsed too, and the two algebra trees must be identical except
that a marker inside a term became the caller's value in that same term. A value that added a
pattern, a FILTER, a UNION, a projected variable or a different LIMIT, or that moved a term from
one kind to another, makes the trees differ, and the query is refused before it runs.

At load time the same markers show where each placeholder lands: an ``iri`` parameter must sit
inside an IRI, a ``text`` one inside a string literal, an ``int`` one in a number, a literal or an
IRI; and every placeholder must reach the query (not a comment).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NoReturn

from rdflib import BNode, Literal, URIRef, Variable
from rdflib.paths import Path
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import Query

from quipu.errors import InvalidField, QueryError
from quipu.graphs.query_params import ParamSpec, fill
from quipu.sparql.engine import prepare

# Markers by parameter position k (at most 999 parameters: fixed width, so no marker is a prefix
# of another). The integer is positive; a negative value is probed with its negation, so both
# sides parse to the same unary minus.
_INT_BASE: Final = 7_340_033_000
_MARKER: Final = re.compile(r"quipu-probe-text-(\d{3})-|urn:x-quipu-probe:iri-(\d{3})-|7340033(\d{3})")


def _marker(k: int, spec: ParamSpec, negative: bool = False) -> str:
    if spec.kind == "iri":
        return f"urn:x-quipu-probe:iri-{k:03d}-"
    if spec.kind == "text":
        return f"quipu-probe-text-{k:03d}-"
    return f"{'-' if negative else ''}{_INT_BASE + k}"


def reserved(template: str) -> bool:
    """Whether the template already holds marker text (it could not be checked)."""
    return _MARKER.search(template) is not None


def _parse(text: str) -> Query:
    return prepare(text)  # the engine's parse: its limits, its lock, its cache


def probe_query(template: str, specs: Sequence[ParamSpec]) -> Query:
    """The template parsed with every placeholder replaced by its marker (QueryError when it
    does not parse)."""
    return _parse(fill(template, specs, {s.name: _marker(k, s) for k, s in enumerate(specs)}))


def placements(algebra: Any, specs: Sequence[ParamSpec]) -> dict[str, set[str]]:
    """Where each parameter's marker landed: ``{param: {"iri", "literal", "number", "other"}}``;
    a parameter missing from the result never reaches the query."""
    found: dict[str, set[str]] = {}
    for leaf in _leaves(algebra):
        if isinstance(leaf, bool):
            continue
        if isinstance(leaf, int):
            k = leaf - _INT_BASE
            if 0 <= k < len(specs) and specs[k].kind == "int":
                found.setdefault(specs[k].name, set()).add("number")
            continue
        if not isinstance(leaf, str):
            continue
        where = "iri" if isinstance(leaf, URIRef) else "literal" if isinstance(leaf, Literal) else "other"
        for match in _MARKER.finditer(leaf):
            k = int(next(g for g in match.groups() if g is not None))
            if k < len(specs):
                found.setdefault(specs[k].name, set()).add(where)
    return found


_ALLOWED: Final[dict[str, frozenset[str]]] = {
    "iri": frozenset({"iri"}),
    "text": frozenset({"literal"}),
    "int": frozenset({"number", "literal", "iri"}),
}
_WHERE: Final[dict[str, str]] = {
    "iri": "inside angle brackets, e.g. <{%s}>",
    "text": "inside a quoted string, e.g. '{%s}'",
    "int": "where a number, string or IRI may stand, e.g. LIMIT {%s}",
}


def check_placements(algebra: Any, specs: Sequence[ParamSpec]) -> None:
    """400 unless each parameter lands only where its kind may (see the module docstring)."""
    found = placements(algebra, specs)
    for spec in specs:
        where = found.get(spec.name)
        if not where:
            raise InvalidField(
                f"placeholder {{{spec.name}}} never reaches the query (is it inside a comment?)",
                field="template",
            )
        if not where <= _ALLOWED[spec.kind]:
            raise InvalidField(
                f"param '{spec.name}' ({spec.kind}) must be written {_WHERE[spec.kind] % spec.name}",
                field="template",
            )


def guarded(
    template: str, specs: Sequence[ParamSpec], values: Mapping[str, str], rendered: Mapping[str, str]
) -> str:
    """The rendered query text, after checking that it has the template's shape.

    ``values`` are the caller's values (quoted in messages), ``rendered`` the same checked and in
    canonical form (``query_params.render``); ``fill`` escapes text values as it writes them. 400
    naming the parameter when a value would change the query's shape or keep it from parsing.
    """
    text = fill(template, specs, rendered)
    probes = {s.name: _marker(k, s, _negative(s, rendered)) for k, s in enumerate(specs)}
    try:
        if _same_shape(
            _parse(fill(template, specs, probes)).algebra, _parse(text).algebra, _Expected(specs, values)
        ):
            return text
    except QueryError:
        pass
    _blame(template, specs, values, rendered)


def _negative(spec: ParamSpec, rendered: Mapping[str, str]) -> bool:
    return spec.kind == "int" and rendered[spec.name].startswith("-")


def _blame(
    template: str, specs: Sequence[ParamSpec], values: Mapping[str, str], rendered: Mapping[str, str]
) -> NoReturn:
    """Name the first parameter that breaks the query on its own, the others left as markers."""
    plain = {s.name: _marker(k, s) for k, s in enumerate(specs)}
    for k, spec in enumerate(specs):
        try:
            probe = _parse(
                fill(template, specs, {**plain, spec.name: _marker(k, spec, _negative(spec, rendered))})
            )
            alone = _parse(fill(template, specs, {**plain, spec.name: rendered[spec.name]}))
        except QueryError as exc:
            raise InvalidField(
                f"param '{spec.name}': the query does not parse with {values[spec.name]!r} in place "
                f"of {{{spec.name}}}: {exc.message}",
                field="params",
            ) from None
        only = _Expected([s if s is spec else None for s in specs], values)
        if not _same_shape(probe.algebra, alone.algebra, only):
            raise InvalidField(
                f"param '{spec.name}': the value would change the query's shape, not only a {spec.kind} term",
                field="params",
            )
    raise InvalidField("the parameters together would change the query's shape", field="params")


class _Expected:
    """What each marker must have become: the raw value (an int's magnitude, whose sign the
    probe already carries). A None spec keeps its marker (``_blame`` checks one at a time)."""

    def __init__(self, specs: Sequence[ParamSpec | None], values: Mapping[str, str]) -> None:
        self.by_position: dict[int, str] = {}
        for k, spec in enumerate(specs):
            if spec is not None:
                raw = values[spec.name]
                self.by_position[k] = str(abs(int(raw.strip()))) if spec.kind == "int" else raw

    def text(self, probe: str) -> str:
        def replace(match: re.Match[str]) -> str:
            k = int(next(g for g in match.groups() if g is not None))
            return self.by_position.get(k, match.group())

        return _MARKER.sub(replace, probe)

    def number(self, probe: int) -> int:
        k = abs(probe) - _INT_BASE
        if k in self.by_position:
            magnitude = int(self.by_position[k])
            return magnitude if probe > 0 else -magnitude
        return probe


def _same_shape(probe: Any, actual: Any, expected: _Expected) -> bool:
    """Whether ``actual`` is ``probe`` with only marker text replaced, term for term.

    Blank nodes get fresh labels on every parse, so they must correspond one to one instead.
    Iterative: a query of many UNIONs is a deep tree."""
    bnodes: dict[BNode, BNode] = {}
    stack: list[tuple[Any, Any]] = [(probe, actual)]
    while stack:
        a, b = stack.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, CompValue):
            if a.name != b.name or list(a.keys()) != list(b.keys()):
                return False
            stack.extend((a[key], b[key]) for key in a)
        elif isinstance(a, dict):
            if list(a.keys()) != list(b.keys()):
                return False
            stack.extend((a[key], b[key]) for key in a)
        elif isinstance(a, list | tuple):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, set | frozenset):
            if not all(isinstance(x, Variable) for x in a) or a != b:  # _vars: variables only
                return False
        elif isinstance(a, Path):
            stack.append((vars(a), vars(b)))
        elif isinstance(a, BNode):
            if bnodes.setdefault(a, b) != b:
                return False
        elif isinstance(a, URIRef):
            if str(b) != expected.text(str(a)):
                return False
        elif isinstance(a, Literal):
            if a.datatype != b.datatype or a.language != b.language or str(b) != expected.text(str(a)):
                return False
        elif isinstance(a, int) and not isinstance(a, bool):
            if b != expected.number(a):
                return False
        elif a != b:  # variables, operator names, None
            return False
    return len(set(bnodes.values())) == len(bnodes)


def _leaves(node: Any) -> Iterator[Any]:
    """Every term below ``node``, sets, dicts and property paths included."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):  # CompValue too
            stack.extend(current.values())
        elif isinstance(current, list | tuple | set | frozenset):
            stack.extend(current)
        elif isinstance(current, Path):
            stack.extend(vars(current).values())
        else:
            yield current
