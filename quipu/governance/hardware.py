"""Hardware-signed verdicts: the cryptography of ``quipu_verdict_verify``'s hardware path (§5.2).

Three schemes sign the same v1 verdict message as ed25519 (§5.0), so what a human approves on a
device is exactly what the store records:

* ``webauthn-es256`` / ``webauthn-eddsa``: a WebAuthn assertion (ECDSA P-256 = COSE alg -7,
  Ed25519 = COSE alg -8) whose challenge quipu derives from the message;
* ``sshsig-sk-ed25519``: an OpenSSH SSHSIG (PROTOCOL.sshsig) made by a FIDO
  ``sk-ssh-ed25519@openssh.com`` key (PROTOCOL.u2f), namespace ``quipu-verdict``.

This module is pure: it knows one registration (``HardwareKey``) and the counter recorded for it,
and answers whether the signature holds. Reading the registry at the witness, the scheme gate and
persisting the new counter belong to the caller. Malformed request input raises ``InvalidField``
(a 400); everything else, including a malformed registration, is a refusal with a reason.
Libraries are imported inside the functions so that importing quipu stays cheap.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from quipu.errors import InvalidField, MissingField

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePublicKey
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SCHEMES: Final = ("webauthn-es256", "webauthn-eddsa", "sshsig-sk-ed25519")

# Domain separation: the challenge binds an assertion to "a quipu verdict", not to some bytes.
CHALLENGE_DOMAIN: Final = b"quipu-verdict-webauthn-v1\0"
SSHSIG_NAMESPACE: Final = b"quipu-verdict"

_FLAG_UP: Final = 0x01  # user presence (a touch), WebAuthn and FIDO alike
_FLAG_UV: Final = 0x04  # user verification (PIN or biometric)

# COSE (RFC 9052/9053): labels and the two key shapes the WebAuthn schemes accept.
_KTY, _ALG, _CRV, _X, _Y = 1, 3, -1, -2, -3
_COSE_SHAPE: Final = {  # scheme -> (kty, alg, crv)
    "webauthn-es256": (2, -7, 1),  # EC2, ES256, P-256
    "webauthn-eddsa": (1, -8, 6),  # OKP, EdDSA, Ed25519
}

_SSHSIG_MAGIC: Final = b"SSHSIG"
_ARMOR_BEGIN: Final = "-----BEGIN SSH SIGNATURE-----"
_ARMOR_END: Final = "-----END SSH SIGNATURE-----"
_KEY_SK_ED25519: Final = b"sk-ssh-ed25519@openssh.com"
_KEY_ED25519: Final = b"ssh-ed25519"
_SSHSIG_HASHES: Final = ("sha256", "sha512")

_B64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


@dataclass(frozen=True)
class HardwareKey:
    """What one verifier registration declares."""

    scheme: str  # one of SCHEMES
    public_key: str  # webauthn: base64url COSE key; sshsig: an OpenSSH public key line
    rp_id: str | None  # webauthn only (aegis:webauthnRpId)
    origin: str | None  # webauthn only (aegis:webauthnOrigin)


@dataclass(frozen=True)
class Assertion:
    """The outcome of one verification against one registration."""

    ok: bool  # signature verified AND every check passed (incl. the counter policy)
    reasons: tuple[str, ...]  # why not, human-readable, empty when ok
    user_present: bool
    user_verified: bool
    sign_count: int  # the presented counter (what the recorder must store next)


class _Refused(Exception):
    """A check that ends verification at once (nothing further can be read or verified)."""


def challenge(message: bytes) -> bytes:
    """SHA-256(b"quipu-verdict-webauthn-v1\\0" + message): the WebAuthn challenge, derived by the server."""
    return hashlib.sha256(CHALLENGE_DOMAIN + message).digest()


def counter_refusal(recorded: int, presented: int) -> str | None:
    """The counter policy (clone detection), or None when it accepts.

    Once a nonzero counter is recorded, the presented one must exceed it; a presented 0 is refused
    too, since recording it would switch clone detection off. A credential that has only ever
    reported 0 (it does not count, like a synced passkey) is accepted.
    """
    if recorded > 0 and presented <= recorded:
        return (
            f"signature counter did not advance (recorded {recorded}, presented {presented}): "
            "the credential may be cloned"
        )
    return None


def check_request(
    scheme: str, signature: str, authenticator_data: str | None, client_data_json: str | None
) -> None:
    """The request's own fields, before any registration is read: a malformed one is the
    caller's 400 even when no registration declares the scheme."""
    if scheme in _COSE_SHAPE:
        _b64url_field(authenticator_data, "authenticator_data")
        _b64url_field(client_data_json, "client_data_json")
        _b64url_field(signature, "signature")


