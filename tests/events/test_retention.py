"""Retention pruning, ``[quipu.events] retention_days`` (DM §11.2): old events go, but never one
that a registered consumer's or a subscription's cursor has not passed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from quipu.api import KnowledgeBase
from quipu.config import EventsSettings
from quipu.errors import InvalidField
from tests.backends import migrated_location

EX = "http://ex.org/"
OLD = "2020-01-01T00:00:00Z"
LATER = datetime.now(UTC) + timedelta(days=3)  # when every event of this test is 3 days old


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase(migrated_location(tmp_path, "r.db"), events=EventsSettings(retention_days=1)) as store:
        yield store


def write(kb: KnowledgeBase, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        kb.knot(f"<{EX}s{i}> <{EX}link> <{EX}o{i}> .", "turtle", timestamp=OLD)


def offsets(kb: KnowledgeBase, **read: object) -> list[int]:
    return [e["offset"] for e in kb.feeds.events(limit=10_000, **read)["events"]]  # type: ignore[arg-type]


def test_with_no_consumer_age_alone_decides(kb: KnowledgeBase) -> None:
    write(kb, 2)  # 5 events: predicate.new once, then entity.added and edge.added per write
    assert kb.feeds.prune(LATER) == 5
    assert offsets(kb) == []
    write(kb, 1, start=10)  # offsets are never reused after a prune
    assert min(offsets(kb)) > 5


def test_a_backfill_with_old_timestamps_is_not_pruned_the_hour_it_lands(kb: KnowledgeBase) -> None:
    write(kb, 2)  # declared 2020, recorded now
    assert kb.feeds.prune() == 0
    assert len(offsets(kb)) == 5


def test_a_consumer_cursor_holds_back_pruning(kb: KnowledgeBase) -> None:
    write(kb, 3)
    kb.feeds.commit(consumer_id="slow", offset=4)
    assert kb.feeds.prune(LATER) == 4
    assert offsets(kb) == [5, 6, 7]
    assert offsets(kb, consumer="slow") == [5, 6, 7]  # nothing it still needs is gone
    # a consumer registering after the prune replays from the oldest retained event
    assert offsets(kb, consumer="newcomer")[0] == 5


def test_a_subscription_cursor_holds_back_pruning_from_its_creation(tmp_path: Path) -> None:
    settings = EventsSettings(retention_days=1, webhook_allow_private=True)
    with KnowledgeBase(migrated_location(tmp_path, "s.db"), events=settings) as kb:
        write(kb, 2)
        kb.feeds.subscriptions(action="create", consumer_id="hook", webhook_url="http://127.0.0.1:9/h")
        assert kb.feeds.prune(LATER) == 0  # the new subscription has delivered nothing yet
        kb.feeds.commit(consumer_id="sub:hook", offset=3)
        assert kb.feeds.prune(LATER) == 3
        kb.feeds.subscriptions(action="delete", consumer_id="hook")
        assert kb.feeds.prune(LATER) == 0  # the deleted subscription's cursor still counts (rule 4)


def test_retention_off_prunes_nothing(tmp_path: Path) -> None:
    with KnowledgeBase(migrated_location(tmp_path, "n.db")) as kb:
        write(kb, 1)
        assert kb.feeds.prune(LATER + timedelta(days=10_000)) == 0
        assert len(offsets(kb)) == 3


def test_a_large_prune_goes_a_batch_per_transaction_reporting_progress(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    from quipu.store import event_feed

    write(kb, 5)  # 11 events
    monkeypatch.setattr(event_feed, "PRUNE_BATCH", 4)
    seen: list[int] = []
    assert kb.feeds.prune(LATER, on_batch=seen.append) == 11
    assert seen == [4, 8, 11]  # writers wait at most one batch
    assert offsets(kb) == []


def test_days_overrides_the_setting_and_is_checked(tmp_path: Path) -> None:
    with KnowledgeBase(migrated_location(tmp_path, "d.db")) as kb:  # retention off
        write(kb, 1)
        assert kb.feeds.prune(LATER, days=5) == 0  # three days old: younger than five
        assert kb.feeds.prune(LATER, days=2) == 3
        with pytest.raises(InvalidField) as refused:
            kb.feeds.prune(days=0)
        assert refused.value.field == "days"
