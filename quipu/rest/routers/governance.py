"""Governance reads: ``POST /policy/check``, ``/verdict/verify`` and ``/verifier/authorized``
(tools-graphs-governance §5), and ``GET /workflow/capabilities`` (tools-core §4.4). Read routes.
The three POST bodies are annotating (§0.5): an unknown key comes back in ``ignored_fields``, a
wrong JSON type is a 400; the capabilities read takes no argument at all. The work lives in
``quipu.governance`` (``kb.governance``); nothing here writes.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from quipu.rest.deps import KbDep
from quipu.rest.fields import Annotating, refuse_unknown

router = APIRouter(tags=["governance"])


class PolicyCheckRequest(Annotating):
    target: str = Field(description="the entity under evaluation, bound to $target")
    policy: str | None = Field(None, description="a stored aegis:Policy whose claim (and probe) to evaluate")
    claim: str | None = Field(None, description="an inline SPARQL ASK; wins over policy")
    predicate_id: str | None = Field(
        None, description="the recorded predicate of an inline claim (default inline)"
    )
    evidence_probe: str | None = Field(None, description="an inline ASK: does the evidence exist yet?")
    valid_at: str | None = Field(None, description="valid-time instant of the evaluation")
    tx: int | None = Field(None, ge=0, description="transaction-time bound of the evaluation")


@router.post("/policy/check")
def policy_check(body: PolicyCheckRequest, kb: KbDep) -> dict[str, Any]:
    """A deterministic verdict (satisfied, unsatisfied or unknown) with its evidence_hash; signed
    when the server has a signing identity."""
    return body.annotate(kb.governance.policy_check(**body.fields()))


class VerdictVerifyRequest(Annotating):
    predicate_id: str = Field(description="the predicate the verdict attests")
    target_ref: str = Field(description="the verdict's target")
    outcome: str = Field(description="the verdict's outcome (part of the signed message)")
    evidence_hash: str = Field(description="the hash the signature seals")
    verifier: str = Field(description="the verifier name whose registration is consulted")
    signature: str = Field(
        description="ed25519: hex; webauthn-*: base64url; sshsig-sk-ed25519: the armored SSH SIGNATURE block"
    )
    tier: str | None = Field(None, description="evidence tier (default committed)")
    verdict: str | None = Field(
        None, description="a stored verdict carrying this signature: verify at its recorded instant"
    )
    signed_at: str | None = Field(None, description="what-if valid-time instant (never trusted)")
    tx: int | None = Field(None, ge=0, description="what-if transaction (never trusted)")
    scheme: str | None = Field(
        None, description="ed25519 (default), webauthn-es256, webauthn-eddsa, sshsig-sk-ed25519"
    )
    authenticator_data: str | None = Field(None, description="WebAuthn: base64url authenticatorData")
    client_data_json: str | None = Field(None, description="WebAuthn: base64url clientDataJSON")


@router.post("/verdict/verify")
def verdict_verify(body: VerdictVerifyRequest, kb: KbDep) -> dict[str, Any]:
    """Whether a signed verdict should be believed: trusted = the signature verifies under a key
    registered to the verifier at the recorded instant, and that registration attests the predicate."""
    return body.annotate(kb.governance.verdict_verify(**body.fields()))


class VerifierAuthorizedRequest(Annotating):
    verifier: str = Field(description="the registration's verifier name (a string literal)")
    predicate: str = Field(description="matched against the registration's aegis:attests literals")
    signed_at: str | None = Field(None, description="read the registry at this valid-time instant")
    tx: int | None = Field(None, ge=0, description="read the registry as of this transaction")


@router.post("/verifier/authorized")
def verifier_authorized(body: VerifierAuthorizedRequest, kb: KbDep) -> dict[str, Any]:
    """May this verifier attest this predicate? One registration must carry both."""
    return body.annotate(kb.governance.verifier_authorized(**body.fields()))


@router.get("/workflow/capabilities")
def workflow_capabilities(request: Request, kb: KbDep) -> dict[str, Any]:
    """Whether /update enforces the direct-workflow guard, with which signature version and over
    which predicates. Takes no arguments; the read grants no write authority."""
    refuse_unknown(request.query_params.keys(), frozenset())
    return kb.governance.workflow.capabilities()
