"""``quipu_resolve_entity`` (tools-search §5.8): does the store already hold this entity?

Two matchers, merged:

1. the vector half (only with a provider): the request's name and string properties embedded,
   ranked against every current vector (named-only ones included), kept at cosine >= threshold;
2. the name half: every current plain-string ``rdfs:label`` of the local graphs, lower-cased;
   an equal label scores 1.0, otherwise Jaro-Winkler, kept at >= threshold.

Rows are concatenated (vector rows first), stable-sorted by score, and the first row per IRI
is kept, so an entity found by both halves appears once with its better score. It reads only:
nothing is committed, not even a vector for the probe.

Jaro-Winkler is rapidfuzz's, which follows the rules the spec takes from the ``strsim`` crate
(code points; transpositions halved with integer division; the prefix boost, at most 4, only
when jaro > 0.7). tests/search/test_resolve.py checks it against a direct implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from quipu.errors import BadRequest
from quipu.search import labels
from quipu.store.database import Database

if TYPE_CHECKING:
    from quipu.search.embedding import MiniLM
    from quipu.search.vectors import VectorIndex

_SHORTLIST = 4  # rows kept per wanted IRI before sorting: duplicates of one IRI are rare
_BLOCK = 256  # names scored per rapidfuzz call by NameIndex.prepare (256 x labels doubles)
VECTOR_POOL = 3  # vector rows fetched per wanted candidate (§5.8 behaviour 1)


@dataclass(frozen=True, slots=True)
class Candidate:
    iri: str
    score: float
    matched_on: str


def jaro_winkler(a: str, b: str) -> float:
    """Jaro-Winkler similarity of two strings, as ``strsim::jaro_winkler`` computes it."""
    return float(JaroWinkler.similarity(a, b))


def probe_text(name: str, properties: Mapping[str, Any]) -> str:
    """The embedded text: the name, then ``key: value`` for each string property by key."""
    parts = [name] + [
        f"{key}: {properties[key]}" for key in sorted(properties) if isinstance(properties[key], str)
    ]
    return ". ".join(parts)


def vector_rows(
    db: Database,
    provider: MiniLM,
    index: VectorIndex,
    name: str,
    properties: Mapping[str, Any],
    top_k: int,
    threshold: float,
) -> list[Candidate]:
    # Embed before taking a read snapshot (tools-search §2: no store lock while the model runs).
    try:
        query = provider.embed_text(probe_text(name, properties))
    except Exception as exc:
        raise BadRequest(f"the embedding provider failed: {exc}") from exc
    with db.read() as conn:
        index.refresh(conn)
        ranked = index.rank(query, top_k * VECTOR_POOL, include_named_only=True)
        ids = [
            int(i)
            for i, score in zip(ranked.entity_ids, ranked.similarities, strict=True)
            if score >= threshold
        ]
        iri_of = db.terms.iris(conn, ids)
    return [
        Candidate(iri_of[int(entity)], float(score), f"embedding:{float(score):.2f}")
        for entity, score in zip(ranked.entity_ids, ranked.similarities, strict=True)
        if score >= threshold
    ]


class NameIndex:
    """The lower-cased local labels, read once: an import resolves every labelled entity of a
    share against one index instead of reading every label again per entity."""

    def __init__(self, stored: Iterable[tuple[str, str]]) -> None:
        self.iris: list[str] = []
        self.lowered: list[str] = []
        self._scored: dict[str, tuple[float, Any]] = {}  # prepared: name -> (threshold, scores)
        self._positions: dict[str, list[int]] = {}  # lower-cased label -> its indexes
        for iri, label in stored:
            self._positions.setdefault(label.lower(), []).append(len(self.lowered))
            self.iris.append(iri)
            self.lowered.append(label.lower())

    @classmethod
    def load(cls, db: Database) -> NameIndex:
        with db.read() as conn:
            return cls(labels.name_labels(db, conn))

    def prepare(self, names: Iterable[str], threshold: float) -> None:
        """Score many names at once (an import resolves every labelled entity of a share): a
        block of names against every label per rapidfuzz call, on every core, kept for ``rows``."""
        wanted = sorted({n.lower() for n in names} - set(self._scored))
        for start in range(0, len(wanted), _BLOCK):
            block = wanted[start : start + _BLOCK]
            matrix = process.cdist(
                block,
                self.lowered,
                scorer=JaroWinkler.similarity,
                score_cutoff=_cutoff(threshold),
                dtype=numpy.float64,
                workers=-1,
            )
            for query, scores in zip(block, matrix, strict=True):
                self._scored[query] = (threshold, scores)

    def rows(self, name: str, threshold: float, limit: int | None = None) -> list[Candidate]:
        """Labels equal to ``name`` (1.0) or at least ``threshold`` Jaro-Winkler-close, best
        first and in label order among equals, which is the order ``merge`` keeps. rapidfuzz
        scores the whole list in C. ``limit``: stop once that many distinct IRIs are found, since
        ``merge`` keeps no more (rows after them can never be chosen)."""
        wanted = name.lower()
        if not self.lowered or (limit is not None and limit <= 0):
            return []
        cached = self._scored.get(wanted)
        if cached is not None and cached[0] == threshold:
            scores = cached[1]
        else:
            scores = process.cdist(
                [wanted],
                self.lowered,
                scorer=JaroWinkler.similarity,
                score_cutoff=_cutoff(threshold),
                dtype=numpy.float64,
            )[0]
        # An equal label always counts (at 1.0), whatever the threshold, as it always has.
        hits = numpy.flatnonzero(scores >= threshold)
        exact = self._positions.get(wanted, [])
        kept = numpy.union1d(hits, numpy.asarray(exact, dtype=hits.dtype)) if exact else hits
        ranked = numpy.where(numpy.isin(kept, exact), 1.0, scores[kept]) if exact else scores[kept]
        if limit is not None and len(kept) > _SHORTLIST * limit:
            # Only the best rows can be chosen: keep every row scoring at least the shortlist's
            # lowest (ties included, so label order among equals survives), then sort those.
            floor = -numpy.partition(-ranked, _SHORTLIST * limit - 1)[_SHORTLIST * limit - 1]
            best = numpy.flatnonzero(ranked >= floor)
            rows = self._ranked(kept[best], ranked[best], scores, wanted, limit)
            if len({c.iri for c in rows}) >= limit:
                return rows
        return self._ranked(kept, ranked, scores, wanted, limit)

    def _ranked(self, kept: Any, ranked: Any, scores: Any, wanted: str, limit: int | None) -> list[Candidate]:
        order = kept[numpy.argsort(-ranked, kind="stable")]
        out: list[Candidate] = []
        seen: set[str] = set()
        for i in order.tolist():
            iri = self.iris[i]
            if self.lowered[i] == wanted:
                out.append(Candidate(iri, 1.0, "canonical_name:exact"))
            else:
                score = float(scores[i])
                out.append(Candidate(iri, score, f"canonical_name:jaro_winkler:{score:.2f}"))
            seen.add(iri)
            if limit is not None and len(seen) >= limit:
                break
        return out


def _cutoff(threshold: float) -> float:
    """rapidfuzz takes a cutoff in [0, 1]; a threshold outside it still filters afterwards."""
    return min(max(threshold, 0.0), 1.0)


def name_rows(
    db: Database, name: str, threshold: float, names: NameIndex | None = None, limit: int | None = None
) -> list[Candidate]:
    return (names or NameIndex.load(db)).rows(name, threshold, limit)


def merge(rows: list[Candidate], top_k: int) -> list[Candidate]:
    """Best first (stable: a vector row wins a tie), one row per IRI, at most ``top_k``."""
    kept: dict[str, Candidate] = {}
    for row in sorted(rows, key=lambda r: -r.score):
        kept.setdefault(row.iri, row)
    return list(kept.values())[:top_k]


def resolve(
    db: Database,
    provider: MiniLM | None,
    index: VectorIndex | None,
    name: str,
    properties: Mapping[str, Any],
    top_k: int,
    threshold: float,
    names: NameIndex | None = None,
) -> dict[str, Any]:
    candidates: list[Candidate] = []
    if top_k > 0:  # §5.8 rule 1: no candidates at all, not even an exact label
        if provider is not None and index is not None:
            candidates += vector_rows(db, provider, index, name, properties, top_k, threshold)
        candidates += name_rows(db, name, threshold, names, limit=top_k)
    chosen = merge(candidates, top_k)
    return {
        "has_matches": bool(chosen),
        "candidates": [{"iri": c.iri, "score": c.score, "matched_on": c.matched_on} for c in chosen],
        "count": len(chosen),
        # No attached layers exist in quipu: the vector half sees every layer the name half reads.
        "vector_scope": {"kind": "whole_store"},
    }
