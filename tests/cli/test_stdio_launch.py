"""``quipu mcp``'s flags read without typer, and the tool-list narrowing read without the settings
library (quipu/cli/stdio_launch.py, issue 16)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quipu.cli.stdio_launch import StdioFlags, narrowing, parse
from quipu.config import load_settings

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize(
    ("args", "server", "expected"),
    [
        ([], False, StdioFlags()),
        (["--db", "a.db"], False, StdioFlags(db="a.db")),
        (["--db=a.db", "--config", "q.toml"], False, StdioFlags(db="a.db", config="q.toml")),
        (["--db", "a.db", "--db", "b.db"], False, StdioFlags(db="b.db")),  # the last one counts
        (
            ["--toolsets", "data,service", "--read-only-tools", "--mcp-token-file", "t"],
            False,
            StdioFlags(toolsets="data,service", read_only_tools=True, token_file="t"),
        ),
        (["--mcp-stdio", "--read-only", "--db", "a.db"], True, StdioFlags(db="a.db", read_only=True)),
    ],
)
def test_the_flags_are_read(args: list[str], server: bool, expected: StdioFlags) -> None:
    assert parse(args, server=server) == expected


@pytest.mark.parametrize(
    ("args", "server"),
    [
        (["--help"], False),
        (["--db"], False),  # a missing value: typer's message
        (["--db", "--read-only-tools"], False),
        (["--read-only"], False),  # quipu-server's flag, not quipu mcp's
        (["--mcp-stdio", "--bind", ":0"], True),  # checked by typer's path
        (["positional"], False),
        (["--nope"], True),
    ],
)
def test_anything_else_is_left_to_typer(args: list[str], server: bool) -> None:
    assert parse(args, server=server) is None


def _config(tmp_path: Path, mcp_table: str) -> str:
    path = tmp_path / "quipu.toml"
    path.write_text(f"[quipu.mcp]\n{mcp_table}\n", encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.upper().startswith("QUIPU_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("table", "flags", "expected"),
    [
        ("", StdioFlags(), (None, False)),
        ('toolsets = ["data"]', StdioFlags(), (["data"], False)),
        ('toolsets = ["data"]\nread_only_tools = true', StdioFlags(), (["data"], True)),
        ('toolsets = ["data"]', StdioFlags(toolsets="service,search"), (["service", "search"], False)),
        ("read_only_tools = false", StdioFlags(read_only_tools=True), (None, True)),
    ],
)
def test_the_narrowing_is_what_the_settings_will_hold(
    tmp_path: Path, table: str, flags: StdioFlags, expected: tuple[list[str] | None, bool]
) -> None:
    config = _config(tmp_path, table)
    flags = StdioFlags(**{**flags.__dict__, "config": config})
    assert narrowing(flags) == expected
    settings = load_settings(
        config,
        mcp={
            "toolsets": flags.toolsets.split(",") if flags.toolsets else None,
            "read_only_tools": True if flags.read_only_tools else None,
        },
    )
    assert (settings.mcp.toolsets, settings.mcp.read_only_tools) == expected


@pytest.mark.parametrize("table", ['toolsets = "data"', 'read_only_tools = "yes"', "toolsets = [1]"])
def test_a_value_of_the_wrong_form_waits_for_the_settings(tmp_path: Path, table: str) -> None:
    assert narrowing(StdioFlags(config=_config(tmp_path, table))) is None


def test_an_environment_variable_waits_for_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUIPU_MCP__READ_ONLY_TOOLS", "true")
    assert narrowing(StdioFlags()) is None


def test_a_missing_config_file_waits_for_the_settings(tmp_path: Path) -> None:
    assert narrowing(StdioFlags(config=str(tmp_path / "absent.toml"))) is None
