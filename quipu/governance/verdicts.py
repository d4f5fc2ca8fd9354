"""``quipu_verdict_verify``: should this signed verdict be believed? (tools-graphs-governance §5.2)

``trusted`` is the conjunction a consumer gates on: at the instant the store recorded the
signature, it verifies under the key of a registration of the named verifier, and that same
registration attests the predicate. A caller-supplied instant is only ever a what-if (VV-1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from sqlalchemy import Connection

from quipu.errors import InvalidField
from quipu.governance import registry
from quipu.governance.registry import Registration, Witness
from quipu.governance.vocabulary import check_iri
from quipu.store import registry_reads, values
from quipu.store.database import Database

SIGNATURE: Final = "http://aegis.gastown.local/ontology/signature"  # legacy-only (alias rule 7)
_INLINED_FORBIDDEN: Final = frozenset('"\\\r\n')


def message(
    predicate_id: str, target_ref: str, outcome: str, evidence_hash: str, tier: str, verifier: str
) -> bytes:
    """The v1 verdict message every scheme signs: the fields joined by ``|``, unescaped."""
    return f"v1|{predicate_id}|{target_ref}|{outcome}|{evidence_hash}|{tier}|{verifier}".encode()


def recorded_witness(db: Database, conn: Connection, verdict: str, signature: str) -> Witness:
    """VV-2: the first transaction that recorded ``<verdict> aegis:signature "<signature>"``;
    the signer cannot choose the instant."""
    check_iri(verdict, "verdict")
    ids = db.terms.lookup(conn, [verdict, SIGNATURE])
    found = None
    if verdict in ids and SIGNATURE in ids:
        found = registry_reads.first_recording(conn, ids[verdict], ids[SIGNATURE], values.string(signature))
    if found is None:
        raise InvalidField(
            f"verdict <{verdict}> has no recorded aegis:signature with this value: no store-witnessed instant",
            field="verdict",
        )
    return Witness(found[0], found[1], "recorded")


def ed25519_valid(public_hex: str, signature_hex: str, signed: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_hex)).verify(
            bytes.fromhex(signature_hex), signed
        )
    except InvalidSignature:
        return False
    return True


def _hex(text: str, length: int, field: str, what: str) -> None:
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise InvalidField(f"{what} is not hex", field=field) from None
    if len(raw) != length:
        raise InvalidField(f"{what} must be {length} bytes of hex, got {len(raw)} bytes", field=field)


def verify_ed25519(
    found: list[Registration], witness: Witness, fields: dict[str, Any], signed: bytes
) -> dict[str, Any]:
    verifier, predicate, signature = fields["verifier"], fields["predicate_id"], fields["signature"]
    _hex(signature, 64, "signature", "the signature")
    mine = [r for r in found if r.names(verifier) and r.declares("ed25519") and r.get("publicKey")]
    keys = {k for r in mine for k in r.get("publicKey")}  # the same key under both spellings is one
    if len(keys) > 1:
        raise InvalidField(
            f"verifier {verifier!r} has {len(keys)} conflicting keys in effect at the witness; "
            "conflicting registered keys are refused, never chosen",
            field="verifier",
        )
    valid = False
    if keys:
        key = next(iter(keys))
        _hex(key, 32, "verifier", f"the registered key of verifier {verifier!r}")
        valid = ed25519_valid(key, signature, signed)
    # key and scope from the same registration: the verifying key's own registration must attest
    holds = valid and any(r.attests(predicate) for r in mine)
    return {
        "scheme": "ed25519",
        "signature_valid": valid,
        "verifier_registered": bool(keys),
        "verifier_authorized": registry.authorized(found, verifier, predicate),
        "trusted": holds and witness.trusting,
        "would_verify_as_of_supplied_instant": None if witness.trusting else holds,
        "as_of": witness.as_json(),
    }


HardwareCheck = Callable[..., Any]  # quipu.governance.hardware.verify


def verify_hardware(
    found: list[Registration], witness: Witness, fields: dict[str, Any], signed: bytes, check: HardwareCheck
) -> dict[str, Any]:
    """The hardware path (§5.2 steps 2-4): every registration of the verifier declaring exactly
    this scheme, each with its own recorded counter; an authorizing one that verifies wins,
    whatever the enrolment order."""
    from quipu.governance.hardware import HardwareKey, check_request

    verifier, predicate, scheme = fields["verifier"], fields["predicate_id"], fields["scheme"]
    for name in ("verifier", "predicate_id"):
        if any(ch in _INLINED_FORBIDDEN for ch in fields[name]):
            raise InvalidField(f"'{name}' must not contain a quote, a backslash, CR or LF", field=name)
    check_request(
        scheme, fields["signature"], fields.get("authenticator_data"), fields.get("client_data_json")
    )
    mine = [r for r in found if r.names(verifier) and r.declares(scheme)]
    reasons: list[str] = []
    unauthorized: dict[str, Any] | None = None
    for r in mine:
        single = {n: r.get(n) for n in ("publicKey", "webauthnRpId", "webauthnOrigin")}
        many = [n for n, vals in single.items() if len(vals) > 1]
        if many or not single["publicKey"]:
            why = f"more than one {', '.join(many)}" if many else "no publicKey"
            reasons.append(f"registration <{r.iri}> skipped: it is ambiguous ({why})")
            continue
        key = HardwareKey(
            scheme,
            next(iter(single["publicKey"])),
            next(iter(single["webauthnRpId"]), None),
            next(iter(single["webauthnOrigin"]), None),
        )
        result = check(
            key,
            signed,
            fields["signature"],
            recorded_count=registry.recorded_count(r),
            authenticator_data=fields.get("authenticator_data"),
            client_data_json=fields.get("client_data_json"),
        )
        if not result.ok:
            reasons += [f"registration <{r.iri}>: {why}" for why in result.reasons]
            continue
        own = r.attests(predicate)
        body = {
            "scheme": scheme,
            "signature_valid": True,
            "verifier_registered": True,
            "verifier_authorized": registry.authorized(found, verifier, predicate),
            "trusted": own and witness.trusting,
            "would_verify_as_of_supplied_instant": None if witness.trusting else own,
            "as_of": witness.as_json(),
            "registration": r.iri,
            "registration_authorized": own,
            "user_present": result.user_present,
            "user_verified": result.user_verified,
            "sign_count": result.sign_count,
        }
        if own:
            return body
        unauthorized = unauthorized or body
    if unauthorized is not None:
        return unauthorized
    if not mine:
        reasons.append(f"no registration declaring scheme {scheme} in effect at the verdict's instant")
    return {
        "scheme": scheme,
        "signature_valid": False,
        "verifier_registered": bool(mine),
        "verifier_authorized": registry.authorized(found, verifier, predicate),
        "reasons": reasons,
        "trusted": False,
        "would_verify_as_of_supplied_instant": None if witness.trusting else False,
        "as_of": witness.as_json(),
    }
