"""Staging parts (tools-core §3.2) through ``KnowledgeBase.stage_part``, on real store files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import QuipuError
from tests.backends import store_location

from ..store import count, snapshot, sql
from .parts import document, parts_of, sha, upload_id

UPLOAD_TABLES = ("snapshot_uploads", "snapshot_upload_parts", "snapshot_promotions")


class Clock:
    """An injected clock: tests move time instead of sleeping."""

    def __init__(self, now: int = 1_800_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kb(tmp_path: Path, clock: Clock) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "u.db")) as kb:
        kb.uploads.clock = clock
        yield kb


def refused(kb: KnowledgeBase, body: dict[str, Any], reason: str, field: str | None) -> QuipuError:
    with pytest.raises(QuipuError) as caught:
        kb.stage_part(**body)
    assert caught.value.status == 400
    assert caught.value.reason == reason, caught.value.message
    assert caught.value.field == field
    return caught.value


def tables(kb: KnowledgeBase) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sql(kb, f"SELECT * FROM {t} ORDER BY 1, 2") for t in UPLOAD_TABLES}


def test_first_part_creates_the_upload_and_reports_progress(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(20), "k", 300)
    first = kb.stage_part(**bodies[0]).as_json()
    assert first == {
        "upload_id": bodies[0]["upload_id"],
        "part_number": 0,
        "received_parts": 1,
        "total_parts": len(bodies),
        "idempotent": False,
        "expires_in_seconds": 3600,
    }
    second = kb.stage_part(**bodies[2]).as_json()
    assert second["received_parts"] == 2 and second["part_number"] == 2


def test_stored_bytes_are_the_payloads_utf8_bytes(kb: KnowledgeBase) -> None:
    body = parts_of('ex:a ex:b "ü東🦙" .', "k", 1000)[0]
    kb.stage_part(**body)
    [(stored, byte_count)] = sql(kb, "SELECT payload, byte_count FROM snapshot_upload_parts")
    assert bytes(stored) == body["payload"].encode("utf-8") and byte_count == len(bytes(stored))


# -- rule 1: the first part fixes the manifest ------------------------------------------------------


def test_a_later_part_adding_an_actor_is_refused(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(20), "k", 300)
    kb.stage_part(**bodies[0])
    before = tables(kb)
    err = refused(kb, {**bodies[1], "actor": "alice"}, "manifest_mismatch", "upload_id")
    assert err.message == "upload_id already exists with a different immutable manifest"
    assert err.extra["mismatched"] == ["actor"]
    assert tables(kb) == before


@pytest.mark.parametrize(
    "change",
    [
        {"timestamp": "2026-01-01T00:00:00Z"},
        {"actor": "bob"},
        {"source": "elsewhere"},
        {"graph": "http://ex.org/g"},
        {"total_parts": 99},
        {"total_bytes": 10**6},
    ],
)
def test_every_manifest_field_must_match_the_first_part(kb: KnowledgeBase, change: dict[str, Any]) -> None:
    bodies = parts_of(document(20), "k", 300, actor="alice")
    kb.stage_part(**bodies[0])
    later = {**bodies[1], **change}
    err = refused(kb, later, "manifest_mismatch", "upload_id")
    assert err.extra["mismatched"] == list(change)


def test_an_absent_timestamp_and_an_empty_one_are_the_same_manifest(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(20), "k", 300)
    kb.stage_part(**bodies[0])
    assert kb.stage_part(**{**bodies[1], "timestamp": ""}).idempotent is False
    assert sql(kb, "SELECT timestamp FROM snapshot_uploads") == [("",)]


# -- rule 2: replay ------------------------------------------------------------------------------


def test_an_identical_replay_is_idempotent_and_changes_nothing(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(20), "k", 300)
    kb.stage_part(**bodies[0])
    before = tables(kb)
    again = kb.stage_part(**bodies[0])
    assert again.idempotent is True and again.received_parts == 1
    assert tables(kb) == before


def test_changed_bytes_for_a_stored_part_are_refused_and_the_part_kept(kb: KnowledgeBase) -> None:
    bodies = parts_of(document(20), "k", 300)
    kb.stage_part(**bodies[1])
    before = tables(kb)
    changed = bodies[1]["payload"][:-1] + "X"
    body = {**bodies[1], "payload": changed, "part_hash": sha(changed.encode())}
    err = refused(kb, body, "part_conflict", "part_number")
    assert err.message == "part_number already exists with different bytes"
    assert tables(kb) == before


# -- rule 3: sizes are UTF-8 bytes ---------------------------------------------------------------


def test_payload_size_counts_utf8_bytes_not_characters(kb: KnowledgeBase) -> None:
    exact = "é" * (256 * 1024)  # 262144 characters, 524288 bytes: exactly the limit
    body = parts_of(exact, "k", 10**7)[0]
    assert kb.stage_part(**body).received_parts == 1
    over = exact + "a"  # still far fewer characters than 512 Ki, but one byte too many
    err = refused(kb, parts_of(over, "k2", 10**7)[0], "size_out_of_range", "payload")
    assert "524288" in err.message


def test_total_bytes_counts_utf8_bytes(kb: KnowledgeBase) -> None:
    body = parts_of('ex:a ex:b "東京" .', "k", 1000)[0]
    assert body["total_bytes"] == len(body["payload"]) + 4  # two 3-byte characters
    refused(kb, {**body, "total_bytes": len(body["payload"])}, "size_out_of_range", "total_bytes")


# -- rule 4: staging never parses Turtle or touches facts ---------------------------------------------


def test_staging_does_not_parse_turtle_or_touch_the_fact_log(kb: KnowledgeBase) -> None:
    kb.knot('<http://ex.org/a> <http://ex.org/b> "c" .')
    before = snapshot(kb), sql(kb, "SELECT * FROM events ORDER BY 1")
    export = kb.export()
    bodies = parts_of("this is @not turtle {{{ ", "k", 8)
    for body in bodies:
        kb.stage_part(**body)
    assert (snapshot(kb), sql(kb, "SELECT * FROM events ORDER BY 1")) == before
    assert kb.export() == export
    assert count(kb, "snapshot_upload_parts") == len(bodies) == 3


# -- rule 5: expiry --------------------------------------------------------------------------------


def test_an_upload_expires_an_hour_after_its_first_part(kb: KnowledgeBase, clock: Clock) -> None:
    old = parts_of(document(20), "old", 300)
    kb.stage_part(**old[0])
    clock.now += 1800
    assert kb.stage_part(**old[1]).expires_in_seconds == 1800  # measured from the first part
    clock.now += 1799
    kb.stage_part(**parts_of("ex:a ex:b 1 .", "other", 100)[0])
    assert count(kb, "snapshot_uploads", "upload_id = ?", old[0]["upload_id"]) == 1
    clock.now += 1
    kb.stage_part(**parts_of("ex:a ex:b 2 .", "another", 100)[0])  # the start of this call deletes it
    assert count(kb, "snapshot_uploads", "upload_id = ?", old[0]["upload_id"]) == 0
    assert count(kb, "snapshot_upload_parts", "upload_id = ?", old[0]["upload_id"]) == 0


def test_an_expired_upload_starts_afresh_when_restaged(kb: KnowledgeBase, clock: Clock) -> None:
    bodies = parts_of(document(20), "k", 300)
    kb.stage_part(**bodies[0])
    clock.now += 3600
    again = kb.stage_part(**bodies[1])
    assert again.received_parts == 1 and again.idempotent is False and again.expires_in_seconds == 3600


def test_a_failing_stage_call_still_deletes_expired_uploads(kb: KnowledgeBase, clock: Clock) -> None:
    bodies = parts_of(document(20), "k", 300)
    kb.stage_part(**bodies[0])
    clock.now += 3600
    refused(kb, {**bodies[1], "part_hash": "sha256:" + "0" * 64}, "hash_mismatch", "part_hash")
    assert count(kb, "snapshot_uploads") == 0


# -- the error list --------------------------------------------------------------------------------

GOOD = parts_of(document(5), "k", 200)[1]


@pytest.mark.parametrize(
    ("change", "reason", "field"),
    [
        ({"upload_id": ""}, "missing_field", "upload_id"),
        ({"snapshot": ""}, "missing_field", "snapshot"),
        ({"snapshot": "   "}, "missing_field", "snapshot"),
        ({"content_hash": ""}, "missing_field", "content_hash"),
        ({"part_hash": ""}, "missing_field", "part_hash"),
        ({"payload": ""}, "missing_field", "payload"),
        ({"content_hash": "sha256:" + "A" * 64}, "invalid_hash", "content_hash"),
        ({"part_hash": "md5:" + "0" * 32}, "invalid_hash", "part_hash"),
        ({"upload_id": "sha256:" + "0" * 63}, "invalid_hash", "upload_id"),
        ({"upload_id": "sha256:" + "0" * 64}, "upload_id_mismatch", "upload_id"),
        ({"snapshot": "other"}, "upload_id_mismatch", "upload_id"),
        ({"total_parts": 0, "part_number": 0}, "part_out_of_range", "total_parts"),
        ({"total_parts": 513}, "part_out_of_range", "total_parts"),
        ({"part_number": -1}, "part_out_of_range", "part_number"),
        ({"part_number": GOOD["total_parts"]}, "part_out_of_range", "part_number"),
        ({"total_bytes": 128 * 1024 * 1024 + 1}, "size_out_of_range", "total_bytes"),
        ({"total_bytes": 1}, "size_out_of_range", "total_bytes"),
        ({"part_hash": sha(b"something else")}, "hash_mismatch", "part_hash"),
    ],
)
def test_each_refusal_names_its_field_and_reason(
    kb: KnowledgeBase, change: dict[str, Any], reason: str, field: str
) -> None:
    refused(kb, {**GOOD, **change}, reason, field)
    assert tables(kb) == {t: [] for t in UPLOAD_TABLES}


def test_the_largest_upload_and_part_count_are_accepted(kb: KnowledgeBase) -> None:
    body = {**GOOD, "total_parts": 512, "part_number": 511, "total_bytes": 128 * 1024 * 1024}
    assert kb.stage_part(**body).total_parts == 512


def test_upload_id_derivation_uses_the_snapshot_as_given(kb: KnowledgeBase) -> None:
    text = "ex:a ex:b 1 ."
    content = sha(text.encode())
    body = {**parts_of(text, " k ", 100)[0]}
    assert body["upload_id"] == upload_id(" k ", content) != upload_id("k", content)
    kb.stage_part(**body)
