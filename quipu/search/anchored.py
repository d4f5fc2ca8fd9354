"""Anchored ``quipu_search`` (tools-search §5.1.8): a semantic ranking re-ranked by graph distance.

The anchor is resolved to one entity and its ROOT neighbourhood walked (quipu/search/anchor.py).
Candidates come from the global semantic ranking and from the ranking restricted to the
neighbourhood, half the pool each, so a near entity can enter the results (the original only
re-orders the global best 200; this is a documented departure). ``anchor_mode`` then orders them.
Keyword mode and intermediate hybrid weights refuse an anchor; ``alpha`` 1 is semantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from quipu.errors import InvalidField
from quipu.rdfio.curie import PrefixMap
from quipu.search import anchor, modes
from quipu.search.graph_scope import parse as parse_graph_scope
from quipu.shacl.registry import open_sets

if TYPE_CHECKING:
    from quipu.search.state import SearchState

DISABLED: Final = "anchored search is disabled on this server ([quipu.search] anchored = false)"


def search(service: SearchState, body: Mapping[str, Any]) -> dict[str, Any]:
    settings = service.settings
    if not settings.anchored:
        raise InvalidField(DISABLED, field="anchor")
    with service.db.read() as conn:
        if parse_graph_scope(service.db, conn, body).explicit:
            raise InvalidField("anchored search currently supports ROOT graph only", field="graph")
    mode = body.get("mode") or (
        "semantic" if settings.mode == "hybrid" and not settings.hybrid else settings.mode
    )
    alpha = body.get("alpha", settings.alpha)
    if mode == "keyword" or (mode == "hybrid" and alpha == 0):
        raise InvalidField(
            "keyword mode does not accept embedding, anchor, or content ranking", field="anchor"
        )
    if mode == "hybrid" and alpha != 1:
        if not settings.hybrid:
            raise InvalidField(modes.HYBRID_DISABLED, field="mode")
        raise InvalidField("hybrid fusion does not accept anchor or content ranking", field="anchor")
    params = anchor.parse_anchor_params(body, max_limit=settings.max_limit)
    limit = modes.clamp(service, body.get("limit"), "limit")
    if limit > anchor.MAX_ANCHORED_LIMIT:
        raise InvalidField("anchored search limit must not exceed 1000", field="limit")
    text_body = {k: v for k, v in body.items() if k != "anchor"}
    text_body["mode"] = "semantic"
    f = modes.filters(text_body)
    pool, global_n, near_n = anchor.pool_sizes(limit, settings.oversample_factor, settings.max_limit)
    with service.db.read() as conn:
        expand = _expander(conn)
        anchor_id = anchor.resolve_anchor(
            service.db, conn, params.anchor, expand_curie=expand, valid_at=f.valid_at
        )
        near = anchor.walk(service.db, conn, anchor_id, params, f.valid_at, expand_curie=expand)
    ranking = text_body.get("ranking", "semantic")
    if ranking not in ("semantic", "content"):
        raise InvalidField("ranking must be 'content' or 'semantic'", field="ranking")
    everywhere, scoped = modes.semantic_rows(service, text_body, f, limit=global_n, ranking=ranking, raw=True)
    nearby, _ = modes.semantic_rows(
        service, text_body, f, limit=near_n, ranking=ranking, raw=True, neighbourhood=set(near.entity_ids)
    )
    candidates = anchor.merge_candidates(everywhere, nearby, pool=pool)
    rows = anchor.rerank(candidates, near, params, limit)
    with service.db.read() as conn:
        rows = modes.finish(service, conn, rows, verbose=modes.flag(body, "verbose"))
    if params.explain:
        modes.explained(rows, body)
    return {
        "results": rows,
        "count": len(rows),
        "scoped": scoped,
        "ranking": "anchored",
        "embeddings": service.embeddings(),
        "anchor": anchor.anchor_block(near, params),
    }


def _expander(conn: Any) -> anchor.ExpandCurie:
    """CURIE → IRI under the prefixes the loaded shape sets declare (None when it is not one)."""
    namespaces = PrefixMap.from_declarations(s.prefixes for s in open_sets(conn)).namespaces

    def expand(text: str) -> str | None:
        prefix, sep, local = text.partition(":")
        namespace = namespaces.get(prefix) if sep else None
        return None if namespace is None else namespace + local

    return expand
