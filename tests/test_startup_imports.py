"""Every entry point imports only what its first answer needs (issue 16).

Each command-line module is imported in a fresh interpreter, and each quick command (``--help``,
``version``) runs in one, and the heavy libraries must be absent from ``sys.modules`` afterwards.
Nothing here measures time: ``just bench logic`` prints the start-up figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

pytestmark = pytest.mark.backend_independent

# The libraries a first answer never needs; pydantic is the settings' (and the SDK's) and no
# help text or handshake waits for it.
HEAVY: Final = (
    "pyshacl", "rdflib", "alembic", "fastapi", "starlette", "sqlalchemy", "pydantic", "pydantic_settings",
    "mcp", "mcp_types", "httpx", "pyoxigraph", "uvicorn", "jsonschema",
    "quipu.rest", "quipu.api", "quipu.store", "quipu.config", "quipu.sparql", "quipu.documents",
)  # fmt: skip
CLI: Final = sorted(
    f"quipu.cli.{path.stem}"
    for path in (Path(__file__).resolve().parent.parent / "quipu" / "cli").glob("*.py")
    if path.stem != "__init__"
)
# What `quipu mcp` and `zpm serve` run before their first answer: not even typer.
STDIO_FRONTS: Final = ("quipu.cli.entry", "quipu.cli.stdio_launch", "quipu.mcp.stdio", "quipu.mcp.zpm_stdio")


def _loaded_after(code: str) -> list[str]:
    probe = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: sys.stderr.write('LOADED ' + json.dumps(sorted(sys.modules)) + '\\n'))\n"
        f"{code}\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    marker = [line for line in out.stderr.splitlines() if line.startswith("LOADED ")]
    assert marker, out.stderr
    loaded: list[str] = json.loads(marker[-1].removeprefix("LOADED "))
    return loaded


def _heavy(loaded: list[str], extra: tuple[str, ...] = ()) -> list[str]:
    names = HEAVY + extra
    return sorted(
        {name for name in loaded for heavy in names if name == heavy or name.startswith(heavy + ".")}
    )


def test_every_cli_module_is_listed() -> None:
    assert {"quipu.cli.main", "quipu.cli.entry", "quipu.cli.server", "quipu.cli.zpm"} <= set(CLI)


@pytest.mark.parametrize("module", [*CLI, "quipu.mcp.stdio", "quipu.mcp.handshake", "quipu.mcp.zpm_stdio"])
def test_an_entry_module_imports_no_heavy_library(module: str) -> None:
    extra = ("typer", "click", "rich") if module in STDIO_FRONTS else ()
    assert _heavy(_loaded_after(f"import {module}"), extra) == []


@pytest.mark.parametrize(
    ("entry", "argv"),
    [
        ("quipu.cli.entry:main", ["quipu", "--help"]),
        ("quipu.cli.entry:main", ["quipu", "version"]),
        ("quipu.cli.entry:main", ["quipu", "--version"]),
        ("quipu.cli.entry:main", ["quipu", "tool", "--help"]),
        ("quipu.cli.entry:main", ["quipu", "mcp", "--help"]),
        ("quipu.cli.entry:server_main", ["quipu-server", "--help"]),
        ("quipu.cli.entry:server_main", ["quipu-server", "--version"]),
        ("quipu.cli.zpm:main", ["zpm", "--help"]),
    ],
)
def test_a_quick_command_imports_no_heavy_library(entry: str, argv: list[str]) -> None:
    module, function = entry.split(":")
    code = f"import sys\nsys.argv = {argv!r}\nfrom {module} import {function}\ntry:\n    {function}()\nexcept SystemExit:\n    pass"
    loaded = _loaded_after(code)
    # Help is plain click text: Rich's renderer would import a markdown parser and more.
    assert _heavy(loaded, ("rich",)) == []


def test_version_needs_no_command_line_library() -> None:
    loaded = _loaded_after(
        "import sys\nsys.argv = ['quipu', 'version']\nfrom quipu.cli.entry import main\nmain()"
    )
    assert _heavy(loaded, ("typer", "click", "rich")) == []
