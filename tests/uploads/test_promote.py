"""Promoting staged uploads (tools-core §3.3) through ``KnowledgeBase.promote``, on real store files."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import QuipuError
from quipu.identity import Authenticated
from quipu.store.writes import KnotResult
from tests.backends import store_location

from ..store import count, driver_sql, scalar, sql
from .parts import document, parts_of, sha, upload_id
from .test_stage import Clock

KEY = "inventory"
SHAPES = (
    "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
    "ex:S a sh:NodeShape ; sh:targetSubjectsOf ex:label ; sh:property [ sh:path ex:label ; sh:maxCount 1 ] .\n"
)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kb(tmp_path: Path, clock: Clock) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "p.db")) as kb:
        kb.uploads.clock = clock
        yield kb


def stage_all(kb: KnowledgeBase, bodies: list[dict[str, Any]]) -> str:
    for body in bodies:
        kb.stage_part(**body)
    return str(bodies[0]["upload_id"])


def settle(kb: KnowledgeBase, uid: str, auth: Authenticated | None = None) -> dict[str, Any]:
    """Start (or restart) the promotion, wait for its worker, and read the outcome back."""
    first = kb.promote(uid, auth=auth)
    assert first == {"upload_id": uid, "pending": True}
    kb.uploads.promotions.join()
    return kb.promote(uid, auth=auth)


def failure(kb: KnowledgeBase, uid: str, reason: str) -> QuipuError:
    with pytest.raises(QuipuError) as caught:
        kb.promote(uid)
    assert caught.value.status == 400 and caught.value.reason == reason, caught.value.message
    return caught.value


def snapshot_txs(kb: KnowledgeBase, key: str = KEY) -> int:
    return count(kb, "transactions", "source = ?", "snapshot:" + key)


def test_promotion_replaces_the_snapshot_like_one_shot_knot(tmp_path: Path, kb: KnowledgeBase) -> None:
    old, new = document(30, "old"), document(40, "new")
    with quipu.open(store_location(tmp_path, "oneshot.db")) as reference:
        reference.knot(old, replace_snapshot=True, snapshot=KEY)
        reference.knot(new, replace_snapshot=True, snapshot=KEY)
        expected = reference.export()
    kb.knot(old, replace_snapshot=True, snapshot=KEY)
    bodies = parts_of(new, KEY, 700)
    assert len(bodies) > 3
    uid = stage_all(kb, bodies[::-1])
    body = settle(kb, uid)
    assert body["promoted"] is True and body["conforms"] is True and body["replaced"] is True
    assert body["snapshot"] == KEY and body["count"] == 80
    assert (body["upload_id"], body["content_hash"]) == (uid, bodies[0]["content_hash"])
    assert (body["parts"], body["total_bytes"]) == (len(bodies), bodies[0]["total_bytes"])
    assert kb.export() == expected


def test_unknown_upload_is_refused_at_once(kb: KnowledgeBase) -> None:
    err = failure(kb, upload_id(KEY, sha(b"x")), "unknown_upload")
    assert err.message == "unknown or expired upload_id" and err.field == "upload_id"
    assert count(kb, "snapshot_promotions") == 0


def test_empty_upload_id_is_refused(kb: KnowledgeBase) -> None:
    failure(kb, "", "missing_field")


def test_missing_parts_are_refused_at_once_with_the_progress(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(30), KEY, 500)
    uid = stage_all(kb, bodies[:-1])
    err = failure(kb, uid, "upload_incomplete")
    got = sum(len(b["payload"].encode()) for b in bodies[:-1])
    n, total = len(bodies), bodies[0]["total_bytes"]
    assert err.message == f"upload incomplete: received {n - 1}/{n} parts and {got}/{total} bytes"
    assert count(kb, "snapshot_promotions") == 0 and snapshot_txs(kb) == 0


def test_all_parts_but_a_wrong_total_is_incomplete(kb: KnowledgeBase) -> None:
    [body] = parts_of("ex:a ex:b 1 .", KEY, 100)
    uid = stage_all(kb, [{**body, "total_bytes": 99}])
    err = failure(kb, uid, "upload_incomplete")
    assert err.message == "upload incomplete: received 1/1 parts and 13/99 bytes"


def test_promoting_twice_reads_back_the_same_outcome(kb: KnowledgeBase) -> None:
    uid = stage_all(kb, parts_of(document(10), KEY, 400))
    done = settle(kb, uid)
    assert kb.promote(uid) == done
    assert snapshot_txs(kb) == 1


def test_concurrent_promote_calls_start_one_promotion(kb: KnowledgeBase) -> None:
    uid = stage_all(kb, parts_of(document(200), KEY, 2000))
    calls: list[str] = []
    real = kb.uploads.promotions.knot

    def counting(data: str | bytes, format: str = "turtle", **kwargs: Any) -> KnotResult:
        calls.append(uid)
        return real(data, format, **kwargs)

    kb.uploads.promotions.knot = counting
    answers: list[dict[str, Any]] = []
    start = threading.Barrier(8)

    def poll() -> None:
        start.wait()
        for _ in range(5):
            answers.append(kb.promote(uid))

    threads = [threading.Thread(target=poll) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kb.uploads.promotions.join()
    final = kb.promote(uid)
    assert final["promoted"] is True
    assert all(a == {"upload_id": uid, "pending": True} or a == final for a in answers)
    assert calls == [uid] and snapshot_txs(kb) == 1


def test_staged_timestamp_actor_and_graph_are_applied(kb: KnowledgeBase) -> None:
    graph = "http://ex.org/graph/g"
    kb.create_graph(graph)
    bodies = parts_of(
        document(5), KEY, 200, timestamp="2026-03-04T09:15:00+01:00", actor="alice", graph=graph
    )
    body = settle(kb, stage_all(kb, bodies))
    assert body["valid_from"] == "2026-03-04T08:15:00Z"
    row = sql(kb, "SELECT timestamp, actor, source FROM transactions WHERE id = ?", body["tx_id"])
    assert row == [("2026-03-04T08:15:00Z", "alice", "snapshot:" + KEY)]
    assert kb.export(graph=graph) and not kb.export()


def test_the_promoting_callers_identity_is_recorded(kb: KnowledgeBase) -> None:
    uid = stage_all(kb, parts_of(document(5), KEY, 200))
    body = settle(kb, uid, auth=Authenticated("bot", "c1", "named_bearer"))
    assert scalar(kb, "SELECT principal FROM transaction_auth WHERE tx_id = ?", body["tx_id"]) == "bot"


def test_success_deletes_the_staged_parts(kb: KnowledgeBase) -> None:
    uid = stage_all(kb, parts_of(document(10), KEY, 300))
    settle(kb, uid)
    assert count(kb, "snapshot_uploads") == 0 and count(kb, "snapshot_upload_parts") == 0
    assert sql(kb, "SELECT state FROM snapshot_promotions") == [("complete",)]


# -- refusals and failures keep the parts and the snapshot --------------------------------------------


def test_a_shacl_refusal_is_the_knot_refusal_body_and_keeps_parts(kb: KnowledgeBase) -> None:
    kb.knot(document(3, "old"), replace_snapshot=True, snapshot=KEY)
    kb.load_shapes("one-label", SHAPES)
    before = kb.export()
    bad = document(3, "new") + 'ex:e0 ex:label "a second label" .\n'
    bodies = parts_of(bad, KEY, 150)
    uid = stage_all(kb, bodies)
    body = settle(kb, uid)
    assert body["conforms"] is False and body["violations"] == 1 and "promoted" not in body
    assert body["upload_id"] == uid and body["hint"]
    assert kb.export() == before
    assert count(kb, "snapshot_upload_parts") == len(bodies)
    assert kb.promote(uid) == body  # the recorded outcome, for every later poll


def test_content_hash_mismatch_fails_and_keeps_the_snapshot(kb: KnowledgeBase) -> None:
    text = document(5)
    content = sha(b"a different document")
    bodies = [
        {**b, "content_hash": content, "upload_id": upload_id(KEY, content)} for b in parts_of(text, KEY, 200)
    ]
    uid = stage_all(kb, bodies)
    assert kb.promote(uid)["pending"] is True
    kb.uploads.promotions.join()
    err = failure(kb, uid, "content_hash_mismatch")
    assert err.message == "content_hash does not match assembled payload"
    failure(kb, uid, "content_hash_mismatch")  # recorded: every poll answers the same
    assert snapshot_txs(kb) == 0 and count(kb, "snapshot_upload_parts") == len(bodies)
    assert sql(kb, "SELECT state, error FROM snapshot_promotions") == [("failed", err.message)]


def tamper(kb: KnowledgeBase, statement: str, *params: Any) -> None:
    with kb.db.write() as ctx:
        ctx.conn.exec_driver_sql(driver_sql(ctx.conn, statement), tuple(params))


def test_a_corrupt_stored_part_fails_the_promotion(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(10), KEY, 200)
    uid = stage_all(kb, bodies)
    stored = bodies[1]["payload"].encode()
    tamper(kb, "UPDATE snapshot_upload_parts SET payload = ? WHERE part_number = 1", stored[::-1])
    assert kb.promote(uid)["pending"] is True
    kb.uploads.promotions.join()
    assert failure(kb, uid, "corrupt_part").message == "missing or corrupt part 1"
    assert snapshot_txs(kb) == 0


def test_a_gap_in_the_part_numbers_fails_the_promotion(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(10), KEY, 200)
    uid = stage_all(kb, bodies)
    tamper(kb, "UPDATE snapshot_upload_parts SET part_number = 900 WHERE part_number = 2")
    assert kb.promote(uid)["pending"] is True
    kb.uploads.promotions.join()
    assert failure(kb, uid, "corrupt_part").message == "missing or corrupt part 2"


def test_an_assembly_that_is_not_utf8_fails_the_promotion(kb: KnowledgeBase) -> None:
    bodies = parts_of("ex:a ex:b 1 .", KEY, 100)
    uid = stage_all(kb, bodies)
    junk = b"\xff\xfe\xfd" + b"." * 10
    tamper(
        kb,
        "UPDATE snapshot_upload_parts SET payload = ?, part_hash = ?, byte_count = ?",
        junk,
        sha(junk),
        len(junk),
    )
    tamper(kb, "UPDATE snapshot_uploads SET content_hash = ?", sha(junk))
    assert kb.promote(uid)["pending"] is True
    kb.uploads.promotions.join()
    assert failure(kb, uid, "not_utf8").message == "assembled snapshot is not UTF-8 Turtle"


def test_a_knot_error_at_promotion_is_the_recorded_failure(kb: KnowledgeBase) -> None:
    uid = stage_all(kb, parts_of(document(3), KEY, 100, graph="http://ex.org/graph/unregistered"))
    assert kb.promote(uid)["pending"] is True
    kb.uploads.promotions.join()
    err = failure(kb, uid, "unknown_graph")
    assert err.field == "graph"
    assert count(kb, "snapshot_upload_parts") > 0


def test_a_turtle_syntax_error_surfaces_on_the_poll(kb: KnowledgeBase) -> None:
    uid = stage_all(kb, parts_of("ex:a ex:b ", KEY, 100))
    assert kb.promote(uid)["pending"] is True
    kb.uploads.promotions.join()
    failure(kb, uid, "rdf_parse_error")


# -- persistence, expiry and restart ------------------------------------------------------------------


def test_the_outcome_survives_reopening_the_store(tmp_path: Path) -> None:
    path = store_location(tmp_path, "p.db")
    with quipu.open(path) as kb:
        uid = stage_all(kb, parts_of(document(10), KEY, 300))
        done = settle(kb, uid)
    with quipu.open(path) as kb:
        assert kb.promote(uid) == done


def test_outcomes_expire_an_hour_after_they_are_recorded(kb: KnowledgeBase, clock: Clock) -> None:
    uid = stage_all(kb, parts_of(document(10), KEY, 300))
    clock.now += 600
    settle(kb, uid)
    clock.now += 3599
    assert kb.promote(uid)["promoted"] is True
    clock.now += 1
    failure(kb, uid, "unknown_upload")
    assert count(kb, "snapshot_promotions") == 0


def test_an_expired_upload_cannot_be_promoted(kb: KnowledgeBase, clock: Clock) -> None:
    uid = stage_all(kb, parts_of(document(10), KEY, 300))
    clock.now += 3600
    failure(kb, uid, "unknown_upload")
    assert count(kb, "snapshot_uploads") == 0 and count(kb, "snapshot_upload_parts") == 0


def orphan(kb: KnowledgeBase, uid: str, expires_at: int) -> None:
    """What a process killed mid-promotion leaves: a ``running`` row and no worker."""
    tamper(
        kb,
        "INSERT INTO snapshot_promotions (upload_id, state, updated_at, expires_at) VALUES (?, 'running', ?, ?)",
        uid,
        "2027-01-15T08:00:00Z",
        expires_at,
    )


def test_an_orphaned_running_promotion_restarts_from_the_kept_parts(tmp_path: Path, clock: Clock) -> None:
    path = store_location(tmp_path, "p.db")
    new = document(20, "new")
    with quipu.open(path) as kb:
        kb.knot(document(20, "old"), replace_snapshot=True, snapshot=KEY)
        uid = stage_all(kb, parts_of(new, KEY, 300))
        orphan(kb, uid, clock.now + 3600)
    with quipu.open(store_location(tmp_path, "oneshot.db")) as reference:
        reference.knot(document(20, "old"), replace_snapshot=True, snapshot=KEY)
        reference.knot(new, replace_snapshot=True, snapshot=KEY)
        expected = reference.export()
    with quipu.open(path) as kb:
        kb.uploads.clock = clock
        body = settle(kb, uid)  # the first poll restarts it and answers pending
        assert body["promoted"] is True
        assert kb.export() == expected


def test_a_restart_after_the_write_committed_is_a_no_op(tmp_path: Path, clock: Clock) -> None:
    path = store_location(tmp_path, "p.db")
    new = document(20, "new")
    with quipu.open(path) as kb:
        kb.knot(document(20, "old"), replace_snapshot=True, snapshot=KEY)
        uid = stage_all(kb, parts_of(new, KEY, 300))
        kb.knot(new, replace_snapshot=True, snapshot=KEY)  # the write committed, then the kill
        orphan(kb, uid, clock.now + 3600)
        committed = kb.export()
        facts = count(kb, "facts")
    with quipu.open(path) as kb:
        kb.uploads.clock = clock
        assert settle(kb, uid)["promoted"] is True
        assert kb.export() == committed and count(kb, "facts") == facts


def test_parts_under_a_running_promotion_outlive_the_upload_expiry(tmp_path: Path, clock: Clock) -> None:
    path = store_location(tmp_path, "p.db")
    with quipu.open(path) as kb:
        kb.uploads.clock = clock
        uid = stage_all(kb, parts_of(document(5), KEY, 100))
        orphan(kb, uid, clock.now + 7200)
    clock.now += 3600  # the upload itself has expired
    with quipu.open(path) as kb:
        kb.uploads.clock = clock
        kb.stage_part(**parts_of("ex:a ex:b 1 .", "other", 100)[0])  # a purge runs
        assert count(kb, "snapshot_upload_parts", "upload_id = ?", uid) > 0
        assert settle(kb, uid)["promoted"] is True


def test_an_orphan_past_its_expiry_is_deleted_with_its_parts(tmp_path: Path, clock: Clock) -> None:
    path = store_location(tmp_path, "p.db")
    with quipu.open(path) as kb:
        uid = stage_all(kb, parts_of(document(5), KEY, 100))
        orphan(kb, uid, clock.now + 3600)
    clock.now += 3600
    with quipu.open(path) as kb:
        kb.uploads.clock = clock
        failure(kb, uid, "unknown_upload")
        assert count(kb, "snapshot_promotions") == 0 and count(kb, "snapshot_upload_parts") == 0
