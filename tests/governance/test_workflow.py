"""The direct-workflow guard on ``/update`` and ``quipu_workflow_capabilities`` (tools-core §3.10
rule 9, §4.4) [designed here], over REST with a real store and real Ed25519 signatures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastapi.testclient import TestClient

from quipu.errors import ConfigError
from quipu.governance.workflow import DOMAIN, HEADER, SIGNATURE_VERSION
from tests.rest.support import kb_of, problem, serve

A = "http://aegis.gastown.local/ontology/"
EX = "http://ex.org/"
OWNER, TIER = EX + "owner", EX + "tier"
GUARDED = {"enforce_direct_updates": True, "scope": [OWNER, TIER], "verifier": "release-bot"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, workflow=GUARDED) as c:
        yield c


def key() -> tuple[Ed25519PrivateKey, str]:
    private = Ed25519PrivateKey.generate()
    return private, private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def register(
    client: TestClient, public: str, attests: tuple[str, ...], verifier: str = "release-bot"
) -> None:
    parts = "".join(f' ; <{A}attests> "{p}"' for p in attests)
    kb_of(client).knot(
        f'<urn:reg:{verifier}> a <{A}VerifierRegistration> ; <{A}verifier> "{verifier}" ; '
        f'<{A}publicKey> "{public}"{parts} .'
    )


def update(client: TestClient, text: str, signature: str | None = None) -> httpx2.Response:
    headers = {"Content-Type": "application/sparql-update"}
    if signature is not None:
        headers[HEADER] = signature
    return client.post("/update", content=text.encode(), headers=headers)


def sign(private: Ed25519PrivateKey, text: str) -> str:
    return private.sign(DOMAIN + text.encode()).hex()


INSERT_OWNER = f"INSERT DATA {{ <{EX}svc> <{OWNER}> <{EX}team> }}"


def test_capabilities_report_exactly_what_update_enforces(client: TestClient, tmp_path: Path) -> None:
    body = client.get("/workflow/capabilities").json()
    assert body == {"enabled": True, "signature_version": SIGNATURE_VERSION, "scope": sorted([OWNER, TIER])}
    (tmp_path / "off").mkdir()
    with serve(tmp_path / "off") as off:
        assert off.get("/workflow/capabilities").json() == {
            "enabled": False,
            "signature_version": None,
            "scope": [],
        }
        assert update(off, INSERT_OWNER).status_code == 200  # off: nothing is guarded


def test_capabilities_refuse_any_argument(client: TestClient) -> None:
    problem(client.get("/workflow/capabilities", params={"x": "1"}), "unknown_field")


def test_a_guarded_predicate_needs_a_signature(client: TestClient) -> None:
    body = problem(update(client, INSERT_OWNER), "workflow_signature_required", 403)
    assert HEADER in body["error"] and OWNER in body["error"]
    kb_of(client).knot(f"<{EX}svc> <{TIER}> <{EX}gold> .")  # not through /update: not guarded
    deleting = f"DELETE DATA {{ <{EX}svc> <{TIER}> <{EX}gold> }}"
    problem(update(client, deleting), "workflow_signature_required", 403)
    assert kb_of(client).query(f"ASK {{ <{EX}svc> <{OWNER}> ?t }}") is False  # nothing written


def test_an_unguarded_update_needs_none(client: TestClient) -> None:
    assert update(client, f"INSERT DATA {{ <{EX}svc> <{EX}label> <{EX}api> }}").status_code == 200


def test_a_signature_by_a_registered_key_attesting_the_scope_admits_the_update(client: TestClient) -> None:
    private, public = key()
    register(client, public, (OWNER,))
    response = update(client, INSERT_OWNER, sign(private, INSERT_OWNER))
    assert response.status_code == 200, response.text
    assert kb_of(client).query(f"ASK {{ <{EX}svc> <{OWNER}> <{EX}team> }}") is True


@pytest.mark.parametrize(
    "case", ["other text", "unregistered key", "scope not attested", "other verifier", "not hex", "short"]
)
def test_an_invalid_signature_is_refused_and_writes_nothing(client: TestClient, case: str) -> None:
    private, public = key()
    register(client, public, (OWNER,) if case != "scope not attested" else (TIER,))
    if case == "other verifier":
        other, other_public = key()
        register(client, other_public, (OWNER,), verifier="someone-else")
        private = other
    signature = {
        "other text": sign(private, INSERT_OWNER + " "),
        "unregistered key": sign(key()[0], INSERT_OWNER),
        "not hex": "zz" * 64,
        "short": "ab" * 32,
    }.get(case, sign(private, INSERT_OWNER))
    body = problem(update(client, INSERT_OWNER, signature), "workflow_signature_required", 403)
    assert "not valid for this update" in body["error"]
    assert kb_of(client).query(f"ASK {{ <{EX}svc> <{OWNER}> ?t }}") is False


def test_a_scope_entry_that_is_no_iri_refuses_to_start(tmp_path: Path) -> None:
    settings = {"enforce_direct_updates": True, "scope": ["not an iri"]}
    with pytest.raises(ConfigError, match=r"workflow\.scope"), serve(tmp_path, workflow=settings):
        pass


def test_the_governance_reads_report_unknown_fields_and_refuse_wrong_types(client: TestClient) -> None:
    # tools-graphs-governance §0.5: annotating tools
    body = client.post("/verifier/authorized", json={"verifier": "ci", "predicate": "p", "extra": 1}).json()
    assert body["authorized"] is False and body["ignored_fields"] == ["extra"]
    check = client.post("/policy/check", json={"target": EX + "s", "claim": "ASK { ?s ?p ?o }", "why": "x"})
    assert check.json()["ignored_fields"] == ["why"]
    problem(
        client.post("/verifier/authorized", json={"verifier": "ci", "predicate": "p", "tx": "1"}),
        "wrong_type",
    )
