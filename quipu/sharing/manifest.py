"""share-manifest/v1: canonical manifest bytes, the share id, and the verification of an inline
share (tools-graphs-governance §4.0, §4.2 step 2).

A share is sealed by hashes: ``graph_hash``/``shapes_hash``/``queries_hash``/``alignments_hash``
over the exact member bytes, and ``share_id`` over the canonical manifest without ``share_id``
and ``attestation``. Verification recomputes every one of them from what the caller supplied and
names the first that fails; nothing downstream trusts a manifest field it did not re-derive.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from quipu.errors import BadRequest, InvalidField, MissingField

SCHEMA: Final = "https://github.com/scbrown/quipu/share-manifest/v1"
CANONICALIZATION: Final = "RDFC-1.0"
SHA256_ID: Final = re.compile(r"sha256:[0-9a-f]{64}")
# The members a manifest may name, by its ``files`` key.
GRAPH, SHAPES, TURTLE_VIEW, QUERIES, ALIGNMENTS = (
    "export.nt",
    "shapes.ttl",
    "export.ttl",
    "queries.ttl",
    "alignments.ttl",
)
SCOPE_KINDS: Final = ("root", "graph", "group", "construct")


def canonical_json(value: object) -> str:
    """Compact JSON, keys sorted at every level, non-ASCII as UTF-8 (§4.0 canonical bytes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_id(data: str | bytes) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def share_id_of(manifest: Mapping[str, Any]) -> str:
    """The id: the canonical manifest without ``share_id`` and ``attestation``, hashed."""
    sealed = {k: v for k, v in manifest.items() if k not in ("share_id", "attestation")}
    return sha256_id(canonical_json(sealed))


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """The ``manifest.json`` member: the canonical serialisation plus one trailing newline."""
    return canonical_json(dict(manifest)) + "\n"


def check_share_id(value: object, field: str = "share_id") -> str:
    if not isinstance(value, str) or not SHA256_ID.fullmatch(value):
        raise InvalidField(
            f"'{field}' is an invalid sha256 identifier (sha256:<64 hex>): {value!r}", field=field
        )
    return value


@dataclass(frozen=True, slots=True)
class InlineShare:
    """A share as the wire carries it: the manifest object and the exact member texts."""

    manifest: Mapping[str, Any]
    export_ntriples: str
    shapes_turtle: str
    queries_turtle: str | None = None
    alignments_turtle: str | None = None

    @classmethod
    def from_body(cls, body: object, field: str) -> InlineShare:
        """An inline share object (``{manifest, export_ntriples, shapes_turtle, …}``) of a request."""
        if not isinstance(body, Mapping):
            raise InvalidField(f"'{field}' must be an inline share object", field=field)
        allowed = {"manifest", "export_ntriples", "shapes_turtle", "queries_turtle", "alignments_turtle"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise InvalidField(f"'{field}' has an unknown key '{unknown[0]}'", field=f"{field}.{unknown[0]}")
        for key in ("manifest", "export_ntriples", "shapes_turtle"):
            if key not in body:
                raise MissingField(f"'{field}.{key}' is required", field=f"{field}.{key}")
        if not isinstance(body["manifest"], Mapping):
            raise InvalidField(f"'{field}.manifest' must be an object", field=f"{field}.manifest")
        for key in ("export_ntriples", "shapes_turtle", "queries_turtle", "alignments_turtle"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise InvalidField(f"'{field}.{key}' must be a string", field=f"{field}.{key}")
        return cls(
            body["manifest"],
            body["export_ntriples"],
            body["shapes_turtle"],
            body.get("queries_turtle"),
            body.get("alignments_turtle"),
        )


@dataclass(frozen=True, slots=True)
class VerifiedShare:
    share: InlineShare
    share_id: str
    manifest: Mapping[str, Any]

    @property
    def parent_share(self) -> str | None:
        parent = self.manifest.get("parent_share")
        return parent if isinstance(parent, str) else None


def _field(manifest: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in manifest:
        raise MissingField(f"share manifest has no '{key}'", field=f"{where}.{key}")
    value = manifest[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidField(f"share manifest field '{key}' has the wrong type", field=f"{where}.{key}")
    return value


def _check_hash(manifest: Mapping[str, Any], key: str, member: str | None, label: str, where: str) -> None:
    claimed = manifest.get(key)
    actual = sha256_id(member) if member is not None else None
    if claimed != actual:
        raise BadRequest(
            f"share {label} hash mismatch: manifest={claimed} actual={actual}",
            reason="share_hash_mismatch",
            field=f"{where}.{key}",
        )


def verify(share: InlineShare, *, where: str = "manifest") -> VerifiedShare:
    """Every seal of §4.2 step 2, in the order that names the most specific failure first:
    schema, member names, presence of optional members, the share id, each member hash, and
    last the canonical form of ``export.nt`` (a tampered payload fails its hash before that)."""
    m = share.manifest
    if m.get("schema") != SCHEMA:
        raise BadRequest(
            f"unsupported share manifest schema: {m.get('schema')!r} (expected {SCHEMA})",
            reason="unsupported_schema",
            field=f"{where}.schema",
        )
    files = _field(m, "files", Mapping, where)
    declared = _check_files(files, where)
    for key, member, name in (
        ("queries_hash", share.queries_turtle, QUERIES),
        ("alignments_hash", share.alignments_turtle, ALIGNMENTS),
    ):
        present = member is not None
        if present != (name in declared) or present != (key in m):
            field = "queries_turtle" if name == QUERIES else "alignments_turtle"
            raise BadRequest(
                f"optional member {name} must be supplied exactly when the manifest declares it",
                reason="unsupported_payload_paths",
                field=field,
            )
    shared_id = check_share_id(_field(m, "share_id", str, where), f"{where}.share_id")
    actual_id = share_id_of(m)
    if actual_id != shared_id:
        raise BadRequest(
            f"share id mismatch: manifest={shared_id} actual={actual_id}",
            reason="share_id_mismatch",
            field=f"{where}.share_id",
        )
    _field(m, "store_id", str, where)
    _field(m, "tx_anchor", int, where)
    _check_scope(_field(m, "scope", Mapping, where), where)
    _check_hash(m, "graph_hash", share.export_ntriples, "graph", where)
    _check_hash(m, "shapes_hash", share.shapes_turtle, "shapes", where)
    if share.queries_turtle is not None:
        _check_hash(m, "queries_hash", share.queries_turtle, "queries", where)
    if share.alignments_turtle is not None:
        _check_hash(m, "alignments_hash", share.alignments_turtle, "alignments", where)
    if m.get("canonicalization") == CANONICALIZATION:
        from quipu.sharing.canonical import is_canonical  # loaded only when a share arrives

        if not is_canonical(share.export_ntriples):
            raise BadRequest(
                "export.nt is not RDFC-1.0 canonical (re-export it with quipu share)",
                reason="not_canonical",
                field="export_ntriples",
            )
    elif "canonicalization" in m:
        raise BadRequest(
            f"unsupported canonicalization {m['canonicalization']!r} (expected {CANONICALIZATION})",
            reason="not_canonical",
            field=f"{where}.canonicalization",
        )
    return VerifiedShare(share, shared_id, m)


def _check_files(files: Mapping[str, Any], where: str) -> set[str]:
    """Member names exactly as v1 defines them; returns the declared optional members."""
    expected = {"graph": GRAPH, "shapes": SHAPES}
    optional = {"queries": QUERIES, "alignments": ALIGNMENTS}
    bad = [
        key
        for key, value in files.items()
        if not (
            expected.get(key) == value
            or optional.get(key) == value
            or (key == "turtle_view" and value in (None, TURTLE_VIEW))
        )
    ]
    if bad or not set(expected).union({"turtle_view"}) <= set(files):
        raise BadRequest(
            f"unsupported payload paths in manifest files: {canonical_json(dict(files))}",
            reason="unsupported_payload_paths",
            field=f"{where}.files",
        )
    return {value for key, value in files.items() if key in optional}


def _check_scope(scope: Mapping[str, Any], where: str) -> None:
    kind, value = scope.get("kind"), scope.get("value")
    if (
        kind not in SCOPE_KINDS
        or (kind == "root") != (value is None)
        or (value is not None and not isinstance(value, str))
    ):
        raise InvalidField(
            f"share manifest scope is malformed: {canonical_json(dict(scope))}", field=f"{where}.scope"
        )
