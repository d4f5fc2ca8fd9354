"""The governance family's service: policy verdicts, verdict verification and the verifier
registry (tools-graphs-governance §5).

Everything here is a read: nothing is ever written, whatever the outcome. The one piece of
state is the server's optional signing identity, loaded (and its file's mode checked) when the
service is built, so a bad key refuses to start rather than failing the first check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quipu.errors import InvalidField, MissingField, QueryError
from quipu.governance import policy as policies
from quipu.governance import registry, signing, verdicts
from quipu.governance.registry import Witness
from quipu.governance.signing import SigningIdentity
from quipu.governance.vocabulary import check_iri
from quipu.governance.workflow import Workflow
from quipu.sparql.engine import QueryResult, prepare
from quipu.store.database import Database

SIGNING_NAME = "quipu"  # the verifier name the server signs as (v1)
HARDWARE_SETTING = "[quipu.governance] hardware_verdict_schemes"


class Governance:
    def __init__(
        self,
        db: Database,
        query: Callable[..., QueryResult],  # KnowledgeBase.query_result, under the query budgets
        *,
        signing_key_file: str | None = None,
        hardware_verdict_schemes: bool = False,
        workflow: Workflow | None = None,
    ) -> None:
        self.db = db
        self._query = query
        self.hardware = hardware_verdict_schemes
        # the direct-workflow guard of /update and its capabilities read (one settings object)
        self.workflow = workflow or Workflow(db, enforce=False, scope=(), verifier="workflow")
        self.identity: SigningIdentity | None = (
            signing.load(signing_key_file, SIGNING_NAME) if signing_key_file else None
        )

    # -- quipu_policy_check ---------------------------------------------------------------------

    def policy_check(
        self,
        *,
        target: str | None = None,
        policy: str | None = None,
        claim: str | None = None,
        predicate_id: str | None = None,
        evidence_probe: str | None = None,
        valid_at: str | None = None,
        tx: int | None = None,
    ) -> dict[str, Any]:
        checked = policies.check_target(target)
        if claim is not None:  # an inline claim wins over a policy
            claims = policies.Claims(predicate_id or "inline", claim, evidence_probe)
        elif policy is not None:
            check_iri(policy, "policy")
            claims = policies.stored_claims(self.db, policy)
        else:
            raise MissingField(
                "give 'policy' (a stored policy IRI) or 'claim' (an inline ASK)", field="policy"
            )
        _ask_form(claims.claim, "claim")
        if claims.probe is not None:
            _ask_form(claims.probe, "evidence_probe")
        result = policies.check(claims, checked, valid_at, tx, self._ask)
        signed = self.identity is not None
        name = self.identity.name if self.identity is not None else SIGNING_NAME
        result["verifier"] = name
        with self.db.read() as conn:
            found = registry.registrations(self.db, conn, registry.witness_of(None, None))
        result["verifier_authorized"] = registry.authorized(found, name, claims.predicate_id)
        result["signed"] = signed
        result["signature"] = None
        result["verifier_public_key"] = None
        if self.identity is not None:
            message = verdicts.message(
                claims.predicate_id, checked, result["outcome"], result["evidence_hash"], "committed", name
            )
            result["signature"] = self.identity.sign(message)
            result["verifier_public_key"] = self.identity.public_hex
        return result

    def _ask(self, text: str, valid_at: str | None, tx: int | None) -> bool:
        answer: QueryResult = self._query(text, valid_at=valid_at, as_of_tx=tx)
        return bool(answer.boolean)

    # -- quipu_verdict_verify -------------------------------------------------------------------

    def verdict_verify(self, **fields: Any) -> dict[str, Any]:
        for name in ("predicate_id", "target_ref", "outcome", "evidence_hash", "verifier", "signature"):
            if fields.get(name) is None:
                raise MissingField(f"missing '{name}'", field=name)
        fields.setdefault("tier", "committed")
        fields["tier"] = fields["tier"] or "committed"
        scheme = fields.get("scheme") or "ed25519"
        fields["scheme"] = scheme
        if scheme != "ed25519":
            from quipu.governance.hardware import SCHEMES

            if scheme not in SCHEMES:
                known = ", ".join(("ed25519", *SCHEMES))
                raise InvalidField(f"unknown signature scheme {scheme!r} (known: {known})", field="scheme")
            if not self.hardware:
                raise InvalidField(
                    f"signature scheme {scheme!r} is a hardware scheme, disabled on this server "
                    f"({HARDWARE_SETTING} = false)",
                    field="scheme",
                )
        signed = verdicts.message(
            fields["predicate_id"],
            fields["target_ref"],
            fields["outcome"],
            fields["evidence_hash"],
            fields["tier"],
            fields["verifier"],
        )
        with self.db.read() as conn:
            if fields.get("verdict") is not None:  # VV-2: the recorded instant, not the caller's
                witness = verdicts.recorded_witness(self.db, conn, fields["verdict"], fields["signature"])
            else:
                witness = registry.witness_of(fields.get("signed_at"), fields.get("tx"))
            found = registry.registrations(self.db, conn, witness)
        if scheme == "ed25519":
            return verdicts.verify_ed25519(found, witness, fields, signed)
        from quipu.governance import hardware

        return verdicts.verify_hardware(found, witness, fields, signed, hardware.verify)

    # -- quipu_verifier_authorized --------------------------------------------------------------

    def verifier_authorized(
        self, *, verifier: str, predicate: str, signed_at: str | None = None, tx: int | None = None
    ) -> dict[str, Any]:
        witness: Witness = registry.witness_of(signed_at, tx)
        with self.db.read() as conn:
            found = registry.registrations(self.db, conn, witness)
        return {"authorized": registry.authorized(found, verifier, predicate), "as_of": witness.as_json()}


def _ask_form(text: str, field: str) -> None:
    """Refuse anything but an ASK before running it: a SELECT could be expensive, and an update
    is no question at all."""
    try:
        form = prepare(text).algebra.name
    except QueryError as exc:
        raise InvalidField(f"'{field}' does not parse as SPARQL: {exc}", field=field) from None
    except Exception as exc:  # rdflib's parser raises its own exception types
        raise InvalidField(f"'{field}' does not parse as SPARQL: {exc}", field=field) from None
    if form != "AskQuery":
        what = "claim" if field == "claim" else "probe"
        raise InvalidField(f"{what} must be a SPARQL ASK query", field=field)
