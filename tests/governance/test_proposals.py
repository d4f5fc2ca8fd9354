"""The proposal queue through the embedding API (``quipu.open``): typing of inputs, and that
accepting a shape proposal is one write transaction (PA-1, PA-3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, MissingField, StorageError, WrongType
from quipu.governance.proposals import Proposal
from quipu.shacl import registry
from tests.backends import store_location

P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
AGED = P + "ex:S a sh:NodeShape ; sh:targetClass ex:Person ."
T1, T2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "q.db")) as store:
        yield store


def shape_rows(kb: KnowledgeBase) -> list[tuple[object, ...]]:
    with kb.db.read() as conn:
        return [
            tuple(r) for r in conn.exec_driver_sql("SELECT name, turtle, valid_from, valid_to FROM shapes")
        ]


def test_propose_returns_the_stored_proposal(kb: KnowledgeBase) -> None:
    filed = kb.propose("shape", "people", AGED, "agent", rationale="why", trigger_ref="wi-1", timestamp=T1)
    assert filed == Proposal(
        filed.id, "shape", "people", AGED, "why", "agent", "wi-1", "pending", None, None, None, T1
    )
    assert kb.proposals() == [filed]
    assert kb.proposals("pending") == [filed] and kb.proposals("accepted") == []


def test_accept_returns_the_decided_proposal(kb: KnowledgeBase) -> None:
    filed = kb.propose("shape", "people", AGED, "agent", timestamp=T1)
    decided = kb.accept_proposal(filed.id, "lead", note="ok", timestamp=T2)
    assert (decided.status, decided.decided_by, decided.decided_at, decided.decision_note) == (
        "accepted",
        "lead",
        T2,
        "ok",
    )
    assert kb.proposals() == [decided]
    assert [(s.name, s.turtle, s.valid_from) for s in kb.shape_sets()] == [("people", AGED, T2)]


def test_reject_returns_the_decided_proposal(kb: KnowledgeBase) -> None:
    filed = kb.propose("property", "http://ex.org/age", "patch", "agent")
    decided = kb.reject_proposal(filed.id, "lead", "not needed", timestamp=T2)
    assert kb.proposals("rejected") == [decided] and decided.decision_note == "not needed"


@pytest.mark.parametrize("bad_id", [True, "1", 1.0])
def test_an_id_that_is_not_an_integer_is_the_wrong_type(kb: KnowledgeBase, bad_id: object) -> None:
    kb.propose("class", "http://ex.org/C", "d", "agent")
    with pytest.raises(WrongType) as caught:
        kb.accept_proposal(bad_id, "lead")  # type: ignore[arg-type]
    assert caught.value.field == "id"
    assert kb.proposals("pending") != []


def test_missing_id_and_non_text_fields_are_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(MissingField) as missing:
        kb.reject_proposal(None, "lead", "n")
    assert missing.value.field == "id"
    with pytest.raises(WrongType) as wrong:
        kb.propose("shape", "people", AGED, 7)  # type: ignore[arg-type]
    assert wrong.value.field == "proposer"
    with pytest.raises(InvalidField) as kind:
        kb.propose("Shape", "people", AGED, "agent")
    assert (kind.value.field, kind.value.reason) == ("kind", "unknown_kind")
    assert kb.proposals() == []


def test_accept_pa1_the_load_and_the_decision_commit_together(kb: KnowledgeBase) -> None:
    # A real trigger makes the decision's UPDATE fail after the shapes were loaded in the same
    # transaction: the load must roll back with it.
    filed = kb.propose("shape", "people", AGED, "agent")
    postgres = kb.db.dialect.name == "postgresql"
    with kb.db.write() as ctx:
        if postgres:
            ctx.conn.exec_driver_sql(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "RAISE EXCEPTION 'decision refused' USING ERRCODE = 'integrity_constraint_violation'; END $$"
            )
            ctx.conn.exec_driver_sql(
                "CREATE TRIGGER refuse_decisions BEFORE UPDATE ON proposals "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        else:
            ctx.conn.exec_driver_sql(
                "CREATE TRIGGER refuse_decisions BEFORE UPDATE ON proposals "
                "BEGIN SELECT RAISE(ABORT, 'decision refused'); END"
            )
    with pytest.raises(StorageError) as refused:
        kb.accept_proposal(filed.id, "lead", timestamp=T2)
    # The store translates the driver's error; the trigger's own is kept as the cause.
    assert isinstance(refused.value.__cause__, IntegrityError)
    assert "decision refused" in str(refused.value.__cause__)
    assert shape_rows(kb) == [] and kb.shape_sets() == []
    assert kb.proposals() == [filed]
    with kb.db.write() as ctx:
        ctx.conn.exec_driver_sql("DROP TRIGGER refuse_decisions" + (" ON proposals" if postgres else ""))
    kb.accept_proposal(filed.id, "lead", timestamp=T2)
    assert shape_rows(kb) == [("people", AGED, T2, None)]


def test_registry_load_inside_a_callers_transaction_rolls_back_with_it(kb: KnowledgeBase) -> None:
    with pytest.raises(RuntimeError), kb.db.write() as ctx:
        registry.load(kb.db, "people", AGED, timestamp=T1, ctx=ctx)
        raise RuntimeError("the caller's write fails later")
    assert shape_rows(kb) == []
    with kb.db.write() as ctx:
        registry.load(kb.db, "people", AGED, timestamp=T1, ctx=ctx)
    assert shape_rows(kb) == [("people", AGED, T1, None)]