def verify(
    key: HardwareKey,
    message: bytes,
    signature: str,
    *,
    recorded_count: int,
    authenticator_data: str | None = None,
    client_data_json: str | None = None,
) -> Assertion:
    """Verify ``signature`` over the v1 verdict ``message`` under one registration's key.

    ``recorded_count`` is the highest ``aegis:signCount`` recorded on the registration at the
    witness (0 when none). Raises ``InvalidField`` for malformed request input (the spec's 400s).
    """
    if recorded_count < 0:
        raise ValueError(f"recorded_count must be >= 0, got {recorded_count}")
    if key.scheme in _COSE_SHAPE:
        # Request input first: a malformed field is the caller's 400 whatever the registration.
        auth_data = _b64url_field(authenticator_data, "authenticator_data")
        client_raw = _b64url_field(client_data_json, "client_data_json")
        sig = _b64url_field(signature, "signature")
        return _verify_webauthn(key, message, sig, recorded_count, auth_data, client_raw)
    if key.scheme == "sshsig-sk-ed25519":
        return _verify_sshsig(key, message, signature, recorded_count)
    return _refused(f"registration declares unknown hardware scheme {key.scheme!r}")


# --- WebAuthn (W3C WebAuthn Level 3 §7.2, narrowed by §5.2) -----------------------------------


def _verify_webauthn(
    key: HardwareKey, message: bytes, sig: bytes, recorded: int, auth_data: bytes, client_raw: bytes
) -> Assertion:
    try:
        public = _cose_public_key(key)
    except _Refused as exc:
        return _refused(str(exc))

    reasons: list[str] = []
    reasons += _client_data_refusals(client_raw, message, key.origin or "")
    # authenticatorData = rpIdHash(32) || flags(1) || signCount(4, big-endian) || extensions
    if len(auth_data) < 37:
        return _refused(*reasons, f"authenticatorData is {len(auth_data)} bytes, shorter than 37")
    flags = auth_data[32]
    (count,) = struct.unpack(">I", auth_data[33:37])
    if auth_data[:32] != hashlib.sha256((key.rp_id or "").encode()).digest():
        reasons.append(f"authenticatorData rpIdHash is not SHA-256 of the registered RP ID {key.rp_id!r}")
    if not flags & _FLAG_UP:
        reasons.append("user presence (UP) flag is not set")
    if not flags & _FLAG_UV:
        reasons.append("user verification (UV) flag is not set: WebAuthn verdicts require it")

    holds = _signature_holds(public, sig, auth_data + hashlib.sha256(client_raw).digest())
    if not holds:
        reasons.append("signature does not verify under the registered credential key")
    return _outcome(reasons, holds, recorded, flags, count)


def _client_data_refusals(raw: bytes, message: bytes, origin: str) -> list[str]:
    """The clientDataJSON checks: type, the server-derived challenge, origin, crossOrigin."""
    try:
        client = json.loads(raw, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, RecursionError, _Refused) as exc:  # JSONDecodeError, UnicodeDecodeError
        return [f"clientDataJSON does not parse as JSON: {exc}"]
    if not isinstance(client, dict):
        return ["clientDataJSON is not a JSON object"]
    out: list[str] = []
    if client.get("type") != "webauthn.get":
        out.append(f"clientDataJSON type is {client.get('type')!r}, not 'webauthn.get'")
    presented = client.get("challenge")
    # Compared with the challenge quipu derives; a challenge is never taken from the caller.
    if not isinstance(presented, str) or _b64url(presented) != challenge(message):
        out.append("clientDataJSON challenge is not the one quipu derives from this verdict message")
    if client.get("origin") != origin:
        out.append(f"clientDataJSON origin {client.get('origin')!r} is not the registered origin {origin!r}")
    if client.get("crossOrigin") is True:
        out.append("clientDataJSON crossOrigin is true: cross-origin assertions are refused")
    return out


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated member would let two readers see two different client data; refuse it.
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise _Refused(f"member {name!r} is repeated")
        out[name] = value
    return out


