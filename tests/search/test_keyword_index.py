"""The keyword index (tools-search §4): activation, bounded backfill, triggers inside the writer's
transaction, drop, and the ``quipu search-index`` / ``quipu search`` commands, on the backend
under test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect
from typer.testing import CliRunner

from quipu.api import KnowledgeBase
from quipu.cli import keyword_search
from quipu.cli.main import app as quipu_cli
from quipu.errors import InvalidField
from quipu.store import keyword_index, keyword_tokens, values, writes
from quipu.store.schema import OP_ASSERT, facts
from quipu.store.views import TemporalView
from tests.backends import store_location

EX = "http://ex.org/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
DATA = f"""
<{EX}ClockworkStation> <{LABEL}> "the clockwork station" ; a <{EX}TrainStation> ;
    <{EX}note> "steam engines" .
<{EX}b> <{LABEL}> "another station"@en .
"""


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    store = KnowledgeBase(store_location(tmp_path))
    yield store
    store.close()


def _entities(kb: KnowledgeBase, *phrases: str, valid_at: str | None = None) -> list[str]:
    with kb.db.read() as conn:
        return [
            m.entity_iri for m in keyword_index.matches(conn, phrases, TemporalView.at(valid_at=valid_at))
        ]


def test_name_tokens_split_camel_case_on_both_sides(kb: KnowledgeBase) -> None:
    assert keyword_tokens.name_tokens(f"{EX}ClockworkStation") == "ClockworkStation Clockwork Station"
    assert keyword_tokens.name_tokens("urn:x:aB") == "aB a B"
    assert keyword_tokens.name_tokens("http://ex.org/ns#HTTPServer") == "HTTPServer HTTPServer"
    kb.knot(f"<{EX}ClockworkStation> <{EX}p> <{EX}RailYard> .")
    kb.search.keyword_backfill(10)
    with kb.db.read() as conn:  # the database's copy (SQLite UDF or PostgreSQL function) agrees
        doc = next(keyword_index.matches(conn, ["clockwork"], TemporalView()))
    assert doc.fields["iri_tokens"] == "ClockworkStation Clockwork Station"


def test_status_before_activation_creates_nothing(kb: KnowledgeBase) -> None:
    kb.knot(DATA)
    assert kb.search.keyword_index() is None
    with kb.db.read() as conn:
        assert not inspect(conn).has_table("keyword_index")
        assert not inspect(conn).has_table("keyword_progress")


def test_backfill_is_bounded_and_resumable(kb: KnowledgeBase) -> None:
    kb.knot(DATA)  # four fact rows
    first = kb.search.keyword_backfill(3)
    assert first == {"cursor": 3, "highwater": 4, "complete": False, "documents": 3}
    with pytest.raises(InvalidField):  # not searchable until complete
        kb.search.find({"query": "station", "mode": "keyword"})
    second = kb.search.keyword_backfill(3)
    assert second == {"cursor": 4, "highwater": 4, "complete": True, "documents": 4}
    assert kb.search.keyword_backfill(3) == second  # a complete index stays as it is
    for bad in (0, 10_001):
        with pytest.raises(InvalidField):
            kb.search.keyword_backfill(bad)


def test_empty_store_activates_complete(kb: KnowledgeBase) -> None:
    assert kb.search.keyword_backfill(500) == {"cursor": 0, "highwater": 0, "complete": True, "documents": 0}


def test_rows_written_after_activation_are_indexed_by_the_triggers(kb: KnowledgeBase) -> None:
    kb.knot(DATA)
    kb.search.keyword_backfill(1)  # activated, far from complete
    kb.knot(f'<{EX}c> <{LABEL}> "late arrival" .')
    state = kb.search.keyword_index()
    assert state is not None and state["highwater"] == 4 and state["documents"] == 2
    while not kb.search.keyword_backfill(1)["complete"]:
        pass
    assert kb.search.keyword_index() == {"cursor": 4, "highwater": 4, "complete": True, "documents": 5}
    assert _entities(kb, "late", "arrival") == [f"{EX}c"]


def test_a_rolled_back_write_leaves_no_document(kb: KnowledgeBase) -> None:
    """The trigger runs inside the writer's transaction: the document exists there, and goes
    with the transaction when it rolls back."""
    kb.search.keyword_backfill(10)
    with pytest.raises(RuntimeError, match="abandon"), kb.db.write() as ctx:
        ids = kb.db.terms.intern(ctx, [f"{EX}d", LABEL])
        tx = writes.open_transaction(ctx, timestamp="2026-01-01T00:00:00Z", actor=None, source=None, graph=0)
        text = values.string("phantom entry")
        ctx.conn.execute(
            facts.insert().values(
                e=ids[f"{EX}d"],
                a=ids[LABEL],
                v=text,
                vh=values.digest(text),
                g=0,
                tx=tx.id,
                valid_from="2026-01-01T00:00:00Z",
                op=OP_ASSERT,
            )
        )
        inside = [m.entity_iri for m in keyword_index.matches(ctx.conn, ["phantom"], TemporalView())]
        assert inside == [f"{EX}d"]
        raise RuntimeError("abandon the write")
    assert _entities(kb, "phantom") == []
    assert kb.search.keyword_index() == {"cursor": 0, "highwater": 0, "complete": True, "documents": 0}


def test_documents_fill_the_columns_of_their_predicate(kb: KnowledgeBase) -> None:
    kb.knot(DATA)
    kb.search.keyword_backfill(100)
    with kb.db.read() as conn:
        docs = {m.fact_id: m for m in keyword_index.matches(conn, ["station"], TemporalView())}
    by_kind = {
        ("label" if d.fields["label"] else "type" if d.type_iri else "other"): d for d in docs.values()
    }
    assert by_kind["label"].fields["label"] in ("the clockwork station", "another station")
    typed = by_kind["type"]
    assert (
        typed.fields["type_names"] == "TrainStation Train Station" and typed.type_iri == f"{EX}TrainStation"
    )
    tagged = next(d for d in docs.values() if d.entity_iri == f"{EX}b")
    assert tagged.language == "en"  # kept apart from plain strings


def test_closing_a_fact_keeps_its_document_for_history(kb: KnowledgeBase) -> None:
    """Valid time is read from the fact row, so a retracted label is still found in the past."""
    kb.knot(f'<{EX}e> <{LABEL}> "vintage label" .', timestamp="2020-01-01T00:00:00Z")
    kb.search.keyword_backfill(10)
    kb.retract(f"{EX}e", LABEL, timestamp="2022-01-01T00:00:00Z")
    assert _entities(kb, "vintage", valid_at="2021-01-01T00:00:00Z") == [f"{EX}e"]
    assert _entities(kb, "vintage", valid_at="2022-01-01T00:00:00Z") == []
    assert _entities(kb, "vintage") == []


def test_drop_removes_the_index_and_keeps_the_facts(kb: KnowledgeBase) -> None:
    kb.knot(DATA)
    kb.search.keyword_backfill(100)
    kb.search.keyword_drop()
    assert kb.search.keyword_index() is None
    kb.knot(f'<{EX}f> <{LABEL}> "after drop" .')  # no trigger left behind
    assert len(kb.query("SELECT * WHERE { ?s ?p ?o }")) == 5  # type: ignore[arg-type]


# -- the commands -------------------------------------------------------------------------------


def _cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(quipu_cli, [*args, "--db", store_location(tmp_path)])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def outside_ingest_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword_search, "utc_minute", lambda: 30)


def test_cli_status_backfill_drop(tmp_path: Path, outside_ingest_lane: None) -> None:
    KnowledgeBase(store_location(tmp_path)).close()
    assert json.loads(_cli(tmp_path, "search-index")[1]) == {"index": None}
    code, out, err = _cli(tmp_path, "search-index", "backfill", "--batch-size", "7")
    assert code == 0, err
    assert json.loads(out) == {"index": {"cursor": 0, "highwater": 0, "complete": True, "documents": 0}}
    assert json.loads(_cli(tmp_path, "search-index", "drop")[1]) == {"dropped": True}


def test_cli_backfill_all_and_search(tmp_path: Path, outside_ingest_lane: None) -> None:
    kb = KnowledgeBase(store_location(tmp_path))
    kb.knot(DATA)
    kb.close()
    code, out, err = _cli(tmp_path, "search-index", "backfill", "--batch-size", "1", "--all")
    assert code == 0, err
    assert json.loads(out)["index"]["complete"] is True
    config = tmp_path / "quipu.toml"
    config.write_text("[quipu.search]\nkeyword = true\n")
    code, out, err = _cli(tmp_path, "search", "clockwork", "--limit", "5", "--config", str(config))
    assert code == 0, err
    body = json.loads(out)
    assert [r["entity"] for r in body["results"]] == [f"{EX}ClockworkStation"]
    assert body["ranking"] == "keyword"
    assert _cli(tmp_path, "search", "clockwork", "--limit", "five", "--config", str(config))[0] == 1


@pytest.mark.parametrize("minute", [10, 15, 20, None])
def test_cli_backfill_refused_in_the_ingest_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minute: int | None
) -> None:
    monkeypatch.setattr(keyword_search, "utc_minute", lambda: minute)
    code, _out, err = _cli(tmp_path, "search-index", "backfill")
    assert code == 1
    assert "ingest lane" in err or "cannot be determined" in err
    kb = KnowledgeBase(store_location(tmp_path))
    assert kb.search.keyword_index() is None  # refused before the store was touched
    kb.close()


@pytest.mark.parametrize("minute", [9, 21])
def test_cli_backfill_runs_outside_the_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minute: int
) -> None:
    monkeypatch.setattr(keyword_search, "utc_minute", lambda: minute)
    KnowledgeBase(store_location(tmp_path)).close()
    assert _cli(tmp_path, "search-index", "backfill")[0] == 0


def test_cli_refuses_a_non_integer_batch_size(tmp_path: Path, outside_ingest_lane: None) -> None:
    code, _out, err = _cli(tmp_path, "search-index", "backfill", "--batch-size", "lots")
    assert code == 1 and "--batch-size" in err
