"""Anchored search (tools-search §5.1.8): rank text matches by their distance from one entity.

The pieces ``quipu_search`` composes:

1. ``parse_anchor_params`` validates the anchor fields of a request;
2. ``resolve_anchor`` turns the anchor text into exactly one entity (IRI, CURIE, exact label);
3. ``walk`` explores the anchor's ROOT neighbourhood with a deterministic 0-1 BFS;
4. ``pool_sizes`` and ``merge_candidates`` pool the text branch's global and
   neighbourhood-restricted rankings;
5. ``rerank`` orders those candidates by hops (``decay``, ``sort`` or ``filter``);
6. ``anchor_block`` is the response's ``anchor`` object.

Three things keep hop distance meaningful: typing, provenance and document-structure
predicates are not followed (through them everything is two hops from everything); a node with
more than 150 edges is reached but not expanded (a hub); ``owl:sameAs`` costs no hop, so
aliases are one node.

Candidate pooling is a departure from the original kept on purpose (spec errata, "Anchored
search"): the original re-orders only its best 200 unanchored candidates, so nearness to the
anchor never adds an entity. Here half the pool comes from the neighbourhood-restricted ranking,
and the ``anchor`` block says so with ``candidate_sources``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Connection

from quipu.errors import InvalidField
from quipu.store import neighbours
from quipu.store.database import Database
from quipu.store.views import TemporalView

MAX_HOPS_CAP: Final = 4
DEFAULT_MAX_HOPS: Final = 3
NODE_BUDGET: Final = 5000
HUB_DEGREE: Final = 150
MAX_ANCHORED_LIMIT: Final = 1000
MIN_POOL: Final = 200
MODES: Final = ("sort", "decay", "filter")
DIRECTIONS: Final = ("out", "in", "both")
CANDIDATE_SOURCES: Final = ("global", "neighbourhood")

RDF: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
PROV: Final = "http://www.w3.org/ns/prov#"
AEGIS: Final = "http://aegis.gastown.local/ontology/"
OWL_SAME_AS: Final = "http://www.w3.org/2002/07/owl#sameAs"
RDFS_LABEL: Final = RDFS + "label"

# Not followed unless `via` names them: typing, provenance, distinct-from assertions (two nodes
# that are NOT the same thing) and document structure.
DEFAULT_EXCLUDED: Final = (
    RDF + "type",
    RDFS + "subClassOf",
    PROV + "wasGeneratedBy",
    PROV + "wasDerivedFrom",
    PROV + "used",
    PROV + "wasAssociatedWith",
    PROV + "wasAttributedTo",
    AEGIS + "distinctFrom",
    AEGIS + "mentions",
    AEGIS + "inDocument",
    "http://quipu.dev/ns#distinctFrom",
    # tools-search §5.1.8 [recommended]: the distinct-from term quipu_reconcile writes
    "https://quipu.dev/ontology/distinctFrom",
)

Row = dict[str, Any]
ExpandCurie = Callable[[str], str | None]


# -- parameters ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnchorParams:
    """The validated anchor fields of one request (``max_hops`` already capped)."""

    anchor: str
    max_hops: int = DEFAULT_MAX_HOPS
    mode: str = "decay"
    decay: float = 0.5
    via: tuple[str, ...] | None = None
    direction: str = "both"
    explain: bool = False


def _shown(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _choice(body: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str) -> str:
    if name not in body:
        return default
    value = body[name]
    if not isinstance(value, str) or value not in allowed:
        listed = ", ".join(allowed[:-1]) + " or " + allowed[-1]
        raise InvalidField(f"{name} must be {listed}, not {_shown(value)}", field=name)
    return value


def parse_anchor_params(body: Mapping[str, Any], *, max_limit: int) -> AnchorParams:
    """The anchor fields of a ``quipu_search`` body, validated (400 naming the field).

    ``max_hops`` above 4 is capped silently (tools-search §5.1.12 rule 15). An integer ``limit``
    that stays above 1000 after the ``max_limit`` clamp is refused; other ``limit`` checks are
    the caller's."""
    anchor = body.get("anchor")
    if not isinstance(anchor, str) or not anchor.strip():
        raise InvalidField("anchor must be a non-empty string", field="anchor")

    max_hops = DEFAULT_MAX_HOPS
    if "max_hops" in body:
        value = body["max_hops"]
        if not _is_int(value) or value < 0:
            raise InvalidField(
                f"max_hops must be a non-negative integer, not {_shown(value)}", field="max_hops"
            )
        max_hops = min(value, MAX_HOPS_CAP)

    mode = _choice(body, "anchor_mode", MODES, "decay")

    decay = 0.5
    if "decay" in body:
        value = body["decay"]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not 0 < value <= 1:  # NaN and infinities fail the comparison
            raise InvalidField(f"decay must be a number in (0, 1], not {_shown(value)}", field="decay")
        decay = float(value)

    via: tuple[str, ...] | None = None
    if "via" in body:
        value = body["via"]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise InvalidField("via must be an array of non-empty predicate IRIs or CURIEs", field="via")
        via = tuple(value)

    direction = _choice(body, "direction", DIRECTIONS, "both")

    explain = body.get("explain", False)
    if not isinstance(explain, bool):
        raise InvalidField(f"explain must be a boolean, not {_shown(explain)}", field="explain")

    limit = body.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and min(limit, max_limit) > MAX_ANCHORED_LIMIT:
        raise InvalidField(
            f"anchored search limit must not exceed {MAX_ANCHORED_LIMIT}, not {limit}", field="limit"
        )
    return AnchorParams(anchor, max_hops, mode, decay, via, direction, explain)


