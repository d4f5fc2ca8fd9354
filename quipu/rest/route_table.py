"""Every route, classified read or write, in one table (tools-core §0.2, §5); and the read lane
each read waits in (quipu/rest/lanes.py).

Classification is by route, not by what a call does: ``/knot`` is a write even when it changes
nothing. ``create_app`` refuses to build an app with a route missing from this table, and a test
checks the table against the router in both directions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from quipu.errors import ConfigError

RouteClass = Literal["read", "write"]
READ: Final = "read"
WRITE: Final = "write"
Lane = Literal["point", "heavy"]
POINT: Final = "point"
HEAVY: Final = "heavy"

ROUTES: Final[dict[tuple[str, str], RouteClass]] = {
    # reads
    ("GET", "/query"): READ,
    ("POST", "/query"): READ,
    ("POST", "/export"): READ,
    ("POST", "/cord"): READ,
    ("POST", "/unravel"): READ,
    ("GET", "/entity"): READ,
    ("GET", "/entity/{iri:path}"): READ,
    ("POST", "/entity_history"): READ,
    ("GET", "/fragments"): READ,
    ("GET", "/transactions"): READ,
    ("GET", "/stats"): READ,
    ("GET", "/health"): READ,
    ("GET", "/version"): READ,
    ("POST", "/validate"): READ,
    ("POST", "/proposals"): READ,
    ("POST", "/rule/query"): READ,  # tools-core §1.2: evidence is only read
    ("POST", "/policy/check"): READ,  # tools-graphs-governance §5.1: PC-5, the check never writes
    ("POST", "/verdict/verify"): READ,  # §5.2
    ("POST", "/verifier/authorized"): READ,  # §5.3
    ("GET", "/workflow/capabilities"): READ,  # tools-core §4.4: open, and it grants nothing
    # cross-graph alignment (tools-graphs-governance §3.1, §3.2): propose reads two graphs, decide none
    ("POST", "/align/propose"): READ,
    ("POST", "/align/decide"): READ,
    ("POST", "/share"): READ,  # tools-graphs-governance §4.1: the share is returned, nothing written
    # §4.4: the merge's conflicts, written nowhere; a heavy-lane read (it exports all of ROOT)
    ("POST", "/merge/decisions"): READ,
    # acquisition (tools-graphs-governance §4.6, §4.7): whole graphs are returned, nothing written;
    # heavy-lane reads (they are not in LANES)
    ("POST", "/acquire"): READ,
    ("POST", "/acquire/composed"): READ,
    ("POST", "/explain"): READ,  # tools-graphs-governance §8.2 (the owl extra; 400 without it)
    # finding entities by name (tools-search §5.8-§5.10): heavy-lane reads that commit nothing
    ("POST", "/resolve"): READ,
    ("POST", "/spotlight"): READ,
    ("POST", "/reconcile"): READ,
    ("POST", "/search"): READ,  # tools-search §5.1: searches commit nothing
    ("POST", "/search/query"): READ,
    ("POST", "/hybrid_search"): READ,  # tools-search §5.2: SPARQL-scoped vector ranking
    # substring search and context (tools-search §5.3-§5.5, §5.7): heavy-lane scans
    ("POST", "/search_nodes"): READ,
    ("POST", "/search_facts"): READ,
    ("POST", "/context"): READ,
    ("POST", "/unified_search"): READ,
    # the graph registry and overlay composition (tools-graphs-governance §1.1, §2.3)
    ("GET", "/graphs"): READ,
    ("POST", "/overlay/compose"): READ,
    # named questions (tools-search §5.16, §5.17): they read the stored registry, never write it
    ("POST", "/ask"): READ,
    ("POST", "/cooccurrence"): READ,
    # golden paths (tools-graphs-governance §6.1, §6.2): the cone and the backtest read ROOT only
    ("POST", "/path/cone"): READ,
    ("POST", "/path/backtest"): READ,
    # graph analytics (tools-search §5.13, §5.15): the node-link view and the report
    ("POST", "/graph"): READ,
    ("GET", "/report"): READ,
    ("POST", "/report"): READ,
    # event feeds (tools-core §1.11): a page never commits a cursor
    ("GET", "/events"): READ,
    ("GET", "/events/stream"): READ,  # its REST-only SSE replay
    # the change feed (tools-core §1.10) and its REST-only SSE replay
    ("GET", "/changes"): READ,
    ("GET", "/changes/stream"): READ,
    # logic memory reads (quipu/logic/tools.json: read_only)
    ("POST", "/logic/echo"): READ,
    ("POST", "/logic/query_logic"): READ,
    ("POST", "/logic/trace_dependency"): READ,
    ("POST", "/logic/verify_consistency"): READ,
    ("POST", "/logic/explain_why"): READ,
    ("POST", "/logic/find_predicate_references"): READ,
    ("POST", "/logic/get_kb_overview"): READ,
    ("POST", "/logic/get_knowledge_schema"): READ,
    ("POST", "/logic/get_belief_status"): READ,
    ("POST", "/logic/get_justification"): READ,
    ("POST", "/logic/list_assumptions"): READ,
    ("POST", "/logic/list_snapshots"): READ,
    ("POST", "/logic/get_persistence_status"): READ,
    ("POST", "/logic/list_memories"): READ,
    # writes
    ("POST", "/knot"): WRITE,
    ("POST", "/retract"): WRITE,
    ("POST", "/set"): WRITE,
    ("POST", "/update"): WRITE,
    ("POST", "/reason"): WRITE,  # tools-core §3.11: derivations are written
    ("POST", "/ontology"): WRITE,  # §8.1: every action, list included (the owl extra)
    ("POST", "/shapes"): WRITE,
    ("POST", "/retract/source"): WRITE,
    ("POST", "/episode"): WRITE,
    ("POST", "/episodes/complete"): WRITE,
    ("POST", "/episode/retract"): WRITE,
    ("POST", "/knot/stage"): WRITE,
    ("POST", "/knot/promote"): WRITE,
    ("POST", "/propose"): WRITE,
    ("POST", "/proposal/accept"): WRITE,
    ("POST", "/proposal/reject"): WRITE,
    ("POST", "/embed_backfill"): WRITE,  # vectors are persisted (tools-search §0.2)
    ("POST", "/embed_backfill/graph"): WRITE,  # tools-search §5.12: persists named-only vectors
    # named graphs (tools-graphs-governance §0.3): /datasets is a write for every action, and
    # /overlay/create because it writes the registry
    ("POST", "/graph/create"): WRITE,
    ("POST", "/graph/label"): WRITE,
    ("POST", "/graph/freeze"): WRITE,
    ("POST", "/graph/thaw"): WRITE,
    ("POST", "/datasets"): WRITE,
    ("POST", "/overlay/create"): WRITE,
    ("POST", "/overlay/write"): WRITE,
    ("POST", "/import"): WRITE,  # §4.2: stages the share in a graph of its own
    ("POST", "/import/promote"): WRITE,
    ("POST", "/merge/apply"): WRITE,  # §4.5: the merge, one ROOT transaction
    ("POST", "/align/apply"): WRITE,  # §3.3: it registers and writes the derived alignment graph
    # stored named queries (tools-search §5.18): a write for every action, list and get included
    ("POST", "/queries"): WRITE,
    # /project for every algorithm, since persist can write (tools-search §0.2); /impact because
    # it opens a speculative write that is always rolled back (tools-core §1.12)
    ("POST", "/project"): WRITE,
    ("POST", "/impact"): WRITE,
    # event cursors and subscriptions (tools-core §3.12, §3.13): /subscriptions for every
    # action, list included, since creating one makes the server send HTTP
    ("POST", "/events/commit"): WRITE,
    ("POST", "/subscriptions"): WRITE,
    # logic memory writes
    ("POST", "/logic/remember_fact"): WRITE,
    ("POST", "/logic/define_rule"): WRITE,
    ("POST", "/logic/rename_predicate"): WRITE,
    ("POST", "/logic/forget_fact"): WRITE,
    ("POST", "/logic/clear_context"): WRITE,
    ("POST", "/logic/update_fact"): WRITE,
    ("POST", "/logic/upsert_fact"): WRITE,
    ("POST", "/logic/assume_fact"): WRITE,
    ("POST", "/logic/retract_assumption"): WRITE,
    ("POST", "/logic/retract_assumptions"): WRITE,
    ("POST", "/logic/save_snapshot"): WRITE,
    ("POST", "/logic/restore_snapshot"): WRITE,
    ("POST", "/logic/create_memory"): WRITE,
    ("POST", "/logic/mount_memory"): WRITE,
    ("POST", "/logic/unmount_memory"): WRITE,
}

# Why a route is a write though some calls through it change nothing: said in the 403 of a
# read-only server, so the refusal of a harmless-looking call explains itself (tools-search §5.14).
WRITE_REASONS: Final[dict[tuple[str, str], str]] = {
    ("POST", "/project"): (
        "the whole route is a write because 'persist' can write, so read-only algorithms "
        "(stats, in_degree, pagerank, components, louvain, shortest_path) are refused here too"
    ),
    ("POST", "/impact"): "it opens a speculative write, always rolled back",
    ("POST", "/subscriptions"): (
        "every action, list included, is a write, since a subscription makes the server send HTTP"
    ),
    ("POST", "/queries"): (
        "every action, list and get included, is a write; read stored queries through quipu_ask's catalog"
    ),
}

# Served by FastAPI itself (OpenAPI and its documentation pages): reads.
BUILTIN: Final[frozenset[str]] = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


# Reads that do not wait in the heavy lane: point lookups, and (None) reads that never touch the
# store or that pick their lane per request (/query: by the shape of the query). Every other read
# is heavy, a read added later included, until it is listed here.
LANES: Final[dict[tuple[str, str], Lane | None]] = {
    ("GET", "/entity"): POINT,
    ("GET", "/entity/{iri:path}"): POINT,
    ("POST", "/entity_history"): POINT,
    ("GET", "/stats"): POINT,  # cached per transaction head
    ("GET", "/graphs"): POINT,  # the registry: a few rows
    ("GET", "/events"): POINT,  # an index range of the event log
    ("POST", "/rule/query"): POINT,  # a few index probes about one statement
    ("POST", "/verdict/verify"): POINT,  # the verifier registry: a few rows
    ("POST", "/verifier/authorized"): POINT,
    ("GET", "/workflow/capabilities"): None,  # settings only: the store is not read
    ("POST", "/align/decide"): None,  # a pure function of the request: the store is not read
    ("GET", "/changes/stream"): None,  # each poll takes a heavy slot for its read only
    ("GET", "/events/stream"): None,  # each poll takes a point slot for its read only
    ("GET", "/health"): None,
    ("GET", "/version"): None,
    ("GET", "/query"): None,
    ("POST", "/query"): None,
}


def lane(method: str, template: str) -> Lane | None:
    """The lane a request of this route waits in; None for a write or a read that takes no slot
    here (quipu/rest/lanes.py)."""
    if template in BUILTIN or route_class(method, template) == WRITE:
        return None
    return LANES.get((method.upper(), template), HEAVY)


def route_class(method: str, template: str) -> RouteClass:
    if template in BUILTIN:
        return READ
    cls = ROUTES.get((method.upper(), template))
    if cls is None:
        # Unreachable for an app that passed check(): fail closed rather than serve a write.
        raise ConfigError(f"route {method} {template} is not classified read or write")
    return cls


def unclassified(served: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """Served routes this table does not classify (``create_app`` refuses to build with any)."""
    return sorted({(m, p) for m, p in served if p not in BUILTIN} - ROUTES.keys())


def served_routes(routes: Iterable[object]) -> set[tuple[str, str]]:
    """(method, path template) of every HTTP route in a router's list."""
    out: set[tuple[str, str]] = set()
    for route in routes:
        path = getattr(route, "path", None)
        for method in getattr(route, "methods", None) or ():
            if method != "HEAD" and isinstance(path, str):
                out.add((method, path))
    return out
