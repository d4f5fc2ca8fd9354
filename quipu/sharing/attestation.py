"""Producer attestation of shares and the three trust tiers (tools-graphs-governance §4.0.6,
§4.2 step 4).

The hashes of a share prove its bytes are unaltered; they say nothing about who made them. An
attestation envelope is an Ed25519 signature, by a producer's session key, over the share's
identity fields (``signed_message``). Import reports one tier:

* ``transport``: no envelope anywhere. The bytes are intact; their author is unknown.
* ``claimed``: the session is not registered here, but the manifest carries a binding (the
  public half of the session key) and the very same envelope, and the signature verifies under
  that key. The bundle and its identity fields are bound together, but nobody here vouched for
  the key, and replays go undetected.
* ``attested``: the envelope verifies under a binding this store registered through a separate
  channel (``quipu share trust``); its nonce is consumed by the import, so it never counts twice.

Every other envelope (tampered, replayed, expired, revoked, issued more than 300 s from the
import time, or unbound) refuses the import with a 400 naming the failing check.

Which envelope is assessed: the request's ``attestation`` field when given, else the one the
manifest carries in ``attestation.envelope``. For a registered session the registry alone decides
and a differing manifest copy is ignored (the producer may hand over a freshly minted envelope
for the same share). For an unregistered session the two must be identical: equal in every
field, ``audience`` included, after both parse strictly.

No import ever registers a key: a key that vouches for the bundle it arrived in vouches for
nothing, since substituting the bundle substitutes the key with it. Registration
(``register_binding``) and minting (``mint``, which reads a private key) are CLI-only acts.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Final

from quipu import times
from quipu.errors import BadRequest, ConfigError, InvalidField, NotFound
from quipu.governance import signing
from quipu.governance.verdicts import ed25519_valid
from quipu.sharing.manifest import SHA256_ID, sha256_id, share_id_of
from quipu.store import share_sessions
from quipu.store.share_sessions import SessionRow

if TYPE_CHECKING:
    from quipu.identity import Authenticated
    from quipu.store.context import WriteContext
    from quipu.store.database import Database

VERSION: Final = "quipu-share-v1"
WINDOW_SECONDS: Final = 300  # an envelope is accepted within ±300 s of the import time
TRANSPORT, CLAIMED, ATTESTED = "transport", "claimed", "attested"
FIELD: Final = "attestation"

_PUBLIC_KEY: Final = re.compile(r"[0-9a-f]{64}")
_NONCE: Final = re.compile(r"[0-9a-f]{32}")
_SIGNATURE: Final = re.compile(r"[0-9a-fA-F]{128}")  # 64 bytes; hex is hex in either case
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
_MAX_EPOCH: Final = 2**53  # JSON-safe, and far inside the BIGINT columns
_ENVELOPE_KEYS: Final = frozenset(
    {"version", "key_id", "session", "introducer", "issued_at_epoch", "nonce", "signature"}
)
_BINDING_KEYS: Final = frozenset(
    {
        "agent",
        "session",
        "public_key",
        "key_id",
        "introducer",
        "issued_at_epoch",
        "expires_at_epoch",
        "revoked",
    }
)

_NOTES: Final = {
    TRANSPORT: (
        "no attestation envelope was supplied: the hashes prove the bytes are unaltered, "
        "but nothing says who produced them"
    ),
    CLAIMED: (
        "the envelope verifies under the public key the share itself carries: the bundle is "
        "unaltered since signing and its identity fields are bound together, but nobody here "
        "vouched for that key and replays are not detected (register the session with "
        "'quipu share trust' to reach attested)"
    ),
    ATTESTED: (
        "the envelope verifies under a session binding this store registered through a separate "
        "channel; its nonce is consumed by this import, so the same envelope cannot attest again"
    ),
}


@dataclass(frozen=True, slots=True)
class Assessment:
    """The tier an import reached, and what the import must still do about it."""

    tier: str  # transport | claimed | attested
    agent: str | None
    session: str | None
    note: str  # what the tier proves, for the import response
    nonce: tuple[str, str] | None  # (nonce, session) to consume inside the import's write

    def as_json(self) -> dict[str, Any]:
        """The ``attestation`` object of the import response."""
        out: dict[str, Any] = {"tier": self.tier}
        if self.agent is not None:
            out["agent"] = self.agent
        if self.session is not None:
            out["session"] = self.session
        out["note"] = self.note
        return out


@dataclass(frozen=True, slots=True)
class Envelope:
    version: str
    key_id: str
    session: str
    introducer: str
    issued_at_epoch: int
    nonce: str
    signature: str
    audience: str | None

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.audience is None:  # optional and absent: omitted, as the producer wrote it
            del out["audience"]
        return out


@dataclass(frozen=True, slots=True)
class Binding:
    agent: str
    session: str
    public_key: str
    key_id: str
    introducer: str
    issued_at_epoch: int
    expires_at_epoch: int
    revoked: bool

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of_row(cls, row: SessionRow) -> Binding:
        return cls(*(getattr(row, f.name) for f in fields(cls)))


def key_id_of(public_key_hex: str) -> str:
    """``sha256:`` + hex(sha256(raw 32-byte public key)), as envelopes and bindings name a key."""
    return sha256_id(bytes.fromhex(public_key_hex))


# -- the signed message ----------------------------------------------------------------------


def signed_message(envelope: Mapping[str, Any], manifest: Mapping[str, Any]) -> bytes:
    """The UTF-8 bytes an envelope's signature covers (§4.0.6): the domain tag, then one
    ``name=value`` line per identity field, each ending in a newline."""
    lines = [
        VERSION,
        f"key_id={_line(envelope, 'key_id', str, FIELD)}",
        f"session={_line(envelope, 'session', str, FIELD)}",
        f"introducer={_line(envelope, 'introducer', str, FIELD)}",
        f"issued_at={_line(envelope, 'issued_at_epoch', int, FIELD)}",
        f"nonce={_line(envelope, 'nonce', str, FIELD)}",
        f"share_id={_line(manifest, 'share_id', str, 'manifest')}",
        f"graph_hash={_line(manifest, 'graph_hash', str, 'manifest')}",
        f"shapes_hash={_line(manifest, 'shapes_hash', str, 'manifest')}",
        f"tx_anchor={_line(manifest, 'tx_anchor', int, 'manifest')}",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _line(obj: Mapping[str, Any], key: str, kind: type, where: str) -> str:
    """One value of the message: present, of its type, and unable to forge another line."""
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidField(
            f"{where} field '{key}' is missing or not a {kind.__name__}", field=f"{where}.{key}"
        )
    text = str(value)
    if _CONTROL.search(text):
        raise InvalidField(f"{where} field '{key}' contains a control character", field=f"{where}.{key}")
    return text


# -- strict shapes -----------------------------------------------------------------------------


def _refuse(message: str, reason: str, field: str = FIELD) -> BadRequest:
    return BadRequest(message, reason=reason, field=field)


def _malformed(message: str, field: str) -> BadRequest:
    return _refuse(message, "attestation_malformed", field)


def _keys(
    value: object, required: frozenset[str], optional: frozenset[str], what: str, field: str
) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _malformed(f"{what} must be an object", field)
    unknown = sorted(set(value) - required - optional)
    if unknown:
        raise _malformed(f"{what} has an unknown key '{unknown[0]}'", field)
    missing = sorted(required - set(value))
    if missing:
        raise _malformed(f"{what} has no '{missing[0]}'", field)
    return value


def _text(obj: Mapping[str, Any], key: str, what: str, field: str) -> str:
    value = obj[key]
    if not isinstance(value, str) or not value or _CONTROL.search(value):
        raise _malformed(f"{what} '{key}' must be a non-empty string without control characters", field)
    return value


def _epoch(obj: Mapping[str, Any], key: str, what: str, field: str) -> int:
    value = obj[key]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _MAX_EPOCH:
        raise _malformed(f"{what} '{key}' must be an integer number of seconds since the epoch", field)
    return value


def _pattern(
    obj: Mapping[str, Any], key: str, pattern: re.Pattern[str], rule: str, what: str, field: str
) -> str:
    value = obj[key]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _malformed(f"{what} '{key}' must be {rule}", field)
    return value


def parse_envelope(value: object, field: str = FIELD) -> Envelope:
    """An envelope of §4.0.6, checked field by field; anything else refuses (400)."""
    what = "attestation envelope"
    obj = _keys(value, _ENVELOPE_KEYS, frozenset({"audience"}), what, field)
    if obj["version"] != VERSION:
        raise _malformed(f"{what} 'version' must be {VERSION!r}, not {obj['version']!r}", field)
    audience = obj.get("audience")
    if audience is not None and (not isinstance(audience, str) or _CONTROL.search(audience)):
        raise _malformed(f"{what} 'audience' must be a string without control characters", field)
    return Envelope(
        VERSION,
        _pattern(obj, "key_id", SHA256_ID, "'sha256:' and 64 lowercase hex digits", what, field),
        _text(obj, "session", what, field),
        _text(obj, "introducer", what, field),
        _epoch(obj, "issued_at_epoch", what, field),
        _pattern(obj, "nonce", _NONCE, "exactly 32 lowercase hex characters", what, field),
        _pattern(obj, "signature", _SIGNATURE, "a 64-byte Ed25519 signature in hex", what, field),
        audience,
    )


def parse_binding(value: object, field: str = "binding") -> Binding:
    """A session binding (the public half only), checked field by field; anything else refuses."""
    what = "session binding"
    obj = _keys(value, _BINDING_KEYS, frozenset(), what, field)
    public_key = _pattern(obj, "public_key", _PUBLIC_KEY, "64 lowercase hex digits (32 bytes)", what, field)
    key_id = _pattern(obj, "key_id", SHA256_ID, "'sha256:' and 64 lowercase hex digits", what, field)
    if key_id != key_id_of(public_key):
        raise _refuse(f"{what}: key_id does not match the public key", "attestation_mismatch", field)
    issued = _epoch(obj, "issued_at_epoch", what, field)
    expires = _epoch(obj, "expires_at_epoch", what, field)
    if expires <= issued:
        raise _malformed(f"{what} 'expires_at_epoch' must be later than 'issued_at_epoch'", field)
    if not isinstance(obj["revoked"], bool):
        raise _malformed(f"{what} 'revoked' must be true or false", field)
    return Binding(
        _text(obj, "agent", what, field),
        _text(obj, "session", what, field),
        public_key,
        key_id,
        _text(obj, "introducer", what, field),
        issued,
        expires,
        obj["revoked"],
    )


def carried(manifest: Mapping[str, Any]) -> tuple[Envelope, Binding] | None:
    """The ``{envelope, binding}`` a manifest carries in ``attestation``; None when it has none."""
    if "attestation" not in manifest:
        return None
    field = "manifest.attestation"
    obj = _keys(
        manifest["attestation"],
        frozenset({"envelope", "binding"}),
        frozenset(),
        "manifest attestation",
        field,
    )
    return parse_envelope(obj["envelope"], f"{field}.envelope"), parse_binding(
        obj["binding"], f"{field}.binding"
    )


# -- the import's gate -------------------------------------------------------------------------


def assess(
    db: Database, manifest: Mapping[str, Any], share_id: str, envelope: Mapping[str, Any] | None, *, now: int
) -> Assessment:
    """The tier of one verified share (§4.2 step 4), or a 400 naming the check that failed.

    ``share_id`` is the id verification recomputed; ``envelope`` is the request's
    ``attestation`` field (None when absent); ``now`` is the import time in epoch seconds.
    Nothing is written: for ``attested`` the import consumes ``Assessment.nonce`` inside its
    own write (``spend_nonce``), so a refused import leaves the envelope unspent."""
    shipped = carried(manifest)
    if envelope is not None:
        supplied = parse_envelope(envelope)
    elif shipped is not None:
        supplied = shipped[0]
    else:
        return Assessment(TRANSPORT, None, None, _NOTES[TRANSPORT], None)
    message = signed_message(supplied.as_json(), {**manifest, "share_id": share_id})
    with db.read() as conn:
        row = share_sessions.lookup(conn, supplied.session)
        spender = share_sessions.nonce_spender(conn, supplied.nonce) if row is not None else None
    if row is not None:
        # The registry decides by session alone: nothing the bundle carries can sway it.
        _verify(supplied, Binding.of_row(row), message, now)
        if spender == share_id:  # this share's own earlier import: attested, nothing left to spend
            return Assessment(ATTESTED, row.agent, row.session, _NOTES[ATTESTED], None)
        if spender is not None:
            raise _refuse(
                f"attestation nonce already consumed (replay): {supplied.nonce} was spent by an earlier import",
                "attestation_replay",
            )
        return Assessment(ATTESTED, row.agent, row.session, _NOTES[ATTESTED], (supplied.nonce, row.session))
    if shipped is None:
        raise _refuse(
            f"attestation session {supplied.session!r} is unbound: it is not registered here and the "
            "manifest carries no binding to check the envelope against (register it with "
            "'quipu share trust', or import without an envelope)",
            "attestation_unbound",
        )
    shipped_envelope, binding = shipped
    if shipped_envelope != supplied:
        raise _refuse(
            f"attestation session {supplied.session!r} is unbound, and the supplied envelope differs "
            "from the one the manifest carries: an unregistered session reaches 'claimed' only with "
            "an identical envelope",
            "attestation_unbound",
        )
    if binding.session != supplied.session:
        raise _refuse(
            f"attestation session {supplied.session!r} is unbound: the binding the manifest carries "
            f"is for session {binding.session!r}",
            "attestation_unbound",
        )
    _verify(supplied, binding, message, now)
    return Assessment(CLAIMED, binding.agent, binding.session, _NOTES[CLAIMED], None)


def _verify(envelope: Envelope, binding: Binding, message: bytes, now: int) -> None:
    """Every check of one envelope against one binding, cheapest first, signature last."""
    session = binding.session
    if binding.revoked:
        raise _refuse(f"session revoked: {session!r} no longer attests shares", "attestation_revoked")
    if now > binding.expires_at_epoch:
        raise _refuse(
            f"attestation expired: the binding of session {session!r} expired at {binding.expires_at_epoch} "
            f"(import time {now})",
            "attestation_expired",
        )
    if envelope.key_id != key_id_of(binding.public_key):
        raise _refuse(
            f"key_id does not match the public key of session {session!r}: envelope={envelope.key_id}",
            "attestation_mismatch",
        )
    if envelope.introducer != binding.introducer:
        raise _refuse(
            f"attestation introducer {envelope.introducer!r} does not match the binding of session "
            f"{session!r} ({binding.introducer!r})",
            "attestation_mismatch",
        )
    if abs(envelope.issued_at_epoch - now) > WINDOW_SECONDS:
        raise _refuse(
            f"issued_at outside ±{WINDOW_SECONDS} s of the import time: issued_at={envelope.issued_at_epoch}, "
            f"import time={now}",
            "attestation_out_of_window",
        )
    if not binding.issued_at_epoch <= envelope.issued_at_epoch <= binding.expires_at_epoch:
        raise _refuse(
            f"attestation issued outside the lifetime of session {session!r}: issued_at="
            f"{envelope.issued_at_epoch} is not within [{binding.issued_at_epoch}, {binding.expires_at_epoch}]",
            "attestation_expired",
        )
    if not ed25519_valid(binding.public_key, envelope.signature, message):
        raise _refuse(
            "attestation signature does not verify over this share's identity "
            "(share_id, graph_hash, shapes_hash, tx_anchor) under the session key",
            "attestation_bad_signature",
        )


def spend_nonce(ctx: WriteContext, assessment: Assessment, *, share_id: str, at: str) -> None:
    """Consume an ``attested`` assessment's nonce inside the import's write; a nonce another
    import spent since ``assess`` read the registry refuses this one as a replay (the write
    then rolls back with nothing staged). No-op for the other tiers."""
    if assessment.nonce is None:
        return
    nonce, session = assessment.nonce
    if not share_sessions.consume_nonce(ctx, nonce, session, share_id, at):
        raise _refuse(
            f"attestation nonce already consumed (replay): {nonce} was spent by a concurrent import",
            "attestation_replay",
        )


# -- the producer's and the receiver's separate acts (CLI only) --------------------------------


def _signing_key(path: str, agent: str) -> signing.SigningIdentity:
    """The producer's private key: a PEM (PKCS#8) Ed25519 key, as ``openssl genpkey -algorithm
    ed25519`` or ``quipu share keygen`` writes one, or a 64-hex-digit seed; mode 600 or 400.
    The governance signing key's loader reads it; its refusals are re-labelled for this flag."""
    try:
        return signing.load(path, agent)
    except ConfigError as exc:
        _, _, detail = exc.message.partition(": ")
        raise ConfigError(f"attestation key (--attest-key): {detail or exc.message}") from None


