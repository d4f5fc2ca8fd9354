"""User predicates whose names the engine also uses (issue 16).

Agents choose their own predicate names: ``volatile(temp)`` or ``table(kitchen)`` must be stored
and read like any other fact, although SWI-Prolog has system predicates (and operators) of
those names. Each name runs through every path that stores or shows a clause: assert, query,
assume and retract_assumption, the schema, explain_why, a snapshot saved and restored, and a
restart that loads the snapshot and replays the journal. Before the change, every name here but
``text/1`` was refused with "cannot redefine built-in". ISO built-ins and control constructs
stay refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quipu.logic import project
from quipu.logic.service import LogicHost, LogicService
from tests.logic.runtime_support import require_swipl

pytestmark = pytest.mark.backend_independent  # no quad store is opened

NAMES = [
    ("volatile", 1), ("table", 1), ("format", 2), ("string", 1), ("text", 1), ("dynamic", 1),
    ("discontiguous", 1), ("multifile", 1), ("print", 1), ("tab", 1), ("succ", 2), ("plus", 3),
    ("between", 3), ("msort", 2), ("ignore", 1), ("is_list", 1), ("writeln", 1),
    ("atom_number", 2), ("forall", 2), ("shell", 1),
]  # fmt: skip


def _term(name: str, arity: int, tag: str) -> str:
    return f"{name}({', '.join(f'{tag}{i}' for i in range(arity))})"


def _pattern(arity: int) -> list[str]:
    return [f"X{i}" for i in range(arity)]


def _call(service: LogicService, tool: str, **arguments: str) -> str:
    result = service.call(tool, arguments)
    assert not result.is_error, (tool, arguments, result.text)
    return result.text


def _facts(service: LogicService, name: str, arity: int) -> list[str]:
    variables = _pattern(arity)
    rows = json.loads(_call(service, "query_logic", goal=f"{name}({', '.join(variables)})"))
    return sorted(f"{name}({', '.join(row[v] for v in variables)})" for row in rows)


@pytest.mark.parametrize(("name", "arity"), NAMES, ids=[f"{n}/{a}" for n, a in NAMES])
def test_a_user_predicate_named_like_an_engine_predicate(tmp_path: Path, name: str, arity: int) -> None:
    require_swipl()
    project.init(tmp_path)
    kept, assumed = _term(name, arity, "k"), _term(name, arity, "a")
    host = LogicHost(tmp_path)
    try:
        kb = host.service()
        assert _call(kb, "remember_fact", fact=kept) == f"Asserted: {kept}"
        assert _facts(kb, name, arity) == [kept]
        _call(kb, "assume_fact", fact=assumed, assumption="guess")
        assert _facts(kb, name, arity) == sorted([kept, assumed])
        _call(kb, "retract_assumption", assumption="guess")
        assert _facts(kb, name, arity) == [kept]
        schema = json.loads(_call(kb, "get_knowledge_schema"))["predicates"]
        assert {"name": name, "arity": arity} in [{"name": p["name"], "arity": p["arity"]} for p in schema]
        why = json.loads(_call(kb, "explain_why", fact=kept))
        assert why["proven"] is True and why["proof_tree"]["goal"] == kept  # the user's own form
        _call(kb, "save_snapshot", name="before")
        _call(kb, "forget_fact", fact=kept)
        assert _facts(kb, name, arity) == []
        _call(kb, "restore_snapshot", name="before")
        assert _facts(kb, name, arity) == [kept]
        _call(kb, "remember_fact", fact=_term(name, arity, "j"))  # only in the journal
    finally:
        host.close()
    snapshot = (tmp_path / ".zpm" / "kb" / "before.pl").read_text(encoding="utf-8")
    assert f"\n{kept}.\n" in snapshot  # written as the user wrote it, not as an operator
    host = LogicHost(tmp_path)
    try:  # a restart: the snapshot file loads, the journal replays
        assert _facts(host.service(), name, arity) == sorted([kept, _term(name, arity, "j")])
    finally:
        host.close()


@pytest.mark.parametrize("fact", ["atom_length(a, 1)", "call(x)", "=(a, b)", "findall(a, b, c)", "','(a, b)"])
def test_iso_built_ins_and_control_constructs_stay_refused(tmp_path: Path, fact: str) -> None:
    require_swipl()
    project.init(tmp_path)
    host = LogicHost(tmp_path)
    try:
        result = host.service().call("remember_fact", {"fact": fact})
    finally:
        host.close()
    assert result.is_error and result.text.startswith("Failed to assert")


def test_reading_a_library_name_first_does_not_take_the_name_away(tmp_path: Path) -> None:
    # Asking about mode/1 (library(quintus) has one) before any fact of it once imported the
    # library's mode/1 into the memory, and every later mode(...) fact was refused.
    require_swipl()
    project.init(tmp_path)
    host = LogicHost(tmp_path)
    try:
        kb = host.service()
        kb.call("explain_why", {"fact": "mode(on)"})
        kb.call("get_belief_status", {"fact": "mode(on)"})
        kb.call("forget_fact", {"fact": "mode(on)"})
        assert _call(kb, "remember_fact", fact="mode(on)") == "Asserted: mode(on)"
        assert _facts(kb, "mode", 1) == ["mode(on)"]
    finally:
        host.close()
