"""Producing a share: the members, the manifest and the outward scrub (tools-graphs-governance §4.1).

``produce`` is what ``POST /share`` answers. The CLI calls ``members`` itself and may add what the
wire never accepts: the internal destination marker (which skips the outward scrub) and a
producer attestation minted from a private key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rdflib import Graph

from quipu.errors import RdfParseError
from quipu.shacl import registry
from quipu.sharing import manifest as mf
from quipu.sharing import queries_member, scrub, snapshot
from quipu.sharing.environment import Environment
from quipu.sharing.share import (
    Members,
    Scope,
    build_manifest,
    byte_limit,
    manifest_turtle,
    response,
    shapes_member,
    turtle_view,
)


def produce(
    env: Environment, *, turtle_view: bool = False, max_bytes: int | None = None, **fields: Any
) -> dict[str, Any]:
    """The ``/share`` body: ``members`` (which takes the other fields), refused whole above the
    size bound. ``turtle_view`` is the wire's name for ``with_turtle_view``."""
    limit = byte_limit(max_bytes, env.max_share_bytes)
    manifest, files = members(env, with_turtle_view=turtle_view, **fields)
    return response(manifest, files, limit)


def members(
    env: Environment,
    *,
    scope: Mapping[str, Any],
    shapes: Sequence[str] | None = None,
    no_shapes: bool = False,
    queries: Sequence[str] | None = None,
    alignments_turtle: str | None = None,
    parent_share: str | None = None,
    with_turtle_view: bool = False,
    internal: bool = False,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The manifest and the member texts by file name. Every input is checked before the
    slice is taken; the outward scrub (rule SH-2) runs last, unless ``internal`` (CLI only)."""
    chosen = Scope.parse(scope)
    if parent_share is not None:
        mf.check_share_id(parent_share, "parent_share")
    shapes_text = shapes_member(registry.current(env.db), shapes, no_shapes)
    carried = queries_member.select(
        env.db,
        scope_kind=chosen.kind,
        scope_value=chosen.value,
        names=None if queries is None else list(queries),
    )
    queries_text = queries_member.render(carried)
    if alignments_turtle is not None:
        _check_turtle(alignments_turtle)
    piece = snapshot.take(env.db, env.export, chosen.kind, chosen.value)
    manifest = build_manifest(
        piece,
        chosen,
        Members(shapes_text, queries_text, alignments_turtle),
        parent_share=parent_share,
        turtle_view=with_turtle_view,
        producer_version=env.producer_version,
        destination="internal" if internal else None,
    )
    files = {
        "manifest.json": mf.manifest_text(manifest),
        "manifest.ttl": manifest_turtle(manifest),
        mf.GRAPH: piece.ntriples,
        mf.SHAPES: shapes_text,
    }
    if with_turtle_view:
        files[mf.TURTLE_VIEW] = turtle_view(piece.ntriples)
    if queries_text is not None:
        files[mf.QUERIES] = queries_text
    if alignments_turtle is not None:
        files[mf.ALIGNMENTS] = alignments_turtle
    if not internal:
        scrub.scrub(env.db, {name: text for name, text in files.items() if name != "manifest.json"})
    return manifest, files


def _check_turtle(text: str) -> None:
    try:
        Graph().parse(data=text, format="turtle")
    except Exception as exc:  # rdflib raises several unrelated types for bad Turtle
        raise RdfParseError(
            f"alignments_turtle does not parse as Turtle: {exc}", field="alignments_turtle"
        ) from None
