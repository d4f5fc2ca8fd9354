"""What a ``merge-decisions/v1`` row says besides its values (tools-graphs-governance §4.4): the
labels of the IRIs it mentions, the broken constraint in words, each side's provenance, and the
mechanical proposal. Pure functions of the merge inputs; nothing here reads the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from quipu.sharing.merge_model import MAX_COUNT_EXCEEDED, Conflict, Triple, combine

RDFS_LABEL: Final = "http://www.w3.org/2000/01/rdf-schema#label"
_LITERAL: Final = re.compile(r'"((?:[^"\\]|\\.)*)"(?:@([A-Za-z0-9-]+)|\^\^<[^>]*>)?', re.DOTALL)
_ESCAPE: Final = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_SIMPLE: Final = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) > 1:
        return chr(int(code[1:], 16))
    return _SIMPLE.get(code, code)


def literal_text(term: str) -> tuple[str, str | None] | None:
    """(lexical form, language tag) of an N-Triples literal term; None for any other term."""
    found = _LITERAL.fullmatch(term)
    if found is None:
        return None
    return _ESCAPE.sub(_unescape, found.group(1)), found.group(2)


def _iri(term: str) -> str | None:
    return term[1:-1] if term.startswith("<") and term.endswith(">") else None


def mentioned_iris(conflicts: Iterable[Conflict]) -> set[str]:
    """Every IRI a row names: its subject, its predicate, and IRI values on any side."""
    found: set[str] = set()
    for c in conflicts:
        found.add(c.predicate)
        for term in (c.subject, *c.base, *c.ours, *c.theirs):
            iri = _iri(term)
            if iri is not None:
                found.add(iri)
    return found


def labels(iris: Iterable[str], graphs: Sequence[set[Triple]]) -> dict[str, str]:
    """One ``rdfs:label`` per IRI found in any graph: untagged first, then ``@en``, then the
    lexically first (ties within a rank go to the lexically first too)."""
    wanted = {f"<{iri}>": iri for iri in iris}
    candidates: dict[str, list[tuple[int, str]]] = {}
    for graph in graphs:
        for s, p, o in graph:
            if p != RDFS_LABEL or s not in wanted:
                continue
            parsed = literal_text(o)
            if parsed is None:
                continue
            text, lang = parsed
            rank = 0 if lang is None else 1 if lang.lower() == "en" else 2
            candidates.setdefault(wanted[s], []).append((rank, text))
    return {iri: min(found)[1] for iri, found in sorted(candidates.items())}


def rule(conflict: Conflict, names: Mapping[str, str]) -> str:
    """The broken constraint in words, naming the predicate by its label when one is known."""
    name = names.get(conflict.predicate, f"<{conflict.predicate}>")
    head = f"sh:maxCount {conflict.max_count} on {name}"
    if conflict.kind == MAX_COUNT_EXCEEDED:
        merged = combine(set(conflict.base), set(conflict.ours), set(conflict.theirs))
        return (
            f"{head}: merging ours and theirs over base gives {len(merged)} values, "
            f"more than the {conflict.max_count} allowed"
        )
    deleter, replacer = ("ours", "theirs") if not conflict.ours else ("theirs", "ours")
    return f"{head}: {deleter} deleted the value while {replacer} replaced it"


def origin(manifest: Mapping[str, Any], share_id: str) -> dict[str, Any]:
    """A share's identity as the share states it (``attested``: it carries an attestation)."""
    return {
        "share_id": share_id,
        "created_at": manifest.get("created_at"),
        "store_id": manifest.get("store_id"),
        "attested": "attestation" in manifest,
    }


def proposal(
    conflict: Conflict, ours: Sequence[Mapping[str, Any]], theirs: Mapping[str, Any]
) -> dict[str, Any]:
    """A mechanical suggestion, never a decision (rule MD-1): the side that changed when only one
    did; otherwise the newer side, comparing the newest local ``valid_from`` with the incoming
    share's ``created_at`` as strings (ties and a slot with no local fact go to theirs)."""
    evidence: list[str] = []
    if theirs.get("attested"):
        evidence.append("the incoming share carries a producer attestation")
    if conflict.ours == conflict.base:
        choose = "theirs"
        evidence.append("ours is unchanged from base: only theirs changed this slot")
    elif conflict.theirs == conflict.base:
        choose = "ours"
        evidence.append("theirs is unchanged from base: only ours changed this slot")
    else:
        newest = max((str(fact["valid_from"]) for fact in ours), default=None)
        created = str(theirs.get("created_at"))
        if newest is None:
            choose = "theirs"
            evidence.append("ROOT holds no fact in this slot: proposing the incoming values")
        elif newest > created:
            choose = "ours"
            evidence.append(f"ours is newer: local valid_from {newest} > incoming created_at {created}")
        else:
            choose = "theirs"
            evidence.append(
                f"theirs is newer or as new: incoming created_at {created} >= local valid_from {newest}"
            )
    evidence.append("this is a mechanical proposal: the operator decides")
    return {"choose": choose, "evidence": evidence}
