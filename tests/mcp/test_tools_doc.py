"""``docs/tools.md`` and the README agree with the tool registry (issue 5 §7)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from quipu.logic.registry import tool_names
from quipu.mcp.docs import COMMAND, REGENERATE, current_registry, render, served_counts
from quipu.mcp.registry import Registry

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

ROOT: Final = Path(__file__).resolve().parents[2]
DOC: Final = ROOT / "docs" / "tools.md"
README: Final = ROOT / "README.md"
STALE: Final = (
    f"docs/tools.md is out of date with the tool registry: run `{REGENERATE}` (or `uv run {COMMAND}`)"
)


@pytest.fixture(scope="module")
def registry() -> Registry:
    return current_registry()


def test_tools_doc_is_the_rendered_registry(registry: Registry) -> None:
    assert DOC.is_file(), STALE
    assert DOC.read_text(encoding="utf-8") == render(registry, registry.missing), STALE


def test_readme_states_the_served_tool_count(registry: Registry) -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    found = re.findall(r"All (\d+) tools are served \((\d+) with the owl extra; docs/tools\.md", text)
    assert len(found) == 1, (
        "README.md's MCP section must say 'All N tools are served (M with the owl extra; docs/tools.md'"
    )
    served, default, _, _ = served_counts(registry)
    assert default == 77
    assert (int(found[0][0]), int(found[0][1])) == (default, 79)
    assert served == default, f"README.md says all {default} tools are served; the registry serves {served}"


def test_tools_doc_lists_every_served_tool_with_route_annotations_and_parameters(registry: Registry) -> None:
    page = render(registry)
    for spec in registry:
        section = page.split(f"### {spec.name}\n", 1)[1].split("\n### ", 1)[0]
        assert f"`{spec.method} {spec.path}`" in section, spec.name
        for hint, value in spec.annotations().items():  # a logic tool's are zpm's own
            assert f"`{hint}: {str(value).lower()}`" in section, (spec.name, hint)
        assert f"`readOnlyHint: {str(spec.read_only).lower()}`" in section, spec.name
        for name in spec.input_schema.get("properties", {}):
            assert f"| `{name}` |" in section, (spec.name, name)
    knot = page.split("### quipu_knot\n", 1)[1].split("\n### ", 1)[0]
    assert "| `turtle` | string | yes |" in knot
    entity = page.split("### quipu_entity\n", 1)[1].split("\n### ", 1)[0]
    assert "| `expanded` | boolean | no |" in entity


def test_tools_doc_counts_and_lists_the_tools_not_served_yet(registry: Registry) -> None:
    page = render(registry)
    served, default, owl_served, owl = served_counts(registry)
    assert (
        f"**{served} of the {default} tools are served today** (and {owl_served} of the {owl} tools" in page
    )
    missing_part = page.split("\n## Not served yet\n", 1)[1]
    for entry in registry.missing:
        assert f"- `{entry.name}` — `{entry.method} {entry.path}`" in missing_part, entry.name
        assert f"### {entry.name}\n" not in page, entry.name
    quipu = [spec for spec in registry if spec.toolset != "logic"]
    assert len(quipu) + len(registry.missing) == 79


def test_tools_doc_has_the_opt_in_logic_section_in_zpms_order(registry: Registry) -> None:
    page = render(registry)
    assert "| [logic](#logic) (opt-in) | 29 | 0 |" in page
    logic = page.split("\n## logic\n", 1)[1].split("\n## Not served yet\n", 1)[0]
    assert "opt-in" in logic and "`zpm serve`" in logic
    listed = re.findall(r"^### (\w+)$", logic, flags=re.MULTILINE)
    assert listed == list(tool_names())
    mount = logic.split("### mount_memory\n", 1)[1].split("\n### ", 1)[0]
    # zpm's own hints, not the route class's: a mount is a write that destroys nothing.
    assert "`readOnlyHint: false`, `destructiveHint: false`, `idempotentHint: false`" in mount


def test_render_escapes_table_cells_and_is_deterministic(registry: Registry) -> None:
    assert render(registry) == render(registry)
    # "string | null" must not split a table row into extra cells
    cord = render(registry).split("### quipu_cord\n", 1)[1].split("\n### ", 1)[0]
    assert "| `limit` | integer \\| null | no |" in cord


def test_the_module_prints_the_page_on_stdout() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "quipu.mcp.docs"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == DOC.read_text(encoding="utf-8"), STALE


def test_the_module_writes_the_page_with_write(tmp_path: Path) -> None:
    target = tmp_path / "tools.md"
    done = subprocess.run(
        [sys.executable, "-m", "quipu.mcp.docs", "--write", str(target)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert target.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
