"""Concurrent writers (DM §12, §16.8): one writer at a time, ids in commit order, nothing lost."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import quipu
from quipu.api import KnowledgeBase
from tests.backends import store_location
from tests.store import EX, count

PER_WRITER = 40
THREADS = 4

CHILD = """
import sys, quipu
kb = quipu.open(sys.argv[1])
ex, n = sys.argv[2], int(sys.argv[3])
ids = [kb.knot(f'<{ex}p{i}> <{ex}n> "{i}" .', "nt", source="process").tx_id for i in range(n)]
print(" ".join(map(str, ids)))
kb.close()
"""


def test_concurrent_writers_from_threads_and_another_process(tmp_path: Path) -> None:
    path = store_location(tmp_path, "kb.db")
    kb: KnowledgeBase = quipu.open(path)
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, path, EX, str(PER_WRITER)], stdout=subprocess.PIPE, text=True
        )
        seen: dict[int, list[int]] = {}
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                seen[n] = [
                    kb.knot(f'<{EX}t{n}-{i}> <{EX}n> "{i}" .', "nt", source=f"thread-{n}").tx_id
                    for i in range(PER_WRITER)
                ]
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0 and not errors, errors
        seen[-1] = [int(x) for x in out.split()]

        for ids in seen.values():  # a writer's later write commits later, so gets a larger id
            assert ids == sorted(ids) and len(set(ids)) == len(ids)
        every = [i for ids in seen.values() for i in ids]
        assert len(set(every)) == len(every) == (THREADS + 1) * PER_WRITER
        logged = [t["id"] for t in kb.transactions(limit=None)["transactions"]]
        assert sorted(every) == logged
        assert count(kb, "facts", "op = 1 AND valid_to IS NULL") == (THREADS + 1) * PER_WRITER
    finally:
        kb.close()
