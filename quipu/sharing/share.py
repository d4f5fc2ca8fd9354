"""``quipu_share``: build a complete share of one exact slice, in memory (tools-graphs-governance §4.1).

Nothing is written, on the server or to its disk: the members and the manifest come back in the
response, within a size bound. The CLI writes the same members to a directory and may add what
the wire never can (an attestation minted from a private key, the internal destination marker).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from quipu.errors import BadRequest, InvalidField, MissingField
from quipu.shacl.registry import ShapeSet
from quipu.sharing import manifest as mf
from quipu.sharing.snapshot import Slice

DEFAULT_MAX_BYTES: Final = 8 * 1024 * 1024
MEDIA_TYPES: Final = {
    mf.GRAPH: "application/n-triples",
    mf.SHAPES: "text/turtle",
    mf.QUERIES: "text/turtle",
    mf.ALIGNMENTS: "text/turtle",
}


@dataclass(frozen=True, slots=True)
class Scope:
    kind: str
    value: str | None

    @classmethod
    def parse(cls, scope: object) -> Scope:
        """``{kind, value}``: value null for root, a non-empty string for the other three."""
        if not isinstance(scope, Mapping):
            raise InvalidField("'scope' must be an object {kind, value}", field="scope")
        unknown = sorted(set(scope) - {"kind", "value"})
        if unknown:
            raise InvalidField(f"'scope' has an unknown key '{unknown[0]}'", field=f"scope.{unknown[0]}")
        kind, value = scope.get("kind"), scope.get("value")
        if kind not in mf.SCOPE_KINDS:
            raise InvalidField(
                f"'scope.kind' must be one of {', '.join(mf.SCOPE_KINDS)}, got {kind!r}", field="scope.kind"
            )
        if kind == "root":
            if value is not None:
                raise InvalidField(
                    "a root scope takes no value ('scope.value' must be null)", field="scope.value"
                )
        elif not isinstance(value, str) or not value.strip():
            raise MissingField(
                f"a {kind} scope needs 'scope.value' (a non-empty string)", field="scope.value"
            )
        return cls(kind, value)

    def as_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "value": self.value}


def shapes_member(loaded: Sequence[ShapeSet], names: Sequence[str] | None, no_shapes: bool) -> str:
    """``shapes.ttl``: the selected shape sets in name order, each under a ``# --- name ---`` line."""
    if no_shapes:
        return ""
    by_name = {s.name: s for s in loaded}
    if not by_name:
        raise BadRequest(
            "no shape sets are loaded: load shapes first or explicitly pass no_shapes",
            reason="no_shapes_loaded",
            field="shapes",
        )
    chosen = sorted(by_name) if names is None else sorted(set(names))
    for name in chosen:
        if name not in by_name:
            raise InvalidField(f"unknown shape set: {name!r}", field="shapes")
    return "".join(f"# --- {name} ---\n{by_name[name].turtle.rstrip()}\n" for name in chosen)


@dataclass(frozen=True, slots=True)
class Members:
    """What a share seals beside its graph slice."""

    shapes: str
    queries: str | None = None
    alignments: str | None = None


def build_manifest(
    piece: Slice,
    scope: Scope,
    members: Members,
    *,
    parent_share: str | None,
    turtle_view: bool,
    producer_version: str,
    merge_parents: Sequence[str] = (),
    destination: str | None = None,
    pack_dir: str | None = None,
) -> dict[str, Any]:
    """The manifest with its ``share_id`` (no attestation: that seals the id, never feeds it)."""
    files: dict[str, Any] = {
        "graph": mf.GRAPH,
        "shapes": mf.SHAPES,
        "turtle_view": mf.TURTLE_VIEW if turtle_view else None,
    }
    manifest: dict[str, Any] = {
        "schema": mf.SCHEMA,
        "store_id": piece.store_id,
        "tx_anchor": piece.tx_anchor,
        "graph_hash": mf.sha256_id(piece.ntriples),
        "canonicalization": mf.CANONICALIZATION,
        "shapes_hash": mf.sha256_id(members.shapes),
        "scope": scope.as_json(),
        "parent_share": parent_share,
        "created_at": piece.created_at,
        "producer": {"name": "quipu", "version": producer_version},
        "files": files,
    }
    if members.queries is not None:
        manifest["queries_hash"] = mf.sha256_id(members.queries)
        files["queries"] = mf.QUERIES
    if members.alignments is not None:
        manifest["alignments_hash"] = mf.sha256_id(members.alignments)
        files["alignments"] = mf.ALIGNMENTS
    if merge_parents:
        manifest["merge_parents"] = list(merge_parents)
    if destination is not None:
        manifest["destination"] = destination
    if pack_dir is not None:
        manifest["pack_dir"] = pack_dir
    manifest["share_id"] = mf.share_id_of(manifest)
    return manifest


