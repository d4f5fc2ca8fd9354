"""``quipu stage``: a snapshot uploaded to a live server in parts and promoted (tools-core §3.2-§3.3)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from quipu.config import load_settings
from quipu.uploads.client import split_parts
from tests.backends import store_location
from tests.rest.live_server import live_server

EX = "http://ex.org/"
TOKEN = "stage-cli-token-0123456789"


def _snapshot(n: int) -> str:
    return "".join(f'<{EX}s{i}> <{EX}label> "naïve café ☃ {i}" .\n' for i in range(n))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "served.db"
    settings = load_settings(store={"db": str(db)}, server={"auth_token": TOKEN})
    with live_server(settings) as base:
        yield base, db


def _token_file(tmp_path: Path) -> str:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(0o600)
    return str(path)


def test_parts_are_cut_on_character_boundaries() -> None:
    text = "aé☃" * 1000
    parts = split_parts(text, 7)
    assert b"".join(parts).decode("utf-8") == text
    assert all(len(p) <= 7 for p in parts)
    for part in parts:
        part.decode("utf-8")  # each part is valid UTF-8 on its own


def test_stage_uploads_in_parts_and_promotes_like_one_knot(server: tuple[str, Path], tmp_path: Path) -> None:
    base, db = server
    text = _snapshot(400)
    source = tmp_path / "snap.nt"
    source.write_text(text, encoding="utf-8")
    args = [
        "stage",
        str(source),
        "--snapshot",
        "crm",
        "--server",
        base,
        "--token-file",
        _token_file(tmp_path),
    ]
    result = CliRunner().invoke(app, [*args, "--part-bytes", "4096"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["promoted"] is True and answer["parts"] > 1 and answer["snapshot"] == "crm"
    with quipu.open(store_location(tmp_path, "one-shot.db")) as expected:
        expected.knot(text, "nt", replace_snapshot=True, snapshot="crm")
        with quipu.open(str(db)) as served:
            assert served.export() == expected.export()
    again = CliRunner().invoke(app, [*args, "--part-bytes", "4096"])  # a rerun is a replay
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["promoted"] is True


def test_stage_without_the_token_is_refused_with_the_servers_reason(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    base, _db = server
    source = tmp_path / "snap.nt"
    source.write_text(_snapshot(3), encoding="utf-8")
    result = CliRunner().invoke(app, ["stage", str(source), "--snapshot", "crm", "--server", base])
    assert result.exit_code == 2
    assert "HTTP 401" in result.stderr and result.stdout == ""


def test_stage_refuses_an_empty_snapshot_key_before_any_request(tmp_path: Path) -> None:
    source = tmp_path / "snap.nt"
    source.write_text(_snapshot(1), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["stage", str(source), "--snapshot", " ", "--server", "http://127.0.0.1:9"]
    )
    assert result.exit_code == 2 and "snapshot key" in result.stderr
