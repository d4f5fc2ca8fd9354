"""POST /knot/stage and POST /knot/promote (tools-core §3.2, §3.3), over HTTP on real store files.

The last test SIGKILLs a real ``quipu-server`` process in the middle of a promotion and restarts
it on the same file.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from ..uploads.parts import document, parts_of, sha, split, upload_id
from .live_server import free_port
from .support import kb_of, problem, serve, state

KEY = "inventory"
SHAPES = (
    "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
    "ex:S a sh:NodeShape ; sh:targetSubjectsOf ex:label ; sh:property [ sh:path ex:label ; sh:maxCount 1 ] .\n"
)


class Clock:
    def __init__(self, now: int = 1_800_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def client(tmp_path: Path, clock: Clock) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        kb_of(c).uploads.clock = clock
        yield c


def stage(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/knot/stage", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def promote(client: TestClient, uid: str) -> Any:
    return client.post("/knot/promote", json={"upload_id": uid})


def poll(client: TestClient, uid: str, timeout: float = 60.0) -> Any:
    """Call promote until the answer no longer says pending (§3.3 rule 1)."""
    deadline = time.monotonic() + timeout
    while True:
        response = promote(client, uid)
        if response.status_code != 200 or response.json().get("pending") is not True:
            return response
        assert time.monotonic() < deadline, "promotion still pending"
        time.sleep(0.02)


def oneshot(tmp_path: Path, *documents: str) -> str:
    """The N-Triples export of a fresh store after one-shot /knot replacements of ``documents``."""
    with serve(tmp_path / "oneshot") as c:
        for doc in documents:
            r = c.post("/knot", json={"turtle": doc, "replace_snapshot": True, "snapshot": KEY})
            assert r.status_code == 200 and r.json()["conforms"] is True, r.text
        return kb_of(c).export()


# -- acceptance ------------------------------------------------------------------------------------


def test_out_of_order_parts_with_a_replay_promote_like_one_shot_knot(
    tmp_path: Path, client: TestClient
) -> None:
    (tmp_path / "oneshot").mkdir()
    old, new = document(25, "old"), document(60, "new")
    expected = oneshot(tmp_path, old, new)
    assert (
        client.post("/knot", json={"turtle": old, "replace_snapshot": True, "snapshot": KEY}).status_code
        == 200
    )
    bodies = parts_of(new, KEY, 333)
    assert len(bodies) >= 5 and any(len(b["payload"].encode()) > len(b["payload"]) for b in bodies)
    order = list(range(len(bodies)))
    random.Random(6).shuffle(order)
    for i, number in enumerate(order):
        answer = stage(client, bodies[number])
        assert answer["idempotent"] is False and answer["received_parts"] == i + 1
        assert answer["total_parts"] == len(bodies) and answer["part_number"] == number
    replay = stage(client, bodies[order[2]])
    assert replay["idempotent"] is True and replay["received_parts"] == len(bodies)
    uid = bodies[0]["upload_id"]
    first = promote(client, uid)
    assert first.status_code == 200 and first.json() == {"upload_id": uid, "pending": True}
    done = poll(client, uid)
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["promoted"] is True and body["conforms"] is True and body["replaced"] is True
    assert body["snapshot"] == KEY and body["count"] == 120 and body["tx_id"] > 0
    assert body["upload_id"] == uid and body["content_hash"] == bodies[0]["content_hash"]
    assert body["parts"] == len(bodies) and body["total_bytes"] == len(new.encode())
    assert set(body) == {
        "conforms", "tx_id", "count", "snapshot", "replaced", "valid_from",
        "upload_id", "content_hash", "parts", "total_bytes", "promoted",
    }  # fmt: skip
    assert kb_of(client).export() == expected
    # Promote again: the same outcome, and no second promotion.
    again = promote(client, uid)
    assert again.status_code == 200 and again.json() == body
    assert kb_of(client).transactions()["count"] == 2


def test_staging_leaves_the_store_unchanged(client: TestClient) -> None:
    client.post("/knot", json={"turtle": '<http://ex.org/a> <http://ex.org/b> "c" .'})
    before = state(client)
    for body in parts_of("not turtle at all {", KEY, 5):
        stage(client, body)
    assert state(client) == before


def test_a_changed_part_is_refused_and_the_stored_part_kept(tmp_path: Path, client: TestClient) -> None:
    (tmp_path / "oneshot").mkdir()
    text = document(10)
    bodies = parts_of(text, KEY, 300)
    for body in bodies:
        stage(client, body)
    changed = bodies[1]["payload"].replace("Ñandú", "Nandu", 1)
    tampered = {
        **bodies[1],
        "payload": changed,
        "part_hash": sha(changed.encode()),
        "total_bytes": bodies[1]["total_bytes"],
    }
    out = problem(client.post("/knot/stage", json=tampered), "part_conflict")
    assert out["field"] == "part_number" and out["error"] == "part_number already exists with different bytes"
    assert poll(client, bodies[0]["upload_id"]).json()["promoted"] is True
    assert kb_of(client).export() == oneshot(tmp_path, text)  # the stored bytes were promoted


def test_a_manifest_mismatch_is_refused(client: TestClient) -> None:
    bodies = parts_of(document(10), KEY, 300)
    stage(client, bodies[0])
    out = problem(client.post("/knot/stage", json={**bodies[1], "actor": "mallory"}), "manifest_mismatch")
    assert out["field"] == "upload_id" and out["mismatched"] == ["actor"]
    assert out["error"] == "upload_id already exists with a different immutable manifest"


GOOD = parts_of(document(5), KEY, 200)[1]


@pytest.mark.parametrize(
    ("body", "reason", "field"),
    [
        ({k: v for k, v in GOOD.items() if k != "payload"}, "missing_field", "payload"),
        ({k: v for k, v in GOOD.items() if k != "upload_id"}, "missing_field", "upload_id"),
        ({k: v for k, v in GOOD.items() if k != "total_bytes"}, "missing_field", "total_bytes"),
        ({**GOOD, "snapshot": ""}, "missing_field", "snapshot"),
        ({**GOOD, "content_hash": ""}, "missing_field", "content_hash"),
        ({**GOOD, "part_hash": ""}, "missing_field", "part_hash"),
        ({**GOOD, "payload": ""}, "missing_field", "payload"),
        ({**GOOD, "path": "/etc/passwd"}, "unknown_field", "path"),  # rule 6: no server-local paths
        ({**GOOD, "part_number": "1"}, "wrong_type", "part_number"),
        ({**GOOD, "total_parts": 3.0}, "wrong_type", "total_parts"),
        ({**GOOD, "payload": 42}, "wrong_type", "payload"),
        ({**GOOD, "content_hash": GOOD["content_hash"][7:]}, "invalid_hash", "content_hash"),
        ({**GOOD, "part_hash": "sha256:xyz"}, "invalid_hash", "part_hash"),
        ({**GOOD, "upload_id": "sha256:" + "0" * 64}, "upload_id_mismatch", "upload_id"),
        ({**GOOD, "part_number": 7}, "part_out_of_range", "part_number"),
        ({**GOOD, "part_number": -1}, "part_out_of_range", "part_number"),
        ({**GOOD, "total_parts": 0}, "part_out_of_range", "total_parts"),
        ({**GOOD, "total_parts": 513}, "part_out_of_range", "total_parts"),
        ({**GOOD, "total_bytes": 0}, "size_out_of_range", "total_bytes"),
        ({**GOOD, "total_bytes": 128 * 1024 * 1024 + 1}, "size_out_of_range", "total_bytes"),
        ({**GOOD, "part_hash": sha(b"other bytes")}, "hash_mismatch", "part_hash"),
    ],
)
def test_stage_refusals(client: TestClient, body: dict[str, Any], reason: str, field: str) -> None:
    before = state(client)
    out = problem(client.post("/knot/stage", json=body), reason)
    assert out["field"] == field
    assert state(client) == before


def test_an_oversized_payload_is_refused(client: TestClient) -> None:
    body = parts_of("é" * (256 * 1024 + 1), KEY, 10**7)[0]
    out = problem(client.post("/knot/stage", json=body), "size_out_of_range")
    assert out["field"] == "payload"


def test_the_part_hash_refusal_text(client: TestClient) -> None:
    out = problem(client.post("/knot/stage", json={**GOOD, "part_hash": sha(b"x")}), "hash_mismatch")
    assert out["error"] == "part_hash does not match payload bytes"


# -- promote refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason", "field"),
    [
        ({}, "missing_field", "upload_id"),
        ({"upload_id": ""}, "missing_field", "upload_id"),
        ({"upload_id": 5}, "wrong_type", "upload_id"),
        ({"upload_id": GOOD["upload_id"], "wait": True}, "unknown_field", "wait"),
        ({"upload_id": GOOD["upload_id"]}, "unknown_upload", "upload_id"),
    ],
)
def test_promote_refusals(client: TestClient, body: dict[str, Any], reason: str, field: str) -> None:
    out = problem(client.post("/knot/promote", json=body), reason)
    assert out["field"] == field


def test_promote_of_an_incomplete_upload_is_refused_at_once(client: TestClient) -> None:
    bodies = parts_of(document(10), KEY, 300)
    for body in bodies[1:]:
        stage(client, body)
    got = sum(len(b["payload"].encode()) for b in bodies[1:])
    out = problem(promote(client, bodies[0]["upload_id"]), "upload_incomplete")
    n, total = len(bodies), bodies[0]["total_bytes"]
    assert out["error"] == f"upload incomplete: received {n - 1}/{n} parts and {got}/{total} bytes"


def test_a_content_hash_mismatch_surfaces_on_the_poll(client: TestClient) -> None:
    content = sha(b"not this document")
    bodies = [
        {**b, "content_hash": content, "upload_id": upload_id(KEY, content)}
        for b in parts_of(document(5), KEY, 200)
    ]
    for body in bodies:
        stage(client, body)
    before = state(client)
    assert promote(client, bodies[0]["upload_id"]).json()["pending"] is True
    out = problem(poll(client, bodies[0]["upload_id"]), "content_hash_mismatch")
    assert out["error"] == "content_hash does not match assembled payload"
    assert problem(promote(client, bodies[0]["upload_id"]), "content_hash_mismatch") == out
    assert state(client)[0] == before[0]


def test_a_corrupt_part_surfaces_on_the_poll(client: TestClient) -> None:
    bodies = parts_of(document(5), KEY, 200)
    for body in bodies:
        stage(client, body)
    with kb_of(client).db.write() as ctx:
        zeros = (
            "decode(repeat('00', byte_count), 'hex')"
            if ctx.dialect.name == "postgresql"
            else "zeroblob(byte_count)"
        )
        ctx.conn.exec_driver_sql(f"UPDATE snapshot_upload_parts SET payload = {zeros} WHERE part_number = 0")
    out = problem(poll(client, bodies[0]["upload_id"]), "corrupt_part")
    assert out["error"] == "missing or corrupt part 0"


def test_a_knot_graph_error_surfaces_on_the_poll(client: TestClient) -> None:
    bodies = parts_of(document(5), KEY, 200, graph="http://ex.org/graph/nowhere")
    for body in bodies:
        stage(client, body)
    out = problem(poll(client, bodies[0]["upload_id"]), "unknown_graph")
    assert out["field"] == "graph" and "unknown graph" in out["error"]


def test_a_shacl_refusal_at_promotion(client: TestClient) -> None:
    old = document(4, "old")
    assert (
        client.post("/knot", json={"turtle": old, "replace_snapshot": True, "snapshot": KEY}).status_code
        == 200
    )
    assert (
        client.post("/shapes", json={"action": "load", "name": "one-label", "turtle": SHAPES}).status_code
        == 200
    )
    before = kb_of(client).export()
    bad = document(4, "new") + 'ex:e1 ex:label "another label" .\n'
    bodies = parts_of(bad, KEY, 120)
    for body in bodies:
        stage(client, body)
    response = poll(client, bodies[0]["upload_id"])
    assert response.status_code == 200
    body = response.json()
    assert body["conforms"] is False and body["violations"] == 1 and "promoted" not in body
    assert body["hint"] == "propose a schema change via quipu_propose_schema_change" and body["issues"]
    assert kb_of(client).export() == before  # the snapshot is untouched
    parts = kb_of(client).db.read
    with parts() as conn:
        kept = conn.exec_driver_sql("SELECT COUNT(*) FROM snapshot_upload_parts").scalar()
    assert kept == len(bodies)
    assert promote(client, bodies[0]["upload_id"]).json() == body


def test_expiry_with_an_injected_clock(client: TestClient, clock: Clock) -> None:
    bodies = parts_of(document(5), KEY, 200)
    stage(client, bodies[0])
    clock.now += 3599
    assert stage(client, bodies[1])["expires_in_seconds"] == 1
    clock.now += 1
    problem(promote(client, bodies[0]["upload_id"]), "unknown_upload")
    assert stage(client, bodies[1])["received_parts"] == 1  # a fresh upload


def test_promote_is_a_write_route(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as c:
        problem(c.post("/knot/promote", json={"upload_id": GOOD["upload_id"]}), "server_is_read_only", 403)
        problem(c.post("/knot/stage", json=GOOD), "server_is_read_only", 403)


# -- the kill test ---------------------------------------------------------------------------------


def ntriples(count: int, tag: str) -> list[str]:
    return [
        f'<http://ex.org/{tag}/e{i}> <http://ex.org/p{i % 5}> "{tag} value {i} padded out a bit" .'
        for i in range(count)
    ]


class Server:
    """A ``quipu-server`` child process on a store file; ``kill`` is SIGKILL."""

    def __init__(self, db: Path) -> None:
        # A port another test took between free_port() and the bind makes the child exit: try a
        # fresh port then, and say what the child printed when it still does not come up.
        for attempt in range(3):
            self.base = f"http://127.0.0.1:{free_port()}"
            self.log = db.with_name(f"{db.name}.server{attempt}.log")
            if self._started(db):
                return
        raise RuntimeError(f"quipu-server did not start: {self.log.read_text(errors='replace')[-2000:]}")

    def _started(self, db: Path) -> bool:
        script = Path(sys.executable).parent / "quipu-server"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [str(script), "--db", str(db), "--bind", self.base.removeprefix("http://")],
                stdout=subprocess.DEVNULL,
                stderr=log,
                env={**os.environ, "QUIPU_CONFIG": os.devnull},
            )
        deadline = time.monotonic() + 60  # a loaded CI machine, not a speed target
        while True:
            try:
                if httpx.get(self.base + "/health", timeout=1).status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                return False
            time.sleep(0.05)

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(self.base + path, json=body, timeout=30)

    def export(self) -> set[str]:
        response = httpx.post(
            self.base + "/export",
            json={"format": "ntriples"},
            headers={"Accept": "application/n-triples"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return set(response.text.splitlines()) - {""}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.mark.backend_independent
def test_a_promotion_killed_midway_restarts_and_never_leaves_a_partial_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    old = ntriples(200, "old")
    new = ntriples(40_000, "new") + old[:50]  # a few MB; some statements survive the replacement
    text = "\n".join(new) + "\n"
    bodies = parts_of(text, KEY, 512 * 1024)
    assert len(bodies) >= 6
    server = Server(db)
    try:
        r = server.post("/knot", {"turtle": "\n".join(old), "replace_snapshot": True, "snapshot": KEY})
        assert r.status_code == 200, r.text
        for body in bodies:
            assert server.post("/knot/stage", body).status_code == 200
        uid = bodies[0]["upload_id"]
        assert server.post("/knot/promote", {"upload_id": uid}).json() == {"upload_id": uid, "pending": True}
        time.sleep(random.uniform(0.0, 1.5))  # before, during or just after the write
    finally:
        server.kill()
    server = Server(db)
    try:
        # Before any poll: the old snapshot or the complete new one, never a part of it.
        assert server.export() in (set(old), set(new))
        deadline = time.monotonic() + 40
        while True:
            answer = server.post("/knot/promote", {"upload_id": uid})
            assert answer.status_code == 200, answer.text
            if answer.json().get("pending") is not True:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert answer.json()["promoted"] is True and answer.json()["upload_id"] == uid
        assert server.export() == set(new)
    finally:
        server.kill()


@pytest.mark.backend_independent
def test_split_cuts_on_character_boundaries() -> None:
    text = "a東🦙é" * 10
    pieces = split(text, 5)
    assert "".join(pieces) == text and all(0 < len(p.encode()) <= 5 for p in pieces)
