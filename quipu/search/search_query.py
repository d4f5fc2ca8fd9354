"""``quipu_search_query`` (tools-search §5.6): search-rooted SPARQL.

Keyword and/or semantic search hits become the seeds of one variable: they are joined, as a
``VALUES`` block, with the SELECT's root pattern below every solution modifier, so ORDER BY,
LIMIT, GROUP BY and aggregates apply after seeding. The query's shape is checked on rdflib's
algebra first (only basic graph patterns, GRAPH blocks and joins under the modifiers); the seeds
are then placed as the first element of the WHERE group, which is that algebra's
``Join(VALUES, pattern)``, and the query runs as ``quipu_query`` runs it, compiled to SQL.

Seeds are bounded retrieval candidates: an empty result does not prove absence
(``search_complete`` is always false).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from quipu.errors import InvalidField
from quipu.store import values

if TYPE_CHECKING:
    from quipu.search.state import SearchState

RRF_K: Final = 60
RETRIEVAL_MODES: Final = ("keyword", "semantic", "hybrid")
SCOPE_NOTE: Final = (
    "Seeds are the best-ranked search hits, at most seed_limit of them, not every entity that "
    "matches: an empty or short result does not prove that nothing else matches."
)
# Solution modifiers the seeds go below (tools-search §5.6 validation).
_MODIFIERS: Final = frozenset(
    {"Project", "Distinct", "Reduced", "Slice", "OrderBy", "Group", "AggregateJoin", "Filter", "Extend"}
)
_PATTERN: Final = frozenset({"BGP", "Graph", "Join"})
_OPTION_TYPES: Final[dict[str, type]] = {
    "graph": str,
    "fork": str,
    "entailment": str,
    "verbose": bool,
    "row_labels": bool,
    "include_kinds": list,
}
_REFUSED_OPTIONS: Final = ("query", "tx", "valid_at", "federated")
_VARIABLE: Final = re.compile(r"[A-Za-z_\u00C0-\uFFFF][A-Za-z0-9_\u00B7\u00C0-\uFFFF]*")


def run(service: SearchState, body: Mapping[str, Any]) -> dict[str, Any]:
    request = _validated(body)
    seeds, candidates = _seeds(service, request)
    kept = seeds[: request["seed_limit"]]
    text = with_seeds(request["sparql"], request["seed_variable"], [s["entity"] for s in kept])
    options = request["query_options"]
    result = _query(service, text, request["valid_at"], options)
    return {
        "seeds": kept,
        "seed_count": len(kept),
        "seed_limit": request["seed_limit"],
        "candidate_count": candidates,
        "seeds_truncated": candidates > request["seed_limit"],
        "retrieval_mode": request["mode"],
        "rrf_k": RRF_K,
        "lexical_plane": "ROOT",
        "search_complete": False,
        "scope_note": SCOPE_NOTE,
        "result": result,
    }


# -- validation ------------------------------------------------------------------------------------


def _validated(body: Mapping[str, Any]) -> dict[str, Any]:
    """Every check before any search runs (each a 400 naming its field)."""
    mode = body.get("mode", "keyword")
    if mode not in RETRIEVAL_MODES:
        raise InvalidField("mode must be keyword, semantic, or hybrid", field="mode")
    seed_limit = body.get("seed_limit", 20)
    if isinstance(seed_limit, bool) or not isinstance(seed_limit, int) or not 1 <= seed_limit <= 100:
        raise InvalidField("'seed_limit' must be an integer in 1..100", field="seed_limit")
    variable = body.get("seed_variable", "s")
    if not isinstance(variable, str) or not _VARIABLE.fullmatch(variable):
        raise InvalidField(
            "'seed_variable' must be a SPARQL variable name without '?'", field="seed_variable"
        )
    sparql = body.get("sparql")
    if not isinstance(sparql, str) or not sparql.strip():
        raise InvalidField("missing 'sparql' parameter (a SELECT query)", field="sparql")
    check_shape(sparql, variable)
    embedding = body.get("embedding")
    if embedding is not None:
        if not isinstance(embedding, list) or not embedding or not all(_finite(x) for x in embedding):
            raise InvalidField("'embedding' must be a non-empty array of finite numbers", field="embedding")
        if mode == "keyword":
            raise InvalidField(
                "'embedding' is for the semantic retriever; keyword mode takes none", field="embedding"
            )
    valid_at = body.get("valid_at")
    if valid_at is not None and not isinstance(valid_at, str):
        raise InvalidField("'valid_at' must be a string", field="valid_at")
    options = body.get("query_options", {})
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise InvalidField("'query_options' must be an object", field="query_options")
    for key, value in options.items():
        if key in _REFUSED_OPTIONS:
            raise InvalidField(
                f"query_options.{key} is not accepted here"
                + ("; time travel is the top-level valid_at" if key == "valid_at" else ""),
                field=f"query_options.{key}",
            )
        wanted = _OPTION_TYPES.get(key)
        if wanted is None:
            raise InvalidField(f"unknown query option {key!r}", field=f"query_options.{key}")
        strings = not isinstance(value, list) or all(isinstance(v, str) for v in value)
        if not isinstance(value, wanted) or not strings:
            raise InvalidField(f"query_options.{key} has the wrong type", field=f"query_options.{key}")
    return {
        "mode": mode,
        "seed_limit": seed_limit,
        "seed_variable": variable,
        "sparql": sparql,
        "embedding": embedding,
        "valid_at": valid_at,
        "query": body.get("query"),
        "entity_type": body.get("entity_type"),
        "group_ids": body.get("group_ids"),
        "query_options": dict(options),
    }


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def check_shape(sparql: str, variable: str) -> None:
    """A SELECT whose root pattern (under its modifiers) is only basic graph patterns, GRAPH
    blocks and joins, with the seed variable in scope there."""
    from rdflib.plugins.sparql.algebra import translateQuery
    from rdflib.plugins.sparql.parser import parseQuery

    try:
        algebra = translateQuery(parseQuery(sparql)).algebra
    except Exception as exc:  # pyparsing's and rdflib's errors have no common base
        raise InvalidField(f"SPARQL: {exc}", field="sparql") from None
    if algebra.name != "SelectQuery":
        raise InvalidField("the SPARQL must be a SELECT query", field="sparql")
    if _count(algebra, "Project") > 1:
        raise InvalidField("subqueries are not supported: the SELECT may have one projection", field="sparql")
    node = algebra["p"]
    while getattr(node, "name", None) in _MODIFIERS:
        node = node["p"]
    _only_joins(node)
    in_scope = {str(v) for v in getattr(node, "_vars", ())}
    if variable not in in_scope:
        raise InvalidField(
            f"the seed variable ?{variable} is not in scope in the query's root pattern",
            field="seed_variable",
        )


def _count(node: Any, name: str) -> int:
    if not hasattr(node, "name"):
        return 0
    here = int(node.name == name)
    return here + sum(_count(node[k], name) for k in ("p", "p1", "p2") if k in node)


def _only_joins(node: Any) -> None:
    from rdflib.paths import Path

    kind = getattr(node, "name", None)
    if kind not in _PATTERN:
        shown = {"LeftJoin": "OPTIONAL", "Union": "UNION", "Minus": "MINUS", "values": "VALUES"}.get(
            kind or "", kind
        )
        raise InvalidField(
            f"the query's root pattern may hold only basic graph patterns, GRAPH blocks and joins, not {shown}",
            field="sparql",
        )
    if kind == "BGP":
        for triple in node["triples"]:
            if any(isinstance(t, Path) for t in triple):
                raise InvalidField("the query's root pattern may not hold property paths", field="sparql")
    for key in ("p", "p1", "p2"):
        if key in node:
            _only_joins(node[key])


# -- retrieval and fusion ------------------------------------------------------------------------------


def _seeds(service: SearchState, request: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """Hits of each active retriever fused by unweighted reciprocal rank (k = 60)."""
    ranks: dict[str, dict[str, int]] = {}
    retrievers = ["keyword", "semantic"] if request["mode"] == "hybrid" else [request["mode"]]
    for retriever in retrievers:
        body: dict[str, Any] = {"mode": retriever, "limit": request["seed_limit"], "verbose": True}
        for key in ("query", "valid_at", "entity_type", "group_ids"):
            if request[key] is not None:
                body[key] = request[key]
        if retriever == "semantic" and request["embedding"] is not None:
            body["embedding"] = request["embedding"]
        hits = service.find(body)["results"]
        for rank, hit in enumerate(hits, 1):
            iri = values.check_iri(hit["entity"], "seed")  # never interpolated unchecked
            ranks.setdefault(iri, {}).setdefault(retriever, rank)
    fused = sorted(
        ((sum(1 / (RRF_K + r) for r in by.values()), iri, by) for iri, by in ranks.items()),
        key=lambda row: (-row[0], row[1]),
    )
    seeds = [
        {
            "entity": iri,
            "rrf_score": score,
            "keyword_rank": by.get("keyword"),
            "semantic_rank": by.get("semantic"),
        }
        for score, iri, by in fused
    ]
    return seeds, len(seeds)


# -- the rewrite ---------------------------------------------------------------------------------------

_IRI_AT: Final = re.compile(r'<[^<>"{}|^`\\\x00-\x20]*>')


def with_seeds(sparql: str, variable: str, iris: list[str]) -> str:
    """``sparql`` with ``VALUES ?variable { <seeds> }`` as the first element of its WHERE group."""
    at = _where_brace(sparql)
    block = " VALUES ?" + variable + " { " + " ".join(f"<{iri}>" for iri in iris) + " } "
    return sparql[: at + 1] + block + sparql[at + 1 :]


def _where_brace(text: str) -> int:
    """Where the WHERE group opens: the first ``{`` outside strings, IRIs, comments and
    parentheses (a projected expression such as ``(EXISTS {…} AS ?x)`` sits in parentheses)."""
    i, depth, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if c in "'\"":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if text[i] == "\\" else 1
            i += len(quote)
            continue
        if c == "<":
            iri = _IRI_AT.match(text, i)
            if iri:
                i = iri.end()
                continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "{" and depth == 0:
            return i
        i += 1
    raise InvalidField("the query has no WHERE group", field="sparql")


def _query(service: SearchState, text: str, valid_at: str | None, options: dict[str, Any]) -> dict[str, Any]:
    from quipu.shacl import registry
    from quipu.sparql.engine import run_query
    from quipu.sparql.quipu_json import result_json

    if options.get("fork") is not None:
        raise InvalidField(f"unknown fork: {options['fork']}", field="query_options.fork")
    if options.get("include_kinds"):
        raise InvalidField(
            f"unknown graph kind: {options['include_kinds'][0]} (this build has no graph kinds)",
            field="query_options.include_kinds",
        )
    if options.get("row_labels"):
        raise InvalidField(
            "row_labels: no graph declares labels in this build", field="query_options.row_labels"
        )
    entailment = options.get("entailment")
    if entailment not in (None, "none", "rdfs"):
        raise InvalidField("query_options.entailment must be none or rdfs", field="query_options.entailment")
    settings = service.settings
    result = run_query(
        service.db,
        text,
        valid_at=valid_at,
        graph=options.get("graph"),
        max_rows=settings.max_sparql_rows,
        timeout_ms=settings.query_timeout_ms or None,
        max_join_rows=settings.max_join_rows or None,
        inference="rdfs" if entailment == "rdfs" else None,
    )
    return result_json(result, None if options.get("verbose") else registry.loaded_prefixes(service.db))
