"""The vector table over valid time and the cached matrix that ranks it (tools-search §3.1, §6.1).

A real store on the backend under test; a second store object on the same location stands for
another process writing vectors, which the index must pick up by itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import InvalidField
from quipu.search.vectors import VectorIndex
from quipu.store import vectors as store_vectors
from tests.backends import store_location

D = 8
T1, T2, T3 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"


def vec(*values: float) -> bytes:
    out = np.zeros(D, dtype="<f4")
    out[: len(values)] = values
    return out.tobytes()


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "vectors.db")) as store:
        yield store


def write(
    kb: KnowledgeBase, rows: list[tuple[int, str, bytes]], stamp: str, *, named_only: bool = False
) -> int:
    with kb.db.write() as ctx:
        return store_vectors.write(ctx.conn, rows, stamp, named_only=named_only)


def test_a_new_vector_closes_the_old_one_and_history_stays_readable(kb: KnowledgeBase) -> None:
    first = write(kb, [(7, "alice", vec(1)), (8, "bob", vec(0, 1))], T1)
    second = write(kb, [(7, "alice smith", vec(1, 1))], T2)
    assert second == first + 1
    with kb.db.write() as ctx:
        assert store_vectors.close(ctx.conn, [8, 99], T3) == 1
    with kb.db.read() as conn:
        now = store_vectors.current(conn)
        assert [(r.entity_id, r.text, r.valid_from, r.valid_to) for r in now] == [
            (7, "alice smith", T2, None)
        ]
        then = store_vectors.live_at(conn, "2026-01-15T00:00:00Z")
        assert [(r.entity_id, r.text, r.valid_to) for r in then] == [(7, "alice", T2), (8, "bob", T3)]
        assert [r.entity_id for r in store_vectors.live_at(conn, T2)] == [7, 8]  # valid_to is exclusive
        assert [r.entity_id for r in store_vectors.live_at(conn, T3)] == [7]
        assert store_vectors.count_current(conn) == 1
        assert store_vectors.generation(conn) == second + 1


def test_two_writes_in_one_second_replace_the_row(kb: KnowledgeBase) -> None:
    write(kb, [(7, "alice", vec(1))], T1)
    write(kb, [(7, "alice smith", vec(0, 1))], T1)
    with kb.db.read() as conn:
        rows = store_vectors.live_at(conn, T1)
    assert [(r.text, r.valid_to, np.frombuffer(r.embedding, "<f4")[1]) for r in rows] == [
        ("alice smith", None, 1.0)
    ]


def test_closing_nothing_leaves_the_generation(kb: KnowledgeBase) -> None:
    with kb.db.write() as ctx:
        assert store_vectors.close(ctx.conn, [1, 2], T1) == 0
        assert store_vectors.write(ctx.conn, [], T1) == 0
        assert store_vectors.generation(ctx.conn) == 0


def test_a_failed_write_leaves_no_vector(kb: KnowledgeBase) -> None:
    with pytest.raises(RuntimeError), kb.db.write() as ctx:
        store_vectors.write(ctx.conn, [(7, "alice", vec(1))], T1)
        raise RuntimeError("the rest of the transaction failed")
    with kb.db.read() as conn:
        assert store_vectors.current(conn) == []
        assert store_vectors.generation(conn) == 0


def test_the_index_follows_writes_of_another_store_object_incrementally(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    index = VectorIndex(D)
    write(kb, [(1, "a", vec(1)), (2, "b", vec(0, 1)), (3, "c", vec(1, 1))], T1)
    with kb.db.read() as conn:
        index.refresh(conn)
    assert list(index.rank(np.frombuffer(vec(1, 0.1), "<f4"), 3).entity_ids) == [1, 3, 2]
    with quipu.open(store_location(tmp_path, "vectors.db")) as other:  # another writer on the same store
        write(other, [(2, "b", vec(2, 0))], T2)
        with other.db.write() as ctx:
            store_vectors.close(ctx.conn, [1], T2)
    before = index.generation
    with kb.db.read() as conn:
        index.refresh(conn)
    assert index.generation > before and len(index) == 2
    ranked = index.rank(np.frombuffer(vec(1, 0.1), "<f4"), 3)
    assert list(ranked.entity_ids) == [2, 3]
    assert ranked.similarities[0] == pytest.approx(1 / np.sqrt(1.01))


def test_the_index_matches_brute_force_through_many_changes(kb: KnowledgeBase) -> None:
    rng = np.random.default_rng(7)
    index = VectorIndex(D)
    live: dict[int, np.ndarray] = {}
    stamps = iter(f"2026-01-01T00:{m:02d}:{s:02d}Z" for m in range(60) for s in range(60))
    for _round in range(12):
        stamp = next(stamps)
        changed = rng.choice(400, size=60, replace=False)
        rows = []
        for entity in changed[:45]:
            vector = rng.standard_normal(D).astype("<f4")
            live[int(entity)] = vector
            rows.append((int(entity), f"e{entity}", vector.tobytes()))
        write(kb, rows, stamp)
        gone = [int(e) for e in changed[45:] if int(e) in live]
        with kb.db.write() as ctx:
            store_vectors.close(ctx.conn, gone, next(stamps))
        for entity in gone:
            del live[entity]
        with kb.db.read() as conn:
            index.refresh(conn)
        query = rng.standard_normal(D)
        ids = np.array(sorted(live))
        matrix = np.stack([live[i] for i in ids]).astype(np.float64)
        cosines = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
        expected = ids[np.lexsort((ids, -cosines))][:10]
        ranked = index.rank(query, 10)
        assert list(ranked.entity_ids) == list(expected)
        assert np.allclose(ranked.similarities, np.sort(cosines)[::-1][:10], atol=1e-6)
        assert len(index) == len(live)


def test_an_allow_list_filters_before_the_cut(kb: KnowledgeBase) -> None:
    """Spec rule 4 (scopes filter before the limit): only the worst-scoring entity is allowed,
    and limit 1 still returns it."""
    write(kb, [(n, f"e{n}", vec(1, n / 10)) for n in range(1, 31)], T1)
    index = VectorIndex(D)
    with kb.db.read() as conn:
        index.refresh(conn)
    query = np.frombuffer(vec(1), "<f4")
    assert list(index.rank(query, 1).entity_ids) == [1]
    assert list(index.rank(query, 1, allowed_ids=np.array([30])).entity_ids) == [30]


def test_named_only_vectors_are_left_out_unless_asked_for(kb: KnowledgeBase) -> None:
    write(kb, [(1, "root", vec(1))], T1)
    write(kb, [(2, "named", vec(1))], T1, named_only=True)
    index = VectorIndex(D)
    with kb.db.read() as conn:
        index.refresh(conn)
    query = np.frombuffer(vec(1), "<f4")
    assert list(index.rank(query, 5).entity_ids) == [1]
    assert list(index.rank(query, 5, include_named_only=True).entity_ids) == [1, 2]  # a tie: id order


def test_a_query_of_another_dimension_fails_loudly(kb: KnowledgeBase) -> None:
    write(kb, [(1, "a", vec(1))], T1)
    index = VectorIndex(D)
    with kb.db.read() as conn:
        index.refresh(conn)
    with pytest.raises(InvalidField, match="the query has 3 dimensions, the stored vectors 8") as refused:
        index.rank(np.ones(3), 5)
    assert refused.value.field == "embedding"


def test_a_zero_vector_scores_zero(kb: KnowledgeBase) -> None:
    write(kb, [(1, "a", vec()), (2, "b", vec(1))], T1)
    index = VectorIndex(D)
    with kb.db.read() as conn:
        index.refresh(conn)
    ranked = index.rank(np.frombuffer(vec(1), "<f4"), 5)
    assert list(ranked.entity_ids) == [2, 1] and list(ranked.similarities) == [1.0, 0.0]
    assert list(index.rank(np.zeros(D), 5).similarities) == [0.0, 0.0]
