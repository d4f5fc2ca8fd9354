"""The hardware path of ``quipu_verdict_verify`` through the service (tools-graphs-governance
§5.2): registrations declaring a WebAuthn scheme in the registry, their recorded sign counts
read at the witness, the setting that enables the path, and the scan over registrations. The
cryptography itself is tested in ``test_hardware``; the authenticator is that file's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.config import GovernanceSettings
from quipu.errors import InvalidField, MissingField
from quipu.governance.verdicts import message
from tests.backends import store_location
from tests.governance.test_hardware import ORIGIN, RP_ID, UP, Authenticator

A = "http://aegis.gastown.local/ontology/"
P = "urn:policy:reviewed"
VERDICT = {
    "predicate_id": P,
    "target_ref": "urn:change:42",
    "outcome": "satisfied",
    "evidence_hash": "fnv1a:00000000000000ff",
    "verifier": "alice-key",
}
SIGNED = message(P, "urn:change:42", "satisfied", "fnv1a:00000000000000ff", "committed", "alice-key")


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    enabled = GovernanceSettings(hardware_verdict_schemes=True)
    with quipu.open(store_location(tmp_path, "hw.db"), governance=enabled) as opened:
        yield opened


def register(
    kb: KnowledgeBase,
    reg: str,
    device: Authenticator,
    attests: tuple[str, ...] = (P,),
    count: int | None = None,
) -> None:
    lines = [
        f'<{reg}> a <{A}VerifierRegistration> ; <{A}verifier> "alice-key"',
        f'<{A}signatureScheme> "{device.scheme}" ; <{A}publicKey> "{device.cose_key()}"',
        f'<{A}webauthnRpId> "{RP_ID}" ; <{A}webauthnOrigin> "{ORIGIN}"',
        *(f'<{A}attests> "{p}"' for p in attests),
    ]
    if count is not None:
        lines.append(f"<{A}signCount> {count}")
    kb.knot(" ; ".join(lines) + " .")


def verify(kb: KnowledgeBase, device: Authenticator, **assertion: Any) -> dict[str, Any]:
    return kb.governance.verdict_verify(
        **VERDICT, scheme=device.scheme, **device.assertion(SIGNED, **assertion)
    )


@pytest.fixture(params=["webauthn-es256", "webauthn-eddsa"])
def device(request: pytest.FixtureRequest) -> Authenticator:
    return Authenticator(request.param)


def test_a_registered_authorized_authenticator_is_trusted(kb: KnowledgeBase, device: Authenticator) -> None:
    register(kb, "urn:reg:alice", device)
    out = verify(kb, device, counter=7)
    assert out["trusted"] is True and out["registration"] == "urn:reg:alice"
    assert (out["registration_authorized"], out["user_present"], out["user_verified"]) == (True, True, True)
    assert out["sign_count"] == 7 and out["scheme"] == device.scheme


def test_a_replayed_counter_is_refused_against_the_recorded_one(
    kb: KnowledgeBase, device: Authenticator
) -> None:
    register(kb, "urn:reg:alice", device, count=7)
    out = verify(kb, device, counter=7)
    assert out["trusted"] is False and out["signature_valid"] is False
    assert any("cloned" in reason for reason in out["reasons"]), out["reasons"]
    assert verify(kb, device, counter=8)["trusted"] is True


def test_a_missing_uv_flag_is_refused(kb: KnowledgeBase, device: Authenticator) -> None:
    register(kb, "urn:reg:alice", device)
    out = verify(kb, device, flags=UP)
    assert out["trusted"] is False and any("verif" in r for r in out["reasons"]), out["reasons"]


def test_an_authorizing_registration_wins_whatever_the_enrolment_order(
    kb: KnowledgeBase, device: Authenticator
) -> None:
    register(kb, "urn:reg:a-first", device, attests=())  # verifies, but grants nothing
    register(kb, "urn:reg:b-second", device)
    out = verify(kb, device)
    assert out["trusted"] is True and out["registration"] == "urn:reg:b-second"


def test_a_verifying_but_unauthorized_registration_is_reported_untrusted(
    kb: KnowledgeBase, device: Authenticator
) -> None:
    register(kb, "urn:reg:alice", device, attests=("urn:policy:other",))
    out = verify(kb, device)
    assert (out["signature_valid"], out["registration_authorized"], out["trusted"]) == (True, False, False)


def test_an_ambiguous_registration_is_skipped_with_a_reason(kb: KnowledgeBase, device: Authenticator) -> None:
    register(kb, "urn:reg:alice", device)
    kb.knot(f'<urn:reg:alice> <{A}webauthnOrigin> "https://other.example" .')
    out = verify(kb, device)
    assert out["trusted"] is False and any("ambiguous" in r for r in out["reasons"]), out["reasons"]


def test_no_registration_of_the_scheme_says_so(kb: KnowledgeBase, device: Authenticator) -> None:
    out = verify(kb, device)
    assert out["verifier_registered"] is False and out["trusted"] is False
    assert any(f"no registration declaring scheme {device.scheme}" in r for r in out["reasons"])


def test_a_caller_supplied_instant_never_trusts(kb: KnowledgeBase, device: Authenticator) -> None:
    register(kb, "urn:reg:alice", device)
    out = verify(kb, device, counter=3) | {}
    later = kb.governance.verdict_verify(
        **VERDICT,
        scheme=device.scheme,
        signed_at="2999-01-01T00:00:00Z",
        **device.assertion(SIGNED, counter=4),
    )
    assert out["trusted"] is True
    assert later["trusted"] is False and later["would_verify_as_of_supplied_instant"] is True


def test_a_non_numeric_recorded_count_is_refused(kb: KnowledgeBase, device: Authenticator) -> None:
    register(kb, "urn:reg:alice", device)
    kb.knot(f'<urn:reg:alice> <{A}signCount> "many" .')
    with pytest.raises(InvalidField, match="non-numeric"):
        verify(kb, device)


def test_request_fields_are_checked_before_any_registration(kb: KnowledgeBase, device: Authenticator) -> None:
    assertion = device.assertion(SIGNED)
    with pytest.raises(MissingField) as caught:
        kb.governance.verdict_verify(**VERDICT, scheme=device.scheme, signature=assertion["signature"])
    assert caught.value.field == "authenticator_data"
    with pytest.raises(InvalidField) as bad:
        kb.governance.verdict_verify(
            **VERDICT, scheme=device.scheme, **{**assertion, "signature": "not base64!"}
        )
    assert bad.value.field == "signature"


@pytest.mark.parametrize("name", ["verifier", "predicate_id"])
def test_quotes_and_line_breaks_are_refused_on_the_hardware_path(
    kb: KnowledgeBase, device: Authenticator, name: str
) -> None:
    with pytest.raises(InvalidField) as caught:
        kb.governance.verdict_verify(
            **{**VERDICT, name: 'bad"value'}, scheme=device.scheme, **device.assertion(SIGNED)
        )
    assert caught.value.field == name


def test_the_path_is_refused_while_disabled(tmp_path: Path, device: Authenticator) -> None:
    refused = pytest.raises(InvalidField, match="hardware_verdict_schemes")
    with quipu.open(store_location(tmp_path, "off.db")) as kb, refused as caught:
        verify(kb, device)
    assert caught.value.field == "scheme"


def test_scheme_matching_is_strict_in_both_directions(kb: KnowledgeBase, device: Authenticator) -> None:
    # VV-5: naming a hardware scheme never falls back to an ed25519 registration of the verifier
    kb.knot(
        f'<urn:reg:soft> a <{A}VerifierRegistration> ; <{A}verifier> "alice-key" ; '
        f'<{A}publicKey> "{"ab" * 32}" ; <{A}attests> "{P}" .'
    )
    out = verify(kb, device)
    assert out["trusted"] is False and out["verifier_registered"] is False
    assert any(f"no registration declaring scheme {device.scheme}" in r for r in out["reasons"])


def test_counters_are_read_at_the_same_witness(kb: KnowledgeBase, device: Authenticator) -> None:
    # VV-6: a counter recorded after the verdict's recording does not count against it
    register(kb, "urn:reg:alice", device, count=3)
    assertion = device.assertion(SIGNED, counter=4)
    kb.knot(f'<urn:verdict:7> <{A}signature> "{assertion["signature"]}" .')
    kb.knot(f"<urn:reg:alice> <{A}signCount> 9 .")  # the recorder's later update
    recorded = kb.governance.verdict_verify(
        **VERDICT, scheme=device.scheme, verdict="urn:verdict:7", **assertion
    )
    assert recorded["trusted"] is True and recorded["as_of"]["basis"] == "recorded"
    now = kb.governance.verdict_verify(**VERDICT, scheme=device.scheme, **assertion)
    assert now["trusted"] is False  # now the recorded counter is 9: 4 looks like a clone