def _cose_public_key(key: HardwareKey) -> EllipticCurvePublicKey | Ed25519PublicKey:
    """The registration's COSE_Key, strictly: its kty/alg/crv must be exactly the scheme's."""
    import io

    import cbor2
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if not key.rp_id or not key.origin:
        raise _Refused("WebAuthn registration lacks aegis:webauthnRpId or aegis:webauthnOrigin")
    raw = _b64url(key.public_key)
    if raw is None:
        raise _Refused("registered public key is not base64url")
    stream = io.BytesIO(raw)
    try:
        cose = cbor2.CBORDecoder(stream).decode()
    except (cbor2.CBORDecodeError, ValueError, RecursionError) as exc:
        raise _Refused(f"registered public key is not a CBOR COSE key: {exc}") from None
    # One reading only: a definite map of fewer than 24 entries (its count is in the first byte),
    # no repeated label, nothing after it. cbor2 alone would keep the last of two labels.
    if not isinstance(cose, dict) or raw[0] & 0xE0 != 0xA0 or len(cose) != raw[0] & 0x1F:
        raise _Refused("registered COSE key is not a plain CBOR map without repeated labels")
    if stream.tell() != len(raw):
        raise _Refused("registered COSE key has trailing bytes")
    kty, alg, crv = (_cose_int(cose, label) for label in (_KTY, _ALG, _CRV))
    want = _COSE_SHAPE[key.scheme]
    if (kty, alg, crv) != want:
        raise _Refused(
            f"registered COSE key has kty/alg/crv {kty}/{alg}/{crv}; scheme {key.scheme} "
            f"requires {want[0]}/{want[1]}/{want[2]}"
        )
    x = cose.get(_X)
    if not isinstance(x, bytes) or len(x) != 32:
        raise _Refused("registered COSE key's x is not 32 bytes")
    if key.scheme == "webauthn-eddsa":
        if _Y in cose:
            raise _Refused("registered COSE OKP key carries a y coordinate")
        return ed25519.Ed25519PublicKey.from_public_bytes(x)
    y = cose.get(_Y)
    if not isinstance(y, bytes) or len(y) != 32:
        raise _Refused("registered COSE key's y is not 32 bytes")
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + x + y)
    except ValueError:
        raise _Refused("registered COSE key is not a point on P-256") from None


def _cose_int(cose: dict[Any, Any], label: int) -> int | None:
    value = cose.get(label)
    # bool is an int in Python; CBOR true/false is not a COSE integer.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _signature_holds(public: EllipticCurvePublicKey | Ed25519PublicKey, sig: bytes, signed: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        if isinstance(public, ec.EllipticCurvePublicKey):
            public.verify(sig, signed, ec.ECDSA(hashes.SHA256()))  # DER-encoded (r, s)
        elif len(sig) == 64:
            public.verify(sig, signed)
        else:
            return False
    except (InvalidSignature, ValueError):  # ValueError: DER that does not parse
        return False
    return True


# --- SSHSIG over a FIDO key (PROTOCOL.sshsig, PROTOCOL.u2f) ------------------------------------