# -- anchor resolution -----------------------------------------------------------------------


def resolve_anchor(
    db: Database,
    conn: Connection,
    text: str,
    *,
    expand_curie: ExpandCurie,
    valid_at: str | None,
) -> int:
    """The term id of the one entity ``text`` names: an IRI some ROOT statement (current, or
    live at ``valid_at``) has as subject or object; else the same for its CURIE expansion; else
    the subject of a plain-string ``rdfs:label`` equal to ``text``. None or several → 400."""
    view = TemporalView.at(valid_at=valid_at)
    expanded = expand_curie(text)
    for candidate in (text, expanded):
        if candidate is None:
            continue
        tid = db.terms.lookup(conn, (candidate,)).get(candidate)
        if tid is not None and neighbours.mentioned(conn, view, tid):
            return tid
    label = db.terms.lookup(conn, (RDFS_LABEL,)).get(RDFS_LABEL)
    found = [] if label is None else neighbours.subjects_with_string(conn, view, label, text, limit=6)
    if len(found) == 1:
        return found[0]
    shown = json.dumps(text)
    if not found:
        raise InvalidField(
            f"anchor {shown} is not an IRI, CURIE or exact label of any entity", field="anchor"
        )
    names = db.terms.iris(conn, found[:5])
    count = "6 or more entities" if len(found) > 5 else f"{len(found)} entities"
    listed = ", ".join(names[i] for i in found[:5])
    raise InvalidField(
        f"anchor {shown} is ambiguous: it is the label of {count} ({listed}); pass one IRI as anchor",
        field="anchor",
    )


# -- the neighbourhood walk ------------------------------------------------------------------


@dataclass(slots=True)
class Neighbourhood:
    """What the walk reached: each node's minimal hop count and one parent edge."""

    anchor_id: int
    anchor_iri: str
    hops: dict[int, int]
    # node -> (parent, predicate, outgoing?) along one shortest path from the anchor
    parents: dict[int, tuple[int, int, bool]]
    truncated_at_hop: int | None = None
    hubs_not_expanded: int = 0
    # IRIs of the reached nodes and of the predicates on their parent edges (with explain)
    names: dict[int, str] = field(default_factory=dict)

    @property
    def reached(self) -> int:
        return len(self.hops)

    @property
    def truncated(self) -> bool:
        return self.truncated_at_hop is not None

    @property
    def entity_ids(self) -> frozenset[int]:
        """The reached nodes: the ``allowed_ids`` of the neighbourhood-restricted ranking."""
        return frozenset(self.hops)

    def path(self, node: int) -> str | None:
        """One shortest path from the anchor, ``a -[p]-> b <-[q]- c``; None when unreached.
        Needs ``names`` (filled by ``walk`` when ``explain`` is asked)."""
        if node not in self.hops:
            return None
        name = self.names.get
        steps: list[str] = []
        while node in self.parents:
            parent, pred, out = self.parents[node]
            p, n = name(pred, f"ref:{pred}"), name(node, f"ref:{node}")
            steps.append(f"-[{p}]-> {n}" if out else f"<-[{p}]- {n}")
            node = parent
        steps.append(self.anchor_iri)
        return " ".join(reversed(steps))


def _predicate_ids(db: Database, conn: Connection, iris: Sequence[str], expand: ExpandCurie) -> set[int]:
    """Term ids of predicates named as IRIs or CURIEs (unknown ones match nothing)."""
    wanted: set[str] = set()
    for text in iris:
        wanted.add(text)
        expanded = expand(text)
        if expanded is not None:
            wanted.add(expanded)
    return set(db.terms.lookup(conn, wanted).values())


