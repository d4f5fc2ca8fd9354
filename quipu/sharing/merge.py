"""``quipu_merge_decisions`` and ``quipu_merge_apply``: a three-way merge of an incoming share into
ROOT, prepared as a decisions document and completed from it (tools-graphs-governance §4.4, §4.5).

* **decisions** (a read) verifies both shares, exports ROOT ("ours"), merges slot by slot
  (``merge_model``) and returns one row per conflicting slot, pinned to ROOT's graph hash and the
  incoming share's id (rule MD-2). Rows may carry a mechanical proposal; ``decision`` is always
  null (MD-1).
* **apply** (the write) re-derives everything from the same inputs, refuses a document that no
  longer matches them, and writes the clean merge plus every decided slot in ONE ROOT transaction
  whose source names both parents, the decisions hash and the reviewer (MA-1, MA-2).

Blank nodes: shares and ROOT's export are RDFC-1.0 canonical, so a blank node is known only by a
canonical label local to its graph. Slots compare blank nodes by that label, and ROOT cannot be
addressed by it: a merge whose writes (an addition or a removal) name a blank node is refused with
``blank_node_unaddressable`` before anything is written. Slots that need no write are unaffected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from quipu import times
from quipu.errors import BadRequest, InvalidField
from quipu.identity import Authenticated
from quipu.rdfio import serialize
from quipu.rdfio.parse import parse_document
from quipu.shacl import gate
from quipu.sharing import manifest as mf
from quipu.sharing import merge_file, merge_model, merge_report, snapshot
from quipu.sharing.environment import Environment
from quipu.sharing.merge_model import Conflict, Triple
from quipu.store import merge_reads, merge_writes
from quipu.store.context import Refusal, head_tx
from quipu.store.database import Database
from quipu.store.schema import ROOT, ROOT_IRI
from quipu.store.statements import Statement

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class _Prepared:
    incoming: mf.VerifiedShare
    base: mf.VerifiedShare
    root: snapshot.Slice
    local_graph_hash: str
    graphs: tuple[set[Triple], set[Triple], set[Triple]]  # base, ours, theirs
    model: merge_model.Merge


def _canonical(text: str, where: str) -> str:
    from quipu.sharing import canonical  # the canonicaliser loads with the first share

    try:
        return canonical.canonical_nquads(text)
    except BadRequest:
        raise
    except Exception as exc:  # the parser's own error types
        raise BadRequest(
            f"{where} is not valid N-Triples: {exc}", reason="rdf_parse_error", field=where
        ) from None


def _graph(share: mf.VerifiedShare, where: str) -> set[Triple]:
    text = share.share.export_ntriples
    if share.manifest.get("canonicalization") != mf.CANONICALIZATION:
        text = _canonical(text, f"{where}.export_ntriples")  # verify() checked canonical ones
    return merge_model.parse_lines(text, f"{where} export.nt")


def _prepare(env: Environment, incoming: object, base: object) -> _Prepared:
    """Both shares verified and linked, ROOT exported, and the merge computed."""
    theirs_share = mf.verify(mf.InlineShare.from_body(incoming, "incoming"), where="incoming.manifest")
    base_share = mf.verify(mf.InlineShare.from_body(base, "base"), where="base.manifest")
    parent = theirs_share.parent_share
    if parent is None:
        raise BadRequest(
            "incoming share has no parent_share; three-way merge has no base",
            reason="no_merge_base",
            field="incoming.manifest.parent_share",
        )
    if base_share.share_id != parent:
        raise BadRequest(
            f"the base share {base_share.share_id} is not the incoming share's parent_share ({parent})",
            reason="base_not_parent",
            field="base",
        )
    theirs = _graph(theirs_share, "incoming")
    base_graph = _graph(base_share, "base")
    bounds = merge_model.max_counts(theirs_share.share.shapes_turtle)
    root = snapshot.take(env.db, env.export, "root", None)
    ours = merge_model.parse_lines(root.ntriples, "ROOT export")
    model = merge_model.merge(base_graph, ours, theirs, bounds)
    return _Prepared(
        theirs_share, base_share, root, mf.sha256_id(root.ntriples), (base_graph, ours, theirs), model
    )


# -- decisions ------------------------------------------------------------------------------------


def decisions(env: Environment, *, incoming: object, base: object, propose: bool = False) -> dict[str, Any]:
    """``POST /merge/decisions``: the conflicts of merging ``incoming`` into ROOT; writes nothing."""
    p = _prepare(env, incoming, base)
    conflicts = p.model.conflicts
    names = merge_report.labels(merge_report.mentioned_iris(conflicts), p.graphs)
    ours = _local_facts(env.db, conflicts)
    theirs = merge_report.origin(p.incoming.manifest, p.incoming.share_id)
    base_origin = merge_report.origin(p.base.manifest, p.base.share_id)
    rows: list[dict[str, Any]] = []
    for number, conflict in enumerate(conflicts, start=1):
        facts = ours.get(conflict.slot, [])
        rows.append(
            {
                "id": f"d{number}",
                "subject": conflict.subject,
                "predicate": conflict.predicate,
                "max_count": conflict.max_count,
                "base": list(conflict.base),
                "ours": list(conflict.ours),
                "theirs": list(conflict.theirs),
                "provenance": {"ours": facts, "theirs": theirs, "base": base_origin},
                "proposal": merge_report.proposal(conflict, facts, theirs) if propose else None,
                "decision": None,  # MD-1: this tool never decides
                "kind": conflict.kind,
                "rule": merge_report.rule(conflict, names),
            }
        )
    out: dict[str, Any] = {
        "schema": merge_file.SCHEMA,
        "incoming_share": p.incoming.share_id,
        "base_share": p.base.share_id,
        "local_graph_hash": p.local_graph_hash,
        "incoming_graph_hash": p.incoming.manifest.get("graph_hash"),
    }
    if names:
        out["labels"] = names
    out["rows"] = rows
    return out


def _local_facts(db: Database, conflicts: list[Conflict]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """``provenance.ours``: ROOT's live claims of each conflicting slot. A blank-node subject has
    none that can be named (its canonical label does not address ROOT)."""
    wanted = {
        c.slot: (c.subject[1:-1], c.predicate) for c in conflicts if not merge_model.is_blank(c.subject)
    }
    if not wanted:
        return {}
    found = merge_reads.slot_claims(db, wanted.values())
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for slot, key in wanted.items():
        facts = [
            {
                "value": serialize.value_term(claim.value, found.iris),
                "valid_from": claim.valid_from,
                "tx": claim.tx,
                "actor": claim.actor,
                "source": claim.source,
            }
            for claim in found.by_slot.get(key, [])
        ]
        out[slot] = sorted(facts, key=lambda f: (f["value"], f["tx"]))
    return out


# -- apply ----------------------------------------------------------------------------------------


def _stale(what: str) -> BadRequest:
    return BadRequest(
        f"stale decisions: {what} changed since they were emitted (quipu_merge_decisions / "
        "quipu merge --emit-decisions); emit again and re-decide. Nothing was written",
        reason="stale_decisions",
        field="decisions",
    )


def _declared(value: object, name: str, *, required: bool) -> str | None:
    """``reviewer``/``actor``: a non-blank string without control characters (it is recorded in
    the transaction's source or actor)."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidField(f"'{name}' must be a non-blank string", field=name)
    if _CONTROL.search(value):
        raise InvalidField(f"'{name}' contains control characters", field=name)
    return value


def _check_current(doc: merge_file.DecisionsFile, p: _Prepared) -> None:
    """MD-2 seen from apply: the document names these shares, this ROOT and these conflicts."""
    if doc.incoming_share != p.incoming.share_id or doc.incoming_graph_hash != p.incoming.manifest.get(
        "graph_hash"
    ):
        raise _stale("the incoming share")
    if doc.base_share != p.base.share_id:
        raise _stale("the base share")
    if doc.local_graph_hash != p.local_graph_hash:
        raise _stale("ROOT")
    # Row order is free: an operator may sort or regroup the file.
    if sorted(row.conflict.key for row in doc.rows) != sorted(c.key for c in p.model.conflicts):
        raise _stale("the set of conflicts")


def _decided_term(row: merge_file.Row, value: object, at: str) -> str:
    """One decided value as a canonical N-Triples term: exactly one RDF term that makes exactly
    one triple with this row's subject and predicate."""
    c = row.conflict
    refused = BadRequest(
        f"row {row.id}: {value!r} is not exactly one RDF term for {c.subject} <{c.predicate}>; "
        "nothing was written",
        reason="invalid_decision_value",
        field=at,
    )
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
        raise refused  # a line break could smuggle a second triple
    try:
        triples = merge_model.parse_lines(_canonical(f"{c.subject} <{c.predicate}> {value} .\n", at), at)
    except BadRequest:
        raise refused from None
    if len(triples) != 1:
        raise refused
    ((s, p, o),) = triples
    same_subject = s == c.subject or (merge_model.is_blank(s) and merge_model.is_blank(c.subject))
    if p != c.predicate or not same_subject:
        raise refused
    # Canonical relabelling renames a blank node: keep the label the operator wrote, which is
    # the label the three graphs use.
    return value.strip() if merge_model.is_blank(o) else o


def _decided_values(row: merge_file.Row) -> list[str]:
    """The values a row decides (its conflict is the recomputed one: ``_check_current`` ran)."""
    c, decision = row.conflict, row.decision
    if decision is None:
        raise BadRequest(
            f"row {row.id} ({c.subject} <{c.predicate}>) is undecided; nothing was written",
            reason="undecided_row",
            field=f"{row.field}.decision",
        )
    chosen = c.side(decision.choose) if decision.choose is not None else decision.values or ()
    if len(chosen) > c.max_count:
        raise BadRequest(
            f"row {row.id} decides {len(chosen)} values for {c.subject} <{c.predicate}>, above "
            f"sh:maxCount {c.max_count}; nothing was written",
            reason="too_many_values",
            field=f"{row.field}.decision",
        )
    if decision.choose is not None:
        return list(c.side(decision.choose))  # the merge's own canonical terms
    at = f"{row.field}.decision.values"
    return sorted({_decided_term(row, value, f"{at}[{i}]") for i, value in enumerate(chosen)})


def _statements(triples: set[Triple], what: str) -> set[Statement]:
    """Triples as the store's statement keys (literals encoded as the store encodes them)."""
    for triple in sorted(triples):
        if merge_model.is_blank(triple[0]) or merge_model.is_blank(triple[2]):
            raise BadRequest(
                f"the merge would {what} {triple[0]} <{triple[1]}> {triple[2]}, which names a blank node "
                "by its canonical label; ROOT cannot address a blank node that way. Nothing was written",
                reason="blank_node_unaddressable",
                field="decisions",
            )
    if not triples:
        return set()
    batch = parse_document(_ntriples(triples).encode("utf-8"), "nt", graph_iri=ROOT_IRI)
    return set(batch.statements)


def _ntriples(triples: set[Triple]) -> str:
    return "".join(f"{s} <{p}> {o} .\n" for s, p, o in sorted(triples))


def apply(
    env: Environment,
    *,
    incoming: object,
    base: object,
    decisions: Mapping[str, Any],
    reviewer: str,
    actor: str | None = None,
    dry_run: bool = False,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    """``POST /merge/apply``. MA-1: every check runs before any write, and the write is one
    transaction; MA-5: a dry run performs the same checks and reports the same counts."""
    who = _declared(reviewer, "reviewer", required=True)
    claimed = _declared(actor, "actor", required=False)
    doc = merge_file.read(decisions)
    p = _prepare(env, incoming, base)
    _check_current(doc, p)
    merged = set(p.model.merged)
    applied: list[dict[str, Any]] = []
    for row in doc.rows:
        values = _decided_values(row)
        subject, predicate = row.conflict.slot
        # MA-4: the decided values replace the slot entirely, its held base values included.
        merged = {t for t in merged if (t[0], t[1]) != row.conflict.slot}
        merged.update((subject, predicate, v) for v in values)
        applied.append(
            {"id": row.id, "subject": subject, "predicate": predicate, "values": values, **row.echoed}
        )
    ours = p.graphs[1]
    asserting = merged - ours
    additions = _statements(asserting, "assert")
    removals = _statements(ours - merged, "retract")
    decisions_sha256 = mf.sha256_id(mf.canonical_json(decisions))  # MA-3: canonical, not raw bytes
    source = (
        f"share-merge:parents={p.local_graph_hash},{p.incoming.share_id};"
        f"decisions={decisions_sha256};reviewer={who}"
    )
    document = _ntriples(asserting).encode("utf-8")
    if dry_run:
        if additions:  # the write gate, as the write would run it (nothing is queued)
            with env.db.read() as conn:
                gate.check_write(env.db, document, fmt="nt", target=ROOT, conn=conn)
        delta = merge_writes.Delta(None, len(additions), len(removals))
    else:
        stamp = times.now()
        with env.db.write(auth) as ctx:
            if head_tx(ctx.conn) != p.root.tx_anchor:
                raise _stale("ROOT (while the merge was being prepared)")
            if additions:
                with ctx.gate(Refusal("shacl", None, claimed, source, len(additions), stamp)):
                    gate.check_write(
                        env.db,
                        document,
                        fmt="nt",
                        target=ROOT,
                        conn=ctx.conn,
                        advisories=ctx.advisories,
                    )
            delta = merge_writes.write_delta(
                env.db,
                ctx,
                additions=additions,
                removals=removals,
                timestamp=stamp,
                actor=claimed,
                source=source,
            )
    return {
        "outcome": "dry-run" if dry_run else "merged",
        "tx_id": delta.tx_id,
        "asserted": delta.asserted,
        "retracted": delta.retracted,
        "provenance_parents": [p.local_graph_hash, p.incoming.share_id],
        "conflicts": [],
        "reviewer": who,
        "decisions_sha256": decisions_sha256,
        "applied": applied,
    }
