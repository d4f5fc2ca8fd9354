"""Hybrid fusion of a semantic and a keyword pool (tools-search §6.3).

Each pool holds at most one row per entity, best first. ``weighted`` min-max normalises each
pool on its own (every row is 1.0 when all its scores are equal) and mixes them by ``alpha``;
``rrf`` adds ``alpha / (k + rank)`` terms. A side that lacks an entity adds 0. Ties go to the
smaller entity IRI. The scores are relative to these bounded pools only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class Fused:
    entity: str
    score: float
    semantic_rank: int | None  # 1-based
    keyword_rank: int | None


def _normalised(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    if not rows:
        return {}
    scores = [float(r["score"]) for r in rows]
    low, high = min(scores), max(scores)
    if high == low:
        return {r["entity"]: 1.0 for r in rows}
    return {r["entity"]: (float(r["score"]) - low) / (high - low) for r in rows}


def fuse(
    semantic: Sequence[dict[str, Any]],
    keyword: Sequence[dict[str, Any]],
    *,
    alpha: float,
    method: Literal["weighted", "rrf"],
    rrf_k: float,
    limit: int,
) -> list[Fused]:
    s_rank = {r["entity"]: i for i, r in enumerate(semantic, 1)}
    k_rank = {r["entity"]: i for i, r in enumerate(keyword, 1)}
    entities = list(dict.fromkeys([*s_rank, *k_rank]))
    if method == "weighted":
        s_norm, k_norm = _normalised(semantic), _normalised(keyword)
        score = {e: alpha * s_norm.get(e, 0.0) + (1 - alpha) * k_norm.get(e, 0.0) for e in entities}
    else:
        score = {
            e: (alpha / (rrf_k + s_rank[e]) if e in s_rank else 0.0)
            + ((1 - alpha) / (rrf_k + k_rank[e]) if e in k_rank else 0.0)
            for e in entities
        }
    ordered = sorted(entities, key=lambda e: (-score[e], e))[:limit]
    return [Fused(e, score[e], s_rank.get(e), k_rank.get(e)) for e in ordered]