class _Wire:
    """Reads the SSH wire encoding (RFC 4251: uint32 and length-prefixed strings), exactly."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def raw(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _Refused(f"{self.what} is truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return int.from_bytes(self.raw(4), "big")

    def string(self) -> bytes:
        return self.raw(self.u32())

    def end(self) -> None:
        if self.pos != len(self.data):
            raise _Refused(f"{self.what} has {len(self.data) - self.pos} trailing bytes")


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _verify_sshsig(key: HardwareKey, message: bytes, armored: str, recorded: int) -> Assertion:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        registered, public, application = _registered_sk_key(key.public_key)
        pubkey_blob, namespace, reserved, hash_alg, sig_blob = _sshsig_envelope(armored)
    except _Refused as exc:
        return _refused(str(exc))

    reasons: list[str] = []
    if namespace != SSHSIG_NAMESPACE:
        shown = namespace.decode("utf-8", "replace")
        reasons.append(f"SSHSIG namespace {shown!r} is not 'quipu-verdict'")
    hash_name = hash_alg.decode("utf-8", "replace")
    if hash_name not in _SSHSIG_HASHES:
        return _refused(*reasons, f"SSHSIG hash algorithm {hash_name!r} is not sha256 or sha512")
    if _key_type(pubkey_blob) == _KEY_ED25519:
        # Nothing in a plain-key signature proves a device or a touch.
        reasons.append("SSHSIG was made by a plain ssh-ed25519 key, not a hardware (sk) key")
    if pubkey_blob != registered:
        return _refused(*reasons, "SSHSIG embeds a public key other than the registered one")
    try:
        wire = _Wire(sig_blob, "SSHSIG signature")
        sig_type = wire.string()
        if sig_type != _KEY_SK_ED25519:
            return _refused(*reasons, f"SSHSIG signature type {sig_type!r} does not match the key type")
        sig = wire.string()
        flags = wire.raw(1)[0]
        count = wire.u32()
        wire.end()
    except _Refused as exc:
        return _refused(*reasons, str(exc))

    digest = hashlib.new(hash_name, message).digest()
    signed_data = _SSHSIG_MAGIC + b"".join(map(_ssh_string, (namespace, reserved, hash_alg, digest)))
    # What the authenticator signs (PROTOCOL.u2f): a FIDO assertion over the SSHSIG data.
    fido_signed = (
        hashlib.sha256(application).digest()
        + bytes([flags])
        + struct.pack(">I", count)
        + hashlib.sha256(signed_data).digest()
    )
    if not flags & _FLAG_UP:
        reasons.append("SSHSIG user-presence flag is not set")
    holds = _signature_holds(ed25519.Ed25519PublicKey.from_public_bytes(public), sig, fido_signed)
    if not holds:
        reasons.append("SSHSIG signature does not verify under the registered key")
    return _outcome(reasons, holds, recorded, flags, count)  # UV is reported, not required


def _key_type(blob: bytes) -> bytes | None:
    """The type string that opens an SSH public key blob, or None when it does not parse."""
    try:
        return _Wire(blob, "SSHSIG public key").string()
    except _Refused:
        return None


def _registered_sk_key(line: str) -> tuple[bytes, bytes, bytes]:
    """The registered OpenSSH key line -> (wire blob, 32-byte Ed25519 key, FIDO application).

    Parsed here rather than with cryptography's ``load_ssh_public_key``: that drops the
    application, which the FIDO-wrapped data hashes, and the blob must compare byte for byte.
    """
    parts = line.split()
    if len(parts) < 2:
        raise _Refused("registered key is not an OpenSSH public key line")
    if parts[0].encode() != _KEY_SK_ED25519:
        raise _Refused(
            f"scheme sshsig-sk-ed25519 requires an sk-ssh-ed25519@openssh.com key, not {parts[0]!r}"
        )
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except binascii.Error:
        raise _Refused("registered key's base64 does not decode") from None
    wire = _Wire(blob, "registered key")
    if wire.string() != _KEY_SK_ED25519:
        raise _Refused("registered key's type token does not match its key blob")
    public, application = wire.string(), wire.string()
    wire.end()
    if len(public) != 32:
        raise _Refused("registered key's Ed25519 key is not 32 bytes")
    return blob, public, application


def _sshsig_envelope(armored: str) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """Armor and envelope, exactly: magic SSHSIG, version 1, five strings, no trailing bytes."""
    text = armored.strip()
    if not (text.startswith(_ARMOR_BEGIN) and text.endswith(_ARMOR_END)):
        raise _Refused("signature is not an armored -----BEGIN SSH SIGNATURE----- block")
    body = "".join(text[len(_ARMOR_BEGIN) : -len(_ARMOR_END)].split())
    try:
        blob = base64.b64decode(body, validate=True)
    except binascii.Error:
        raise _Refused("SSHSIG armor body is not base64") from None
    wire = _Wire(blob, "SSHSIG envelope")
    if wire.raw(len(_SSHSIG_MAGIC)) != _SSHSIG_MAGIC:
        raise _Refused("SSHSIG envelope does not start with the SSHSIG magic")
    version = wire.u32()
    if version != 1:
        raise _Refused(f"SSHSIG version {version} is not 1")
    fields = (wire.string(), wire.string(), wire.string(), wire.string(), wire.string())
    wire.end()
    return fields


# --- shared helpers ---------------------------------------------------------------------------


def _outcome(reasons: list[str], holds: bool, recorded: int, flags: int, count: int) -> Assertion:
    """The assertion once every check has run; the counter policy is applied only when the
    signature (and every other check) holds, since only then is the counter genuine."""
    if holds and not reasons:
        refusal = counter_refusal(recorded, count)
        if refusal:
            reasons.append(refusal)
    return Assertion(
        ok=not reasons,
        reasons=tuple(reasons),
        user_present=bool(flags & _FLAG_UP),
        user_verified=bool(flags & _FLAG_UV),
        sign_count=count,
    )


def _refused(*reasons: str) -> Assertion:
    return Assertion(ok=False, reasons=reasons, user_present=False, user_verified=False, sign_count=0)


def _b64url(text: str) -> bytes | None:
    """Padded or unpadded base64url, strictly (no other characters), or None."""
    if not _B64URL.fullmatch(text):
        return None
    bare = text.rstrip("=")
    if len(bare) % 4 == 1:
        return None
    try:
        return base64.urlsafe_b64decode(bare + "=" * (-len(bare) % 4))
    except binascii.Error:
        return None


def _b64url_field(value: str | None, field: str) -> bytes:
    """A base64url request field, or the 400 naming it."""
    if not value:
        raise MissingField(f"{field} is required (base64url)", field=field)
    raw = _b64url(value)
    if raw is None:
        raise InvalidField(f"{field} is not valid base64url", field=field)
    return raw
