"""``quipu_search`` (tools-search §5.1): the semantic, keyword and hybrid modes.

* semantic: cosine over the entities' vectors (one matrix product), filters applied before the
  cut so a small scope is never starved by a global top-N;
* keyword: bm25 over the keyword index (quipu/search/keyword.py);
* hybrid: both pools, bounded, fused by weight or reciprocal rank (quipu/search/fusion.py).
  ``alpha`` 1 and 0 are exactly the semantic and keyword answers.

Search.find checks the request here, then sends anchored calls (``anchor``) to
quipu/search/anchored.py, which re-ranks a text branch by graph distance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Connection

from quipu.errors import InvalidField
from quipu.search import content, keyword, limits, snippets
from quipu.search.graph_scope import GraphScope
from quipu.search.graph_scope import parse as parse_graph_scope
from quipu.store import graph_members
from quipu.store import vectors as store_vectors
from quipu.store.views import TemporalView
from quipu.times import normalise_valid_at

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from quipu.search.state import SearchState

MODES: Final = ("semantic", "keyword", "hybrid")
HYBRID_DISABLED: Final = "hybrid search is disabled ([quipu.search] hybrid = false)"
NAMED_GRAPHS_DISABLED: Final = (
    "explicit graph scope in semantic or hybrid search requires [quipu.search] named_graphs = true; "
    "embed the named-only entities first (quipu_embed_backfill_graph), then enable it"
)
FILTER_KEYS: Final = ("valid_at", "group_ids", "entity_type", "infer_types", "graph", "graphs", "all_graphs")


@dataclass(frozen=True)
class Filters:
    """What narrows a search besides its text: time, provenance group, type."""

    valid_at: str | None
    group_ids: list[str] | None  # None: no group scope
    entity_type: str | None
    infer_types: bool | None  # None: the mode's default


def check_request(body: Mapping[str, Any]) -> None:
    """What every ``quipu_search`` call must be, before its mode is chosen."""
    if not isinstance(body, Mapping):
        raise InvalidField("the request must be a JSON object", field="body")
    if body.get("structured_query") is not None or body.get("filters") is not None:
        raise InvalidField(
            "structured search is not available on this server ([quipu.search] structured = false)",
            field="structured_query" if body.get("structured_query") is not None else "filters",
        )


def text_search(service: SearchState, body: Mapping[str, Any], *, limit: int | None = None) -> dict[str, Any]:
    """The text branches (dispatch steps 4 to 7); ``limit`` overrides the request's clamped limit
    (anchored search asks for its own candidate pool)."""
    settings = service.settings
    mode = body.get("mode")
    if mode is None:
        mode = "semantic" if settings.mode == "hybrid" and not settings.hybrid else settings.mode
    if mode not in MODES:
        raise InvalidField("mode must be semantic, keyword, or hybrid", field="mode")
    alpha = _number(body, "alpha", settings.alpha)
    if not 0.0 <= alpha <= 1.0:
        raise InvalidField("'alpha' must be a number in [0, 1]", field="alpha")
    fusion = body.get("fusion", settings.fusion)
    if fusion not in ("weighted", "rrf"):
        raise InvalidField("'fusion' must be weighted or rrf", field="fusion")
    rrf_k = _number(body, "rrf_k", settings.rrf_k)
    if rrf_k <= 0:
        raise InvalidField("'rrf_k' must be a positive number", field="rrf_k")
    explain = flag(body, "explain")
    if mode == "hybrid" and not settings.hybrid:
        raise InvalidField(HYBRID_DISABLED, field="mode")
    wanted = limit if limit is not None else clamp(service, body.get("limit"), "limit")
    if mode == "semantic" or (mode == "hybrid" and alpha == 1.0):
        return semantic_response(service, body, limit=wanted, explain=explain)
    if mode == "keyword" or alpha == 0.0:
        return keyword_response(service, body, limit=wanted, explain=explain)
    return hybrid_response(service, body, alpha=alpha, fusion=fusion, rrf_k=rrf_k, explain=explain)


# -- request parsing -----------------------------------------------------------------------------


def clamp(service: SearchState, value: object, field: str) -> int:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidField(f"'{field}' must be an integer", field=field)
    return limits.clamp_limit(service.settings, value)


def _number(body: Mapping[str, Any], field: str, default: float) -> float:
    value = body.get(field)
    if value is None:
        return float(default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidField(f"'{field}' must be a finite number", field=field)
    return float(value)


def flag(body: Mapping[str, Any], field: str, default: bool = False) -> bool:
    value = body.get(field)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidField(f"'{field}' must be a boolean", field=field)
    return value


def filters(body: Mapping[str, Any]) -> Filters:
    valid_at = body.get("valid_at")
    if valid_at is not None and not isinstance(valid_at, str):
        raise InvalidField("'valid_at' must be an ISO-8601 string", field="valid_at")
    groups = body.get("group_ids")
    if groups is not None and not isinstance(groups, list):
        raise InvalidField("'group_ids' must be an array of strings", field="group_ids")
    entity_type = body.get("entity_type")
    if entity_type is not None and not isinstance(entity_type, str):
        raise InvalidField("'entity_type' must be an IRI string", field="entity_type")
    infer = body.get("infer_types")
    if infer is not None and not isinstance(infer, bool):
        raise InvalidField("'infer_types' must be a boolean", field="infer_types")
    group_ids = [g for g in groups if isinstance(g, str)] if groups else None
    return Filters(normalise_valid_at(valid_at), group_ids or None, entity_type, infer)


def query_vector(service: SearchState, body: Mapping[str, Any]) -> NDArray[np.float32]:
    """The caller's ``embedding``, else the provider's vector of ``query`` (taken before any store
    read: the model never runs while a snapshot is held)."""
    import numpy as np

    embedding, query = body.get("embedding"), body.get("query")
    if embedding is not None:
        if (
            not isinstance(embedding, list)
            or not embedding
            or not all(
                isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in embedding
            )
        ):
            raise InvalidField("'embedding' must be a non-empty array of finite numbers", field="embedding")
        return np.asarray(embedding, dtype=np.float32)
    if query is None:
        raise InvalidField("missing 'embedding' array or 'query' text parameter", field="query")
    if not isinstance(query, str):
        raise InvalidField("'query' must be a string", field="query")
    model = service.provider()
    if model is None:
        from quipu.search.state import NO_PROVIDER

        raise InvalidField(NO_PROVIDER, field="query")
    return model.embed_text(query)


def allow_list(
    service: SearchState, conn: Connection, f: Filters, scope: GraphScope, *, infer: bool
) -> set[int] | None:
    """Entity ids passing the group and type scopes (None: no such scope)."""
    from quipu.search import scopes

    allowed: set[int] | None = None
    if f.group_ids is not None:
        allowed = scopes.group_members(service.db, conn, list[object](f.group_ids), f.valid_at)
    if f.entity_type is not None:
        typed = scopes.typed_members(service.db, conn, f.entity_type, f.valid_at, infer=infer)
        allowed = typed if allowed is None else allowed & typed
    return allowed


def finish(
    service: SearchState, conn: Connection, rows: list[dict[str, Any]], verbose: bool
) -> list[dict[str, Any]]:
    """Results as the caller sees them: internal ids dropped, IRIs compacted unless ``verbose``."""
    compact: Callable[[str], str] | None = None
    if not verbose and rows:
        from quipu.search.compaction import compactor

        compact = compactor(service.db, conn)
    for row in rows:
        row.pop("entity_id", None)
        if compact is not None:
            row["entity"] = compact(row["entity"])
    return rows


def explained(rows: list[dict[str, Any]], body: Mapping[str, Any]) -> None:
    """The ``explain`` block of a pure-mode row (§5.1.9), and a text snippet where none is set."""
    applied = {key: body[key] for key in FILTER_KEYS if body.get(key) is not None}
    query = body.get("query") if isinstance(body.get("query"), str) else None
    for row in rows:
        row["explain"] = {
            "cosine": row.get("similarity"),
            "bm25": row.get("bm25"),
            "fused_score": row["score"],
            "matched_fields": row.get("matched_fields", []),
            "applied_filters": applied,
        }
        if "snippet" not in row:
            row["snippet"] = snippets.snippet(row.get("text") or "", query)


# -- semantic ------------------------------------------------------------------------------------


def semantic_response(
    service: SearchState, body: Mapping[str, Any], *, limit: int, explain: bool
) -> dict[str, Any]:
    ranking = body.get("ranking", "semantic")
    if ranking not in ("semantic", "content"):
        raise InvalidField("ranking must be 'content' or 'semantic'", field="ranking")
    f = filters(body)
    rows, scoped = semantic_rows(
        service, body, f, limit=limit, ranking=ranking, verbose=flag(body, "verbose")
    )
    if explain:
        explained(rows, body)
    return {
        "results": rows,
        "count": len(rows),
        "scoped": scoped,
        "ranking": ranking,
        "embeddings": service.embeddings(),
    }


def semantic_rows(
    service: SearchState,
    body: Mapping[str, Any],
    f: Filters,
    *,
    limit: int,
    ranking: str = "semantic",
    verbose: bool = True,
    neighbourhood: set[int] | None = None,
    raw: bool = False,
) -> tuple[list[dict[str, Any]], bool]:
    """The semantic branch's rows (§5.1.3) and whether a scope was requested; ``raw`` rows keep
    their ``entity_id`` and full IRIs (for anchored re-ranking)."""
    import numpy as np

    qvec = query_vector(service, body)
    with service.db.read() as conn:
        scope = parse_graph_scope(service.db, conn, body)
        if scope.explicit:
            if not service.settings.named_graphs:
                raise InvalidField(NAMED_GRAPHS_DISABLED, field="graph")
            if ranking == "content":
                raise InvalidField(
                    "explicit graph scope currently supports semantic or keyword ranking, not ROOT "
                    "content/anchor ranking",
                    field="ranking",
                )
        infer = True if f.infer_types is None else f.infer_types
        allowed = allow_list(service, conn, f, scope, infer=infer)
        if scope.explicit:
            view = TemporalView.at(valid_at=f.valid_at, graphs=scope.ids)
            members = graph_members.members(conn, view)
            allowed = members if allowed is None else allowed & members
        if neighbourhood is not None:
            allowed = neighbourhood if allowed is None else allowed & neighbourhood
        allowed_ids = None if allowed is None else np.fromiter(allowed, dtype=np.int64, count=len(allowed))
        want = limits.oversample(service.settings, limit)
        ids, sims = _rank(
            service, conn, qvec, want, allowed_ids, include_named_only=scope.explicit, valid_at=f.valid_at
        )
        stored = store_vectors.for_entities(conn, ids, f.valid_at)
        iris = service.db.terms.iris(conn, [i for i in ids if i in stored])
        rows: list[dict[str, Any]] = []
        for entity_id, similarity in zip(ids, sims, strict=True):
            vector = stored.get(entity_id)
            if vector is None:  # closed since it was ranked: the row read back must be the row scored
                continue
            rows.append(
                {
                    "entity": iris[entity_id],
                    "entity_id": entity_id,
                    "text": vector.text,
                    "score": similarity,
                    "similarity": similarity,
                    "ranking_reason": "semantic",
                    "source": "knowledge",
                    "valid_from": vector.valid_from,
                    "valid_to": vector.valid_to,
                }
            )
        if ranking == "content":
            content.demote(service, conn, rows, body.get("query"), f.valid_at)
        rows.sort(key=lambda r: -r["score"])  # stable: equal scores keep the ranking's order
        rows = rows[:limit]
        if scope.explicit:
            _scope_graphs(conn, rows, scope, f.valid_at)
        scoped = f.group_ids is not None or f.entity_type is not None or scope.explicit
        return (rows if raw else finish(service, conn, rows, verbose)), scoped


def _rank(
    service: SearchState,
    conn: Connection,
    qvec: NDArray[np.float32],
    want: int,
    allowed_ids: NDArray[np.int64] | None,
    *,
    include_named_only: bool,
    valid_at: str | None,
) -> tuple[list[int], list[float]]:
    import numpy as np

    from quipu.search import vectors

    if valid_at is None:
        index = service.index
        index.refresh(conn)
        ranked = index.rank(qvec, want, include_named_only=include_named_only, allowed_ids=allowed_ids)
    else:  # a past instant: the vectors live then, ranked the same way
        rows = [r for r in store_vectors.live_at(conn, valid_at) if include_named_only or not r.named_only]
        ids = np.fromiter((r.entity_id for r in rows), dtype=np.int64, count=len(rows))
        stored_dim = len(rows[0].embedding) // 4 if rows else len(qvec)
        matrix = (
            np.frombuffer(b"".join(r.embedding for r in rows), dtype="<f4").reshape(len(rows), stored_dim)
            if rows
            else np.zeros((0, len(qvec)), dtype=np.float32)
        )
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
        mask = None if allowed_ids is None else np.isin(ids, allowed_ids)
        ranked = vectors.rank(matrix, norms, ids, qvec, want, mask)
    return [int(i) for i in ranked.entity_ids], [float(s) for s in ranked.similarities]


def _scope_graphs(
    conn: Connection, rows: list[dict[str, Any]], scope: GraphScope, valid_at: str | None
) -> None:
    view = TemporalView.at(valid_at=valid_at, graphs=scope.ids)
    member_of = graph_members.graphs_of(conn, view, [r["entity_id"] for r in rows])
    for row in rows:
        found = member_of.get(row["entity_id"], [])
        row["graph"] = scope.iris[found[0]] if found else None
        row["graphs"] = [scope.iris[g] for g in found]


# -- keyword ---------------------------------------------------------------------------------------


def keyword_response(
    service: SearchState, body: Mapping[str, Any], *, limit: int, explain: bool
) -> dict[str, Any]:
    rows, scoped, infer = keyword_rows(
        service, body, limit=limit, explain=explain, verbose=flag(body, "verbose")
    )
    if explain:
        explained(rows, body)
    return {
        "count": len(rows),
        "results": rows,
        "scoped": scoped,
        "ranking": "keyword",
        "indexed_types": "asserted",
        "infer_types": infer,
        "embeddings": service.embeddings(),
    }


def keyword_rows(
    service: SearchState,
    body: Mapping[str, Any],
    *,
    limit: int,
    explain: bool,
    verbose: bool = True,
    infer_types: bool | None = None,
) -> tuple[list[dict[str, Any]], bool, bool]:
    """The keyword branch's rows (§5.1.4), whether a scope was requested, and ``infer_types``."""
    db = service.db
    with db.read() as conn:
        scope = parse_graph_scope(db, conn, body)
    if not service.settings.keyword:
        raise InvalidField(keyword.DISABLED, field="mode")
    f = filters(body)
    ranking = body.get("ranking", "semantic")
    if body.get("embedding") is not None or body.get("anchor") is not None or ranking != "semantic":
        raise InvalidField("keyword mode does not accept embedding, anchor, or content ranking", field="mode")
    query = body.get("query")
    if not isinstance(query, str):
        raise InvalidField("keyword mode requires query text", field="query")
    infer = infer_types if infer_types is not None else bool(f.infer_types)
    with db.read() as conn:
        allowed = allow_list(service, conn, f, scope, infer=infer)
    rows = keyword.search(
        db,
        scope,
        query,
        limit=limit,
        valid_at=f.valid_at,
        allowed=(lambda e: True) if allowed is None else allowed.__contains__,
        explain=explain,
        timeout_ms=service.settings.query_timeout_ms or None,
    )
    scoped = f.group_ids is not None or f.entity_type is not None or scope.explicit
    with db.read() as conn:
        return finish(service, conn, rows, verbose), scoped, infer


