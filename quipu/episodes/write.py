"""Writing an episode: parse the JSON-shaped input, build the gates, ingest (tools-core §3.4, §3.5).

The order is fixed: the document is checked first, then request shapes (bad ones are a 400
before the store is touched), then inside the write the vocabulary and SHACL gate, then the
idempotency check and the statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict, Unpack

from quipu import times
from quipu.episodes.build import parse_episode
from quipu.episodes.gate import episode_gate
from quipu.episodes.ingest import EpisodeResult, Gate, ingest
from quipu.episodes.iris import DEFAULT_BASE_NS
from quipu.identity import Authenticated
from quipu.store.database import Database


class EpisodeDocument(TypedDict, total=False):
    """An episode's own fields (the body of ``POST /episode`` but ``name``, ``graph`` and
    ``shapes``), checked by ``parse_episode``."""

    episode_body: str | None
    source: str | None
    group_id: str | None
    nodes: Sequence[object] | None
    edges: Sequence[object] | None
    replace_snapshot: bool


class WriteOptions(TypedDict, total=False):
    """How the store writes an episode: its namespace, its gates and the verified caller."""

    base_ns: str
    validate_on_write: bool
    gates: tuple[Gate, ...]
    auth: Authenticated | None


def write(
    db: Database,
    name: str,
    *,
    graph: str | None = None,
    valid_from: str | None = None,
    shapes: str | None = None,
    base_ns: str = DEFAULT_BASE_NS,
    validate_on_write: bool = False,
    gates: tuple[Gate, ...] = (),
    auth: Authenticated | None = None,
    **document: Unpack[EpisodeDocument],
) -> EpisodeResult:
    """Write an episode (nodes and edges with provenance) under source ``episode:<name>``.

    An identical episode (same name and content hash) is ``unchanged`` and writes nothing.
    ``valid_from`` back-dates the facts' valid time (local callers only: the REST route never
    passes one); ``gates`` refuse the write before the idempotency check. The vocabulary and
    SHACL gate always runs first: request ``shapes`` and, with ``validate_on_write``, the stored
    shape sets; a SHACL failure raises ``ShaclViolation`` (400) and writes nothing.
    """
    parsed = parse_episode(name, **document)
    shacl = episode_gate(db, request_shapes=shapes, validate_on_write=validate_on_write)
    return ingest(
        db,
        parsed,
        base_ns=base_ns,
        graph=graph,
        valid_from=times.normalise_valid_from(valid_from, "timestamp") if valid_from else None,
        auth=auth,
        gates=(shacl, *gates),
    )


def complete(
    db: Database,
    name: str,
    *,
    episode_body: str | None = None,
    group_id: str | None = None,
    source_description: str | None = None,
    timestamp: str | None = None,
    **options: Unpack[WriteOptions],
) -> EpisodeResult:
    """Graphiti's flat form: an episode with no nodes or edges; ``timestamp`` is valid time only."""
    document = EpisodeDocument(episode_body=episode_body, source=source_description, group_id=group_id)
    return write(db, name, valid_from=timestamp, **options, **document)
