"""Shared set-up of the runtime and persistence tests: a real project folder, a real engine."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quipu.logic import project
from quipu.logic.engine import Predicate
from quipu.logic.knowledge import KnowledgeService, ToolResult
from quipu.logic.persistence_tools import PersistenceService
from quipu.logic.runtime import LogicRuntime


class Warnings(list[str]):
    def __call__(self, message: str) -> None:
        self.append(message)

    def mention(self, text: str) -> bool:
        return any(text in message for message in self)


class Session:
    """One process's worth of logic memory: runtime, knowledge tools, persistence tools."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.warnings = Warnings()
        self.runtime = LogicRuntime.open(root, warn=self.warnings)
        self.kb = KnowledgeService(self.runtime.engine, self.runtime.memories, self.runtime.journal_sink)
        self.persistence = PersistenceService(self.runtime)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        if self.persistence.handles(tool):
            return self.persistence.call(tool, arguments)
        return self.kb.call(tool, arguments)

    def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        result = self.call(tool, arguments)
        assert not result.is_error, (tool, arguments, result.text)
        return result.text

    def rows(self, goal: str, memory: str | None = None) -> list[dict[str, Any]]:
        args: dict[str, Any] = {"goal": goal}
        if memory is not None:
            args["memory"] = memory
        value = json.loads(self.ok("query_logic", args))
        assert isinstance(value, list)
        return value

    def predicates(self, memory: str = "default") -> list[Predicate]:
        return self.runtime.engine.predicates(memory)

    def close(self) -> None:
        self.runtime.close()


def state(predicates: list[Predicate]) -> dict[tuple[str, int], tuple[str, ...]]:
    """The clauses of the non-empty predicates, without the source records (whose values say
    how a fact entered: interactive live, journal or snapshot after a restart, R-TM9)."""
    return {(p.name, p.arity): p.clauses for p in predicates if p.clauses and p.name != "zpm_source"}


def sourced_facts(predicates: list[Predicate]) -> dict[str, str]:
    """fact text -> source, from the zpm_source records."""
    out: dict[str, str] = {}
    for p in predicates:
        if (p.name, p.arity) == ("zpm_source", 2):
            for clause in p.clauses:
                inner = clause[len("zpm_source(") : -1]
                fact, _, source = inner.rpartition(", ")
                out.setdefault(fact, source)
    return out


def existing(sources: dict[str, str], clauses: dict[tuple[str, int], tuple[str, ...]]) -> set[str]:
    """The facts with a source record that exist (a record of a removed fact stays behind,
    R-FF2, and means nothing: such a fact's source is unknown, R-TM9)."""
    facts = {c for (name, _), texts in clauses.items() if name != "tms_justification" for c in texts}
    return {fact for fact in sources if fact in facts}


def require_swipl() -> None:
    if shutil.which("swipl") is None:
        pytest.skip("swipl is not installed (run scripts/ensure-swipl.sh)")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_swipl()
    folder = tmp_path / "proj"
    folder.mkdir()
    assert project.init(folder)
    return folder


@pytest.fixture
def session(root: Path) -> Iterator[Session]:
    s = Session(root)
    try:
        yield s
    finally:
        s.close()


def journal_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