def walk(
    db: Database,
    conn: Connection,
    anchor_id: int,
    params: AnchorParams,
    valid_at: str | None,
    *,
    expand_curie: ExpandCurie,
    budget: int = NODE_BUDGET,
    hub_degree: int = HUB_DEGREE,
) -> Neighbourhood:
    """The anchor's neighbourhood over ROOT statements (current, or live at ``valid_at``).
    ``via`` entries are read as IRIs and as CURIEs through ``expand_curie``; ``budget`` and
    ``hub_degree`` are the spec's 5000 nodes and 150 edges (tests lower them).

    A 0-1 BFS run one hop ring at a time: the nodes of a ring are expanded together, with one
    edge query per direction, and the ``owl:sameAs`` aliases they reach (zero cost, same ring)
    are expanded in a further batch of the same ring. Within a batch nodes are taken in the order
    they were reached and their edges by (neighbour, predicate, incoming first), so the walk,
    the parents and any truncation are deterministic. ``owl:sameAs`` is followed both ways
    whatever ``direction`` says: aliases are one node."""
    view = TemporalView.at(valid_at=valid_at)
    same_as = set(db.terms.lookup(conn, (OWL_SAME_AS,)).values())
    if params.via is not None:
        allowed: set[int] | None = _predicate_ids(db, conn, params.via, expand_curie)
        excluded: set[int] = set()
    else:
        allowed, excluded = None, set(db.terms.lookup(conn, DEFAULT_EXCLUDED).values())
    outgoing, incoming = params.direction != "in", params.direction != "out"
    max_hops = min(params.max_hops, MAX_HOPS_CAP)

    hops: dict[int, int] = {anchor_id: 0}
    parents: dict[int, tuple[int, int, bool]] = {}
    truncated: list[int] = []  # hops at which the walk lost something
    hubs = 0

    def read(nodes: list[int], cap: int, aliases_only: bool) -> dict[int, list[neighbours.Edge]]:
        found: dict[int, list[neighbours.Edge]] = {}
        if not aliases_only:
            found = neighbours.edges(conn, view, nodes, outgoing=outgoing, incoming=incoming, cap=cap)
        if same_as and (aliases_only or not (outgoing and incoming)):
            # Aliases are one node, so owl:sameAs is followed both ways whatever `direction`.
            aliases = neighbours.edges(
                conn,
                view,
                nodes,
                outgoing=aliases_only or not outgoing,
                incoming=aliases_only or not incoming,
                cap=cap,
                predicates=same_as,
            )
            for node, more in aliases.items():
                found[node] = sorted(set(found.get(node, [])) | set(more))
        return found

    level = 0
    batch = [anchor_id]
    next_ring: dict[int, None] = {}  # nodes reached one hop further, in order reached
    first = True
    while batch:
        at_limit = level >= max_hops
        if first:
            # The anchor is always expanded, up to budget + 1 edges.
            cap = budget + 1
            found = read(batch, cap, at_limit)
            if len(found.get(anchor_id, ())) >= cap:
                truncated.append(min(level + 1, max_hops))
            first = False
        else:
            found = read(batch, hub_degree + 1, at_limit)
            hub_nodes = [n for n in batch if len(found.get(n, ())) > hub_degree]
            if hub_nodes:
                # A hub is reached, not expanded; its aliases still collapse into it.
                hubs += len(hub_nodes)
                aliases = read(hub_nodes, hub_degree + 1, True)
                for n in hub_nodes:
                    found[n] = aliases.get(n, [])
                    if len(found[n]) > hub_degree:
                        truncated.append(level)
        same_ring: list[int] = []
        for node in batch:
            here = hops[node]
            for other, pred, out in found.get(node, ()):
                free = pred in same_as
                if not free and (pred in excluded or (allowed is not None and pred not in allowed)):
                    continue
                cost = here if free else here + 1
                if cost > max_hops:
                    continue
                known = hops.get(other)
                if known is not None and known <= cost:
                    continue
                if known is None and len(hops) >= budget:
                    truncated.append(cost)
                    continue
                hops[other] = cost
                parents[other] = (node, pred, out)
                if free:
                    same_ring.append(other)
                    next_ring.pop(other, None)  # found one hop nearer than first thought
                else:
                    next_ring[other] = None
        if same_ring:
            batch = same_ring
        else:
            level += 1
            batch = list(next_ring)
            next_ring = {}

    anchor_iri = db.terms.iris(conn, (anchor_id,))[anchor_id]
    names: dict[int, str] = {}
    if params.explain:
        names = db.terms.iris(conn, set(hops) | {pred for _p, pred, _o in parents.values()})
    return Neighbourhood(
        anchor_id=anchor_id,
        anchor_iri=anchor_iri,
        hops=hops,
        parents=parents,
        truncated_at_hop=min(truncated) if truncated else None,
        hubs_not_expanded=hubs,
        names=names,
    )


