"""The compact JSON-LD form of an entity description (tools-core §1.6, §0.6).

``quipu.store.reads.entity`` builds the document with full IRIs everywhere. Compaction rewrites
the IRIs a JSON-LD processor reads as IRIs (property keys, ``@id``, ``@type`` and the ``@type``
of a typed value) to CURIEs, and adds an ``@context`` holding exactly the prefixes used. Literal
strings are never touched.
"""

from __future__ import annotations

from typing import Any

from quipu.rdfio.curie import PrefixMap


def compact_document(doc: dict[str, Any], prefixes: PrefixMap) -> dict[str, Any]:
    """``doc`` (full IRIs, no ``@context``) in compact form, ``@context`` first."""
    used: set[str] = set()

    def name(iri: str) -> str:
        short = prefixes.compact(iri)
        if short != iri:
            used.add(short)
        return short

    def value(item: Any) -> Any:
        if isinstance(item, list):
            return [value(x) for x in item]
        if isinstance(item, dict):
            out = dict(item)
            if "@id" in out:
                out["@id"] = name(out["@id"])
            if "@value" in out and "@type" in out:
                out["@type"] = name(out["@type"])
            return out
        return item

    keys = _property_names(doc, prefixes)
    body: dict[str, Any] = {}
    for key, item in doc.items():
        if key == "@id":
            body[key] = name(item)
        elif key == "@type":
            body[key] = [name(t) for t in item] if isinstance(item, list) else name(item)
        else:
            short = keys[key]
            if short != key:
                used.add(short)
            body[short] = value(item)
    return {"@context": prefixes.used(used), **body}


def _property_names(doc: dict[str, Any], prefixes: PrefixMap) -> dict[str, str]:
    """Each property IRI's key. Keys never collide: when a CURIE would equal another key (an
    IRI whose scheme is spelled like a prefix, ``ex:a`` beside ``http://ex.org/a``), both stay
    full IRIs."""
    props = [k for k in doc if not k.startswith("@")]
    short = {k: prefixes.compact(k) for k in props}
    out: dict[str, str] = {}
    for k in props:
        s = short[k]
        out[k] = k if s != k and s in doc else s
    return out
