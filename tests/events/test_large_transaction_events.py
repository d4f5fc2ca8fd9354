"""A large transaction's entity and edge events are written by the database (store/bulk_events.py),
a small one's in Python: the same writes must give the same events, in the same order, with
payloads byte for byte alike.

Each scenario runs twice on real stores of the same backend: once as it is (small transactions,
the Python path) and once with the threshold at one transition, so every transaction takes the
SQL path. A bulk load above the real threshold is checked against the rules directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.store import events as event_log
from tests.backends import store_location

EX = "http://ex.org/"
P = f"@prefix : <{EX}> .\n"
T1, T2, T3 = "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z"

Scenario = Callable[[KnowledgeBase], None]


def _first_write(kb: KnowledgeBase) -> None:
    # types, literals, edges, a subject that is also an object, non-ASCII IRIs, a blank node
    kb.knot(
        P + ':alice a :Person ; :knows :bob , :café ; :name "Alice" ; :age 41 .\n'
        ":bob a :Person ; :worksAt :acme ; :knows :alice .\n"
        ':café a :Place ; :near [ :name "corner" ] ; :link <http://ex.org/\U0001f600> .',
        timestamp=T1,
    )


def _later_writes(kb: KnowledgeBase) -> None:
    _first_write(kb)
    # existing subjects and objects, an object known only as an object, new and old schema terms
    kb.knot(
        P + ":alice :knows :carol ; :worksAt :acme ; :likes :café .\n"
        ":carol a :Person , :Admin ; :reportsTo :bob ; :owns :thing1 .\n"
        ":dave :knows :acme .",
        timestamp=T2,
    )
    # retractions and assertions in one ROOT transaction
    kb.update(
        f"PREFIX : <{EX}> DELETE {{ :alice :knows ?x }} INSERT {{ :alice :trusts ?x . :erin :knows :alice }} "
        "WHERE { :alice :knows ?x }"
    )


def _named_graphs(kb: KnowledgeBase) -> None:
    kb.create_graph(f"{EX}g1")
    kb.knot(P + ":x :knows :y . :y a :Thing .", timestamp=T1)
    kb.knot(P + ":x :knows :z . :z :knows :x .", graph=f"{EX}g1", timestamp=T2)  # no events
    kb.knot(P + ":z :knows :w .", timestamp=T3)  # z had rows before, in another graph


def _episode(kb: KnowledgeBase) -> None:
    kb.episode(
        name="standup",
        episode_body="notes",
        nodes=[{"name": "alice", "type": "Person"}, {"name": "bob", "type": "Person"}],
        edges=[{"source": "alice", "target": "bob", "relation": "knows"}],
        group_id="team-a",
    )


SCENARIOS: dict[str, Scenario] = {
    "first write": _first_write,
    "later writes and a retraction": _later_writes,
    "named graphs": _named_graphs,
    "episode": _episode,
}


def _events(kb: KnowledgeBase) -> list[tuple[Any, ...]]:
    # offsets, tx ids and the timestamps of undated writes differ between two stores
    return [(e["type"], e["subject"], e["group_id"], e["payload"]) for e in kb.events(limit=10_000)]


def _raw_payloads(kb: KnowledgeBase) -> list[str]:
    with kb.db.read() as conn:
        return [str(r[0]) for r in conn.exec_driver_sql("SELECT payload FROM events ORDER BY event_offset")]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Callable[[str], KnowledgeBase]]:
    opened: list[KnowledgeBase] = []

    def open_store(name: str) -> KnowledgeBase:
        kb = quipu.open(store_location(tmp_path, name))
        opened.append(kb)
        return kb

    yield open_store
    for kb in opened:
        kb.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_database_writes_the_same_events_as_python(
    name: str, stores: Callable[[str], KnowledgeBase], monkeypatch: pytest.MonkeyPatch
) -> None:
    python_kb = stores("python.db")
    SCENARIOS[name](python_kb)
    monkeypatch.setattr(event_log, "_BATCH", 0)  # every transaction is "large"
    sql_kb = stores("sql.db")
    SCENARIOS[name](sql_kb)
    expected = _events(python_kb)
    assert len(expected) > 3
    assert _events(sql_kb) == expected
    assert _raw_payloads(sql_kb) == _raw_payloads(python_kb)


def test_the_later_writes_scenario_exercises_every_edge_and_entity_case(
    stores: Callable[[str], KnowledgeBase], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guards the differential test above: the SQL path really ran, on every case it must get right.
    monkeypatch.setattr(event_log, "_BATCH", 0)
    kb = stores("cases.db")
    _later_writes(kb)
    written = kb.events(limit=10_000)
    kinds = {e["type"] for e in written}
    assert {"entity.added", "entity.updated", "edge.added", "edge.retracted", "type.new"} <= kinds
    assert "predicate.new" in kinds
    flags = {
        (e["payload"]["subject_preexisting"], e["payload"]["object_preexisting"])
        for e in written
        if e["type"] == "edge.added"
    }
    assert flags == {(False, False), (True, True), (True, False), (False, True)}
    knows_carol = [e for e in written if e["type"] == "edge.added" and e["payload"]["object"] == f"{EX}carol"]
    assert knows_carol and knows_carol[0]["payload"]["subject_preexisting"] is True
    assert f"{EX}\U0001f600" in {e["payload"].get("object") for e in written}


def test_a_bulk_load_above_the_threshold_follows_the_rules(kb: KnowledgeBase) -> None:
    n = 6_000  # 12,000 transitions: the SQL path without any patching
    kb.knot(P + ":hub a :Hub .", timestamp=T1)
    head = kb.events()[-1]["offset"]
    doc = "".join(f'<{EX}s{i}> <{EX}name> "n{i}" .\n<{EX}s{i}> <{EX}in> <{EX}hub> .\n' for i in range(n))
    seen: list[tuple[str, int, int]] = []
    kb.knot(doc, "nt", timestamp=T2, progress=lambda phase, done, total: seen.append((phase, done, total)))
    written = kb.events(after=head, limit=3 * n)
    kinds = [e["type"] for e in written]
    assert kinds[:2] == ["predicate.new", "predicate.new"]
    assert [e["payload"]["predicate_iri"] for e in written[:2]] == [f"{EX}name", f"{EX}in"]
    entities = written[2 : 2 + n]
    assert [e["subject"] for e in entities] == [f"{EX}s{i}" for i in range(n)]  # first-touch order
    assert {e["type"] for e in entities} == {"entity.added"}
    edges = written[2 + n :]
    assert len(edges) == n and {e["type"] for e in edges} == {"edge.added"}
    assert edges[0]["payload"] == {
        "subject": f"{EX}s0",
        "predicate": f"{EX}in",
        "object": f"{EX}hub",
        "subject_preexisting": False,
        "object_preexisting": True,
    }
    assert all(e["ts"] == T2 and e["subject"] == e["payload"]["subject"] for e in edges)
    log = [(done, total) for phase, done, total in seen if phase == "event log"]
    assert log[0] == (0, 2 * n) and log[-1] == (2 * n, 2 * n)
