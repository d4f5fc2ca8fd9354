"""Deterministic N-Triples and Turtle for exports (tools-core §1.3 rule 6).

The same statements always give byte-identical output: N-Triples lines are sorted and unique;
Turtle groups by subject, then predicate, in the same order. Terms are written in N-Triples
syntax, which is also valid Turtle, so the two formats never disagree about a term.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from quipu.errors import BadRequest
from quipu.store import values

_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})
_BAD_IRI = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_BLANK_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?")


def iri_term(iri: str) -> str:
    """An IRI or a stored blank-node key (``_:…``) as an N-Triples term."""
    return iri if iri.startswith("_:") else f"<{iri}>"


def checked_iri_term(iri: str) -> str:
    """An IRI that did not come from the dictionary (a query made it): refused when it cannot
    be written as an N-Triples IRI, rather than written as a broken document."""
    if _BAD_IRI.search(iri):
        raise BadRequest(f"cannot serialise the IRI {iri!r} as RDF", reason="unserialisable_value")
    return f"<{iri}>"


def blank_term(label: str) -> str:
    """A blank node by label; a label N-Triples cannot spell is hex-encoded (deterministically)."""
    if _BLANK_LABEL.fullmatch(label):
        return f"_:{label}"
    return "_:x" + label.encode("utf-8").hex()


def literal_term(lexical: str, datatype: str | None = None, lang: str | None = None) -> str:
    """A literal term: plain, language-tagged, or typed (``xsd:string`` is written plain)."""
    text = '"' + lexical.translate(_ESCAPES) + '"'
    if lang:
        return f"{text}@{lang}"
    if datatype is None or datatype == values.XSD_STRING:
        return text
    return f"{text}^^{checked_iri_term(datatype)}"


def value_term(value: bytes, iri_of: dict[int, str]) -> str:
    d = values.decode(value)
    if d.kind == "ref":
        return iri_term(iri_of[d.value])
    if d.kind == "bytes":
        raise BadRequest("cannot serialise a raw-bytes value as RDF", reason="unserialisable_value")
    text = '"' + d.lexical.translate(_ESCAPES) + '"'
    if d.kind == "str":
        return text
    if d.kind == "lang":
        return f"{text}@{d.lang}"
    return f"{text}^^<{d.datatype}>"


def ntriples(rows: Iterable[tuple[str, str, str]]) -> str:
    """Rendered (subject, predicate, object) terms → sorted, de-duplicated N-Triples."""
    lines = sorted({f"{s} {p} {o} .\n" for s, p, o in rows})
    return "".join(lines)


def turtle(rows: Iterable[tuple[str, str, str]]) -> str:
    """Rendered terms → Turtle ordered by subject, then predicate, then object."""
    grouped: dict[str, dict[str, set[str]]] = {}
    for s, p, o in rows:
        grouped.setdefault(s, {}).setdefault(p, set()).add(o)
    out: list[str] = []
    for s in sorted(grouped):
        preds = grouped[s]
        parts = [f"{p} {', '.join(sorted(preds[p]))}" for p in sorted(preds)]
        out.append(f"{s} " + " ;\n    ".join(parts) + " .\n")
    return "\n".join(out)
