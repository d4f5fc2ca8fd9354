"""``quipu_import``: verify an inline share, gate it, and stage it beside ROOT (tools-graphs-governance §4.2).

Every check runs before anything is written (rule IM-5, a refused import leaves nothing staged,
no review row and no event): review state, the seals, the internal-destination scrub, the
attestation, the carried members, then resolution and local validation decide between the
staging graph (eligible for promotion) and the quarantine graph (never promotable). The
staging write, the query installs, the consumed attestation nonce, the review row and the
``import.*`` event then commit in one transaction. ROOT is never written (rule IM-1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pyoxigraph as ox
from rdflib import Graph

from quipu import times
from quipu.errors import BadRequest, InvalidField, PayloadTooLarge, RdfParseError
from quipu.identity import Authenticated
from quipu.rdfio.parse import parse_document
from quipu.search.resolve import NameIndex
from quipu.shacl import gate, registry
from quipu.sharing import attestation, queries_member, scrub
from quipu.sharing import manifest as mf
from quipu.sharing.environment import Environment
from quipu.sharing.reviews import CLOSED, STAGING
from quipu.store import share_state
from quipu.store.context import QueuedEvent
from quipu.store.schema import ROOT
from quipu.store.writes import assert_statements_in, register_graph_in

QUARANTINE: Final = "urn:quipu:import:quarantine:"
EVENT: Final = "urn:quipu:import:event:"
RESOLVE_THRESHOLD: Final = 0.85  # the quipu_resolve_entity defaults import resolves with (step 6)
RESOLVE_TOP_K: Final = 5
_LABEL: Final = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
_TYPE: Final = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


def staging_iri(share_id: str, eligible: bool) -> str:
    return (STAGING if eligible else QUARANTINE) + share_id.removeprefix("sha256:")


def import_iri(share_id: str, staging: str) -> str:
    return EVENT + hashlib.sha256(f"{share_id}\n{staging}".encode()).hexdigest()


@dataclass
class Resolution:
    exact_merges: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"exact_merges": self.exact_merges, "candidates": self.candidates, "unmatched": self.unmatched}


def import_share(
    env: Environment,
    *,
    manifest: Mapping[str, Any],
    export_ntriples: str,
    shapes_turtle: str,
    source: str,
    queries_turtle: str | None = None,
    alignments_turtle: str | None = None,
    query_namespace: str | None = None,
    replace_queries: bool = False,
    actor: str | None = None,
    accept_exact: bool = False,
    attestation_envelope: Mapping[str, Any] | None = None,
    auth: Authenticated | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    db = env.db
    phase = progress or (lambda _name: None)  # the CLI shows each step on its bar
    if not source.strip():
        raise InvalidField("'source' must name where the share came from", field="source")
    share = mf.InlineShare(manifest, export_ntriples, shapes_turtle, queries_turtle, alignments_turtle)
    size = sum(len(text.encode("utf-8")) for text in _payload_members(share).values())
    if size > env.max_share_bytes:
        raise PayloadTooLarge(
            f"the share's members are {size} bytes, over max_share_bytes {env.max_share_bytes} "
            "([quipu.sharing]); nothing was staged"
        )
    share_id = mf.check_share_id(manifest.get("share_id"), "manifest.share_id")
    with db.read() as conn:  # step 1: a closed review refuses until it is reopened
        earlier = share_state.review(conn, share_id)
    if earlier is not None and earlier.state in CLOSED:
        raise BadRequest(
            f"the review of share {share_id} is {earlier.state}: reopen it before importing again",
            reason="review_closed",
            field="manifest.share_id",
        )
    phase("verifying seals")
    mf.verify(share)  # step 2: every seal, recomputed
    if manifest.get("destination") == "internal":  # step 3: the marker is checked against the bytes
        scrub.scrub(db, _payload_members(share))
    now_epoch = env.clock()
    trust = attestation.assess(db, manifest, share_id, attestation_envelope, now=now_epoch)  # step 4
    carried = queries_member.parse(queries_turtle) if queries_turtle is not None else None  # step 5
    evidence = _alignment_triples(alignments_turtle) if alignments_turtle is not None else None
    namespace = (
        query_namespace
        if query_namespace is not None
        else queries_member.default_namespace(str(manifest["store_id"]))
    )
    queries_member.check_namespace(namespace)

    phase("resolving entities")
    data = _parse_payload(export_ntriples)  # step 6: resolution against local entities
    resolution = _resolve(env, data)
    if accept_exact:
        data = _rewritten(data, {m["foreign"]: m["local"] for m in resolution.exact_merges})
    raw = "".join(f"{t} .\n" for t in data).encode("utf-8")

    phase("validating")
    with db.read() as conn:  # step 7: local shapes only; bundled shapes are evidence, never adopted
        sets = registry.open_sets(conn)
    validation, sanctioned = _validate(env, data, raw, sets)
    query_blocks = (
        queries_member.off_vocabulary_targets(carried, sanctioned)
        if carried and sanctioned is not None
        else []
    )
    blockers = []  # step 8
    if not validation["conforms"]:
        blockers.append("shacl_nonconforming")
    if validation["off_vocabulary"]:
        blockers.append("off_vocabulary")
    if query_blocks:
        blockers.append("query_off_vocabulary")
    validation["blocking"] = bool(blockers)
    eligible = not blockers
    staging = staging_iri(share_id, eligible)
    import_id = import_iri(share_id, staging)
    triples = len(data)
    ts = times.now()
    principal = auth.principal if auth is not None else None
    claim = f":claimed-actor={actor}" if actor is not None and actor.strip() else ""
    write_source = f"share-import:{source}:{share_id}{claim}"
    body: dict[str, Any] = {
        "outcome": "staged" if eligible else "quarantined",
        "import_id": import_id,
        "share_id": share_id,
        "graph_hash": manifest["graph_hash"],
        "staging_graph": staging,
        "triples": {"accepted": triples if eligible else 0, "quarantined": 0 if eligible else triples},
        "resolution": resolution.as_json(),
        "validation": validation,
        "promotion": {"eligible": eligible, "blockers": blockers},
        "attestation": trust.as_json(),
    }
    if evidence is not None:  # rule IM-6: evidence is reported, never applied
        body["alignments"] = {"hash": manifest["alignments_hash"], "triples": evidence, "applied": False}
    phase(f"staging {triples} triples")
    batch = parse_document(raw, "nt", graph_iri=staging)
    with db.write(auth) as ctx:
        _, created = register_graph_in(db, ctx, staging, actor=principal, timestamp=ts)
        if not created:  # step 9: this share is staged here already; nothing is written
            body["outcome"] = "unchanged"
            if carried is not None:
                body["queries"] = _queries_unchanged(carried, namespace, eligible)
            return body
        result = assert_statements_in(
            db, ctx, batch, timestamp=ts, valid_from=ts, actor=principal, source=write_source, graph=staging
        )
        if carried is not None:  # step 10
            body["queries"] = queries_member.install(
                db,
                ctx,
                carried,
                namespace=namespace,
                replace=replace_queries,
                at=ts,
                eligible=eligible,
                off_vocabulary_of=lambda q: queries_member.off_vocabulary_targets(
                    [q], sanctioned or frozenset()
                ),
            )
        attestation.spend_nonce(ctx, trust, share_id=share_id, at=ts)  # an attested nonce, spent here
        state = _next_state(earlier.state if earlier else None, eligible)
        share_state.put_review(
            ctx,
            share_state.Review(
                share_id,
                state,
                staging,
                import_id,
                str(manifest["graph_hash"]),
                source,
                result.tx_id,
                earlier.promoted_tx if earlier else None,
                ts,
            ),
        )
        kind = (
            "import.quarantined"
            if not eligible
            else (
                "import.adopted"
                if earlier is not None and earlier.state == "quarantined"
                else "import.staged"
            )
        )
        ctx.advisories.append(
            QueuedEvent(
                kind,
                import_id,
                {"share_id": share_id, "staging_graph": staging, "triples": triples, "source": source},
            )
        )
    return body


def _payload_members(share: mf.InlineShare) -> dict[str, str]:
    members = {mf.GRAPH: share.export_ntriples, mf.SHAPES: share.shapes_turtle}
    if share.queries_turtle is not None:
        members[mf.QUERIES] = share.queries_turtle
    if share.alignments_turtle is not None:
        members[mf.ALIGNMENTS] = share.alignments_turtle
    return members


def _alignment_triples(turtle: str) -> int:
    """The evidence must parse; only its size is reported (rule IM-6, never applied)."""
    graph = Graph()
    try:
        graph.parse(data=turtle, format="turtle")
    except Exception as exc:  # rdflib raises several unrelated types for bad Turtle
        raise RdfParseError(
            f"alignments_turtle does not parse as Turtle: {exc}", field="alignments_turtle"
        ) from None
    return len(graph)


def _parse_payload(ntriples: str) -> list[ox.Triple]:
    try:
        return [quad.triple for quad in ox.parse(ntriples, format=ox.RdfFormat.N_TRIPLES)]
    except (SyntaxError, ValueError) as exc:  # the canonical check parsed it already: a belt
        raise RdfParseError(
            f"export_ntriples is not valid N-Triples: {exc}", field="export_ntriples"
        ) from None


def _resolve(env: Environment, data: list[ox.Triple]) -> Resolution:
    """Step 6: each labelled foreign IRI against local entities, as quipu_resolve_entity would,
    over one read of the local labels.

    A top hit of 1.0 on the exact canonical name is a proposal (rule IM-2): it is reported, and
    only rewritten when the caller accepts exact merges. A local entity with the very same IRI
    is not a merge candidate of itself."""
    out = Resolution()
    labelled: dict[str, str] = {}
    for t in data:
        if t.predicate == _LABEL and isinstance(t.subject, ox.NamedNode) and isinstance(t.object, ox.Literal):
            labelled[t.subject.value] = min(labelled.get(t.subject.value, t.object.value), t.object.value)
    if not labelled:
        return out
    names = NameIndex.load(env.db)
    names.prepare(labelled.values(), RESOLVE_THRESHOLD)
    for foreign, label in sorted(labelled.items()):
        found = env.resolve(label, top_k=RESOLVE_TOP_K, threshold=RESOLVE_THRESHOLD, names=names)
        hits = [c for c in found["candidates"] if c["iri"] != foreign]
        if not hits:
            out.unmatched.append(foreign)
            continue
        top = hits[0]
        if top["score"] >= 1.0 and top["matched_on"] == "canonical_name:exact":
            out.exact_merges.append(
                {
                    "foreign": foreign,
                    "local": top["iri"],
                    "score": top["score"],
                    "matched_on": top["matched_on"],
                }
            )
            hits = hits[1:]
        out.candidates.extend(
            {"foreign": foreign, "local": c["iri"], "score": c["score"], "matched_on": c["matched_on"]}
            for c in hits
        )
    return out


def _rewritten(data: list[ox.Triple], renames: Mapping[str, str]) -> list[ox.Triple]:
    """The payload with accepted exact matches rewritten to the local IRIs."""
    if not renames:
        return data
    swap = {ox.NamedNode(k): ox.NamedNode(v) for k, v in renames.items()}

    def term(node: Any) -> Any:
        return swap.get(node, node) if isinstance(node, ox.NamedNode) else node

    return [ox.Triple(term(t.subject), t.predicate, term(t.object)) for t in data]


def _validate(
    env: Environment, data: list[ox.Triple], raw: bytes, sets: list[registry.ShapeSet]
) -> tuple[dict[str, Any], frozenset[str] | None]:
    """Step 7 against the locally loaded shape sets. As the store's own write gates do, a store
    with no shape set loaded sanctions every class and validates nothing **[designed here]**."""
    if not sets:
        return {"conforms": True, "report": None, "off_vocabulary": []}, None
    bundle = registry.bundle(s.turtle for s in sets)
    types = {t.object.value for t in data if t.predicate == _TYPE and isinstance(t.object, ox.NamedNode)}
    off = sorted(types - bundle.vocabulary)
    payload = gate.payload_graph(raw, "nt")
    with env.db.read() as conn:
        report = gate.gate_report(env.db, payload, bundle, ROOT, conn, in_place=True)
    return (
        {"conforms": not report.count("Violation"), "report": report.as_json(), "off_vocabulary": off},
        bundle.vocabulary,
    )


def _next_state(previous: str | None, eligible: bool) -> str:
    """A promoted share stays promoted when it is imported again (§4.2 step 11)."""
    if previous == "promoted":
        return previous
    return "staged" if eligible else "quarantined"


def _queries_unchanged(
    carried: list[queries_member.CarriedQuery], namespace: str, eligible: bool
) -> dict[str, Any]:
    """The queries report of an import that found its share already staged: nothing installs."""
    names = sorted(q.name for q in carried)
    return {
        "namespace": namespace,
        "installed": [],
        "unchanged": [f"{namespace}/{n}" for n in names] if eligible else [],
        "replaced": [],
        "removed": [],
        "stale": [],
        "collisions": [],
        "quarantined": [] if eligible else [{"name": n, "off_vocabulary": []} for n in names],
    }
