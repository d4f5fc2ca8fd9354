"""The direct-workflow guard on ``/update`` and ``quipu_workflow_capabilities`` (tools-core
§3.10 rule 9, §4.4) [designed here; docs/governance.md].

With ``[quipu.workflow] enforce_direct_updates`` on, a SPARQL Update whose inserted or deleted
statements use a predicate in ``scope`` is refused (403 ``workflow_signature_required``) unless
it carries a workflow signature: header ``X-Quipu-Workflow-Signature``, the hex Ed25519
signature of ``quipu-workflow-v1`` NUL and the update text, by the key of a registration of the
configured ``verifier`` in the verifier registry (as of now) that attests every scoped predicate
the update touches. Key and scope come from one registration, as for verdicts. The MCP tool
cannot send the header, so scoped predicates cannot be changed through it while the guard is on;
the capabilities read says so beforehand, from the same settings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final

from quipu.errors import ConfigError, Forbidden
from quipu.governance import registry, verdicts
from quipu.store import values
from quipu.store.database import Database

SIGNATURE_VERSION: Final = "quipu-workflow-ed25519-v1"
HEADER: Final = "X-Quipu-Workflow-Signature"
DOMAIN: Final = b"quipu-workflow-v1\0"

Guard = Callable[[Collection[str]], None]  # called with the predicates an update touches


class WorkflowSignatureRequired(Forbidden):
    reason = "workflow_signature_required"


@dataclass(frozen=True)
class _Signed:
    """What a presented signature establishes: the scope its registration attests (empty when
    it does not verify), and why not."""

    attests: frozenset[str]
    problem: str | None


class Workflow:
    def __init__(self, db: Database, *, enforce: bool, scope: Collection[str], verifier: str) -> None:
        for predicate in scope:
            if not values.looks_like_iri(predicate):
                raise ConfigError(f"workflow.scope: {predicate!r} is not a predicate IRI")
        self.db = db
        self.enforce = enforce
        self.scope = frozenset(scope)
        self.verifier = verifier

    def capabilities(self) -> dict[str, Any]:
        """What ``/update`` enforces, read from the same settings; grants nothing."""
        if not self.enforce:
            return {"enabled": False, "signature_version": None, "scope": []}
        return {"enabled": True, "signature_version": SIGNATURE_VERSION, "scope": sorted(self.scope)}

    def guard(self, text: str, signature: str | None) -> Guard | None:
        """The check ``run_update`` applies to the predicates it is about to change; None while
        the guard is off. The signature is verified here, before the write begins."""
        if not self.enforce or not self.scope:
            return None
        signed = self._verified(text, signature) if signature is not None else None

        def check(predicates: Collection[str]) -> None:
            guarded = sorted(self.scope.intersection(predicates))
            if not guarded:
                return
            if signed is None:
                raise WorkflowSignatureRequired(
                    f"this update changes workflow-guarded predicates {guarded}: send it with a "
                    f"{HEADER} header ({SIGNATURE_VERSION}), see quipu_workflow_capabilities"
                )
            missing = [p for p in guarded if p not in signed.attests]
            if signed.problem is not None or missing:
                why = signed.problem or f"its registration does not attest {missing}"
                raise WorkflowSignatureRequired(f"the workflow signature is not valid for this update: {why}")

        return check

    def _verified(self, text: str, signature: str) -> _Signed:
        signature = signature.strip()
        try:
            if len(bytes.fromhex(signature)) != 64:
                return _Signed(frozenset(), "the signature is not 64 bytes of hex")
        except ValueError:
            return _Signed(frozenset(), "the signature is not hex")
        with self.db.read() as conn:
            found = registry.registrations(self.db, conn, registry.witness_of(None, None))
        signed = DOMAIN + text.encode()
        for r in found:
            if not (r.names(self.verifier) and r.declares("ed25519")):
                continue
            for key in r.get("publicKey"):
                try:
                    holds = verdicts.ed25519_valid(key, signature, signed)
                except ValueError:
                    continue  # a malformed registered key verifies nothing
                if holds:
                    return _Signed(frozenset(r.get("attests")), None)
        return _Signed(frozenset(), f"it does not verify under a key registered to {self.verifier!r}")