def new_key_file(path: str) -> dict[str, str]:
    """Write a new Ed25519 private key to ``path`` as unencrypted PEM (PKCS#8), mode 600, and
    return its public half. An existing file is never overwritten: it may be someone's key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InvalidField(f"{path} already exists: a key file is never overwritten", field="file") from None
    except OSError as exc:
        raise InvalidField(f"cannot create {path}: {exc.strerror}", field="file") from None
    with os.fdopen(fd, "wb") as out:
        if os.name == "posix":
            os.fchmod(out.fileno(), 0o600)  # the umask may only narrow it; make it exact
        out.write(pem)
    public_hex = signing.SigningIdentity("keygen", key).public_hex
    return {"private_key_file": path, "public_key": public_hex, "key_id": key_id_of(public_hex)}


def mint(
    private_key_pem_or_raw_path: str,
    manifest: Mapping[str, Any],
    *,
    session: str,
    introducer: str,
    agent: str,
    ttl_seconds: int,
    audience: str | None = None,
    now: int | None = None,
) -> dict[str, Any]:
    """Sign ``manifest``'s identity as ``session`` and return ``{"envelope", "binding"}``.

    The binding is the public half only: it travels in the manifest (enough for ``claimed``) and
    is what the receiver registers with ``quipu share trust`` (for ``attested``). The session's
    lifetime starts at ``now`` (default: the wall clock) and lasts ``ttl_seconds``. A fresh
    random nonce makes each envelope single-use. Reads a private key: never reachable over
    HTTP or MCP."""
    if not isinstance(ttl_seconds, int) or isinstance(ttl_seconds, bool) or ttl_seconds <= 0:
        raise InvalidField("--attest-ttl must be a positive number of seconds", field="attest_ttl")
    if manifest.get("share_id") != share_id_of(manifest):
        raise InvalidField(
            "the manifest's share_id does not recompute: mint only over a finished manifest",
            field="manifest.share_id",
        )
    issued = int(time.time()) if now is None else now
    identity = _signing_key(private_key_pem_or_raw_path, agent)
    key_id = key_id_of(identity.public_hex)
    envelope: dict[str, Any] = {
        "version": VERSION,
        "key_id": key_id,
        "session": session,
        "introducer": introducer,
        "issued_at_epoch": issued,
        "nonce": secrets.token_hex(16),
    }
    if audience is not None:
        envelope["audience"] = audience
    envelope["signature"] = identity.sign(signed_message(envelope, manifest))
    binding = {
        "agent": agent,
        "session": session,
        "public_key": identity.public_hex,
        "key_id": key_id,
        "introducer": introducer,
        "issued_at_epoch": issued,
        "expires_at_epoch": issued + ttl_seconds,
        "revoked": False,
    }
    # Through the import's own parsers: never hand out what every importer would refuse.
    parse_envelope(envelope, "attest")
    parse_binding(binding, "attest")
    return {"envelope": envelope, "binding": binding}


def register_binding(
    db: Database, binding: Mapping[str, Any], *, auth: Authenticated | None = None, now: int | None = None
) -> dict[str, Any]:
    """Register a producer's session binding, obtained through a channel other than the share
    (``quipu share trust``). Registering the same binding again changes nothing; a session
    already bound differently, or revoked, is refused: a new key or a revoked session gets a
    new session name, so an earlier attestation can never come to mean something else."""
    parsed = parse_binding(binding)
    if parsed.revoked:
        raise _malformed("a binding marked revoked cannot be registered", "binding.revoked")
    at = int(time.time()) if now is None else now
    if parsed.expires_at_epoch <= at:
        raise _refuse(
            f"session binding {parsed.session!r} already expired at {parsed.expires_at_epoch}",
            "attestation_expired",
            "binding.expires_at_epoch",
        )
    with db.write(auth) as ctx:
        existing = share_sessions.lookup(ctx.conn, parsed.session)
        if existing is None:
            share_sessions.register(ctx, SessionRow(**parsed.as_json(), registered_at=times.now()))
            outcome = "registered"
        elif existing.revoked:
            raise _refuse(
                f"session {parsed.session!r} was revoked and cannot be registered again; mint under a new session",
                "attestation_revoked",
                "binding.session",
            )
        elif Binding.of_row(existing) == parsed:
            outcome = "unchanged"
        else:
            raise _refuse(
                f"session {parsed.session!r} is already registered with a different binding; "
                "revoke it and register a new session",
                "attestation_mismatch",
                "binding.session",
            )
    return {"outcome": outcome, "binding": parsed.as_json()}


def revoke_session(db: Database, session: str, *, auth: Authenticated | None = None) -> dict[str, Any]:
    """Revoke a registered session: from now on its envelopes refuse every import. Revoking a
    revoked session changes nothing; an unknown session is refused."""
    with db.write(auth) as ctx:
        existing = share_sessions.lookup(ctx.conn, session)
        if existing is None:
            raise NotFound(f"no registered session {session!r}", field="session")
        if not existing.revoked:
            share_sessions.revoke(ctx, session)
    return {"session": session, "revoked": True, "outcome": "unchanged" if existing.revoked else "revoked"}
