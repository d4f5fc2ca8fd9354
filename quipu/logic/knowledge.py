"""The knowledge tools of the logic memory as a service (spec §4.1-§4.7, §4.11-§4.15).

``KnowledgeService`` runs the twelve tools ``echo``, ``remember_fact``, ``define_rule``,
``query_logic``, ``trace_dependency``, ``verify_consistency``, ``explain_why``,
``get_knowledge_schema``, ``forget_fact``, ``clear_context``, ``update_fact`` and
``upsert_fact`` over one ``Engine``. The plumbing all tool services share (``ToolResult``, the
``Memories`` and ``JournalSink`` seams, argument checks, ``run_tool``) is in
quipu/logic/tooling.py; this module re-exports the names other code imports from here.

A mutation hands its journal sink one batch of ``(op, clause)`` pairs after the engine changed
and before it returns; failed or no-op mutations hand over nothing (R-W4), except
``clear_context`` (R-CC4). The engine changes first and the batch follows: a crash in between
loses an unacknowledged mutation, never journals one that did not happen. Each mutation runs as
one helper call (prolog/knowledge.pl) that validates all its text before changing anything.

Calls are serialised by a lock (R-T3). A dead engine is restarted (its restart hooks reload
snapshot and journal) and the call that met it fails with ``ExecutionFailed``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from quipu.logic.engine import MAX_SOLUTIONS
from quipu.logic.errors import (
    EngineDied,
    EngineLimit,
    GoalRefused,
    GraphUnavailable,
    LogicError,
    PrologSyntaxError,
)
from quipu.logic.terms import Atom, any_colon_atom, compacted, prolog_string, solutions_json
from quipu.logic.tooling import (
    DEFAULT_MEMORY,
    EXECUTION_FAILED,
    HIDDEN_PREDICATES,
    INVALID_ARGUMENTS,
    PLAIN_ATOM,
    EngineTools,
    JournalSink,
    Memories,
    Mode,
    StaticMemories,
    ToolFailure,
    ToolResult,
    compact_json,
    optional_int,
    optional_str,
    predicate_kind,
    raise_limit,
    required_str,
    result_parts,
)

HELPER = Path(__file__).parent / "prolog" / "knowledge.pl"
QUERY_FAILED = "Query execution failed"
NEW_FACT_IS_RULE = "new_fact must not contain rule syntax"
FACT_IS_RULE = "fact must not contain rule syntax"

Op = Literal["assert", "retract", "retractall"]

START_NODE = re.compile(r"[a-z_][A-Za-z0-9_]*\Z")  # §4.5
SCOPE = re.compile(r"[A-Za-z0-9_]+\Z")  # §4.6

TOOL_NAMES = (
    "echo",
    "remember_fact",
    "define_rule",
    "query_logic",
    "trace_dependency",
    "verify_consistency",
    "explain_why",
    "get_knowledge_schema",
    "forget_fact",
    "clear_context",
    "update_fact",
    "upsert_fact",
)


class KnowledgeService(EngineTools):
    """The knowledge tools over one engine. ``call(name, arguments)`` runs a tool by name; each
    tool also has a method of its own name."""

    tool_names = TOOL_NAMES
    helpers = (HELPER,)
    helper_module = "quipu_knowledge"
    # The store's CURIE compaction, when a store is wired in (LogicService sets it): asked only
    # when an answer holds an atom that could be an IRI.
    curies: Callable[[], Callable[[str], str] | None] | None = None

    def echo(self, arguments: Any = None) -> ToolResult:
        return self.call("echo", arguments)

    def remember_fact(self, arguments: Any = None) -> ToolResult:
        return self.call("remember_fact", arguments)

    def define_rule(self, arguments: Any = None) -> ToolResult:
        return self.call("define_rule", arguments)

    def query_logic(self, arguments: Any = None) -> ToolResult:
        return self.call("query_logic", arguments)

    def trace_dependency(self, arguments: Any = None) -> ToolResult:
        return self.call("trace_dependency", arguments)

    def verify_consistency(self, arguments: Any = None) -> ToolResult:
        return self.call("verify_consistency", arguments)

    def explain_why(self, arguments: Any = None) -> ToolResult:
        return self.call("explain_why", arguments)

    def get_knowledge_schema(self, arguments: Any = None) -> ToolResult:
        return self.call("get_knowledge_schema", arguments)

    def forget_fact(self, arguments: Any = None) -> ToolResult:
        return self.call("forget_fact", arguments)

    def clear_context(self, arguments: Any = None) -> ToolResult:
        return self.call("clear_context", arguments)

    def update_fact(self, arguments: Any = None) -> ToolResult:
        return self.call("update_fact", arguments)

    def upsert_fact(self, arguments: Any = None) -> ToolResult:
        return self.call("upsert_fact", arguments)

    # ------------------------------------------------------------------ plumbing

    def _journal(self, memory: str, entries: Sequence[tuple[Op, str]]) -> None:
        self.journal.append(memory, list(entries))

    # ------------------------------------------------------------------ tools

    def _echo(self, arguments: Mapping[str, Any]) -> ToolResult:
        message = arguments.get("message")
        if not isinstance(message, str):  # "" is echoed (R-A1)
            raise ToolFailure(INVALID_ARGUMENTS)
        return ToolResult(message)

    def _remember_fact(self, arguments: Mapping[str, Any]) -> ToolResult:
        fact = required_str(arguments, "fact")
        memory = self._memory(arguments, write=True)
        args = self._ok(f"qk_assert({memory}, {prolog_string(fact)}, R)", failure=f"Failed to assert: {fact}")
        self._journal(memory, [("assert", str(args[0]))])  # R-F4
        return ToolResult(f"Asserted: {fact}")

    def _define_rule(self, arguments: Mapping[str, Any]) -> ToolResult:
        head = required_str(arguments, "head")
        body = required_str(arguments, "body")
        clause = f"{_strip_period(head)} :- {_strip_period(body)}"
        if not balanced_parentheses(clause):
            raise ToolFailure("Invalid Prolog syntax in rule: unbalanced parentheses")
        memory = self._memory(arguments, write=True)
        kind, args = self._helper(f"qk_define({memory}, {prolog_string(clause)}, R)")
        if kind != "ok":
            raise_limit(kind)
            reason = str(args[1]) if kind == "error" and len(args) == 2 else "the rule was not stored"
            raise ToolFailure(f"Invalid Prolog syntax in rule: {_short_reason(reason)}")
        self._journal(memory, [("assert", clause)])  # R-D2: as received
        return ToolResult(f"Asserted rule: {head} :- {body}")

    def _query_logic(self, arguments: Mapping[str, Any]) -> ToolResult:
        goal = required_str(arguments, "goal")
        memory = self._memory(arguments, write=False)
        try:
            solutions = self.engine.query(memory, goal)
        except (PrologSyntaxError, GoalRefused, EngineLimit):  # §4.4, R-Q1, R-Q2, R-Q4
            raise ToolFailure(QUERY_FAILED) from None
        except GraphUnavailable as exc:  # the graph predicates never fail silently (docs/logic.md)
            raise ToolFailure(f"{QUERY_FAILED}: {exc}") from None
        except EngineDied:
            raise
        except LogicError:
            raise ToolFailure(QUERY_FAILED) from None
        if self.curies is not None and any_colon_atom(solutions):
            compact = self.curies()  # IRIs as CURIEs through the store's prefixes (docs/logic.md)
            if compact is not None:
                solutions = compacted(solutions, compact)
        return ToolResult(solutions_json(solutions))

    def _trace_dependency(self, arguments: Mapping[str, Any]) -> ToolResult:
        start = required_str(arguments, "start_node")
        if not START_NODE.match(start):
            raise ToolFailure("start_node must be a valid Prolog atom")
        memory = self._memory(arguments, write=False)
        # Quoted, so that a start node such as _a stays an atom (R-P3: the text is validated).
        solutions = self.engine.query(memory, f"path(X, '{start}')")  # R-TD1
        seen: set[str] = set()
        nodes: list[Any] = []
        for (value,) in solutions.rows:
            if isinstance(value, Atom):
                item: Any = value.name
            elif isinstance(value, int | float) and not isinstance(value, bool):
                item = value
            else:
                continue  # R-TD2: other values are skipped
            key = json.dumps(item)
            if key not in seen:
                seen.add(key)
                nodes.append(item)
        return ToolResult(compact_json(nodes))

    def _verify_consistency(self, arguments: Mapping[str, Any]) -> ToolResult:
        scope = optional_str(arguments, "scope")
        if scope is not None and not SCOPE.match(scope):
            raise ToolFailure(INVALID_ARGUMENTS)
        memory = self._memory(arguments, write=False)
        name = "integrity_violation" if scope is None else f"integrity_violation_{scope}"  # R-V1
        goal = f"'{name}'(X)"
        try:
            kind, args = self._helper(
                f"qk_render_solutions({memory}, {prolog_string(goal)}, {MAX_SOLUTIONS}, R)"
            )
        except EngineLimit:  # R-V2: the time limit gives no violations
            return ToolResult(compact_json({"violations": []}))
        if kind == "ok":
            violations = [str(text) for text in args[0]]
        elif kind in ("refused", "limit"):
            violations = []
        else:
            raise ToolFailure(EXECUTION_FAILED)
        return ToolResult(compact_json({"violations": violations}))

    def _explain_why(self, arguments: Mapping[str, Any]) -> ToolResult:
        fact = required_str(arguments, "fact")
        max_depth = optional_int(arguments, "max_depth")
        memory = self._memory(arguments, write=False)
        depth = -1 if max_depth is None or max_depth < 0 else max_depth  # R-E5
        not_proven = ToolResult(compact_json({"fact": fact, "proven": False, "proof_tree": None}))
        try:
            kind, args = self._helper(f"qk_explain({memory}, {prolog_string(fact)}, {depth}, R)")
        except EngineLimit:  # R-E1: proven means a solution within the time limit
            return not_proven
        if kind == "limit":
            return not_proven
        if kind != "ok":  # unparsable or refused (R-Q4)
            raise ToolFailure(EXECUTION_FAILED)
        if args[0] != "true":
            return not_proven
        tree = _tree(args[1])
        tree["goal"] = fact  # R-E2: the root's goal is the caller's text verbatim
        return ToolResult(compact_json({"fact": fact, "proven": True, "proof_tree": tree}))

    def _get_knowledge_schema(self, arguments: Mapping[str, Any]) -> ToolResult:
        memory = self._memory(arguments, write=False)
        args = self._ok(f"qk_schema({memory}, R)")  # a failure is never an empty schema
        rows: list[tuple[str, int, int, int]] = []
        for item in args[0]:
            _, (name, arity, count, rules) = result_parts(item)
            if PLAIN_ATOM.match(str(name)) and str(name) not in HIDDEN_PREDICATES:  # R-I1
                rows.append((str(name), int(arity), int(count), int(rules)))
        rows.sort(key=lambda row: (row[0], row[1]))  # R-I3
        predicates = [
            {"name": name, "arity": arity, "type": predicate_kind(count, rules), "count": count}
            for name, arity, count, rules in rows
        ]
        return ToolResult(compact_json({"predicates": predicates, "total": len(predicates)}))  # R-S1

    def _forget_fact(self, arguments: Mapping[str, Any]) -> ToolResult:
        fact = required_str(arguments, "fact")
        memory = self._memory(arguments, write=True)
        found, pattern = self._ok(f"qk_forget({memory}, {prolog_string(fact)}, R)", failure=INVALID_ARGUMENTS)
        if found != "true":
            raise ToolFailure(f"No matching clause found for: {fact}")
        # The pattern, not the removed fact: replay removes the first fact unifying with
        # it, which is the same clause (R-W2); the removed fact's text might unify earlier.
        self._journal(memory, [("retract", str(pattern))])  # R-FF3
        return ToolResult(f"Retracted: {fact}")

    def _clear_context(self, arguments: Mapping[str, Any]) -> ToolResult:
        category = required_str(arguments, "category")
        memory = self._memory(arguments, write=True)
        goal = f"qk_clear({memory}, {prolog_string(category)}, R)"
        status, pattern = self._ok(goal, failure=INVALID_ARGUMENTS)  # [changed]: a bad pattern is an error
        if status != "records":
            # R-CC4: also when nothing matched. A pattern on TMS records clears nothing
            # (R-CC3), and journaling it would make replay clear them.
            self._journal(memory, [("retractall", str(pattern))])
        return ToolResult(f"Cleared all facts matching: {category}")

    def _update_fact(self, arguments: Mapping[str, Any]) -> ToolResult:
        old = required_str(arguments, "old_fact")
        new = required_str(arguments, "new_fact")
        if ":-" in new:
            raise ToolFailure(NEW_FACT_IS_RULE)
        memory = self._memory(arguments, write=True)
        goal = f"qk_update({memory}, {prolog_string(old)}, {prolog_string(new)}, R)"
        args = self._ok(goal, failure=INVALID_ARGUMENTS, rule_syntax=NEW_FACT_IS_RULE)
        if args[0] != "done":
            raise ToolFailure(f"No matching clause for: {old}")  # R-U1: nothing changed
        self._journal(memory, [("retract", str(args[1])), ("assert", str(args[2]))])  # R-U2
        return ToolResult(f"Updated: {old} -> {new}")

    def _upsert_fact(self, arguments: Mapping[str, Any]) -> ToolResult:
        fact = required_str(arguments, "fact")
        if ":-" in fact:
            raise ToolFailure(FACT_IS_RULE)
        memory = self._memory(arguments, write=True)
        goal = f"qk_upsert({memory}, {prolog_string(fact)}, R)"
        pattern, clause = self._ok(goal, failure=INVALID_ARGUMENTS, rule_syntax=FACT_IS_RULE)
        self._journal(memory, [("retractall", str(pattern)), ("assert", str(clause))])  # R-UP4
        return ToolResult(f"Upserted: {fact}")


# ---------------------------------------------------------------------- text helpers


def _strip_period(text: str) -> str:
    """Surrounding whitespace and one final '.' go (R-P1, R-D2)."""
    stripped = text.strip()
    if stripped.endswith("."):
        stripped = stripped[:-1].rstrip()
    return stripped


def balanced_parentheses(text: str) -> bool:
    """True when the round parentheses of ``text`` balance, not counting those inside quoted
    atoms, strings, back-quoted text, ``0'c`` character codes and comments (§4.3)."""
    depth = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            i = _skip_quoted(text, i)
            continue
        if ch == "0" and i + 1 < n and text[i + 1] == "'" and (i == 0 or not _word_char(text[i - 1])):
            i = _skip_char_code(text, i + 2)
            continue
        if ch == "%":
            newline = text.find("\n", i)
            i = n if newline < 0 else newline + 1
            continue
        if ch == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
        i += 1
    return depth == 0


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _skip_quoted(text: str, start: int) -> int:
    quote = text[start]
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == quote:
            if i + 1 < n and text[i + 1] == quote:  # a doubled quote stands for itself
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return n