def manifest_turtle(manifest: Mapping[str, Any]) -> str:
    """``manifest.ttl``: a DCAT / PROV-O / SPDX description of the manifest (derived, unhashed)."""
    share_id = manifest["share_id"]
    lines = [
        "@prefix dcat: <http://www.w3.org/ns/dcat#> .",
        "@prefix dct: <http://purl.org/dc/terms/> .",
        "@prefix prov: <http://www.w3.org/ns/prov#> .",
        "@prefix quipu: <https://quipu.dev/ontology/> .",
        "@prefix spdx: <http://spdx.org/rdf/terms#> .",
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
        "",
        f"<urn:{share_id}> a dcat:Dataset, prov:Entity ;",
        f"  dct:identifier {_literal(share_id)} ;",
        f'  prov:generatedAtTime "{manifest["created_at"]}"^^xsd:dateTime ;',
        "  prov:wasAttributedTo [ a prov:SoftwareAgent ;",
        f"    dct:title {_literal(manifest['producer']['name'])} ;",
        f"    quipu:version {_literal(manifest['producer']['version'])} ] ;",
    ]
    if manifest.get("parent_share"):
        lines.append(f"  prov:wasRevisionOf <urn:{manifest['parent_share']}> ;")
    for parent in manifest.get("merge_parents", ()):
        lines.append(f"  prov:wasDerivedFrom <urn:{parent}> ;")
    hashed = [
        (mf.GRAPH, "graph_hash"),
        (mf.SHAPES, "shapes_hash"),
        (mf.QUERIES, "queries_hash"),
        (mf.ALIGNMENTS, "alignments_hash"),
    ]
    distributions = [
        "  dcat:distribution [ a dcat:Distribution ;\n"
        f"    dcat:mediaType {_literal(MEDIA_TYPES[member])} ;\n"
        f"    dcat:downloadURL <payload:{member}> ;\n"
        "    spdx:checksum [ a spdx:Checksum ;\n"
        "      spdx:algorithm spdx:checksumAlgorithm_sha256 ;\n"
        f"      spdx:checksumValue {_literal(manifest[key].removeprefix('sha256:'))} ] ]"
        for member, key in hashed
        if key in manifest
    ]
    return "\n".join(lines) + "\n" + " ;\n".join(distributions) + " .\n"


def _literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid Turtle short string


def turtle_view(ntriples: str) -> str:
    """``export.ttl``: a readable Turtle view of the canonical slice (derived, unhashed)."""
    from rdflib import Graph

    graph = Graph()
    if ntriples:
        graph.parse(data=ntriples, format="nt")
    return graph.serialize(format="turtle")


def response(manifest: Mapping[str, Any], files: Mapping[str, str], max_bytes: int) -> dict[str, Any]:
    """The ``/share`` body, refused whole when its JSON encoding exceeds ``max_bytes`` (SH-4)."""
    body = {"manifest": dict(manifest), "files": dict(files)}
    size = len(json.dumps(body, ensure_ascii=False).encode("utf-8"))
    if size > max_bytes:
        raise BadRequest(
            f"the share is {size} bytes encoded, over max_bytes {max_bytes}: narrow the scope "
            "(nothing partial is returned)",
            reason="share_too_large",
            field="max_bytes",
        )
    return body


def byte_limit(requested: int | None, cap: int) -> int:
    """The caller's bound, which may lower the server cap but never raise it."""
    if requested is None:
        return cap
    if requested < 1:
        raise InvalidField(f"'max_bytes' must be at least 1, got {requested}", field="max_bytes")
    if requested > cap:
        raise InvalidField(
            f"'max_bytes' {requested} is over the server cap {cap} ([quipu.sharing] max_share_bytes)",
            field="max_bytes",
        )
    return requested
