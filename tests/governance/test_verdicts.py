"""``quipu_verdict_verify`` (ed25519) and ``quipu_verifier_authorized`` on a real store
(tools-graphs-governance §5.0, §5.2, §5.3): signatures made here with real Ed25519 keys, the
registry written as facts, the tampering matrix one row each, and the alias rule."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, MissingField
from tests.backends import store_location

A = "http://aegis.gastown.local/ontology/"
Q = "https://scbrown.github.io/quechua/ns#"
FOREIGN = "http://example.org/other-vocabulary/"
P = "urn:policy:deployed"
T0, T1, T2, T3 = (
    "2026-01-01T00:00:00Z",
    "2026-02-01T00:00:00Z",
    "2026-03-01T00:00:00Z",
    "2026-04-01T00:00:00Z",
)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "verdicts.db")) as opened:
        yield opened


class Signer:
    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()
        self.public = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    def sign(self, fields: dict[str, str]) -> str:
        message = "v1|{predicate_id}|{target_ref}|{outcome}|{evidence_hash}|{tier}|{verifier}".format(
            tier="committed", **fields
        )
        return self.key.sign(message.encode()).hex()


VERDICT = {
    "predicate_id": P,
    "target_ref": "urn:svc:api",
    "outcome": "satisfied",
    "evidence_hash": "fnv1a:0123456789abcdef",
    "verifier": "ci",
}


def register(
    kb: KnowledgeBase,
    reg: str,
    key: str | None,
    attests: tuple[str, ...] = (P,),
    *,
    verifier: str = "ci",
    ns: tuple[str, str, str, str] = (A, A, A, A),  # class, verifier, publicKey, attests
    scheme: str | None = None,
    at: str = T0,
    graph: str | None = None,
) -> None:
    cls, who, pk, att = ns
    lines = [f'<{reg}> a <{cls}VerifierRegistration> ; <{who}verifier> "{verifier}"']
    if key is not None:
        lines.append(f'<{pk}publicKey> "{key}"')
    lines += [f'<{att}attests> "{p}"' for p in attests]
    if scheme is not None:
        lines.append(f'<{A}signatureScheme> "{scheme}"')
    kb.knot(" ; ".join(lines) + " .", timestamp=at, graph=graph)


def record(kb: KnowledgeBase, verdict: str, signature: str, at: str) -> None:
    kb.knot(f'<{verdict}> <{A}signature> "{signature}" .', timestamp=at)


def verify(kb: KnowledgeBase, signature: str, **extra: Any) -> dict[str, Any]:
    return kb.governance.verdict_verify(**VERDICT, signature=signature, **extra)


def test_a_registered_authorized_key_is_trusted_now(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    out = verify(kb, signer.sign(VERDICT))
    assert out["trusted"] is True and out["signature_valid"] and out["verifier_registered"]
    assert out["verifier_authorized"] is True and out["scheme"] == "ed25519"
    assert out["would_verify_as_of_supplied_instant"] is None and out["as_of"]["basis"] == "now"


# -- the tampering matrix: one row each, with the spec's answer ---------------------------------


def test_a_changed_verdict_byte_fails(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    signature = signer.sign(VERDICT)
    out = kb.governance.verdict_verify(**{**VERDICT, "outcome": "satisfiee"}, signature=signature)
    assert (out["signature_valid"], out["trusted"], out["verifier_registered"]) == (False, False, True)
    flipped = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    assert verify(kb, flipped)["trusted"] is False


def test_the_wrong_key_fails(kb: KnowledgeBase) -> None:
    register(kb, "urn:reg:1", Signer().public)
    out = verify(kb, Signer().sign(VERDICT))
    assert (out["signature_valid"], out["verifier_registered"], out["trusted"]) == (False, True, False)


def test_a_key_revoked_before_signing_is_not_trusted(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    kb.retract("urn:reg:1", predicate=A + "publicKey", timestamp=T1)
    signature = signer.sign(VERDICT)
    record(kb, "urn:verdict:1", signature, T2)
    out = verify(kb, signature, verdict="urn:verdict:1")
    assert out["as_of"]["basis"] == "recorded" and out["verifier_registered"] is False
    assert out["trusted"] is False and out["signature_valid"] is False


def test_a_key_revoked_after_signing_is_still_trusted_per_the_witness(kb: KnowledgeBase) -> None:
    # VV-3: closed at transaction R, it still verifies what was recorded before R
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    signature = signer.sign(VERDICT)
    record(kb, "urn:verdict:1", signature, T1)
    kb.retract("urn:reg:1", predicate=A + "publicKey", timestamp=T2)
    out = verify(kb, signature, verdict="urn:verdict:1")
    assert out["trusted"] is True and out["as_of"]["basis"] == "recorded" and out["as_of"]["at"] == T1
    assert verify(kb, signature)["trusted"] is False  # now, the key is gone


def test_a_validity_closed_earlier_distrusts_what_was_signed_after_it(kb: KnowledgeBase) -> None:
    # VV-4: the valid-time axis: recorded at T2, before the closing transaction, but the key's
    # validity was closed at T1 < T2
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    signature = signer.sign(VERDICT)
    record(kb, "urn:verdict:1", signature, T2)
    kb.retract("urn:reg:1", predicate=A + "publicKey", timestamp=T1)
    assert verify(kb, signature, verdict="urn:verdict:1")["trusted"] is False


def test_a_key_of_another_registration_carrying_the_scope_is_not_trusted(kb: KnowledgeBase) -> None:
    # key and scope from the same registration: reg 1 has the key, reg 2 the scope
    signer = Signer()
    register(kb, "urn:reg:1", signer.public, attests=())
    register(kb, "urn:reg:2", None)
    out = verify(kb, signer.sign(VERDICT))
    assert (out["signature_valid"], out["verifier_registered"], out["verifier_authorized"]) == (
        True,
        True,
        True,
    )
    assert out["trusted"] is False


def test_a_caller_supplied_instant_is_a_what_if_never_trust(kb: KnowledgeBase) -> None:
    # VV-1: naming a transaction from before a revocation must not make a revoked key trusted
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    with kb.db.read() as conn:
        before = int(conn.exec_driver_sql("SELECT MAX(id) FROM transactions").scalar() or 0)
    kb.retract("urn:reg:1", predicate=A + "publicKey", timestamp=T2)
    signature = signer.sign(VERDICT)
    out = verify(kb, signature, tx=before, signed_at=T1)
    assert out["as_of"] == {"tx": before, "at": T1, "basis": "caller-supplied"}
    assert out["trusted"] is False and out["would_verify_as_of_supplied_instant"] is True
    assert verify(kb, signature, signed_at=T3)["would_verify_as_of_supplied_instant"] is False


def test_a_recorded_verdict_ignores_the_callers_instant(kb: KnowledgeBase) -> None:
    # VV-2: the signer cannot choose the instant
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    signature = signer.sign(VERDICT)
    record(kb, "urn:verdict:1", signature, T1)
    out = verify(kb, signature, verdict="urn:verdict:1", signed_at="2020-01-01T00:00:00Z", tx=0)
    assert out["as_of"]["basis"] == "recorded" and out["as_of"]["at"] == T1 and out["trusted"] is True


def test_the_first_recording_is_the_witness(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    signature = signer.sign(VERDICT)
    record(kb, "urn:verdict:1", signature, T1)
    kb.retract("urn:reg:1", predicate=A + "publicKey", timestamp=T2)
    record(kb, "urn:verdict:1", signature, T3)  # recorded again by another source later
    assert verify(kb, signature, verdict="urn:verdict:1")["as_of"]["at"] == T1


def test_the_ed25519_path_never_considers_a_hardware_registration(kb: KnowledgeBase) -> None:
    # VV-5: strict scheme matching
    signer = Signer()
    register(kb, "urn:reg:1", signer.public, scheme="webauthn-es256")
    out = verify(kb, signer.sign(VERDICT))
    assert (out["verifier_registered"], out["trusted"]) == (False, False)
    register(kb, "urn:reg:2", signer.public, scheme="ed25519")
    assert verify(kb, signer.sign(VERDICT))["trusted"] is True


# -- the alias rule (VV-7, §0.10) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "ns",
    [(A, A, A, A), (Q, Q, Q, Q), (A, Q, A, Q), (Q, A, Q, A)],
    ids=["legacy", "quechua", "mix-1", "mix-2"],
)
def test_every_spelling_of_the_registry_answers_alike(
    kb: KnowledgeBase, ns: tuple[str, str, str, str]
) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public, ns=ns)
    assert verify(kb, signer.sign(VERDICT))["trusted"] is True
    assert kb.governance.verifier_authorized(verifier="ci", predicate=P)["authorized"] is True


def test_the_same_key_under_both_spellings_is_one_key(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    kb.knot(f'<urn:reg:1> <{Q}publicKey> "{signer.public}" ; a <{Q}VerifierRegistration> .')
    assert verify(kb, signer.sign(VERDICT))["trusted"] is True


def test_conflicting_registered_keys_are_refused_never_chosen(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    register(kb, "urn:reg:2", Signer().public)
    with pytest.raises(InvalidField, match="conflicting keys"):
        verify(kb, signer.sign(VERDICT))


def test_a_foreign_namespace_or_a_named_graph_never_counts(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public, ns=(FOREIGN, FOREIGN, FOREIGN, FOREIGN))
    kb.create_graph("urn:g:elsewhere")
    register(kb, "urn:reg:2", signer.public, graph="urn:g:elsewhere")
    assert verify(kb, signer.sign(VERDICT))["verifier_registered"] is False
    assert kb.governance.verifier_authorized(verifier="ci", predicate=P)["authorized"] is False


# -- quipu_verifier_authorized -------------------------------------------------------------------


def test_authorized_needs_one_registration_carrying_both_and_no_key(kb: KnowledgeBase) -> None:
    # VA-1
    register(kb, "urn:reg:1", None)
    assert kb.governance.verifier_authorized(verifier="ci", predicate=P)["authorized"] is True
    assert kb.governance.verifier_authorized(verifier="ci", predicate="urn:other")["authorized"] is False
    register(kb, "urn:reg:2", None, attests=("urn:split",), verifier="other")
    kb.knot(f'<urn:reg:3> a <{A}VerifierRegistration> ; <{A}attests> "urn:split" .')
    assert kb.governance.verifier_authorized(verifier="ci", predicate="urn:split")["authorized"] is False


def test_authorized_at_an_instant_says_caller_supplied(kb: KnowledgeBase) -> None:
    # VA-3
    register(kb, "urn:reg:1", None, at=T1)
    then = kb.governance.verifier_authorized(verifier="ci", predicate=P, signed_at=T0)
    assert then == {"authorized": False, "as_of": {"tx": None, "at": T0, "basis": "caller-supplied"}}
    later = kb.governance.verifier_authorized(verifier="ci", predicate=P, signed_at=T2)
    assert later["authorized"] is True and later["as_of"]["basis"] == "caller-supplied"
    assert kb.governance.verifier_authorized(verifier="ci", predicate=P)["as_of"]["basis"] == "now"


# -- bad input: 400 naming the field ----------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "field", "text"),
    [
        ({"signature": "zz"}, "signature", "not hex"),
        ({"signature": "ab" * 63}, "signature", "64 bytes"),
        ({"verdict": "urn:verdict 1"}, "verdict", "without whitespace"),
        ({"verdict": "urn:verdict:never"}, "verdict", "no store-witnessed instant"),
        ({"scheme": "rsa"}, "scheme", "unknown signature scheme"),
        ({"scheme": "webauthn-es256"}, "scheme", "hardware_verdict_schemes"),
        ({"signed_at": "yesterday"}, "signed_at", "RFC 3339"),
        ({"tx": -1}, "tx", ">= 0"),
    ],
)
def test_bad_input_names_the_field(kb: KnowledgeBase, extra: dict[str, Any], field: str, text: str) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    fields = {"signature": signer.sign(VERDICT), **extra}
    with pytest.raises(InvalidField, match=text) as caught:
        kb.governance.verdict_verify(**VERDICT, **fields)
    assert caught.value.field == field


def test_a_registered_key_of_the_wrong_length_is_refused(kb: KnowledgeBase) -> None:
    register(kb, "urn:reg:1", "ab" * 31)
    with pytest.raises(InvalidField, match="32 bytes") as caught:
        verify(kb, Signer().sign(VERDICT))
    assert caught.value.field == "verifier"


def test_a_missing_field_is_refused(kb: KnowledgeBase) -> None:
    fields = {k: v for k, v in VERDICT.items() if k != "evidence_hash"}
    with pytest.raises(MissingField) as caught:
        kb.governance.verdict_verify(**fields, signature="00" * 64)
    assert caught.value.field == "evidence_hash"


def test_verification_writes_nothing(kb: KnowledgeBase) -> None:
    signer = Signer()
    register(kb, "urn:reg:1", signer.public)
    before = kb.stats()
    for _ in range(2):
        verify(kb, signer.sign(VERDICT))
        kb.governance.verifier_authorized(verifier="ci", predicate=P)
    assert kb.stats() == before
