"""The explorer's files at /ui: served from package data without a credential (they hold no
data), under a strict Content-Security-Policy, with nothing fetched from another origin, and no
way out of their directory. The browser tests (test_explorer.py) check what the page does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.config import load_settings
from quipu.rest.app import create_app
from quipu.rest.explorer import ASSETS

pytestmark = pytest.mark.backend_independent

TOKEN = "ui-read-token-0123456789"


def serve(tmp_path: Path, **settings: Any) -> TestClient:
    """A client of an app over a store of its own: a SQLite file, whatever the backend under test."""
    return TestClient(create_app(load_settings(store={"db": str(tmp_path / "ui.db")}, **settings)))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[TestClient]:
    """A server whose reads need a token."""
    with serve(tmp_path, server={"read_auth": "token", "auth_token": TOKEN}) as c:
        yield c


def test_the_explorer_is_served_at_ui_with_its_security_headers(client: TestClient) -> None:
    page = client.get("/ui/")
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert '<canvas id="graph"' in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    moved = client.get("/ui", follow_redirects=False)
    assert moved.status_code in (301, 307, 308) and moved.headers["location"].endswith("/ui/")
    script = client.get("/ui/js/main.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]


def test_files_need_no_token_but_every_read_does(guarded: TestClient) -> None:
    assert guarded.get("/ui/").status_code == 200
    assert guarded.get("/ui/vendor/d3-force.min.js").status_code == 200
    assert guarded.post("/graph", json={}).status_code == 401
    assert guarded.post("/graph", json={}, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


@pytest.mark.parametrize(
    "path",
    ["/ui/../quipu/config.py", "/ui/%2e%2e/explorer.py", "/ui/..%2fexplorer.py", "/ui/js/../../explorer.py"],
)
def test_no_path_leaves_the_assets_directory(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404 or "def install" not in response.text


def test_nothing_is_fetched_from_another_origin() -> None:
    """Air-gapped: every script, style and import is one of our files, and no code builds a URL
    to another host (the vendored files name their homepage in a comment only)."""
    html = (ASSETS / "index.html").read_text()
    for ref in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert ref == "#" or ref.startswith(("js/", "vendor/", "explorer.css", "data:")), ref
    for script in (ASSETS / "js").glob("*.js"):
        text = script.read_text()
        assert "http://" not in text.replace("http://www.w3.org/", "").replace("http://schema.org/", "")
        assert "https://" not in text, script.name
        for module in re.findall(r'from "([^"]+)"', text):
            assert module.startswith("./"), (script.name, module)
    for vendored in (ASSETS / "vendor").glob("*.js"):
        code = re.sub(r"^//[^\n]*\n", "", vendored.read_text())
        assert "http://" not in code and "https://" not in code, vendored.name


def test_the_vendored_library_carries_its_licence() -> None:
    licence = (ASSETS / "vendor" / "LICENSE-d3.txt").read_text()
    assert "Mike Bostock" in licence and "Permission to use, copy, modify" in licence
    notes = (ASSETS / "vendor" / "README.md").read_text()
    for name in ("d3-dispatch", "d3-quadtree", "d3-timer", "d3-force"):
        assert f"{name}.min.js" in notes and (ASSETS / "vendor" / f"{name}.min.js").is_file()
