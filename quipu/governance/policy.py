"""``quipu_policy_check``: one policy (or inline claim) against one target, over committed data
(tools-graphs-governance §5.1).

The claim is a SPARQL ASK stating the compliant condition, with ``$target`` replaced textually
by the target's IRI; an optional evidence probe asks whether the evidence exists yet. The
verdict is deterministic for the same evidence, and ``evidence_hash`` lets anyone rerun it and
compare (PC-2). The check never writes (PC-5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from quipu import times
from quipu.errors import InvalidField, MissingField
from quipu.governance.vocabulary import check_iri, spellings
from quipu.store import graph_scope, registry_reads, values
from quipu.store.database import Database
from quipu.store.schema import ROOT

FNV_OFFSET: Final = 0xCBF29CE484222325
FNV_PRIME: Final = 0x100000001B3


def evidence_hash(predicate_id: str, target: str, valid_at: str | None, bound_claim: str) -> str:
    """``fnv1a:`` and 16 hex digits of FNV-1a-64 over ``predicate|target|valid_at|claim`` (PC-3:
    the transaction is left out, as the original leaves it out)."""
    h = FNV_OFFSET
    for byte in f"{predicate_id}|{target}|{valid_at or ''}|{bound_claim}".encode():
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a:{h:016x}"


def check_target(target: object) -> str:
    if target is None:
        raise MissingField("missing 'target'", field="target")
    if not isinstance(target, str) or not target:
        raise InvalidField("'target' must be a non-empty IRI string", field="target")
    check_iri(target, "target")
    return target


@dataclass(frozen=True)
class Claims:
    predicate_id: str
    claim: str
    probe: str | None


def stored_claims(db: Database, policy: str) -> Claims:
    """The policy's claim and probe, each read under both spellings (PC-4: used exactly as
    stored). Identical values collapse; conflicting ones are refused, never chosen; only plain
    string literals count."""
    names = {iri: local for local in ("claim", "evidenceProbe") for iri in spellings(local)}
    with db.read() as conn:
        graph_scope.enforce(db, conn, (ROOT,))
        ids = db.terms.lookup(conn, [policy, *names])
        found: dict[str, set[str]] = {"claim": set(), "evidenceProbe": set()}
        if policy in ids:
            preds = {ids[iri]: local for iri, local in names.items() if iri in ids}
            now = times.now()
            for _e, a, v in registry_reads.facts_at(
                conn, list(preds), at=now, tx=None, subjects=[ids[policy]]
            ):
                decoded = values.decode(v)
                if decoded.kind == "str":
                    found[preds[a]].add(decoded.lexical)
    for local, texts in found.items():
        if len(texts) > 1:
            raise InvalidField(
                f"policy '{policy}' has conflicting aegis:{local} values under the legacy and Quechua "
                "vocabularies; refused rather than choosing one",
                field="policy",
            )
    if not found["claim"]:
        raise InvalidField(f"policy '{policy}' has no aegis:claim", field="policy")
    probe = next(iter(found["evidenceProbe"]), None)
    return Claims(policy, next(iter(found["claim"])), probe)


Ask = Callable[[str, str | None, int | None], bool]  # (ASK text, valid_at, tx) -> its answer


def check(claims: Claims, target: str, valid_at: str | None, tx: int | None, ask: Ask) -> dict[str, Any]:
    """§5.1 steps 3-5: bind, evaluate (probe first), hash."""
    bound = claims.claim.replace("$target", f"<{target}>")
    probe = claims.probe.replace("$target", f"<{target}>") if claims.probe is not None else None
    if probe is not None and not ask(probe, valid_at, tx):
        outcome = "unknown"  # PC-1: no evidence yet is not a failed claim
    else:
        outcome = "satisfied" if ask(bound, valid_at, tx) else "unsatisfied"
    return {
        "predicate_id": claims.predicate_id,
        "target_ref": target,
        "outcome": outcome,
        "evidence_hash": evidence_hash(claims.predicate_id, target, valid_at, bound),
        "tier": "committed",
    }
