"""Graph analytics: the node-link view, projections, the report and impact walks
(tools-search §5.13-§5.15, tools-core §1.12).

``/graph`` and ``/report`` are reads. ``/project`` is a write for every algorithm because
``persist`` can write; ``/impact`` is a write because it opens a speculative (always rolled back)
transaction. All four are Annotating: unknown keys come back as ``ignored_fields``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter
from pydantic import Field, WithJsonSchema

from quipu.rest.deps import AuthDep, KbDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["analytics"])

_IRI = "an absolute IRI"
MAX_TX: Final = 2**63 - 1  # transaction ids are 64-bit integers


class GraphRequest(Annotating):
    limit: int = Field(250, ge=0, description="node budget, at most 2000; 0 draws no nodes")
    edge_budget: int = Field(4000, ge=0, description="edge budget, at most 50000")
    type: str | None = Field(None, description="keep only nodes whose recorded rdf:type is this IRI")
    include_episodes: bool = Field(False, description="draw prov:Activity episode nodes too")
    # [designed here] time travel for the explorer's slider; the original draws only now.
    valid_at: str | None = Field(
        None,
        description="draw ROOT as true at this RFC 3339 instant (facts whose valid window holds it), "
        "from the store's current knowledge unless as_of_tx is given too",
    )
    as_of_tx: int | None = Field(
        None,
        ge=0,
        le=MAX_TX,
        description="draw ROOT as the store knew it after this transaction (refused while an archive "
        "pack is mounted)",
    )


@router.post("/graph")
def graph(body: GraphRequest, kb: KbDep) -> dict[str, Any]:
    """ROOT as ranked, capped nodes and index-addressed edges, with a type census and what the
    caps dropped (``truncated``): now, or at ``valid_at`` and/or ``as_of_tx``."""
    return body.annotate(kb.analytics.graph(**body.fields()))


Seed = Annotated[
    str | int,
    WithJsonSchema({"type": ["string", "integer"], "description": "an IRI or a raw term id"}),
]


class ProjectRequest(Annotating):
    algorithm: str = Field(
        "stats",
        description="stats, in_degree, pagerank, ppr, components, louvain (alias community) or shortest_path",
    )
    type: str | None = Field(None, description="keep only edges whose source has this rdf:type")
    predicate: str | None = Field(None, description="keep only edges with this predicate IRI")
    graph: str | None = Field(None, description="project this named graph's own facts (default ROOT)")
    limit: int = Field(20, ge=1, description="results for in_degree and pagerank/ppr")
    seeds: list[Seed] = Field(
        default_factory=list, description="PPR seeds: IRIs (unknown ones dropped) or term ids"
    )
    damping: float = Field(0.85, ge=0.0, le=1.0, description="PageRank damping")
    max_iters: int = Field(100, ge=0, description="PageRank iteration cap (0 runs one)")
    tolerance: float = Field(1e-6, ge=0.0, description="L1 convergence threshold")
    from_: str | None = Field(None, alias="from", description=f"shortest_path start: {_IRI}")
    to: str | None = Field(None, description=f"shortest_path end: {_IRI}")
    persist: bool = Field(
        False, description="louvain: write community membership; pagerank: write global scores (to ROOT)"
    )
    timestamp: str | None = Field(None, description="instant of persisted facts (default now)")


@router.post("/project")
def project(body: ProjectRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Run one algorithm over a graph's projection; only ``persist`` writes."""
    return body.annotate(kb.analytics.project(**body.fields(), auth=auth))


class ReportRequest(Annotating):
    type: str | None = Field(None, description="projection type filter")
    predicate: str | None = Field(None, description="projection predicate filter")
    hubs: int = Field(10, ge=0, description="hub count")
    surprises: int = Field(10, ge=0, description="surprising-connection count")
    questions: int = Field(8, ge=0, description="suggested-question count")


@router.get("/report")
def report_defaults(kb: KbDep) -> dict[str, Any]:
    """The graph report with every option at its default."""
    return kb.analytics.report()


@router.post("/report")
def report(body: ReportRequest, kb: KbDep) -> dict[str, Any]:
    """PageRank hubs, surprising cross-community bridges, template questions and a summary."""
    return body.annotate(kb.analytics.report(**body.fields()))


class ImpactRequest(Annotating):
    entity: str = Field(description=f"the start entity: {_IRI}")
    remove: bool = Field(
        False, description="counterfactual: retract the entity's statements first (rolled back)"
    )
    hops: int = Field(5, ge=0, description="maximum walk depth")
    predicates: list[str] | None = Field(None, description="follow only these predicates (empty: all)")
    rank_by_ppr: bool = Field(False, description="order by personalised PageRank from the entity")
    timestamp: str | None = Field(None, description="stamp of the speculative retraction (default now)")


@router.post("/impact")
def impact(body: ImpactRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """What is downstream of an entity; with ``remove``, after retracting it (never persisted)."""
    return body.annotate(kb.analytics.impact(**body.fields(), auth=auth))
