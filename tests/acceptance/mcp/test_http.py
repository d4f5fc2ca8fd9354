"""Streamable HTTP only: the Origin and Host checks, POST only, no sessions (raw JSON-RPC posts)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
import pytest

from tests.acceptance.mcp.harness import ALLOWED_ORIGIN, EXTRA_HOST, LEGACY_ERA, Target, serve

INITIALIZE: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY_ERA,
        "capabilities": {},
        "clientInfo": {"name": "quipu-acceptance", "version": "0"},
    },
}
JSON_RPC: Final = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with serve("http", tmp_path_factory.mktemp("http-only")) as served:
        yield served


def _port(target: Target) -> int:
    assert target.url is not None
    port = urlsplit(target.url).port
    assert port is not None
    return port


def _own_origins(port: int) -> list[str]:
    return [f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"]


def _post(target: Target, **headers: str) -> httpx.Response:
    assert target.url is not None
    return httpx.post(target.url + "/mcp", json=INITIALIZE, headers={**JSON_RPC, **headers}, timeout=10.0)


def _initialized(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()
    assert (message["jsonrpc"], message["id"]) == ("2.0", 1)
    result: dict[str, Any] = message["result"]
    assert result["protocolVersion"] == LEGACY_ERA
    assert result["serverInfo"]["name"] == "quipu"
    return result


def test_a_request_without_origin_is_served_and_opens_no_session(http: Target) -> None:
    response = _post(http)
    _initialized(response)
    assert "mcp-session-id" not in response.headers  # stateless: nothing to go stale on restart


def test_a_listed_browser_origin_is_served(http: Target) -> None:
    _initialized(_post(http, Origin=ALLOWED_ORIGIN))


def test_the_servers_own_loopback_origins_are_served(http: Target) -> None:
    # A page the server itself serves (a browser client on this machine) posts with its origin.
    for origin in _own_origins(_port(http)):
        _initialized(_post(http, Origin=origin))


def test_a_loopback_origin_on_another_port_is_refused_with_403(http: Target) -> None:
    # Another local web app (a dev server, a rebinding page) is not this server's own origin.
    port = _port(http)
    for origin in [*_own_origins(port + 1), "http://localhost", f"https://localhost:{port}"]:
        response = _post(http, Origin=origin)
        assert response.status_code == 403, origin
        assert "result" not in response.text


def test_own_origins_under_the_default_configuration(tmp_path: Path) -> None:
    # No cors_allowed_origins at all. The harness passes its port to uvicorn only, so the settings
    # still say 3030: the origin follows the port the server really listens on.
    with serve("http", tmp_path, overrides={"server": {"cors_allowed_origins": []}}) as target:
        port = _port(target)
        for origin in _own_origins(port):
            _initialized(_post(target, Origin=origin))
        refused = ["http://evil.example", ALLOWED_ORIGIN]
        if port != 3030:
            refused.append("http://127.0.0.1:3030")
        for origin in refused:
            assert _post(target, Origin=origin).status_code == 403, origin
        assert _post(target, Host="evil.example", Origin=f"http://127.0.0.1:{port}").status_code == 421


@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost:8000", "null"])
def test_a_browser_origin_not_in_cors_allowed_origins_is_refused_with_403(http: Target, origin: str) -> None:
    response = _post(http, Origin=origin)
    assert response.status_code == 403
    assert "result" not in response.text


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8443", f"{EXTRA_HOST}.evil.example:80"])
def test_a_host_outside_loopback_and_allowed_hosts_is_refused_with_421(http: Target, host: str) -> None:
    response = _post(http, Host=host)
    assert response.status_code == 421
    assert "result" not in response.text


# A Host without a port (the scheme's default, e.g. behind a proxy) matches a "name:*" pattern too.
@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:9", "[::1]:3030", f"{EXTRA_HOST}:8443", EXTRA_HOST])
def test_loopback_hosts_and_configured_allowed_hosts_are_served(http: Target, host: str) -> None:
    _initialized(_post(http, Host=host))


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_mcp_answers_only_post(http: Target, method: str) -> None:
    assert http.url is not None
    response = httpx.request(method, http.url + "/mcp", headers={"Accept": "text/event-stream"}, timeout=10.0)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["reason"] == "method_not_allowed"


def test_a_body_over_64_mib_is_refused_with_413(http: Target) -> None:
    assert http.url is not None
    body = json.dumps(INITIALIZE).encode()[:-1] + b', "padding": "' + b"x" * (64 * 1024 * 1024) + b'"}'
    response = httpx.post(http.url + "/mcp", content=body, headers=JSON_RPC, timeout=60.0)
    assert response.status_code == 413
    assert response.json()["reason"] == "payload_too_large"
