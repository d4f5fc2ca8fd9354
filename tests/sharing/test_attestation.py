"""Producer attestation of shares and the three trust tiers (tools-graphs-governance §4.0.6, §4.2
step 4), over a real store with real Ed25519 keys: transport, claimed from a manifest-carried
binding, attested after out-of-band registration with its nonce consumed, and every way an
envelope can be tampered with, replayed, expired, revoked or left unbound."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat
from typer.testing import CliRunner

from quipu.api import KnowledgeBase
from quipu.cli import share_trust
from quipu.cli.common import RefusingGroup
from quipu.errors import BadRequest, ConfigError, NotFound
from quipu.sharing import attestation
from quipu.sharing.attestation import assess, mint, register_binding, revoke_session, signed_message
from quipu.sharing.manifest import sha256_id, share_id_of
from quipu.store import share_sessions
from tests.backends import migrated_location

NOW = 1_800_000_000
SESSION = "session-1"
AGENT = "urn:agent:producer"
INTRODUCER = "ops:alice"


def manifest(graph: str = "<urn:x> <urn:p> <urn:y> .\n") -> dict[str, Any]:
    """A v1 manifest built by hand: only the identity fields matter to attestation."""
    m: dict[str, Any] = {
        "schema": "https://github.com/scbrown/quipu/share-manifest/v1",
        "store_id": "urn:quipu:store:producer",
        "tx_anchor": 7,
        "graph_hash": sha256_id(graph),
        "shapes_hash": sha256_id(""),
        "scope": {"kind": "root", "value": None},
        "parent_share": None,
        "created_at": "2027-01-15T08:00:00Z",
        "producer": {"name": "quipu", "version": "test"},
        "files": {"graph": "export.nt", "shapes": "shapes.ttl", "turtle_view": None},
    }
    m["share_id"] = share_id_of(m)
    return m


def write_key(path: Path, key: Ed25519PrivateKey, mode: int = 0o600) -> str:
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    path.chmod(mode)
    return str(path)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    store = KnowledgeBase(migrated_location(tmp_path))
    yield store
    store.close()


@pytest.fixture
def key_file(tmp_path: Path) -> str:
    return write_key(tmp_path / "producer.pem", Ed25519PrivateKey.generate())


def minted(
    key_file: str, m: dict[str, Any], *, now: int = NOW, ttl: int = 3600, session: str = SESSION
) -> Any:
    return mint(key_file, m, session=session, introducer=INTRODUCER, agent=AGENT, ttl_seconds=ttl, now=now)


def refused(
    kb: KnowledgeBase, m: dict[str, Any], envelope: Any, phrase: str, *, now: int = NOW
) -> BadRequest:
    with pytest.raises(BadRequest) as caught:
        assess(kb.db, m, m["share_id"], envelope, now=now)
    assert phrase in caught.value.message, caught.value.message
    assert caught.value.status == 400
    return caught.value


def consume(kb: KnowledgeBase, nonce: str, session: str, share_id: str) -> bool:
    with kb.db.write() as ctx:
        return share_sessions.consume_nonce(ctx, nonce, session, share_id, "2027-01-15T08:00:00Z")


# -- the message and the minted halves ---------------------------------------------------------


def test_signed_message_is_the_spec_text() -> None:
    m = manifest()
    envelope = {
        "version": "quipu-share-v1",
        "key_id": "sha256:" + "a" * 64,
        "session": "s",
        "introducer": "i",
        "issued_at_epoch": 5,
        "nonce": "0" * 32,
        "signature": "ignored",
    }
    assert (
        signed_message(envelope, m)
        == (
            f"quipu-share-v1\nkey_id=sha256:{'a' * 64}\nsession=s\nintroducer=i\nissued_at=5\n"
            f"nonce={'0' * 32}\nshare_id={m['share_id']}\ngraph_hash={m['graph_hash']}\n"
            f"shapes_hash={m['shapes_hash']}\ntx_anchor=7\n"
        ).encode()
    )
    # A newline smuggled into a field could forge another line of the message.
    with pytest.raises(BadRequest, match="control character"):
        signed_message({**envelope, "session": "s\nshare_id=x"}, m)


def test_mint_signs_the_identity_and_hands_out_the_public_half(key_file: str) -> None:
    m = manifest()
    out = minted(key_file, m)
    envelope, binding = out["envelope"], out["binding"]
    assert set(envelope) == {
        "version",
        "key_id",
        "session",
        "introducer",
        "issued_at_epoch",
        "nonce",
        "signature",
    }
    assert envelope["issued_at_epoch"] == binding["issued_at_epoch"] == NOW
    assert binding["expires_at_epoch"] == NOW + 3600 and binding["revoked"] is False
    assert binding["key_id"] == envelope["key_id"] == sha256_id(bytes.fromhex(binding["public_key"]))
    assert len(envelope["nonce"]) == 32 and envelope["nonce"] == envelope["nonce"].lower()
    public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(binding["public_key"]))
    public.verify(bytes.fromhex(envelope["signature"]), signed_message(envelope, m))  # raises if not
    assert "private" not in json.dumps(out)
    # Each envelope gets a fresh nonce; an audience travels when given.
    again = mint(
        key_file,
        m,
        session=SESSION,
        introducer=INTRODUCER,
        agent=AGENT,
        ttl_seconds=60,
        audience="urn:b",
        now=NOW,
    )
    assert again["envelope"]["nonce"] != envelope["nonce"] and again["envelope"]["audience"] == "urn:b"


def test_mint_refuses_a_loose_key_file_an_unfinished_manifest_and_a_bad_ttl(tmp_path: Path) -> None:
    loose = write_key(tmp_path / "loose.pem", Ed25519PrivateKey.generate(), mode=0o644)
    with pytest.raises(ConfigError, match=r"attestation key \(--attest-key\).*must be private"):
        minted(loose, manifest())
    seed = tmp_path / "seed.hex"  # the other accepted format: the 32-byte seed as 64 hex digits
    seed.write_text("11" * 32)
    seed.chmod(0o600)
    assert minted(str(seed), manifest())["binding"]["public_key"] == (
        Ed25519PrivateKey.from_private_bytes(b"\x11" * 32)
        .public_key()
        .public_bytes(Encoding.Raw, PublicFormat.Raw)
        .hex()
    )
    stale = {**manifest(), "tx_anchor": 8}  # share_id no longer recomputes
    with pytest.raises(BadRequest, match="share_id does not recompute"):
        minted(str(seed), stale)
    with pytest.raises(BadRequest, match="positive number of seconds"):
        minted(str(seed), manifest(), ttl=0)


def test_new_key_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "new.pem"
    out = attestation.new_key_file(str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert out["key_id"] == sha256_id(bytes.fromhex(out["public_key"]))
    assert minted(str(path), manifest())["binding"]["public_key"] == out["public_key"]
    with pytest.raises(BadRequest, match="never overwritten"):
        attestation.new_key_file(str(path))


# -- the three tiers ---------------------------------------------------------------------------


def test_no_envelope_anywhere_is_transport(kb: KnowledgeBase) -> None:
    m = manifest()
    found = assess(kb.db, m, m["share_id"], None, now=NOW)
    assert (found.tier, found.agent, found.session, found.nonce) == ("transport", None, None, None)
    assert "nothing says who produced them" in found.note
    assert found.as_json() == {"tier": "transport", "note": found.note}


def test_a_manifest_carried_binding_and_envelope_reach_claimed(kb: KnowledgeBase, key_file: str) -> None:
    m = manifest()
    m["attestation"] = minted(key_file, m)
    found = assess(kb.db, m, m["share_id"], None, now=NOW + 10)
    assert (found.tier, found.agent, found.session, found.nonce) == ("claimed", AGENT, SESSION, None)
    assert "nobody here vouched" in found.note
    # The same envelope also supplied as the request's attestation: still claimed.
    assert assess(kb.db, m, m["share_id"], m["attestation"]["envelope"], now=NOW).tier == "claimed"
    # Claimed does not defend against replay: nothing was consumed, and it stays claimed.
    assert assess(kb.db, m, m["share_id"], None, now=NOW).tier == "claimed"
    # Another envelope for the same unregistered session is not the one the share carries.
    other = minted(key_file, manifest())["envelope"]
    refused(kb, m, other, "identical envelope")


def test_an_unregistered_session_without_a_carried_binding_is_unbound(
    kb: KnowledgeBase, key_file: str
) -> None:
    m = manifest()
    error = refused(kb, m, minted(key_file, m)["envelope"], "is unbound")
    assert error.field == "attestation" and error.reason == "attestation_unbound"


def test_registered_session_reaches_attested_and_its_nonce_is_single_use(
    kb: KnowledgeBase, key_file: str
) -> None:
    m = manifest()
    out = minted(key_file, m)
    registered = register_binding(kb.db, out["binding"], now=NOW)
    assert registered == {"outcome": "registered", "binding": out["binding"]}
    # Registering the same binding again changes nothing.
    assert register_binding(kb.db, out["binding"], now=NOW)["outcome"] == "unchanged"
    found = assess(kb.db, m, m["share_id"], out["envelope"], now=NOW + 299)
    assert (found.tier, found.agent, found.session) == ("attested", AGENT, SESSION)
    assert found.nonce == (out["envelope"]["nonce"], SESSION)
    assert "registered through a separate channel" in found.note
    # Assessing writes nothing: until the import consumes it, the nonce is unspent.
    assert assess(kb.db, m, m["share_id"], out["envelope"], now=NOW).tier == "attested"
    assert consume(kb, out["envelope"]["nonce"], SESSION, m["share_id"]) is True
    # The same share imported again is still attested, with nothing left to spend.
    again = assess(kb.db, m, m["share_id"], out["envelope"], now=NOW)
    assert (again.tier, again.nonce) == ("attested", None)
    assert consume(kb, out["envelope"]["nonce"], SESSION, m["share_id"]) is False
    # A nonce another share's import spent is a replay.
    other = minted(key_file, m)
    assert consume(kb, other["envelope"]["nonce"], SESSION, "sha256:" + "e" * 64) is True
    refused(kb, m, other["envelope"], "attestation nonce already consumed (replay)")
    with kb.db.write() as ctx, pytest.raises(BadRequest, match=r"replay"):
        attestation.spend_nonce(ctx, found, share_id=m["share_id"], at="2027-01-15T08:00:00Z")


def test_spend_nonce_consumes_once_and_ignores_the_other_tiers(kb: KnowledgeBase, key_file: str) -> None:
    m = manifest()
    out = minted(key_file, m)
    register_binding(kb.db, out["binding"], now=NOW)
    found = assess(kb.db, m, m["share_id"], out["envelope"], now=NOW)
    with kb.db.write() as ctx:
        attestation.spend_nonce(ctx, found, share_id=m["share_id"], at="2027-01-15T08:00:00Z")
        attestation.spend_nonce(
            ctx, assess(kb.db, m, m["share_id"], None, now=NOW), share_id=m["share_id"], at="x"
        )
    with kb.db.read() as conn:
        assert share_sessions.nonce_used(conn, out["envelope"]["nonce"])


def test_the_registry_decides_a_registered_session_even_when_the_manifest_carries_one(
    kb: KnowledgeBase, key_file: str
) -> None:
    m = manifest()
    carried = minted(key_file, m)
    m["attestation"] = carried
    register_binding(kb.db, carried["binding"], now=NOW)
    # With no request envelope the manifest's copy is assessed, against the registry.
    assert assess(kb.db, m, m["share_id"], None, now=NOW).tier == "attested"
    # A freshly minted envelope for the same share attests too (the manifest copy is ignored).
    fresh = minted(key_file, manifest())["envelope"]
    assert assess(kb.db, m, m["share_id"], fresh, now=NOW).nonce == (fresh["nonce"], SESSION)


# -- refusals ----------------------------------------------------------------------------------


def _flip(hex_text: str, at: int = 10) -> str:
    return hex_text[:at] + ("0" if hex_text[at] != "0" else "1") + hex_text[at + 1 :]


TAMPERING = [
    (
        "signature",
        lambda e: {**e, "signature": _flip(e["signature"])},
        "attestation signature does not verify",
    ),
    ("nonce", lambda e: {**e, "nonce": _flip(e["nonce"])}, "attestation signature does not verify"),
    ("issued_at in window", lambda e: {**e, "issued_at_epoch": e["issued_at_epoch"] + 1}, "does not verify"),
    ("issued_at out of window", lambda e: {**e, "issued_at_epoch": NOW - 301}, "issued_at outside ±300 s"),
    ("session", lambda e: {**e, "session": "session-2"}, "is unbound"),
    ("key_id", lambda e: {**e, "key_id": sha256_id(b"another key")}, "key_id does not match the public key"),
    ("introducer", lambda e: {**e, "introducer": "ops:mallory"}, "introducer 'ops:mallory' does not match"),
    ("version", lambda e: {**e, "version": "quipu-write-v1"}, "'version' must be 'quipu-share-v1'"),
    ("nonce length", lambda e: {**e, "nonce": e["nonce"][:31]}, "exactly 32 lowercase hex characters"),
    ("nonce case", lambda e: {**e, "nonce": e["nonce"].upper()}, "exactly 32 lowercase hex characters"),
    ("signature not hex", lambda e: {**e, "signature": "zz" * 64}, "64-byte Ed25519 signature in hex"),
    (
        "issued_at type",
        lambda e: {**e, "issued_at_epoch": str(e["issued_at_epoch"])},
        "integer number of seconds",
    ),
    ("issued_at bool", lambda e: {**e, "issued_at_epoch": True}, "integer number of seconds"),
    ("unknown key", lambda e: {**e, "extra": 1}, "unknown key 'extra'"),
    ("missing key", lambda e: {k: v for k, v in e.items() if k != "nonce"}, "has no 'nonce'"),
    ("not an object", lambda e: [e], "must be an object"),
]


@pytest.mark.parametrize(("change", "tamper", "phrase"), TAMPERING, ids=[t[0] for t in TAMPERING])
def test_a_tampered_envelope_is_refused_naming_its_check(
    kb: KnowledgeBase, key_file: str, change: str, tamper: Any, phrase: str
) -> None:
    m = manifest()
    out = minted(key_file, m)
    register_binding(kb.db, out["binding"], now=NOW)
    error = refused(kb, m, tamper(out["envelope"]), phrase)
    assert error.field == "attestation"
    # The genuine envelope still attests: a refusal consumes nothing.
    assert assess(kb.db, m, m["share_id"], out["envelope"], now=NOW).tier == "attested"


def test_the_window_is_300_seconds_either_side_of_the_import_time(kb: KnowledgeBase, key_file: str) -> None:
    m = manifest()
    out = minted(key_file, m, ttl=10_000)
    register_binding(kb.db, out["binding"], now=NOW)
    assert assess(kb.db, m, m["share_id"], out["envelope"], now=NOW + 300).tier == "attested"
    refused(kb, m, out["envelope"], "issued_at outside ±300 s", now=NOW + 301)
    refused(kb, m, out["envelope"], "issued_at outside ±300 s", now=NOW - 301)


def test_an_envelope_issued_before_its_binding_began_is_refused(kb: KnowledgeBase, key_file: str) -> None:
    m = manifest()
    out = minted(key_file, m)
    early = minted(key_file, m, now=NOW - 100)["envelope"]  # same key and session, before the binding
    register_binding(kb.db, out["binding"], now=NOW)
    refused(kb, m, early, "issued outside the lifetime of session")


def test_an_expired_binding_is_refused(kb: KnowledgeBase, key_file: str) -> None:
    m = manifest()
    out = minted(key_file, m, now=NOW - 200, ttl=100)  # lived from NOW-200 to NOW-100
    register_binding(kb.db, out["binding"], now=NOW - 150)
    error = refused(kb, m, out["envelope"], "attestation expired")
    assert error.reason == "attestation_expired"
    # The same expiry applies to a binding the manifest carries.
    m2 = manifest()
    m2["attestation"] = minted(key_file, m2, now=NOW - 200, ttl=100, session="session-9")
    refused(kb, m2, None, "attestation expired")


def test_a_revoked_session_is_refused_and_stays_revoked(kb: KnowledgeBase, key_file: str) -> None:
    m = manifest()
    out = minted(key_file, m)
    register_binding(kb.db, out["binding"], now=NOW)
    assert revoke_session(kb.db, SESSION) == {"session": SESSION, "revoked": True, "outcome": "revoked"}
    assert revoke_session(kb.db, SESSION)["outcome"] == "unchanged"
    error = refused(kb, m, out["envelope"], "session revoked")
    assert error.reason == "attestation_revoked"
    # A revoked session never comes back, not even with its own binding ...
    with pytest.raises(BadRequest, match="was revoked"):
        register_binding(kb.db, out["binding"], now=NOW)
    # ... and revoking demotes nothing to claimed: a manifest-carried copy is refused too.
    m["attestation"] = out
    refused(kb, m, None, "session revoked")
    with pytest.raises(NotFound, match="no registered session"):
        revoke_session(kb.db, "never-registered")


def test_a_signature_over_another_share_is_refused(kb: KnowledgeBase, key_file: str) -> None:
    signed_for = manifest()
    out = minted(key_file, signed_for)
    other = manifest(graph="<urn:x> <urn:p> <urn:z> .\n")  # another graph_hash, hence share_id
    assert other["share_id"] != signed_for["share_id"]
    # Claimed path: the envelope and binding moved onto another share.
    other["attestation"] = out
    refused(kb, other, None, "attestation signature does not verify")
    # Attested path: same.
    register_binding(kb.db, out["binding"], now=NOW)
    refused(kb, other, out["envelope"], "attestation signature does not verify")
    # Re-labelling the share id handed to assess does not help either.
    with pytest.raises(BadRequest, match="does not verify"):
        assess(kb.db, signed_for, "sha256:" + "0" * 64, out["envelope"], now=NOW)


def test_claimed_checks_the_carried_binding(kb: KnowledgeBase, key_file: str, tmp_path: Path) -> None:
    m = manifest()
    out = minted(key_file, m)
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {**out, "envelope": {**out["envelope"], "signature": _flip(out["envelope"]["signature"])}},
            "does not verify",
        ),
        ({**out, "binding": {**out["binding"], "revoked": True}}, "session revoked"),
        ({**out, "binding": {**out["binding"], "introducer": "ops:mallory"}}, "does not match the binding"),
        ({**out, "binding": {**out["binding"], "session": "session-2"}}, "is for session 'session-2'"),
        (
            {**out, "binding": {**out["binding"], "key_id": sha256_id(b"x")}},
            "key_id does not match the public key",
        ),
        ({**out, "binding": {**out["binding"], "public_key": "AB" * 32}}, "64 lowercase hex digits"),
        ({**out, "binding": {**out["binding"], "expires_at_epoch": NOW}}, "later than 'issued_at_epoch'"),
        ({"envelope": out["envelope"]}, "has no 'binding'"),
    ]
    # A binding for another key, however well formed, does not verify this envelope.
    stranger = minted(write_key(tmp_path / "other.pem", Ed25519PrivateKey.generate()), m)
    cases.append(({**out, "binding": stranger["binding"]}, "key_id does not match the public key"))
    for carried, phrase in cases:
        refused(kb, {**m, "attestation": carried}, None, phrase)


# -- registration ------------------------------------------------------------------------------


def test_register_binding_validates_and_refuses_a_conflicting_rebind(
    kb: KnowledgeBase, key_file: str
) -> None:
    binding = minted(key_file, manifest())["binding"]
    bad = [
        ({**binding, "public_key": binding["public_key"].upper()}, "64 lowercase hex digits"),
        ({**binding, "key_id": sha256_id(b"x")}, "key_id does not match the public key"),
        ({**binding, "expires_at_epoch": binding["issued_at_epoch"]}, "later than 'issued_at_epoch'"),
        ({**binding, "revoked": True}, "marked revoked"),
        ({**binding, "revoked": 0}, "'revoked' must be true or false"),
        ({**binding, "agent": ""}, "'agent' must be a non-empty string"),
        ({**binding, "note": "x"}, "unknown key 'note'"),
        ({k: v for k, v in binding.items() if k != "introducer"}, "has no 'introducer'"),
    ]
    for value, phrase in bad:
        with pytest.raises(BadRequest, match=phrase):
            register_binding(kb.db, value, now=NOW)
    with pytest.raises(BadRequest, match="already expired"):
        register_binding(kb.db, binding, now=binding["expires_at_epoch"])
    register_binding(kb.db, binding, now=NOW)
    with pytest.raises(BadRequest, match="already registered with a different binding"):
        register_binding(kb.db, {**binding, "agent": "urn:agent:other"}, now=NOW)
    with kb.db.read() as conn:
        row = share_sessions.lookup(conn, SESSION)
    assert row is not None and row.agent == AGENT and not row.revoked and row.registered_at.endswith("Z")


# -- the CLI -----------------------------------------------------------------------------------


def test_cli_keygen_trust_and_revoke(tmp_path: Path) -> None:
    app = typer.Typer(cls=RefusingGroup)
    share_trust.register(app)
    runner = CliRunner()
    db = migrated_location(tmp_path)

    def run(*args: str, code: int = 0) -> Any:
        result = runner.invoke(app, list(args))
        assert result.exit_code == code, (result.stdout, result.stderr)
        return json.loads(result.stdout) if code == 0 else result

    key = tmp_path / "k.pem"
    made = run("keygen", str(key))
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and len(made["public_key"]) == 64
    assert "never overwritten" in run("keygen", str(key), code=2).stderr
    out = mint(str(key), manifest(), session=SESSION, introducer=INTRODUCER, agent=AGENT, ttl_seconds=10**9)
    binding_file = tmp_path / "binding.json"
    binding_file.write_text(json.dumps(out["binding"]))
    assert run("trust", str(binding_file), "--db", db)["outcome"] == "registered"
    assert run("trust", str(binding_file), "--db", db)["outcome"] == "unchanged"
    assert run("revoke", SESSION, "--db", db)["outcome"] == "revoked"
    assert "no registered session" in run("revoke", "nobody", "--db", db, code=2).stderr
    binding_file.write_text("{not json")
    assert "not JSON" in run("trust", str(binding_file), "--db", db, code=2).stderr
