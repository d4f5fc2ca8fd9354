"""A bulk load reports its long phases: the index build and the event log, not only parsing."""

from __future__ import annotations

import itertools

from quipu.api import KnowledgeBase

EX = "http://ex.org/"


def test_a_bulk_load_reports_the_index_build_and_the_event_log_to_the_end(kb: KnowledgeBase) -> None:
    # 12,000 subjects, each with a literal and an edge: more than one batch of events
    doc = "".join(
        f'<{EX}s{i}> <{EX}name> "n{i}" .\n<{EX}s{i}> <{EX}next> <{EX}s{i + 1}> .\n' for i in range(12_000)
    )
    seen: list[tuple[str, int, int]] = []
    kb.knot(doc, "nt", progress=lambda phase, done, total: seen.append((phase, done, total)))
    phases = [phase for phase, _done, _total in seen]
    assert phases.index("interned terms") < phases.index("building indexes") < phases.index("event log")
    assert ("building indexes", 1, 1) in seen
    log = [(done, total) for phase, done, total in seen if phase == "event log"]
    assert len(log) > 2  # reported batch by batch
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(log))
    # one event per subject touched and one per edge
    assert log[-1] == (24_000, 24_000)
    written = kb.events(limit=30_000)
    assert sum(e["type"] in ("entity.added", "edge.added") for e in written) == 24_000
