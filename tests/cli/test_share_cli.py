"""``quipu share`` and ``quipu import`` (tools-graphs-governance §4): shares as directories of
files between two store files, attested with a key the receiver trusts, tampered and oversized."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from quipu.api import KnowledgeBase
from quipu.cli.main import app
from quipu.sharing import manifest as mf
from tests.backends import store_location

EX = "http://ex.org/"
GRAPH = "http://ex.org/g/cli"
DATA = f'<{EX}a> <{EX}p> _:x .\n_:x <{EX}q> "olá"@pt .\n<{EX}a> <http://www.w3.org/2000/01/rdf-schema#label> "A" .\n'


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def producer(tmp_path: Path) -> str:
    db = store_location(tmp_path, "a.db")
    with KnowledgeBase(db) as kb:
        kb.create_graph(GRAPH)
        kb.knot(DATA, format="nt", graph=GRAPH)
    return db


def test_share_import_and_promote_between_two_store_files(tmp_path: Path) -> None:
    a, b = producer(tmp_path), store_location(tmp_path, "b.db")
    out = tmp_path / "share"
    shared = json.loads(run("share", "--output", str(out), "--graph", GRAPH, "--no-shapes", "--db", a).stdout)
    written = {p.name for p in out.iterdir()}
    assert written == {"manifest.json", "manifest.ttl", "export.nt", "shapes.ttl"}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["share_id"] == shared["share_id"] == mf.share_id_of(manifest)
    assert (out / "manifest.json").read_text(encoding="utf-8") == mf.manifest_text(manifest)
    staged = run("import", str(out), "--source", "file://share", "--db", b)
    body = json.loads(staged.stdout)
    assert body["outcome"] == "staged" and "staged: urn:quipu:import:staging:" in staged.stderr
    assert (
        json.loads(run("import", str(out), "--source", "file://share", "--db", b).stdout)["outcome"]
        == "unchanged"
    )
    promoted = json.loads(run("import", "promote", shared["share_id"], "--db", b).stdout)
    assert promoted["outcome"] == "promoted" and promoted["triples"] == 3
    with KnowledgeBase(b) as kb:
        assert '"olá"@pt' in kb.export("ntriples")


def test_an_attested_share_is_claimed_then_attested_once_the_receiver_trusts_it(tmp_path: Path) -> None:
    a, b, c = producer(tmp_path), store_location(tmp_path, "b.db"), store_location(tmp_path, "c.db")
    key = tmp_path / "producer.pem"
    run("share", "keygen", str(key))
    out = tmp_path / "attested"
    run(
        "share", "--output", str(out), "--graph", GRAPH, "--no-shapes", "--db", a,
        "--attest-key", str(key), "--attest-session", "s-1", "--attest-agent", "producer-bot",
    )  # fmt: skip
    assert (out / "binding.json").is_file()
    claimed = json.loads(run("import", str(out), "--source", "file://x", "--db", b).stdout)
    assert claimed["attestation"]["tier"] == "claimed"
    run("share", "trust", str(out / "binding.json"), "--db", c)
    attested = json.loads(run("import", str(out), "--source", "file://x", "--db", c).stdout)
    assert attested["attestation"]["tier"] == "attested"
    assert attested["attestation"]["agent"] == "producer-bot"


def test_a_tampered_or_oversized_share_directory_is_refused(tmp_path: Path) -> None:
    a, b = producer(tmp_path), store_location(tmp_path, "b.db")
    with KnowledgeBase(a) as kb:
        kb.knot(f'<{EX}a> <{EX}note> "{"n" * 2000}" .', format="nt", graph=GRAPH)
    out = tmp_path / "share"
    run("share", "--output", str(out), "--graph", GRAPH, "--no-shapes", "--db", a)
    payload = out / "export.nt"
    original = payload.read_text(encoding="utf-8")
    payload.write_text(original.replace('"A"', '"B"'), encoding="utf-8")
    refused = run("import", str(out), "--source", "file://x", "--db", b, code=2)
    assert "share graph hash mismatch" in refused.stderr
    payload.write_text(original, encoding="utf-8")
    big = run("import", str(out), "--db", b, code=2, env={"QUIPU_SHARING__MAX_SHARE_BYTES": "1024"})
    assert "over max_share_bytes 1024" in big.stderr and "nothing was read" in big.stderr
    with KnowledgeBase(b) as kb:
        assert kb.export("ntriples") == "" and not kb.transactions()["transactions"]


def test_share_flag_refusals(tmp_path: Path) -> None:
    a = producer(tmp_path)
    out = str(tmp_path / "x")
    assert "--output" in run("share", "--graph", GRAPH, "--db", a, code=2).stderr
    assert (
        "at most one"
        in run("share", "-o", out, "--graph", GRAPH, "--construct", "x", "--db", a, code=2).stderr
    )
    assert "internal" in run("share", "-o", out, "--destination", "public", "--db", a, code=2).stderr
    assert "no manifest.json" in run("import", str(tmp_path), "--source", "s", "--db", a, code=2).stderr


def test_a_rejected_review_refuses_import_and_promotion_until_reopened(tmp_path: Path) -> None:
    a, b = producer(tmp_path), store_location(tmp_path, "b.db")
    out = tmp_path / "share"
    shared = json.loads(run("share", "--output", str(out), "--graph", GRAPH, "--no-shapes", "--db", a).stdout)
    sid = shared["share_id"]
    run("import", str(out), "--source", "file://x", "--db", b)
    closed = json.loads(run("import", "reject", sid, "--db", b).stdout)
    assert (closed["state"], closed["previous"]) == ("rejected", "staged")
    assert "is rejected" in run("import", str(out), "--source", "file://x", "--db", b, code=2).stderr
    assert "is rejected" in run("import", "promote", sid, "--db", b, code=2).stderr
    assert "no import of share" in run("import", "reopen", "sha256:" + "0" * 64, "--db", b, code=2).stderr
    assert json.loads(run("import", "reopen", sid, "--db", b).stdout)["state"] == "staged"
    assert json.loads(run("import", "promote", sid, "--db", b).stdout)["outcome"] == "promoted"
    with KnowledgeBase(b) as kb:
        kinds = [e["type"] for e in kb.events()]
    assert kinds.count("import.rejected") == 1 and kinds.count("import.reopened") == 1
