"""One error model on the wire: problem documents, the body limit, request ids and CORS."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.config import load_settings
from quipu.errors import QuipuError, ResultTooLarge, WrongType
from quipu.rest.app import create_app
from quipu.rest.middleware import MAX_BODY
from quipu.rest.problems import problem_body
from tests.backends import store_location

EX = "http://ex.org/"


def _client(tmp_path: Path, **server: Any) -> TestClient:
    return TestClient(
        create_app(load_settings(store={"db": store_location(tmp_path, "p.db")}, server=server))
    )


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with _client(tmp_path) as c:
        yield c


def _problem(response: Any, status: int, reason: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["reason"] == reason
    assert body["status"] == status
    assert body["type"] == f"urn:quipu:problem:{reason}"
    assert isinstance(body["error"], str) and body["error"]
    return body


def test_problem_body_carries_rfc9457_and_quipu_members() -> None:
    body = problem_body(WrongType("'tx': must be an integer", field="tx"))
    assert body == {
        "type": "urn:quipu:problem:wrong_type",
        "title": "Bad Request",
        "status": 400,
        "error": "'tx': must be an integer",
        "reason": "wrong_type",
        "field": "tx",
    }
    assert problem_body(ResultTooLarge("too many"))["status"] == 422


def test_every_error_class_has_a_real_status() -> None:
    def walk(cls: type[QuipuError]) -> Iterator[type[QuipuError]]:
        yield cls
        for sub in cls.__subclasses__():
            yield from walk(sub)

    for cls in walk(QuipuError):
        assert 400 <= cls.status < 600, cls
        assert cls.reason and cls.reason == cls.reason.lower()


def test_unknown_route_is_a_problem(client: TestClient) -> None:
    _problem(client.get("/no/such/route"), 404, "no_such_route")


def test_wrong_method_is_a_problem(client: TestClient) -> None:
    _problem(client.delete("/knot"), 405, "method_not_allowed")


def test_invalid_json_is_400_not_422(client: TestClient) -> None:
    response = client.post("/knot", content=b"{not json", headers={"Content-Type": "application/json"})
    _problem(response, 400, "bad_request")


def test_body_that_is_not_an_object_is_wrong_type(client: TestClient) -> None:
    _problem(client.post("/knot", json=["turtle"]), 400, "wrong_type")


def test_missing_required_field_names_it(client: TestClient) -> None:
    body = _problem(client.post("/knot", json={}), 400, "missing_field")
    assert body["field"] == "turtle"
    assert "missing 'turtle' parameter" in body["error"]


def test_wrong_type_names_the_field(client: TestClient) -> None:
    body = _problem(client.post("/knot", json={"turtle": 5}), 400, "wrong_type")
    assert body["field"] == "turtle"


def test_strict_route_refuses_unknown_query_parameter(client: TestClient) -> None:
    body = _problem(client.get("/stats", params={"graph": "x"}), 400, "unknown_field")
    assert body["field"] == "graph"


def test_oversize_body_is_413_and_writes_nothing(client: TestClient) -> None:
    kb = client.app.state.kb  # type: ignore[attr-defined]
    before = (kb.export("ntriples"), kb.transactions(limit=None))
    filler = "x" * (MAX_BODY + 1 - len('{"turtle": ""}'))
    response = client.post(
        "/knot", content=f'{{"turtle": "{filler}"}}'.encode(), headers={"Content-Type": "application/json"}
    )
    _problem(response, 413, "payload_too_large")
    assert (kb.export("ntriples"), kb.transactions(limit=None)) == before


def test_oversize_chunked_body_is_413(client: TestClient) -> None:
    chunk = b"x" * (1024 * 1024)

    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_BODY // len(chunk) + 1):
            yield chunk

    response = client.post("/knot", content=chunks(), headers={"Content-Type": "application/json"})
    _problem(response, 413, "payload_too_large")


def test_a_body_at_the_limit_is_read(client: TestClient) -> None:
    # A chunked body under the limit is replayed to the handler intact.
    doc = f'<{EX}a> <{EX}b> "c" .'.encode()

    def chunks() -> Iterator[bytes]:
        yield b'{"turtle": "'
        yield doc.replace(b'"', b'\\"')
        yield b'"}'

    response = client.post("/knot", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 1


def test_request_id_is_echoed_or_made(client: TestClient) -> None:
    given = client.get("/health", headers={"X-Request-Id": "abc-123"})
    assert given.headers["x-request-id"] == "abc-123"
    made = client.get("/health", headers={"X-Request-Id": "bad id with spaces"})
    assert made.headers["x-request-id"] != "bad id with spaces"
    assert len(made.headers["x-request-id"]) == 32
    assert client.get("/nope").headers["x-request-id"]


def test_access_log_line_per_request(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="quipu.access"):
        client.get("/stats", headers={"X-Request-Id": "req-42"})
    records = [r for r in caplog.records if r.name == "quipu.access"]
    assert records
    fields = records[-1].fields  # type: ignore[attr-defined]
    assert fields["request_id"] == "req-42"
    assert fields["route"] == "/stats"
    assert fields["status"] == 200
    assert fields["method"] == "GET"
    assert fields["duration_ms"] >= 0


def test_cors_is_closed_by_default(client: TestClient) -> None:
    response = client.get("/health", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers


def test_cors_allowlist(tmp_path: Path) -> None:
    with _client(tmp_path, cors_allowed_origins=["https://app.example"]) as c:
        allowed = c.get("/health", headers={"Origin": "https://app.example"})
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        other = c.get("/health", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
        preflight = c.options(
            "/knot",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        assert preflight.status_code == 200
        assert "POST" in preflight.headers["access-control-allow-methods"]


def test_openapi_and_docs_are_served(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert {"/query", "/knot", "/health"} <= set(schema["paths"])
    ids = [op["operationId"] for path in schema["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    assert client.get("/docs").status_code == 200
