"""The import graph of ``../shared/design.md``, checked from the source with ``ast``.

Layers, lowest first; a module may import its own package and anything in a lower layer:

    foundation   errors, times, identity, config (and the plain config_files, defaults and
                 secret_files it builds on), version (imported by every layer)
    store        the bitemporal quad store: imports nothing above it
    core         rdfio, shacl, sparql (they may import one another, without a cycle)
    domain       documents, episodes, uploads, governance, logic, and the families to come
    api          the composition root (``KnowledgeBase``), and the demo graph written through it
    rest         the FastAPI app: never imports mcp
    mcp          the MCP adapter: knows tools only as REST calls, so it imports rest and the
                 foundation, never the store, a domain package or the api
    cli          the console scripts, on top

and besides:

* no package below rest imports ``fastapi`` or ``starlette``;
* domain packages touch facts only through ``quipu.store`` functions: they never import the
  fact tables of ``quipu.store.schema``;
* no two modules of a package import each other, even through others, and no two packages do.

Every import counts: module level, inside a function, or under ``TYPE_CHECKING``. The root
``quipu/__init__.py`` (``__version__`` and ``open``) is the package itself and may be imported
from anywhere. ``test_a_planted_violation_is_reported`` shows each rule failing on a temporary
tree.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

ROOT: Final = Path(__file__).resolve().parent.parent / "quipu"

LAYERS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    (
        "foundation",
        frozenset(
            {
                "errors",
                "times",
                "identity",
                "config",
                "config_files",
                "defaults",
                "secret_files",
                "version",
                "_build_info",
            }
        ),
    ),
    ("store", frozenset({"store"})),
    ("core", frozenset({"rdfio", "shacl", "sparql"})),
    (
        "domain",
        frozenset(
            {
                "documents",
                "episodes",
                "uploads",
                "governance",
                "logic",
                "search",
                "graphs",
                "sharing",
                "reasoning",
                "events",
                "owl",
            }
        ),
    ),
    ("api", frozenset({"api", "demo_graph"})),
    ("rest", frozenset({"rest"})),
    ("mcp", frozenset({"mcp"})),
    ("cli", frozenset({"cli"})),
)
RANK: Final = {part: rank for rank, (_layer, parts) in enumerate(LAYERS) for part in parts}
LAYER_OF: Final = {part: layer for layer, parts in LAYERS for part in parts}
DOMAIN: Final = LAYERS[3][1]
MCP_MAY_IMPORT: Final = frozenset({"mcp", "rest"}) | LAYERS[0][1]
# The zpm stdio server is the logic memory's own MCP server: it reads the logic tool registry
# (names, schemas, CLI spellings) and calls the logic service that POST /logic calls, in process.
EXCEPTIONS: Final = frozenset({("mcp.zpm_stdio", "logic")})
WEB_FRAMEWORKS: Final = frozenset({"fastapi", "starlette"})
FACT_TABLES: Final = frozenset(
    {"facts", "transactions", "transaction_auth", "terms", "graphs", "events", "schema_terms"}
)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, relative to quipu ("store.writes")
    target: str  # what it names: a quipu module ("store.schema"), or a top-level distribution
    names: tuple[str, ...]  # the names a ``from`` import takes
    line: int

    @property
    def internal(self) -> bool:
        return not self.target.startswith("!")

    def __str__(self) -> str:
        shown = self.target.lstrip("!")
        return f"quipu/{self.module.replace('.', '/')}.py:{self.line} imports {shown}"


def _modules(root: Path) -> dict[str, Path]:
    """Every module under ``root`` by its dotted name relative to the package (the root is "")."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """The longest known module that ``name`` (dotted, relative to quipu) starts with."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def imports(root: Path = ROOT) -> Iterator[Import]:
    """Every import statement of every module under ``root``, resolved to a module."""
    modules = _modules(root)
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield _classified(module, alias.name, (), node.lineno, modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".") if package else []
                    base = base[: len(base) - node.level + 1]
                    absolute = ".".join([*base, node.module] if node.module else base)
                    name = "quipu" + ("." + absolute if absolute else "")
                else:
                    name = node.module or ""
                taken = tuple(alias.name for alias in node.names)
                submodules = [f"{name}.{n}" for n in taken if _is_module(f"{name}.{n}", modules)]
                for sub in submodules:
                    yield _classified(module, sub, (), node.lineno, modules)
                if len(submodules) < len(taken):
                    yield _classified(module, name, taken, node.lineno, modules)


def _is_module(name: str, modules: dict[str, Path]) -> bool:
    return name.startswith("quipu.") and name.removeprefix("quipu.") in modules


def _classified(
    module: str, name: str, names: tuple[str, ...], line: int, modules: dict[str, Path]
) -> Import:
    if name == "quipu" or name.startswith("quipu."):
        return Import(module, _resolve(name.removeprefix("quipu").lstrip("."), modules), names, line)
    return Import(module, "!" + name.partition(".")[0], names, line)


def _top(module: str) -> str:
    return module.partition(".")[0]


