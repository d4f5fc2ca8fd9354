"""POST /logic/<tool>: the tool's arguments as the body, the tools/call result as the answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.config import load_settings
from quipu.logic import project
from quipu.logic.registry import load_tools
from quipu.rest import route_table
from quipu.rest.app import create_app
from tests.backends import store_location
from tests.logic.runtime_support import require_swipl


def _settings(tmp_path: Path, folder: Path | None, **server: Any) -> Any:
    logic = {} if folder is None else {"project": str(folder)}
    return load_settings(store={"db": store_location(tmp_path, "s.db")}, server=server, logic=logic)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    require_swipl()
    path = tmp_path / "proj"
    path.mkdir()
    project.init(path)
    return path


@pytest.fixture
def client(tmp_path: Path, folder: Path) -> Iterator[TestClient]:
    with TestClient(create_app(_settings(tmp_path, folder))) as c:
        yield c


def _text(response: Any) -> str:
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"content", "isError"}
    assert body["isError"] is False, body
    (item,) = body["content"]
    assert item["type"] == "text"
    text: str = item["text"]
    return text


def test_the_route_table_holds_every_tool_as_tools_json_classifies_it() -> None:
    logic = {route: cls for route, cls in route_table.ROUTES.items() if route[1].startswith("/logic/")}
    expected = {
        (tool.rest_method, tool.rest_path): route_table.READ if tool.read_only else route_table.WRITE
        for tool in load_tools()
    }
    assert logic == expected
    assert len(logic) == 29


def test_every_tool_is_served_with_its_schema(tmp_path: Path) -> None:
    spec = create_app(_settings(tmp_path, None)).openapi()
    for tool in load_tools():
        operation = spec["paths"][tool.rest_path]["post"]
        assert operation["operationId"] == f"logic_{tool.name}"
        body = operation["requestBody"]
        assert body["required"] is False
        assert body["content"]["application/json"]["schema"] == tool.input_schema
        assert "503" in operation["responses"]


def test_a_write_then_a_read_round_trip(client: TestClient, folder: Path) -> None:
    assert _text(client.post("/logic/remember_fact", json={"fact": "human(socrates)"})) == (
        "Asserted: human(socrates)"
    )
    assert json.loads(_text(client.post("/logic/query_logic", json={"goal": "human(X)"}))) == [
        {"X": "socrates"}
    ]
    # The write went to the project's journal, the project the setting named.
    assert "human(socrates)" in (folder / ".zpm" / "data" / "journal.wal").read_text(encoding="utf-8")


def test_an_empty_body_is_no_arguments(client: TestClient) -> None:
    listed = json.loads(_text(client.post("/logic/list_memories")))
    assert [m["name"] for m in listed["memories"]] == ["default"]
    assert _text(client.post("/logic/get_persistence_status", content=b"  ")).startswith("status: active")


def test_a_tool_error_is_a_200_result_with_is_error(client: TestClient) -> None:
    response = client.post("/logic/remember_fact", json={})
    assert response.status_code == 200
    assert response.json() == {"content": [{"type": "text", "text": "InvalidArguments"}], "isError": True}
    wrong = client.post("/logic/remember_fact", json={"fact": 7})
    assert wrong.status_code == 200
    assert wrong.json()["isError"] is True


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"3", b"null"])
def test_a_non_object_body_is_400_wrong_type(client: TestClient, body: bytes) -> None:
    response = client.post("/logic/echo", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["reason"] == "wrong_type"
    assert response.headers["content-type"].startswith("application/problem+json")


def test_a_body_that_is_not_json_is_400(client: TestClient) -> None:
    response = client.post("/logic/echo", content=b"{nope", headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["reason"] == "bad_request"


def test_an_unknown_tool_is_404_from_routing(client: TestClient) -> None:
    response = client.post("/logic/no_such_tool", json={})
    assert response.status_code == 404
    assert response.json()["reason"] == "no_such_route"
    assert client.get("/logic/echo").status_code == 405


def test_read_only_refuses_the_write_tools_and_serves_the_reads(tmp_path: Path, folder: Path) -> None:
    with TestClient(create_app(_settings(tmp_path, folder, read_only=True))) as c:
        refused = c.post("/logic/remember_fact", json={"fact": "x(1)"})
        assert refused.status_code == 403
        assert refused.json()["reason"] == "server_is_read_only"
        assert refused.json()["endpoint"] == "/logic/remember_fact"
        assert not c.app.state.logic.opened  # type: ignore[attr-defined]  # refused before the engine
        assert _text(c.post("/logic/echo", json={"message": "still here"})) == "still here"
    assert not (folder / ".zpm" / "data" / "journal.wal").read_text(encoding="utf-8").strip()


def test_a_missing_project_is_a_problem_naming_it_and_the_store_still_serves(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    with TestClient(create_app(_settings(tmp_path, bare))) as c:
        response = c.post("/logic/echo", json={"message": "hi"})
        assert response.status_code == 400
        body = response.json()
        assert body["reason"] == "project_not_found"
        assert str(bare) in body["error"] and "zpm init" in body["error"]
        assert (
            c.post("/knot", json={"turtle": '<http://ex.org/a> <http://ex.org/b> "c" .'}).status_code == 200
        )


def test_a_missing_engine_is_503_and_the_store_still_serves(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUIPU_SWIPL", str(tmp_path / "no-swipl-here"))
    with TestClient(create_app(_settings(tmp_path, folder))) as c:
        response = c.post("/logic/remember_fact", json={"fact": "x(1)"})
        assert response.status_code == 503
        body = response.json()
        assert body["reason"] == "engine_unavailable"
        assert "no-swipl-here" in body["error"]
        assert c.get("/health").status_code == 200
        assert c.post("/query", json={"query": "ASK { ?s ?p ?o }"}).status_code == 200


def test_the_runtime_opens_on_the_first_logic_call_and_closes_at_shutdown(
    tmp_path: Path, folder: Path
) -> None:
    with TestClient(create_app(_settings(tmp_path, folder))) as c:
        host = c.app.state.logic  # type: ignore[attr-defined]
        assert c.get("/health").status_code == 200
        assert not host.opened
        _text(c.post("/logic/echo", json={"message": "hi"}))
        runtime = host.service().runtime
    assert runtime.closed
    assert not host.opened


def test_the_servers_logic_memory_reads_its_own_graph(client: TestClient) -> None:
    """quipu-server wires its store into the logic memory: rdf/3 answers from it (docs/logic.md),
    at the current state and at a past valid time, on either backend."""
    kb = client.app.state.kb  # type: ignore[attr-defined]
    kb.knot(
        "<http://ex.org/svc> <http://ex.org/ownedBy> <http://ex.org/payments> .",
        "nt",
        timestamp="2026-11-01T00:00:00Z",
    )
    kb.set(
        "http://ex.org/svc",
        "http://ex.org/ownedBy",
        {"iri": "http://ex.org/growth"},
        timestamp="2026-11-10T00:00:00Z",
    )

    def owner(goal: str) -> Any:
        response = client.post("/logic/query_logic", json={"goal": goal})
        return json.loads(_text(response))

    assert owner("rdf('http://ex.org/svc', 'http://ex.org/ownedBy', T)") == [{"T": "http://ex.org/growth"}]
    past = "rdf_at('http://ex.org/svc', 'http://ex.org/ownedBy', T, '2026-11-05T00:00:00Z')"
    assert owner(past) == [{"T": "http://ex.org/payments"}]


def test_a_join_over_the_servers_graph_loads_its_inner_pattern_on_either_backend(client: TestClient) -> None:
    """A two-pattern join over 40 services: past its 8th lookup the inner pattern is counted and
    read whole (one streamed statement, quipu/store/pattern_reads.match_stream), on SQLite and on
    PostgreSQL alike; the answer is the same as one read per lookup would give."""
    kb = client.app.state.kb  # type: ignore[attr-defined]
    lines = []
    for i in range(40):
        lines.append(f"<http://ex.org/s{i}> <http://ex.org/runs> <http://ex.org/r{i}> .")
        status = "failed" if i % 4 == 0 else "passed"
        lines.append(f'<http://ex.org/r{i}> <http://ex.org/status> "{status}" .')
    kb.knot("\n".join(lines), "nt")
    goal = (
        "findall(S, (rdf(S, 'http://ex.org/runs', R), rdf(R, 'http://ex.org/status', literal(failed))), L), "
        "msort(L, Failed)"
    )
    response = client.post("/logic/query_logic", json={"goal": goal})
    (row,) = json.loads(_text(response))
    assert row["Failed"] == sorted(f"http://ex.org/s{i}" for i in range(0, 40, 4))
