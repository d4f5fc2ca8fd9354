"""The governance vocabulary and its alias rule (tools-graphs-governance §0.10).

Terms are being renamed from the legacy ``aegis:`` namespace to the public Quechua one. A reader
matches a term with a twin under both spellings, each triple on its own; identical values under
the two collapse, and conflicting single values are refused by the reader, never chosen. The
legacy namespace is this fixed constant, never the store's configurable ``base_ns``, and no
third namespace ever matches.
"""

from __future__ import annotations

from typing import Final

from quipu.errors import InvalidField

AEGIS: Final = "http://aegis.gastown.local/ontology/"
QUECHUA: Final = "https://scbrown.github.io/quechua/ns#"
RDF_TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

# Terms with a published twin (alias rule 8), read under both spellings.
TWINNED: Final = frozenset(
    {"VerifierRegistration", "verifier", "publicKey", "attests", "claim", "evidenceProbe"}
)


def spellings(local: str) -> tuple[str, ...]:
    """Every IRI a term is matched under: both namespaces for a twinned term, else legacy only
    (alias rule 7: ``signatureScheme``, ``signCount``, ``signature`` … have no twin)."""
    return (AEGIS + local, QUECHUA + local) if local in TWINNED else (AEGIS + local,)


def local_name(iri: str) -> str | None:
    """The term's local name when ``iri`` is one of its accepted spellings, else None."""
    for ns in (AEGIS, QUECHUA):
        if iri.startswith(ns):
            local = iri[len(ns) :]
            return local if iri in spellings(local) else None
    return None


# Characters that would let an IRI inlined into a query as <...> break out of it.
_IRI_FORBIDDEN: Final = frozenset('<>"{}\\')


def check_iri(text: str, field: str) -> None:
    """Refuse a target, policy or verdict IRI with whitespace or a character the spec forbids
    (stricter than nothing, looser than ``values.check_iri``: the spec names exactly these)."""
    if any(ch.isspace() or ch in _IRI_FORBIDDEN for ch in text):
        raise InvalidField(f"'{field}' must be an IRI without whitespace or any of <>\"{{}}\\", field=field)