# -- candidates and re-ranking ---------------------------------------------------------------


def pool_sizes(limit: int, oversample: int, max_limit: int) -> tuple[int, int, int]:
    """``(P, global rows, neighbourhood rows)`` for an anchored request of ``limit`` results,
    where ``oversample`` is the ``oversample_factor``: ``P = min(max(oversample(limit), 200),
    min(max_limit, 1000))``, split ``ceil(P/2)`` and ``max(floor(P/2), 1)``."""
    oversampled = max(limit, limit * oversample)
    pool = min(max(oversampled, MIN_POOL), min(max_limit, MAX_ANCHORED_LIMIT))
    return pool, (pool + 1) // 2, max(pool // 2, 1)


def merge_candidates(
    global_rows: Sequence[Row], neighbourhood_rows: Sequence[Row], *, pool: int | None = None
) -> list[Row]:
    """One candidate per entity (the global copy wins), by score descending then entity IRI.

    With ``pool == 1`` and a non-empty neighbourhood answer, the one candidate is the
    neighbourhood's best (each side was asked for one row)."""
    by_entity: dict[str, Row] = {}
    for row in global_rows:
        by_entity.setdefault(row["entity"], row)
    if pool == 1 and neighbourhood_rows:
        best = neighbourhood_rows[0]
        return [by_entity.get(best["entity"], best)]
    for row in neighbourhood_rows:
        by_entity.setdefault(row["entity"], row)
    return sorted(by_entity.values(), key=lambda r: (-r["score"], r["entity"]))


def rerank(
    candidates: Sequence[Row],
    neighbourhood: Neighbourhood,
    params: AnchorParams,
    limit: int,
    *,
    term_order: Callable[[Row], int] | None = None,
) -> list[Row]:
    """The anchored ranking of the text candidates, ``limit`` rows.

    * ``decay``: ``s × decay^h``; an unreachable candidate stays, as one hop beyond the limit
      (``s × decay^(max_hops+1)``); by final score;
    * ``sort``: hops ascending (unreachable last), then ``s``; final score ``s``;
    * ``filter``: unreachable candidates dropped; by ``s``.

    Ties go to the lower entity term id (``term_order``, by default the row's ``entity_id``).
    Each row is a copy gaining ``text_score``, ``score``, ``hops`` and, with ``explain``,
    ``path`` (null when unreachable)."""
    tie = term_order if term_order is not None else (lambda r: int(r["entity_id"]))
    max_hops = min(params.max_hops, MAX_HOPS_CAP)
    beyond = params.decay ** (max_hops + 1)
    ranked: list[tuple[tuple[float, ...], Row]] = []
    for row in candidates:
        h = neighbourhood.hops.get(int(row["entity_id"]))
        if h is None and params.mode == "filter":
            continue
        s = float(row["score"])
        final = s
        if params.mode == "decay":
            final = s * (params.decay**h if h is not None else beyond)
        out = dict(row)
        out["text_score"] = s
        out["score"] = final
        out["hops"] = h
        if params.explain:
            out["path"] = neighbourhood.path(int(row["entity_id"]))
        if params.mode == "sort":
            key: tuple[float, ...] = (math.inf if h is None else h, -s, tie(row))
        else:
            key = (-final, tie(row))
        ranked.append((key, out))
    ranked.sort(key=lambda pair: pair[0])
    return [row for _key, row in ranked[: max(limit, 0)]]


def anchor_block(neighbourhood: Neighbourhood, params: AnchorParams) -> dict[str, Any]:
    """The response's ``anchor`` object."""
    return {
        "iri": neighbourhood.anchor_iri,
        "mode": params.mode,
        "max_hops": min(params.max_hops, MAX_HOPS_CAP),
        "decay": params.decay,
        "reached": neighbourhood.reached,
        "truncated": neighbourhood.truncated,
        "truncated_at_hop": neighbourhood.truncated_at_hop,
        "hubs_not_expanded": neighbourhood.hubs_not_expanded,
        "candidate_sources": list(CANDIDATE_SOURCES),
    }
