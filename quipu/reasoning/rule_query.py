"""``quipu_rule_query``: a four-valued answer about one grounded claim (tools-core §1.2).

Positive evidence (the claim is visible, asserted or, with ``include_inferred``, derived in the
graph's companion) and explicit negative evidence (a visible ``quipu:NegatedClaim`` node for the
claim, or ``quipu:distinctFrom`` for an ``owl:sameAs`` claim) are read separately: the answer is
SUPPORTED, REFUTED, BOTH or NEITHER. Absence is never negative (open world). Judgments
(``quipu:ClaimJudgment`` nodes) are reported beside the answer and never change it. A read that
fails or cannot be complete answers UNKNOWN with HTTP 200 (rule 4). Nothing is interned (rule 6)
and ``grants_authority`` is always false (rule 3).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from quipu.errors import InvalidField, MissingField, QueryTimeout, StorageError, UnknownField, UnknownGraph
from quipu.store import claim_reads, graph_registry, graph_scope, values
from quipu.store.claim_reads import Claim
from quipu.store.database import Database
from quipu.store.schema import ROOT, ROOT_IRI
from quipu.store.views import TemporalView
from quipu.store.writes import companion_iri

QUIPU = "https://quipu.dev/ontology/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
OWL_SAME_AS = "http://www.w3.org/2002/07/owl#sameAs"
NEGATED = QUIPU + "NegatedClaim"
JUDGMENT = QUIPU + "ClaimJudgment"
DISPOSITION = QUIPU + "disposition"
JUDGED_BY = QUIPU + "judgedBy"
DISTINCT_FROM = QUIPU + "distinctFrom"
_BELNAP = {(True, False): "true", (False, True): "false", (True, True): "both", (False, False): "neither"}
_ANSWER = {"true": "SUPPORTED", "false": "REFUTED", "both": "BOTH", "neither": "NEITHER"}
clock = time.monotonic  # the deadline's clock (a test moves it)
_DISPOSITIONS = {values.string("supported"): "supported", values.string("refuted"): "refuted"}


def _claim(claim: object) -> tuple[str, str, values.ValueInput]:
    if not isinstance(claim, dict):
        raise InvalidField("'claim' must be an object with subject, predicate and object", field="claim")
    for key in ("subject", "predicate", "object"):
        if key not in claim:
            raise MissingField(f"missing 'claim.{key}'", field=f"claim.{key}")
    extra = sorted(set(claim) - {"subject", "predicate", "object"})
    if extra:
        raise UnknownField(f"unknown field 'claim.{extra[0]}'", field=f"claim.{extra[0]}")
    subject = values.check_iri(claim["subject"], "claim.subject", blank=True)
    predicate = values.check_iri(claim["predicate"], "claim.predicate")
    return subject, predicate, values.from_json(claim["object"], "claim.object")


def rule_query(
    db: Database,
    *,
    claim: object,
    graph: str | None = None,
    include_inferred: bool = True,
    valid_at: str | None = None,
    tx: int | None = None,
    max_evidence: int = 10,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """``timeout_ms`` is the query deadline (``search.query_timeout_ms``; None or 0: none): a
    read past it answers UNKNOWN, as any read that cannot be complete does (rule 4)."""
    subject, predicate, obj = _claim(claim)
    if isinstance(max_evidence, bool) or not isinstance(max_evidence, int) or not 1 <= max_evidence <= 100:
        raise InvalidField("'max_evidence' must be an integer from 1 to 100", field="max_evidence")
    view = TemporalView.at(as_of_tx=tx, valid_at=valid_at)
    graph_iri = graph or ROOT_IRI
    read_point = {"tx": tx, "valid_at": view.valid_at}
    with db.read() as conn:
        gid, record = graph_registry.lookup(db, conn, graph_iri)
        if gid is None or (gid != ROOT and record is None):
            raise UnknownGraph(f"unknown graph <{graph_iri}>", field="graph")
    if tx is not None and db.archives.mounted:  # rule 4: the packs hold other transactions' rows
        return _unknown("a transaction-time read is incomplete while archive packs are mounted", read_point)
    at = clock() + timeout_ms / 1000 if timeout_ms else None

    def in_time() -> None:  # between statements; the database stops a statement past it
        if at is not None and clock() > at:
            raise QueryTimeout(f"the rule query ran past its deadline of {timeout_ms} ms")

    late = QueryTimeout(f"the rule query ran past its deadline of {timeout_ms} ms")
    try:
        with db.read() as conn, db.dialect.deadline(conn, at, late) if at else nullcontext():
            return _answer(
                db,
                conn,
                view,
                gid,
                graph_iri,
                subject,
                predicate,
                obj,
                include_inferred,
                max_evidence,
                in_time,
            ) | {"read_point": read_point}
    except (QueryTimeout, StorageError) as exc:  # rule 4: never a definite answer from a partial read
        return _unknown(str(exc), read_point)


def _unknown(reason: str, read_point: dict[str, Any]) -> dict[str, Any]:
    empty = {"found": False, "count": 0, "evidence": [], "truncated": False}
    return {
        "answer": "UNKNOWN",
        "belnap": None,
        "positive": dict(empty),
        "negative": dict(empty),
        "judgment": {"disposition": "none", "verdict": None, "judgments": []},
        "complete": False,
        "unknown_reason": reason,
        "grants_authority": False,
        "read_point": read_point,
    }


def _answer(
    db: Database,
    conn: Any,
    view: TemporalView,
    gid: int,
    graph_iri: str,
    subject: str,
    predicate: str,
    obj: values.ValueInput,
    include_inferred: bool,
    cap: int,
    in_time: Callable[[], None],
) -> dict[str, Any]:
    names = [
        subject,
        predicate,
        NEGATED,
        JUDGMENT,
        DISPOSITION,
        JUDGED_BY,
        DISTINCT_FROM,
        companion_iri(graph_iri),
    ]
    names += [RDF + x for x in ("type", "subject", "predicate", "object")]
    if obj.iri is not None:
        names.append(obj.iri)
    in_time()
    ids = db.terms.lookup(conn, names)  # never interns (rule 6): an unknown IRI has no evidence
    companion = ids.get(companion_iri(graph_iri)) if include_inferred else None
    # the label floor, as every read applies it to the graphs it reads (a refusal, not UNKNOWN)
    graph_scope.enforce(db, conn, [gid] if companion is None else [gid, companion])
    s, p = ids.get(subject), ids.get(predicate)
    o = values.ref(ids[obj.iri]) if obj.iri is not None and obj.iri in ids else obj.encoded
    graph_names = {gid: graph_iri}
    positive: list[dict[str, Any]] = []
    negative: list[dict[str, Any]] = []
    judgments: list[dict[str, Any]] = []
    own = view.with_graphs([gid])
    if s is not None and p is not None and o is not None:
        scope = [gid]
        if companion is not None:
            scope.append(companion)
            graph_names[companion] = companion_iri(graph_iri)
        in_time()
        for c in claim_reads.claims(conn, view.with_graphs(scope), s, p, o):
            kind = "inferred" if c.graph != gid else "asserted"
            positive.append(_item(c, graph_names) | {"valid_from": c.valid_from, "kind": kind})
        rdf = {x: ids[RDF + x] for x in ("type", "subject", "predicate", "object") if RDF + x in ids}
        in_time()
        if len(rdf) == 4 and NEGATED in ids:
            for node, c in claim_reads.reified(conn, own, ids[NEGATED], rdf, s, p, o):
                negative.append(_item(c, graph_names) | {"node": node})
        in_time()
        if len(rdf) == 4 and JUDGMENT in ids:
            judgments = _judgments(conn, own, ids, rdf, s, p, o)
    # owl:sameAs is refuted by quipu:distinctFrom either way, even if sameAs was never written
    if predicate == OWL_SAME_AS and s is not None and DISTINCT_FROM in ids and obj.iri in ids:
        other = ids[obj.iri]
        for a, b in ((s, other), (other, s)):
            for c in claim_reads.claims(conn, own, a, ids[DISTINCT_FROM], values.ref(b)):
                negative.append(_item(c, graph_names) | {"node": None})
    in_time()
    wanted = {n["node"] for n in negative if n["node"] is not None} | {j["node"] for j in judgments}
    wanted |= {j["_judge"] for j in judgments if j["_judge"] is not None}
    iris = db.terms.iris(conn, wanted) if wanted else {}
    for n in negative:
        if n["node"] is not None:
            n["node"] = iris[n["node"]]
    judged = [j for j in judgments if j["admitted"]]
    verdicts = {j["disposition"] for j in judged}
    for j in judgments:
        j["node"] = iris[j["node"]]
        judge = j.pop("_judge")
        j["judged_by"] = None if judge is None else iris[judge]
    if not judgments:
        disposition, verdict = "none", None
    elif not judged:
        disposition, verdict = "not_admitted", None
    elif len(verdicts) == 1:
        disposition, verdict = "admitted", next(iter(verdicts))
    else:
        disposition, verdict = "conflicting", None
    belnap = _BELNAP[(bool(positive), bool(negative))]
    return {
        "answer": _ANSWER[belnap],
        "belnap": belnap,
        "positive": _side(positive, cap),
        "negative": _side(negative, cap),
        "judgment": {"disposition": disposition, "verdict": verdict, "judgments": judgments},
        "complete": True,
        "unknown_reason": None,
        "grants_authority": False,
    }


def _item(c: Claim, graph_names: dict[int, str]) -> dict[str, Any]:
    return {"graph": graph_names.get(c.graph, ROOT_IRI), "tx": c.tx, "source": c.source}


def _side(items: list[dict[str, Any]], cap: int) -> dict[str, Any]:
    """Rule 5: the cap shortens the list only, never ``found``."""
    return {"found": bool(items), "count": len(items), "evidence": items[:cap], "truncated": len(items) > cap}


def _judgments(
    conn: Any, view: TemporalView, ids: dict[str, int], rdf: dict[str, int], s: int, p: int, o: bytes
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for node, _provenance in claim_reads.reified(conn, view, ids[JUDGMENT], rdf, s, p, o):
        dispositions = (
            [_DISPOSITIONS.get(v) for v in claim_reads.objects(conn, view, node, ids[DISPOSITION])]
            if DISPOSITION in ids
            else []
        )
        judges = claim_reads.objects(conn, view, node, ids[JUDGED_BY]) if JUDGED_BY in ids else []
        refs = [r for r in (values.ref_id(v) for v in judges) if r is not None]
        valid = [d for d in dispositions if d is not None]
        admitted = len(valid) == 1 and len(dispositions) == 1 and bool(refs)
        out.append(
            {
                "node": node,
                "disposition": valid[0] if len(valid) == 1 else None,
                "judged_by": None,
                "admitted": admitted,
                "_judge": refs[0] if refs else None,
            }
        )
    return out
