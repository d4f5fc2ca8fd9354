"""The store side of acquisition (tools-graphs-governance §4.6-§4.7): the census of what is
mounted beside MAIN.

Quipu's only mounted files are the archive packs of frozen graphs (§1.4); it has no other kind of
attachment. The census therefore lists the open freezes of the frozen-pack registry, each with
the term space its pack's manifest declares. Server paths stay here: nothing returned names one.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from quipu.store import archive_packs
from quipu.store.archive_mounts import missing_pack
from quipu.store.schema import frozen_packs


@dataclass(frozen=True, slots=True)
class MountedPack:
    """One open freeze: the pack's alias, its content hash, its term space and its one graph."""

    alias: str
    content_hash: str
    term_space: str
    graph_iri: str


def mounted_packs(conn: Connection) -> list[MountedPack]:
    """Every pack a freeze left mounted (no thaw has closed it), by alias."""
    c = frozen_packs.c
    query = (
        select(c.alias, c.path, c.content_hash, c.graph_iri).where(c.thawed_at.is_(None)).order_by(c.alias)
    )
    return [
        MountedPack(str(alias), str(digest), _term_space(str(path)), str(iri))
        for alias, path, digest, iri in conn.execute(query)
    ]


def _term_space(path: str) -> str:
    """The term space the pack's own manifest declares. A registry row whose file is gone is the
    failure rule FZ-4 names, never an entry left out of the census."""
    try:
        declared = archive_packs.manifest(path).get("term_space")
    except FileNotFoundError as exc:
        raise missing_pack(path) from exc
    # Every quipu pack keeps the origin store's term ids (quipu.store.archive_packs).
    return str(declared) if declared is not None else "origin"
