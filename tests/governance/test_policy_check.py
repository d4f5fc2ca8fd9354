"""``quipu_policy_check`` (tools-graphs-governance §5.1) on a real store: a test per rule
(PC-1..5), every listed error, the evidence hash's algorithm and its stability across
processes, and the optional signing identity (a real Ed25519 key file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import ConfigError, InvalidField, MissingField
from quipu.governance.policy import evidence_hash
from tests.backends import store_location

A = "http://aegis.gastown.local/ontology/"
Q = "https://scbrown.github.io/quechua/ns#"
POLICY = "urn:policy:tested-deploys"
CLAIM = f"ASK {{ $target <{A}testRun> ?r . ?r <{A}result> <urn:result:pass> }}"
PROBE = f"ASK {{ $target <{A}testRun> ?r }}"
DATA = f"""
<urn:svc:green> <{A}testRun> <urn:run:1> . <urn:run:1> <{A}result> <urn:result:pass> .
<urn:svc:red> <{A}testRun> <urn:run:2> . <urn:run:2> <{A}result> <urn:result:fail> .
<{POLICY}> a <{A}Policy> ; <{A}claim> "{CLAIM}" ; <{A}evidenceProbe> "{PROBE}" .
"""


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "policy.db")) as opened:
        opened.knot(DATA)
        yield opened


def check(kb: KnowledgeBase, **fields: Any) -> dict[str, Any]:
    return kb.governance.policy_check(**fields)


def test_unknown_and_unsatisfied_are_never_collapsed(kb: KnowledgeBase) -> None:
    # PC-1: no evidence is unknown; evidence that fails the claim is unsatisfied
    assert check(kb, target="urn:svc:green", policy=POLICY)["outcome"] == "satisfied"
    assert check(kb, target="urn:svc:red", policy=POLICY)["outcome"] == "unsatisfied"
    assert check(kb, target="urn:svc:new", policy=POLICY)["outcome"] == "unknown"
    # without a probe there is no unknown
    inline = check(kb, target="urn:svc:new", claim=CLAIM)
    assert inline["outcome"] == "unsatisfied" and inline["predicate_id"] == "inline"


def test_the_response_shape_without_a_signing_identity(kb: KnowledgeBase) -> None:
    out = check(kb, target="urn:svc:green", policy=POLICY)
    assert out == {
        "predicate_id": POLICY,
        "target_ref": "urn:svc:green",
        "outcome": "satisfied",
        "evidence_hash": out["evidence_hash"],
        "tier": "committed",
        "verifier": "quipu",
        "verifier_authorized": False,
        "signed": False,
        "signature": None,
        "verifier_public_key": None,
    }


def test_the_evidence_hash_is_fnv1a_64_over_the_documented_string(kb: KnowledgeBase) -> None:
    # FNV-1a-64's published vectors, then the field layout: predicate|target|valid_at|bound claim
    from quipu.governance import policy

    def fnv(text: str) -> str:
        h = policy.FNV_OFFSET
        for byte in text.encode():
            h = ((h ^ byte) * policy.FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
        return f"{h:016x}"

    assert (
        fnv("") == "cbf29ce484222325"
        and fnv("a") == "af63dc4c8601ec8c"
        and fnv("foobar") == "85944171f73967e8"
    )
    assert evidence_hash("p", "t", None, "c") == "fnv1a:" + fnv("p|t||c")
    out = check(kb, target="urn:svc:green", policy=POLICY, valid_at="2030-01-01T00:00:00Z")
    bound = CLAIM.replace("$target", "<urn:svc:green>")
    assert out["evidence_hash"] == "fnv1a:" + fnv(f"{POLICY}|urn:svc:green|2030-01-01T00:00:00Z|{bound}")


def test_the_same_inputs_give_the_same_verdict_and_hash_in_another_process(kb: KnowledgeBase) -> None:
    # PC-2, across processes (and, in the PostgreSQL half, on PostgreSQL)
    here = check(kb, target="urn:svc:red", policy=POLICY)
    assert check(kb, target="urn:svc:red", policy=POLICY) == here
    location = kb.db.location
    kb.close()
    code = (
        "import json, quipu\n"
        f"with quipu.open({location!r}) as kb:\n"
        f"    print(json.dumps(kb.governance.policy_check(target='urn:svc:red', policy={POLICY!r})))\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    there = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        ).stdout
    )
    assert there == here


def test_the_transaction_is_not_part_of_the_hash(kb: KnowledgeBase) -> None:
    # PC-3: as in the original; the valid time is
    now = check(kb, target="urn:svc:green", policy=POLICY)
    with kb.db.read() as conn:
        head = int(conn.exec_driver_sql("SELECT MAX(id) FROM transactions").scalar() or 0)
    at_tx = check(kb, target="urn:svc:green", policy=POLICY, tx=head)
    assert at_tx["evidence_hash"] == now["evidence_hash"] and at_tx["outcome"] == "satisfied"
    before = check(kb, target="urn:svc:green", policy=POLICY, tx=0)
    assert before["outcome"] == "unknown" and before["evidence_hash"] == now["evidence_hash"]
    dated = check(kb, target="urn:svc:green", policy=POLICY, valid_at="2999-01-01T00:00:00Z")
    assert dated["evidence_hash"] != now["evidence_hash"]


def test_stored_text_is_used_exactly_and_read_under_both_spellings(kb: KnowledgeBase) -> None:
    # PC-4 and the alias rule: a Quechua claim works; the same text under both collapses;
    # different texts are refused, never chosen
    kb.knot(f'<urn:policy:q> <{Q}claim> "{CLAIM}" .')
    assert check(kb, target="urn:svc:green", policy="urn:policy:q")["outcome"] == "satisfied"
    kb.knot(f'<{POLICY}> <{Q}claim> "{CLAIM}" ; <{Q}evidenceProbe> "{PROBE}" .')
    assert check(kb, target="urn:svc:new", policy=POLICY)["outcome"] == "unknown"
    kb.knot(f'<{POLICY}> <{Q}claim> "ASK {{ ?s ?p ?o }}" .')
    with pytest.raises(InvalidField, match="conflicting aegis:claim") as caught:
        check(kb, target="urn:svc:green", policy=POLICY)
    assert caught.value.field == "policy"


def test_the_check_never_writes(kb: KnowledgeBase) -> None:
    # PC-5
    before = kb.stats()
    for target in ("urn:svc:green", "urn:svc:red", "urn:svc:new"):
        check(kb, target=target, policy=POLICY)
    assert kb.stats() == before


@pytest.mark.parametrize(
    ("fields", "field", "text"),
    [
        ({"policy": POLICY}, "target", "missing 'target'"),
        ({"target": "urn:svc:green"}, "policy", "give 'policy'"),
        ({"target": "urn:svc a", "policy": POLICY}, "target", "whitespace"),
        ({"target": "urn:svc:<x>", "policy": POLICY}, "target", "whitespace or any of"),
        ({"target": "urn:svc:green", "policy": "urn:policy:none"}, "policy", "has no aegis:claim"),
        (
            {"target": "urn:svc:green", "claim": "SELECT * WHERE { ?s ?p ?o }"},
            "claim",
            "must be a SPARQL ASK",
        ),
        ({"target": "urn:svc:green", "claim": "ASK { ?s ?p }"}, "claim", "does not parse"),
        (
            {
                "target": "urn:svc:green",
                "claim": "ASK { ?s ?p ?o }",
                "evidence_probe": "CONSTRUCT WHERE { ?s ?p ?o }",
            },
            "evidence_probe",
            "probe must be a SPARQL ASK",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    kb: KnowledgeBase, fields: dict[str, Any], field: str, text: str
) -> None:
    with pytest.raises((InvalidField, MissingField), match=text) as caught:
        check(kb, **fields)
    assert caught.value.field == field


# -- the signing identity ------------------------------------------------------------------------


def key_file(tmp_path: Path, mode: int) -> tuple[Path, Ed25519PrivateKey]:
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "signing.pem"
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    path.chmod(mode)
    return path, key


def test_with_a_signing_identity_the_verdict_is_signed_and_verifies(tmp_path: Path) -> None:
    path, key = key_file(tmp_path, 0o600)
    from quipu.config import GovernanceSettings

    with quipu.open(
        store_location(tmp_path, "signed.db"), governance=GovernanceSettings(signing_key_file=str(path))
    ) as kb:
        kb.knot(DATA)
        out = check(kb, target="urn:svc:green", policy=POLICY)
        assert out["signed"] is True and out["verifier"] == "quipu"
        public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        assert out["verifier_public_key"] == public.hex()
        message = f"v1|{POLICY}|urn:svc:green|satisfied|{out['evidence_hash']}|committed|quipu".encode()
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(out["signature"]), message)
        # registered and authorized, the server's own verdict is then trusted
        kb.knot(
            f'<urn:reg:quipu> a <{A}VerifierRegistration> ; <{A}verifier> "quipu" ; '
            f'<{A}publicKey> "{public.hex()}" ; <{A}attests> "{POLICY}" .'
        )
        again = check(kb, target="urn:svc:green", policy=POLICY)
        assert again["verifier_authorized"] is True
        verdict = {
            k: again[k] for k in ("predicate_id", "target_ref", "outcome", "evidence_hash", "verifier")
        }
        assert kb.governance.verdict_verify(**verdict, signature=again["signature"])["trusted"] is True


def test_a_seed_file_of_64_hex_digits_is_accepted(tmp_path: Path) -> None:
    from quipu.governance.signing import load

    seed = tmp_path / "seed"
    seed.write_text("11" * 32 + "\n")
    seed.chmod(0o400)
    identity = load(str(seed), "quipu")
    assert (
        identity.public_hex
        == Ed25519PrivateKey.from_private_bytes(b"\x11" * 32)
        .public_key()
        .public_bytes(Encoding.Raw, PublicFormat.Raw)
        .hex()
    )


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_looser_key_file_refuses_to_start(tmp_path: Path, mode: int) -> None:
    path, _key = key_file(tmp_path, mode)
    from quipu.config import GovernanceSettings

    with pytest.raises(ConfigError, match=f"must be private: mode 600 or 400, not {oct(mode)[2:]}"):
        quipu.open(
            store_location(tmp_path, "loose.db"), governance=GovernanceSettings(signing_key_file=str(path))
        )


def test_a_file_that_is_no_ed25519_key_refuses_to_start(tmp_path: Path) -> None:
    from quipu.governance.signing import load

    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    bad.chmod(0o600)
    with pytest.raises(ConfigError, match="neither a PEM private key"):
        load(str(bad), "quipu")
