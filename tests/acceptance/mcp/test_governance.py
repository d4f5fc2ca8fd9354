"""Governance as an agent meets it, over both transports with the official SDK client: the
server signs a policy verdict with its own key, the verdict is recorded, verified at its
recorded instant and trusted, and the registry answers who may attest the policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from tests.acceptance.mcp.harness import SHARED, TRANSPORTS, Transport, error_body, ok_body, run, serve

A: Final = "http://aegis.gastown.local/ontology/"
POLICY: Final = "urn:policy:owned"
pytestmark = pytest.mark.sqlite_only


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_check_sign_record_verify_and_ask_who_may_attest(tmp_path: Path, transport: Transport) -> None:
    key = Ed25519PrivateKey.generate()
    pem = tmp_path / "signing.pem"
    tmp_path.mkdir(parents=True, exist_ok=True)
    pem.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    pem.chmod(0o600)
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    extra = f"\n[quipu.governance]\nsigning_key_file = {json.dumps(str(pem))}\n"
    with serve(transport, tmp_path / "store", extra_config=extra) as target:

        async def main() -> dict[str, Any]:
            async with target.client(SHARED.token) as client:

                async def call(tool: str, **args: Any) -> dict[str, Any]:
                    return ok_body(await client.call_tool(tool, args))

                out: dict[str, Any] = {}
                await call(
                    "quipu_knot",
                    turtle=f"<urn:svc:a> <{A}owner> <urn:team:x> .\n"
                    f'<{POLICY}> a <{A}Policy> ; <{A}claim> "ASK {{ $target <{A}owner> ?t }}" .\n'
                    f'<urn:reg:q> a <{A}VerifierRegistration> ; <{A}verifier> "quipu" ; '
                    f'<{A}publicKey> "{public}" ; <{A}attests> "{POLICY}" .',
                )
                out["check"] = await call("quipu_policy_check", target="urn:svc:a", policy=POLICY)
                signature = out["check"]["signature"]
                await call("quipu_knot", turtle=f'<urn:verdict:1> <{A}signature> "{signature}" .')
                verdict = {
                    k: out["check"][k] for k in ("predicate_id", "target_ref", "outcome", "evidence_hash")
                }
                out["verify"] = await call(
                    "quipu_verdict_verify",
                    **verdict,
                    verifier="quipu",
                    signature=signature,
                    verdict="urn:verdict:1",
                )
                out["what_if"] = await call(
                    "quipu_verdict_verify",
                    **verdict,
                    verifier="quipu",
                    signature=signature,
                    signed_at="2026-01-01",
                )
                out["authorized"] = await call(
                    "quipu_verifier_authorized", verifier="quipu", predicate=POLICY
                )
                out["refused"] = error_body(
                    await client.call_tool(
                        "quipu_policy_check", {"target": "urn:svc:a", "claim": "SELECT * {}"}
                    )
                )
                return out

        out = run(main, timeout=120)
    check = out["check"]
    assert (
        check["outcome"] == "satisfied" and check["signed"] is True and check["verifier_public_key"] == public
    )
    assert check["verifier_authorized"] is True
    assert out["verify"]["trusted"] is True and out["verify"]["as_of"]["basis"] == "recorded"
    assert out["what_if"]["trusted"] is False and out["what_if"]["as_of"]["basis"] == "caller-supplied"
    assert out["authorized"]["authorized"] is True
    assert out["refused"]["status"] == 400 and "ASK" in out["refused"]["error"]