def _skip_char_code(text: str, i: int) -> int:
    if i >= len(text):
        return i
    if text[i] == "\\":
        return i + 2
    if text[i] == "'" and i + 1 < len(text) and text[i + 1] == "'":
        return i + 2
    return i + 1


def _short_reason(message: str) -> str:
    return message.removeprefix("syntax error: ")


# ---------------------------------------------------------------------- engine values


def _tree(value: Any) -> dict[str, Any]:
    """node(Goal, Rule, Children) into the proof-tree object, keys in order (R-E2). A
    knowledge-graph fact is node(Goal, graph, [], Tx): a leaf that also names its transaction."""
    _, parts = result_parts(value)
    goal, rule, children = parts[:3]
    kids: Any = "truncated" if children == "truncated" else [_tree(child) for child in children]
    node = {"goal": str(goal), "rule_applied": str(rule), "children": kids}
    if len(parts) == 4:
        node["tx"] = int(parts[3])
    return node


# The shared names other code imports from here (quipu/logic/tooling.py defines them).
__all__ = [
    "DEFAULT_MEMORY",
    "HELPER",
    "INVALID_ARGUMENTS",
    "TOOL_NAMES",
    "JournalSink",
    "KnowledgeService",
    "Memories",
    "Mode",
    "StaticMemories",
    "ToolResult",
    "balanced_parentheses",
]