def violations(root: Path = ROOT) -> list[str]:
    """Every broken rule under ``root``, one line each (empty when the layering holds)."""
    found: list[str] = []
    module_edges: dict[str, set[str]] = defaultdict(set)
    package_edges: dict[str, set[str]] = defaultdict(set)
    for imp in imports(root):
        if imp.module == "":
            continue  # the package itself: ``open`` imports the api lazily
        source = _top(imp.module)
        if source not in RANK:
            unplaced = f"quipu/{source} belongs to no layer: add it to LAYERS in tests/test_layers.py"
            found.extend([] if unplaced in found else [unplaced])
            continue
        if not imp.internal:
            if imp.target[1:] in WEB_FRAMEWORKS and RANK[source] < RANK["rest"]:
                found.append(f"{imp}: only rest, mcp and cli may use a web framework")
            continue
        target = _top(imp.target)
        if imp.target == "":
            continue  # ``import quipu`` / ``from quipu import __version__``
        if target not in RANK:
            continue  # reported once, as its own modules' imports
        found.extend(_layer_rule(imp, source, target))
        if source in DOMAIN and imp.target == "store.schema" and FACT_TABLES.intersection(imp.names):
            tables = ", ".join(sorted(FACT_TABLES.intersection(imp.names)))
            found.append(
                f"{imp} ({tables}): domain code reads and writes facts through quipu.store functions"
            )
        if source == target:
            module_edges[imp.module].add(imp.target)
        else:
            package_edges[source].add(target)
    for cycle in _cycles(module_edges):
        found.append(f"import cycle inside quipu/{_top(cycle[0])}: {' -> '.join(cycle)}")
    for cycle in _cycles(package_edges):
        found.append(f"import cycle between packages: {' -> '.join(cycle)}")
    return found


def _layer_rule(imp: Import, source: str, target: str) -> Iterable[str]:
    if (imp.module, target) in EXCEPTIONS:
        return
    if source == "mcp" and target not in MCP_MAY_IMPORT:
        yield f"{imp}: mcp knows tools only as REST calls ({LAYER_OF[target]} is off limits)"
    elif RANK[target] > RANK[source]:
        yield f"{imp}: {LAYER_OF[source]} may not import {LAYER_OF[target]}, a layer above it"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path back to its start) per strongly connected component of ``edges``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_path_through(sorted(c), edges) for c in components]


def _path_through(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A concrete cycle inside ``component``, starting and ending at its first member."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    pending = [start]
    while pending:
        node = pending.pop(0)
        for nxt in sorted(edges.get(node, set()) & members):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                pending.append(nxt)
    return [*component, start]  # unreachable for a real component


# -- the tests -----------------------------------------------------------------------------------


def test_the_source_keeps_the_layering() -> None:
    assert violations() == []


def test_every_package_has_a_layer() -> None:
    tops = {_top(m) for m in _modules(ROOT) if m}
    assert tops <= set(RANK), f"not in a layer: {sorted(tops - set(RANK))}"


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A copy of quipu's package tree with ``files`` (relative paths) added or replaced."""
    package = root / "quipu"
    for path in ROOT.rglob("*.py"):
        target = package / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    for name, text in files.items():
        target = package / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return package


@pytest.mark.parametrize(
    ("planted", "expected"),
    [
        (
            {"store/planted.py": "from quipu.sparql import engine\n"},
            "quipu/store/planted.py:1 imports sparql.engine: store may not import core, a layer above it\n"
            "import cycle between packages: rdfio -> store -> sparql -> rdfio",
        ),
        (
            {"store/planted.py": "def f() -> None:\n    from quipu.api import KnowledgeBase\n"},
            "quipu/store/planted.py:2 imports api: store may not import api, a layer above it\n"
            "import cycle between packages: api -> store -> api",
        ),
        (
            {"episodes/planted.py": "from fastapi import APIRouter\n"},
            "quipu/episodes/planted.py:1 imports fastapi: only rest, mcp and cli may use a web framework",
        ),
        (
            {"rest/planted.py": "from quipu.mcp import registry\n"},
            "quipu/rest/planted.py:1 imports mcp.registry: rest may not import mcp, a layer above it\n"
            "import cycle between packages: mcp -> rest -> mcp",
        ),
        (
            {"mcp/planted.py": "from quipu.store.database import Database\n"},
            "quipu/mcp/planted.py:1 imports store.database: mcp knows tools only as REST calls "
            "(store is off limits)",
        ),
        (
            {"mcp/planted.py": "from quipu.episodes import write\n"},
            "quipu/mcp/planted.py:1 imports episodes.write: mcp knows tools only as REST calls "
            "(domain is off limits)",
        ),
        (
            {"episodes/planted.py": "from quipu.store.schema import ROOT, facts\n"},
            "quipu/episodes/planted.py:1 imports store.schema (facts): domain code reads and writes "
            "facts through quipu.store functions",
        ),
        (
            {
                "store/planted_a.py": "from quipu.store import planted_b\n",
                "store/planted_b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from quipu.store.planted_a import x\n",
            },
            "import cycle inside quipu/store: store.planted_a -> store.planted_b -> store.planted_a",
        ),
        (
            {"rdfio/planted.py": "from quipu.sparql import engine\n"},
            "import cycle between packages: rdfio -> sparql -> rdfio",
        ),
        (
            {"widgets/__init__.py": "from quipu import errors\n"},
            "quipu/widgets belongs to no layer: add it to LAYERS in tests/test_layers.py",
        ),
    ],
)
def test_a_planted_violation_is_reported(tmp_path: Path, planted: dict[str, str], expected: str) -> None:
    tree = _tree(tmp_path, planted)
    assert violations(tree) == expected.split("\n")


def test_the_named_exception_is_the_only_one(tmp_path: Path) -> None:
    """zpm's stdio server may read the logic memory; no other mcp module may."""
    allowed = _tree(tmp_path / "a", {})
    assert violations(allowed) == []
    tree = _tree(tmp_path / "b", {"mcp/planted.py": "from quipu.logic import registry\n"})
    assert violations(tree) == [
        "quipu/mcp/planted.py:1 imports logic.registry: mcp knows tools only as REST calls "
        "(domain is off limits)"
    ]
