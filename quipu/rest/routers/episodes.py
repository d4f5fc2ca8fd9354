"""Episode routes: /episode, /episodes/complete and /episode/retract (tools-core §3.4, §3.5, §3.8).

All three are Annotating. A SHACL failure (request ``shapes``, or the stored sets with
``shacl.validate_on_write``) is a 400 ``shacl_violation`` whose body carries the issues. A
``timestamp`` sent to /episode is not a field of it: it is ignored and reported, so a caller
cannot back-date an episode (rule 4).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, WithJsonSchema

from quipu.episodes.retract import episode_name, orphan_policy
from quipu.rest.deps import AuthDep, KbDep, SettingsDep
from quipu.rest.fields import Annotating

router = APIRouter(tags=["episodes"])


# -- request bodies --------------------------------------------------------------------------


class EpisodeNode(BaseModel):
    model_config = ConfigDict(strict=True)

    name: str
    type: str | None = None  # required, but refused by the episode builder with its own message
    description: str | None = None
    properties: dict[str, Any] | None = None
    distinct_from: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("distinct_from", "distinctFrom")
    )


# What the episode builder reifies (DM §9.2). Published only: REST still accepts any JSON value here
# and the builder ignores other types, as the original does.
Confidence = Annotated[
    Any,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "description": "a grade, such as EXTRACTED, INFERRED or AMBIGUOUS"},
                {"type": "number", "minimum": 0, "maximum": 1},
                {"type": "null"},
            ],
            "description": "reify the edge with this quipu:confidence: a grade (a string literal) or a "
            "number from 0 to 1 (an xsd:decimal)",
        }
    ),
]


class EpisodeEdge(BaseModel):
    model_config = ConfigDict(strict=True)

    source: str
    target: str
    relation: str
    confidence: Confidence = None


class EpisodeRequest(Annotating):
    name: str
    episode_body: str | None = None
    source: str | None = None
    group_id: str | None = None
    nodes: list[EpisodeNode] = Field(default_factory=list)
    edges: list[EpisodeEdge] = Field(default_factory=list)
    graph: str | None = None
    shapes: str | None = None
    replace_snapshot: bool = False


class EpisodesCompleteRequest(Annotating):
    name: str
    episode_body: str | None = None
    group_id: str | None = None
    source_description: str | None = None
    timestamp: str | None = None


class RetractEpisodeRequest(Annotating):
    episode: str | None = None
    episode_id: str | None = None
    name: str | None = None
    timestamp: str | None = None
    actor: str | None = None
    on_orphan: str | None = None
    orphan_policy: str | None = None


# -- responses -------------------------------------------------------------------------------


class EpisodeResponse(BaseModel):
    tx_id: int
    count: int
    outcome: str
    episode: str
    resolution_hints: list[dict[str, Any]]
    resolution_contentions: list[dict[str, Any]]
    ignored_fields: list[str] | None = None


class Statement(BaseModel):
    entity: str
    predicate: str
    value: Any


class OrphanEntity(BaseModel):
    entity: str
    lost_label: bool
    lost_type: bool


class RetractEpisodeResponse(BaseModel):
    tx_id: int
    retracted: int
    episode: str
    statements: list[Statement]
    on_orphan: str
    identity_preserved: int
    identity_preserved_statements: list[Statement]
    identity_orphans: int
    identity_orphan_entities: list[OrphanEntity]
    ignored_fields: list[str] | None = None


# -- handlers --------------------------------------------------------------------------------


@router.post("/episode", response_model=EpisodeResponse, response_model_exclude_unset=True)
def episode(body: EpisodeRequest, kb: KbDep, settings: SettingsDep, auth: AuthDep) -> dict[str, Any]:
    """Ingest named nodes and relation edges as an episode with provenance, idempotent by content."""
    fields = body.fields(exclude={"nodes"})
    nodes = [n.model_dump(exclude_none=True) for n in body.nodes]
    result = kb.episode(**fields, nodes=nodes, base_ns=settings.base_ns, auth=auth)
    return body.annotate(result.as_json())


@router.post("/episodes/complete", response_model=EpisodeResponse, response_model_exclude_unset=True)
def episodes_complete(
    body: EpisodesCompleteRequest, kb: KbDep, settings: SettingsDep, auth: AuthDep
) -> dict[str, Any]:
    """Graphiti-compatible flat ingestion: name, body, group and source become an episode."""
    result = kb.episodes_complete(**body.fields(), base_ns=settings.base_ns, auth=auth)
    return body.annotate(result.as_json())


@router.post("/episode/retract", response_model=RetractEpisodeResponse, response_model_exclude_unset=True)
def retract_episode(body: RetractEpisodeRequest, kb: KbDep, auth: AuthDep) -> dict[str, Any]:
    """Close what one episode's ingests contributed, protecting identity others still reference."""
    name = episode_name(body.episode, body.episode_id, body.name)
    policy = orphan_policy(body.on_orphan, body.orphan_policy)
    result = kb.retract_episode(name, on_orphan=policy, timestamp=body.timestamp, actor=body.actor, auth=auth)
    return body.annotate(result)