# -- hybrid ----------------------------------------------------------------------------------------

_FROM_KEYWORD: Final = (
    "text", "snippet", "matched_fields", "language", "datatype", "type_iri", "graph", "graphs", "plane",
    "valid_from", "valid_to",
)  # fmt: skip


def hybrid_response(
    service: SearchState, body: Mapping[str, Any], *, alpha: float, fusion: str, rrf_k: float, explain: bool
) -> dict[str, Any]:
    """Fusion of bounded semantic and keyword pools (§5.1.5, §6.3)."""
    from quipu.search import fusion as fuse

    if body.get("anchor") is not None or body.get("ranking", "semantic") != "semantic":
        raise InvalidField("hybrid fusion does not accept anchor or content ranking", field="mode")
    if body.get("infer_types") not in (None, True):
        raise InvalidField("hybrid fusion needs infer_types true (or absent)", field="infer_types")
    limit = clamp(service, body.get("limit"), "limit")
    if limit > 1000:
        raise InvalidField("intermediate hybrid limit must not exceed 1000", field="limit")
    settings = service.settings
    pool = max(limit, min(limits.oversample(settings, limit), min(settings.max_limit, 1000)))
    f = filters(body)
    lexical_body = {k: v for k, v in body.items() if k != "embedding"}
    keyword_pool, _, _ = keyword_rows(service, lexical_body, limit=pool, explain=True, infer_types=True)
    semantic_pool, scoped = semantic_rows(service, body, f, limit=pool)
    fused = fuse.fuse(semantic_pool, keyword_pool, alpha=alpha, method=fusion, rrf_k=rrf_k, limit=limit)  # type: ignore[arg-type]
    by_semantic = {r["entity"]: r for r in semantic_pool}
    by_keyword = {r["entity"]: r for r in keyword_pool}
    applied = {key: body[key] for key in FILTER_KEYS if body.get(key) is not None}
    query = body.get("query") if isinstance(body.get("query"), str) else None
    rows = []
    for item in fused:
        s_row, k_row = by_semantic.get(item.entity), by_keyword.get(item.entity)
        first = s_row if item.semantic_rank is not None and (
            item.keyword_rank is None or item.semantic_rank <= item.keyword_rank
        ) else k_row  # fmt: skip
        row = dict(first or {})
        if k_row is not None:
            row.update({key: k_row[key] for key in _FROM_KEYWORD if key in k_row})
        row.update(
            score=item.score,
            similarity=s_row["similarity"] if s_row else None,
            bm25=k_row["bm25"] if k_row else None,
            ranking_reason="hybrid",
        )
        if explain:
            row["explain"] = {
                "cosine": row["similarity"],
                "bm25": row["bm25"],
                "fused_score": item.score,
                "semantic_rank": item.semantic_rank,
                "keyword_rank": item.keyword_rank,
                "matched_fields": row.get("matched_fields", []),
                "applied_filters": applied,
            }
            row.setdefault("snippet", snippets.snippet(row.get("text") or "", query))
        else:
            row.pop("snippet", None)
            row.pop("matched_fields", None)
        rows.append(row)
    if not flag(body, "verbose") and rows:
        with service.db.read() as conn:
            from quipu.search.compaction import compactor

            compact = compactor(service.db, conn)
        for row in rows:
            row["entity"] = compact(row["entity"])
    return {
        "count": len(rows),
        "results": rows,
        "ranking": "hybrid",
        "scoped": scoped,
        "fusion": fusion,
        "alpha": alpha,
        "rrf_k": rrf_k,
        "candidate_limit": pool,
        "infer_types": True,
        "embeddings": service.embeddings(),
    }
