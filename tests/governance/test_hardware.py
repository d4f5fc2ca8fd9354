"""Hardware-signed verdicts (§5.2 hardware path): WebAuthn and SSHSIG, signed in the test with real
keys. WebAuthn assertions come from a software authenticator written here; the FIDO SSHSIG is built
here per PROTOCOL.sshsig + PROTOCOL.u2f (ssh-keygen cannot make an sk key without a device) and
cross-checked with ``ssh-keygen -Y verify``; a plain-key SSHSIG comes from ``ssh-keygen -Y sign``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import cbor2
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from quipu.errors import InvalidField, MissingField
from quipu.governance.hardware import SCHEMES, Assertion, HardwareKey, challenge, counter_refusal, verify

pytestmark = pytest.mark.backend_independent

MESSAGE = b"v1|policy:backup|host:db1|satisfied|fnv1a:0123456789abcdef|committed|alice"
RP_ID = "approve.example.org"
ORIGIN = "https://approve.example.org"
UP, UV = 0x01, 0x04
SSH_KEYGEN = shutil.which("ssh-keygen")
needs_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen is not installed")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def tampered(message: bytes) -> bytes:
    return message[:-1] + bytes([message[-1] ^ 0x01])


# --- a software WebAuthn authenticator ---------------------------------------------------------


@dataclass
class Authenticator:
    """Signs ``authenticatorData || SHA-256(clientDataJSON)`` as a platform authenticator would."""

    scheme: str
    private: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey = field(init=False)

    def __post_init__(self) -> None:
        if self.scheme == "webauthn-es256":
            self.private = ec.generate_private_key(ec.SECP256R1())
        else:
            self.private = ed25519.Ed25519PrivateKey.generate()

    def cose_key(self, alg: int | None = None) -> str:
        """The credential public key as base64url COSE_Key; ``alg`` overrides the honest one."""
        if isinstance(self.private, ec.EllipticCurvePrivateKey):
            numbers = self.private.public_key().public_numbers()
            cose = {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
        else:
            raw = self.private.public_key().public_bytes(
                serialization.Encoding.Raw, serialization.PublicFormat.Raw
            )
            cose = {1: 1, 3: -8, -1: 6, -2: raw}
        if alg is not None:
            cose[3] = alg
        return b64url(cbor2.dumps(cose))

    def registration(self) -> HardwareKey:
        return HardwareKey(scheme=self.scheme, public_key=self.cose_key(), rp_id=RP_ID, origin=ORIGIN)

    def assertion(
        self,
        message: bytes,
        *,
        counter: int = 1,
        flags: int = UP | UV,
        client: dict[str, object] | None = None,
        rp_id: str = RP_ID,
    ) -> dict[str, str]:
        """``verify`` keyword arguments for one get() ceremony; ``client`` overrides clientData members."""
        client_data: dict[str, object] = {
            "type": "webauthn.get",
            "challenge": b64url(challenge(message)),
            "origin": ORIGIN,
        }
        client_data.update(client or {})
        client_json = json.dumps(client_data).encode()
        auth_data = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", counter)
        signed = auth_data + hashlib.sha256(client_json).digest()
        if isinstance(self.private, ec.EllipticCurvePrivateKey):
            sig = self.private.sign(signed, ec.ECDSA(hashes.SHA256()))
        else:
            sig = self.private.sign(signed)
        return {
            "signature": b64url(sig),
            "authenticator_data": b64url(auth_data),
            "client_data_json": b64url(client_json),
        }


WEBAUTHN = ("webauthn-es256", "webauthn-eddsa")


@pytest.fixture(params=WEBAUTHN)
def device(request: pytest.FixtureRequest) -> Authenticator:
    return Authenticator(request.param)


def refused(result: Assertion, fragment: str) -> None:
    assert not result.ok
    assert any(fragment in reason for reason in result.reasons), result.reasons


def test_challenge_is_sha256_of_the_domain_and_message() -> None:
    assert challenge(b"m") == hashlib.sha256(b"quipu-verdict-webauthn-v1\x00m").digest()
    assert SCHEMES == ("webauthn-es256", "webauthn-eddsa", "sshsig-sk-ed25519")


def test_webauthn_assertion_verifies(device: Authenticator) -> None:
    result = verify(device.registration(), MESSAGE, recorded_count=0, **device.assertion(MESSAGE, counter=7))
    assert result == Assertion(ok=True, reasons=(), user_present=True, user_verified=True, sign_count=7)


def test_webauthn_changed_message_byte(device: Authenticator) -> None:
    # The challenge no longer matches the message, and the signature no longer covers it.
    result = verify(device.registration(), tampered(MESSAGE), recorded_count=0, **device.assertion(MESSAGE))
    refused(result, "challenge")


def test_webauthn_wrong_key(device: Authenticator) -> None:
    other = Authenticator(device.scheme)
    result = verify(other.registration(), MESSAGE, recorded_count=0, **device.assertion(MESSAGE))
    assert result.reasons == ("signature does not verify under the registered credential key",)


def test_webauthn_replayed_counter_is_a_possible_clone(device: Authenticator) -> None:
    for presented in (5, 3, 0):
        result = verify(
            device.registration(), MESSAGE, recorded_count=5, **device.assertion(MESSAGE, counter=presented)
        )
        refused(result, "may be cloned")
        assert result.sign_count == presented


def test_webauthn_uv_flag_missing(device: Authenticator) -> None:
    result = verify(device.registration(), MESSAGE, recorded_count=0, **device.assertion(MESSAGE, flags=UP))
    refused(result, "user verification (UV)")
    assert (result.user_present, result.user_verified) == (True, False)


def test_webauthn_up_flag_missing(device: Authenticator) -> None:
    result = verify(device.registration(), MESSAGE, recorded_count=0, **device.assertion(MESSAGE, flags=UV))
    refused(result, "user presence (UP)")


def test_webauthn_wrong_challenge(device: Authenticator) -> None:
    # A caller-chosen challenge, honestly signed, is still not the one quipu derives.
    chosen = b64url(hashlib.sha256(MESSAGE).digest())
    result = verify(
        device.registration(),
        MESSAGE,
        recorded_count=0,
        **device.assertion(MESSAGE, client={"challenge": chosen}),
    )
    assert result.reasons == (
        "clientDataJSON challenge is not the one quipu derives from this verdict message",
    )


def test_webauthn_wrong_origin(device: Authenticator) -> None:
    args = device.assertion(MESSAGE, client={"origin": "https://approve.example.org.evil.test"})
    refused(verify(device.registration(), MESSAGE, recorded_count=0, **args), "registered origin")


def test_webauthn_cross_origin_true(device: Authenticator) -> None:
    args = device.assertion(MESSAGE, client={"crossOrigin": True})
    refused(verify(device.registration(), MESSAGE, recorded_count=0, **args), "crossOrigin")
    args = device.assertion(MESSAGE, client={"crossOrigin": False})
    assert verify(device.registration(), MESSAGE, recorded_count=0, **args).ok


def test_webauthn_wrong_rp_id_hash(device: Authenticator) -> None:
    args = device.assertion(MESSAGE, rp_id="evil.test")
    refused(verify(device.registration(), MESSAGE, recorded_count=0, **args), "rpIdHash")


def test_webauthn_wrong_client_data_type(device: Authenticator) -> None:
    args = device.assertion(MESSAGE, client={"type": "webauthn.create"})
    refused(verify(device.registration(), MESSAGE, recorded_count=0, **args), "'webauthn.get'")


def test_webauthn_client_data_must_be_json(device: Authenticator) -> None:
    args = device.assertion(MESSAGE) | {"client_data_json": b64url(b"{not json")}
    refused(verify(device.registration(), MESSAGE, recorded_count=0, **args), "does not parse as JSON")
    repeated = b'{"type":"webauthn.get","type":"webauthn.get"}'
    args = device.assertion(MESSAGE) | {"client_data_json": b64url(repeated)}
    refused(verify(device.registration(), MESSAGE, recorded_count=0, **args), "repeated")


def test_webauthn_short_authenticator_data(device: Authenticator) -> None:
    args = device.assertion(MESSAGE) | {"authenticator_data": b64url(b"\x00" * 36)}
    refused(verify(device.registration(), MESSAGE, recorded_count=0, **args), "shorter than 37")


@pytest.mark.parametrize(
    ("scheme", "alg", "fragment"),
    [
        ("webauthn-es256", -8, "kty/alg/crv 2/-8/1"),  # an ES256 key labelled EdDSA
        ("webauthn-eddsa", -7, "kty/alg/crv 1/-7/6"),
        ("webauthn-es256", -257, "requires 2/-7/1"),  # RS256
    ],
)
def test_webauthn_wrong_cose_alg_for_the_scheme(scheme: str, alg: int, fragment: str) -> None:
    device = Authenticator(scheme)
    key = HardwareKey(scheme, device.cose_key(alg=alg), RP_ID, ORIGIN)
    refused(verify(key, MESSAGE, recorded_count=0, **device.assertion(MESSAGE)), fragment)


def test_webauthn_key_of_the_other_scheme_is_refused() -> None:
    # An honest Ed25519 credential registered under webauthn-es256 (and the reverse) never verifies.
    for scheme, other in (("webauthn-es256", "webauthn-eddsa"), ("webauthn-eddsa", "webauthn-es256")):
        device = Authenticator(other)
        key = HardwareKey(scheme, device.cose_key(), RP_ID, ORIGIN)
        refused(verify(key, MESSAGE, recorded_count=0, **device.assertion(MESSAGE)), "registered COSE key")


@pytest.mark.parametrize(
    ("cose", "fragment"),
    [
        ({1: 1, -1: 6, -2: b"\x01" * 32}, "kty/alg/crv 1/None/6"),  # no alg: usable under any algorithm
        ({1: 1, 3: -8, -1: 6, -2: b"\x01" * 31}, "x is not 32 bytes"),
        ({1: 1, 3: -8, -1: 6, -2: b"\x01" * 32, -3: b"\x02" * 32}, "y coordinate"),
        ([1, 3], "plain CBOR map"),
    ],
)
def test_webauthn_malformed_cose_key_is_a_refusal(cose: object, fragment: str) -> None:
    device = Authenticator("webauthn-eddsa")
    key = HardwareKey("webauthn-eddsa", b64url(cbor2.dumps(cose)), RP_ID, ORIGIN)
    refused(verify(key, MESSAGE, recorded_count=0, **device.assertion(MESSAGE)), fragment)


@pytest.mark.parametrize(
    ("public_key", "fragment"),
    [("", "not a CBOR COSE key"), (b64url(b"\xa1"), "not a CBOR COSE key"), ("pQ+", "not base64url")],
)
def test_webauthn_undecodable_registered_key_is_a_refusal(public_key: str, fragment: str) -> None:
    device = Authenticator("webauthn-es256")
    key = HardwareKey("webauthn-es256", public_key, RP_ID, ORIGIN)
    refused(verify(key, MESSAGE, recorded_count=0, **device.assertion(MESSAGE)), fragment)


def test_nothing_but_the_standard_library_is_imported_with_the_module() -> None:
    # What the module itself adds (quipu's package imports are not its business).
    code = (
        "import sys, quipu.errors, quipu.governance; before = set(sys.modules); "
        "import quipu.governance.hardware; "
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in {'cryptography', 'cbor2'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_webauthn_cose_key_read_one_way_only() -> None:
    device = Authenticator("webauthn-eddsa")
    honest = base64.urlsafe_b64decode(device.cose_key() + "==")
    # A map announcing 5 entries whose 5th repeats the alg label; and the honest key plus a byte.
    repeated = bytes([0xA5]) + honest[1:] + bytes([0x03, 0x27])  # 3: -8 again
    for raw, fragment in ((repeated, "repeated labels"), (honest + b"\x00", "trailing bytes")):
        key = HardwareKey("webauthn-eddsa", b64url(raw), RP_ID, ORIGIN)
        refused(verify(key, MESSAGE, recorded_count=0, **device.assertion(MESSAGE)), fragment)


def test_webauthn_registration_without_rp_id_or_origin(device: Authenticator) -> None:
    for rp_id, origin in ((None, ORIGIN), (RP_ID, None)):
        key = HardwareKey(device.scheme, device.cose_key(), rp_id, origin)
        refused(verify(key, MESSAGE, recorded_count=0, **device.assertion(MESSAGE)), "webauthnRpId")


@pytest.mark.parametrize(
    ("name", "change", "error"),
    [
        ("authenticator_data", None, MissingField),
        ("authenticator_data", "", MissingField),
        ("authenticator_data", "not*base64url", InvalidField),
        ("client_data_json", None, MissingField),
        ("client_data_json", "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0+", InvalidField),  # standard alphabet '+'
        ("signature", "a", InvalidField),  # a single base64 character cannot encode a byte
        ("signature", "AAAA AAAA", InvalidField),
    ],
)
def test_webauthn_malformed_input_is_a_400_naming_the_field(
    name: str, change: str | None, error: type[InvalidField]
) -> None:
    device = Authenticator("webauthn-es256")
    args = device.assertion(MESSAGE)
    call: dict[str, str | None] = {**args, name: change}
    with pytest.raises(error) as caught:
        verify(
            device.registration(),
            MESSAGE,
            call["signature"] or "",
            recorded_count=0,
            authenticator_data=call["authenticator_data"],
            client_data_json=call["client_data_json"],
        )
    assert caught.value.field == name
    assert caught.value.status == 400


def test_webauthn_padded_base64url_is_accepted(device: Authenticator) -> None:
    args = {k: v + "=" * (-len(v) % 4) for k, v in device.assertion(MESSAGE).items()}
    assert verify(device.registration(), MESSAGE, recorded_count=0, **args).ok


# --- the counter policy ------------------------------------------------------------------------

COUNTER_TABLE = [
    (0, 0, True),  # an authenticator that does not count
    (0, 9, True),
    (5, 5, False),  # r > 0, n <= r: a possible clone (n = 0 included)
    (5, 0, False),
    (5, 6, True),
]


@pytest.mark.parametrize(("recorded", "presented", "accepted"), COUNTER_TABLE)
def test_counter_policy_table(recorded: int, presented: int, accepted: bool) -> None:
    assert (counter_refusal(recorded, presented) is None) is accepted
    device = Authenticator("webauthn-eddsa")
    webauthn = verify(
        device.registration(),
        MESSAGE,
        recorded_count=recorded,
        **device.assertion(MESSAGE, counter=presented),
    )
    sk = SkKey()
    sshsig = verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, counter=presented), recorded_count=recorded)
    for result in (webauthn, sshsig):
        assert result.ok is accepted, result.reasons
        assert result.sign_count == presented


def test_counter_is_checked_only_after_the_signature(device: Authenticator) -> None:
    other = Authenticator(device.scheme)
    result = verify(other.registration(), MESSAGE, recorded_count=5, **device.assertion(MESSAGE, counter=1))
    assert result.reasons == ("signature does not verify under the registered credential key",)


def test_negative_recorded_count_is_a_programming_error(device: Authenticator) -> None:
    with pytest.raises(ValueError):
        verify(device.registration(), MESSAGE, recorded_count=-1, **device.assertion(MESSAGE))


# --- SSHSIG over a FIDO sk-ssh-ed25519 key, built per PROTOCOL.sshsig + PROTOCOL.u2f -----------


def ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def armor(blob: bytes) -> str:
    body = base64.b64encode(blob).decode()
    lines = [body[i : i + 70] for i in range(0, len(body), 70)]
    return "\n".join(["-----BEGIN SSH SIGNATURE-----", *lines, "-----END SSH SIGNATURE-----", ""])


@dataclass
class SkKey:
    """An Ed25519 key standing in for a FIDO authenticator holding an sk-ssh-ed25519 credential."""

    application: bytes = b"ssh:"
    private: ed25519.Ed25519PrivateKey = field(default_factory=ed25519.Ed25519PrivateKey.generate)

    @property
    def blob(self) -> bytes:
        raw = self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return ssh_string(b"sk-ssh-ed25519@openssh.com") + ssh_string(raw) + ssh_string(self.application)

    def line(self) -> str:
        return f"sk-ssh-ed25519@openssh.com {base64.b64encode(self.blob).decode()} tester@device"

    def registration(self) -> HardwareKey:
        return HardwareKey("sshsig-sk-ed25519", self.line(), None, None)

    def sign(
        self,
        message: bytes,
        *,
        namespace: bytes = b"quipu-verdict",
        hash_alg: bytes = b"sha512",
        flags: int = UP,
        counter: int = 1,
        sig_type: bytes = b"sk-ssh-ed25519@openssh.com",
        version: int = 1,
        trailing: bytes = b"",
        sig_trailing: bytes = b"",
    ) -> str:
        digest = hashlib.new(hash_alg.decode(), message).digest()
        signed_data = b"SSHSIG" + b"".join(ssh_string(f) for f in (namespace, b"", hash_alg, digest))
        fido = (
            hashlib.sha256(self.application).digest()
            + bytes([flags])
            + struct.pack(">I", counter)
            + hashlib.sha256(signed_data).digest()
        )
        sig_blob = (
            ssh_string(sig_type)
            + ssh_string(self.private.sign(fido))
            + bytes([flags])
            + struct.pack(">I", counter)
            + sig_trailing
        )
        envelope = (
            b"SSHSIG"
            + struct.pack(">I", version)
            + b"".join(ssh_string(f) for f in (self.blob, namespace, b"", hash_alg, sig_blob))
        )
        return armor(envelope + trailing)


@pytest.fixture
def sk() -> SkKey:
    return SkKey()


@pytest.mark.parametrize("hash_alg", [b"sha512", b"sha256"])
def test_sshsig_sk_verifies(sk: SkKey, hash_alg: bytes) -> None:
    result = verify(
        sk.registration(), MESSAGE, sk.sign(MESSAGE, hash_alg=hash_alg, counter=3), recorded_count=2
    )
    assert result == Assertion(ok=True, reasons=(), user_present=True, user_verified=False, sign_count=3)


def test_sshsig_reports_uv_without_requiring_it(sk: SkKey) -> None:
    result = verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, flags=UP | UV), recorded_count=0)
    assert (result.ok, result.user_verified) == (True, True)


@needs_ssh_keygen
def test_sshsig_built_here_is_what_openssh_verifies(sk: SkKey, tmp_path: Path) -> None:
    # The wire format of the test's sk signatures checked by OpenSSH itself.
    (tmp_path / "allowed").write_text(f"tester {sk.line()}\n")
    (tmp_path / "sig").write_text(sk.sign(MESSAGE))
    allowed, sig = str(tmp_path / "allowed"), str(tmp_path / "sig")
    command = [
        SSH_KEYGEN or "ssh-keygen",
        "-Y",
        "verify",
        "-f",
        allowed,
        "-I",
        "tester",
        "-n",
        "quipu-verdict",
        "-s",
        sig,
    ]
    verdict = subprocess.run(command, input=MESSAGE, capture_output=True, check=False)
    assert verdict.returncode == 0, verdict.stderr


def test_sshsig_changed_message_byte(sk: SkKey) -> None:
    result = verify(sk.registration(), tampered(MESSAGE), sk.sign(MESSAGE), recorded_count=0)
    assert result.reasons == ("SSHSIG signature does not verify under the registered key",)


def test_sshsig_wrong_key(sk: SkKey) -> None:
    result = verify(SkKey().registration(), MESSAGE, sk.sign(MESSAGE), recorded_count=0)
    refused(result, "other than the registered one")


def test_sshsig_wrong_namespace(sk: SkKey) -> None:
    result = verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, namespace=b"git"), recorded_count=0)
    assert result.reasons == ("SSHSIG namespace 'git' is not 'quipu-verdict'",)


def test_sshsig_trailing_bytes(sk: SkKey) -> None:
    refused(
        verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, trailing=b"\x00"), recorded_count=0), "trailing"
    )
    result = verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, sig_trailing=b"\x00"), recorded_count=0)
    refused(result, "SSHSIG signature has 1 trailing bytes")


def test_sshsig_up_flag_missing(sk: SkKey) -> None:
    refused(verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, flags=UV), recorded_count=0), "user-presence")


def test_sshsig_replayed_counter(sk: SkKey) -> None:
    refused(
        verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, counter=4), recorded_count=4), "may be cloned"
    )


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"hash_alg": b"sha1"}, "is not sha256 or sha512"),
        ({"version": 2}, "version 2 is not 1"),
        ({"sig_type": b"ssh-ed25519"}, "does not match the key type"),
    ],
)
def test_sshsig_envelope_checks(sk: SkKey, change: dict[str, object], fragment: str) -> None:
    refused(verify(sk.registration(), MESSAGE, sk.sign(MESSAGE, **change), recorded_count=0), fragment)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("armored", "fragment"),
    [
        ("SSHSIG", "armored"),
        ("-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----", "not base64"),
        (armor(b"SSHSIX" + struct.pack(">I", 1)), "magic"),
        (armor(b"SSHSIG" + struct.pack(">I", 1) + ssh_string(b"x")), "truncated"),
    ],
)
def test_sshsig_armor_and_envelope_parse_exactly(sk: SkKey, armored: str, fragment: str) -> None:
    refused(verify(sk.registration(), MESSAGE, armored, recorded_count=0), fragment)


def test_sshsig_registration_key_line(sk: SkKey) -> None:
    b64 = sk.line().split()[1]
    plain_blob = ssh_string(b"ssh-ed25519") + ssh_string(b"\x01" * 32)
    for line, fragment in [
        ("sk-ssh-ed25519@openssh.com", "not an OpenSSH public key line"),
        (f"ssh-ed25519 {b64}", "requires an sk-ssh-ed25519@openssh.com key"),
        (
            f"sk-ssh-ed25519@openssh.com {base64.b64encode(plain_blob).decode()}",
            "does not match its key blob",
        ),
        ("sk-ssh-ed25519@openssh.com AAAA*", "does not decode"),
    ]:
        key = HardwareKey("sshsig-sk-ed25519", line, None, None)
        refused(verify(key, MESSAGE, sk.sign(MESSAGE), recorded_count=0), fragment)


def keygen(*args: str, cwd: Path) -> None:
    subprocess.run([SSH_KEYGEN or "ssh-keygen", *args], cwd=cwd, check=True, capture_output=True)


@needs_ssh_keygen
def test_sshsig_plain_ssh_ed25519_is_refused(tmp_path: Path) -> None:
    keygen("-q", "-t", "ed25519", "-N", "", "-C", "plain", "-f", "key", cwd=tmp_path)
    (tmp_path / "verdict").write_bytes(MESSAGE)
    keygen("-Y", "sign", "-n", "quipu-verdict", "-f", "key", "verdict", cwd=tmp_path)
    armored = (tmp_path / "verdict.sig").read_text()
    plain = (tmp_path / "key.pub").read_text()
    # Registered as the plain key it is: not a hardware registration.
    refused(
        verify(HardwareKey("sshsig-sk-ed25519", plain, None, None), MESSAGE, armored, recorded_count=0),
        "requires",
    )
    # Against an sk registration of the same Ed25519 key: the envelope reads (namespace and all)
    # and the signature is refused for coming from a plain key.
    public = base64.b64decode(plain.split()[1])[-32:]
    sk_blob = ssh_string(b"sk-ssh-ed25519@openssh.com") + ssh_string(public) + ssh_string(b"ssh:")
    sk_line = f"sk-ssh-ed25519@openssh.com {base64.b64encode(sk_blob).decode()}"
    result = verify(HardwareKey("sshsig-sk-ed25519", sk_line, None, None), MESSAGE, armored, recorded_count=0)
    assert result.reasons[0] == "SSHSIG was made by a plain ssh-ed25519 key, not a hardware (sk) key"
    assert not any("namespace" in reason for reason in result.reasons)


def test_unknown_scheme_in_a_registration_is_a_refusal(sk: SkKey) -> None:
    result = verify(
        HardwareKey("ed25519", "00" * 32, None, None), MESSAGE, sk.sign(MESSAGE), recorded_count=0
    )
    refused(result, "unknown hardware scheme")
