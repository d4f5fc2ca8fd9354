"""The knowledge tools of the logic memory as a service (spec §4.1-§4.7, §4.11-§4.15).

``KnowledgeService`` runs the twelve tools ``echo``, ``remember_fact``, ``define_rule``,
``query_logic``, ``trace_dependency``, ``verify_consistency``, ``explain_why``,
``get_knowledge_schema``, ``forget_fact``, ``clear_context``, ``update_fact`` and
``upsert_fact`` over one ``Engine``. Each takes the ``arguments`` object of a ``tools/call`` and
returns a ``ToolResult``: the one text content item and the result-level ``isError`` (R-T7).
Nothing here knows MCP, REST or files; two seams connect it to the rest:

* ``Memories``: which memories are mounted and how (the mount registry, §7). A memory that is
  mounted is a module of the engine.
* ``JournalSink``: where the journal batch of an effective mutation goes (§6.3). A tool hands
  over one batch of ``(op, clause)`` pairs after the engine changed and before it returns;
  failed or no-op mutations hand over nothing (R-W4), except ``clear_context`` (R-CC4).

The engine changes first and the batch follows: a crash in between loses an unacknowledged
mutation, never journals one that did not happen. Each mutation runs as one helper call
(prolog/knowledge.pl) that validates all its text before changing anything.

Calls are serialised by a lock (R-T3). A dead engine is restarted (its restart hooks reload
snapshot and journal) and the call that met it fails with ``ExecutionFailed``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from quipu.logic.engine import MAX_SOLUTIONS, Engine, functor_parts
from quipu.logic.errors import (
    EngineDied,
    EngineError,
    EngineLimit,
    GoalRefused,
    LogicError,
    PrologSyntaxError,
)
from quipu.logic.terms import Atom, prolog_string, solutions_json

HELPER = Path(__file__).parent / "prolog" / "knowledge.pl"
DEFAULT_MEMORY = "default"

INVALID_ARGUMENTS = "InvalidArguments"
EXECUTION_FAILED = "ExecutionFailed"
QUERY_FAILED = "Query execution failed"
READ_ONLY = "Memory is read-only"

Mode = Literal["rw", "ro"]
Op = Literal["assert", "retract", "retractall"]

PLAIN_ATOM = re.compile(r"[a-z][A-Za-z0-9_]*\Z")  # R-P3
START_NODE = re.compile(r"[a-z_][A-Za-z0-9_]*\Z")  # §4.5
SCOPE = re.compile(r"[A-Za-z0-9_]+\Z")  # §4.6
# R-I1: names never listed, at any arity (helper predicates live in other modules).
HIDDEN_PREDICATES = frozenset(
    {"tms_justification", "zpm_source", "portray", "term_expansion", "goal_expansion"}
)

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


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool answers: one text content item and whether it is an error (R-T7)."""

    text: str
    is_error: bool = False

    def as_mcp(self) -> dict[str, Any]:
        """The ``tools/call`` result object."""
        return {"content": [{"type": "text", "text": self.text}], "isError": self.is_error}


class Memories(Protocol):
    """The mount registry as the tools see it (§7.5)."""

    def mode(self, name: str) -> Mode | None:
        """``"rw"`` or ``"ro"`` for a mounted memory, ``None`` when ``name`` is not mounted."""
        ...


class JournalSink(Protocol):
    """Takes the journal batch of one effective mutation of ``memory`` (R-W3): ``(op, clause)``
    pairs, clause text without the final period, in the order they apply. The sink stamps
    ``ts``, writes the batch with one write and fsync before returning, and handles its own
    failures (degraded mode, R-N7) so that the tool still answers."""

    def append(self, memory: str, entries: Sequence[tuple[str, str]]) -> None: ...


@dataclass
class StaticMemories:
    """A fixed table of mounted memories: enough for tests and for a server without memory
    segments. ``default`` is mounted read-write unless the table says otherwise."""

    modes: dict[str, Mode] = field(default_factory=dict)

    def mode(self, name: str) -> Mode | None:
        if name == DEFAULT_MEMORY:
            return self.modes.get(name, "rw")
        return self.modes.get(name)


class ToolFailure(Exception):
    """A tool failure whose text is the whole answer."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


_Handler = Callable[[Mapping[str, Any]], ToolResult]


def run_tool(
    handler: Callable[[Mapping[str, Any]], ToolResult],
    arguments: Any,
    *,
    restart: Callable[[], None],
    closed: bool = False,
    died: str = EXECUTION_FAILED,
    failures: tuple[type[Exception], ...] = (LogicError, ValueError),
) -> ToolResult:
    """The one way every logic tool runs (call it under the engine lock): no arguments means
    ``{}``, a non-object is ``InvalidArguments``, a ``ToolFailure`` is its own text, a dead engine
    is restarted (its hooks reload the memories) and that call fails with ``died``, and any other
    engine, OS or value failure is ``ExecutionFailed``. A ValueError is the engine refusing a
    memory name or text (e.g. a lone surrogate)."""
    try:
        if closed:
            raise ToolFailure(EXECUTION_FAILED)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolFailure(INVALID_ARGUMENTS)
        return handler(arguments)
    except ToolFailure as failure:
        return ToolResult(failure.text, True)
    except EngineDied:
        with contextlib.suppress(LogicError):  # still unavailable: later calls fail too
            restart()
        return ToolResult(died, True)
    except failures:
        return ToolResult(EXECUTION_FAILED, True)


class KnowledgeService:
    """The knowledge tools over one engine. ``call(name, arguments)`` runs a tool by name; each
    tool also has a method of its own name."""

    def __init__(
        self,
        engine: Engine,
        memories: Memories,
        journal: JournalSink,
        *,
        lock: threading.RLock | None = None,
    ) -> None:
        self.engine = engine
        self.memories = memories
        self.journal = journal
        # One lock per engine: every service over the same engine must share it (R-T3).
        self._lock = lock if lock is not None else threading.RLock()
        engine.load_helper(HELPER)
        self._handlers: dict[str, _Handler] = {
            "echo": self._echo,
            "remember_fact": self._remember_fact,
            "define_rule": self._define_rule,
            "query_logic": self._query_logic,
            "trace_dependency": self._trace_dependency,
            "verify_consistency": self._verify_consistency,
            "explain_why": self._explain_why,
            "get_knowledge_schema": self._get_knowledge_schema,
            "forget_fact": self._forget_fact,
            "clear_context": self._clear_context,
            "update_fact": self._update_fact,
            "upsert_fact": self._upsert_fact,
        }

    # ------------------------------------------------------------------ dispatch

    def handles(self, name: str) -> bool:
        return name in self._handlers

    def call(self, name: str, arguments: Any = None) -> ToolResult:
        """Run tool ``name``; ``arguments`` absent (None) means no arguments (§2.2). Raises
        KeyError for a name that is not one of these tools (a protocol error, R-T8)."""
        handler = self._handlers[name]
        with self._lock:
            return run_tool(handler, arguments, restart=self.engine.restart)

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

    # ------------------------------------------------------------------ memories (§7.5)

    def _memory(self, arguments: Mapping[str, Any], *, write: bool) -> str:
        """The memory a call targets: absent, null or "" is default (R-A4, R-M7); a name that
        is not mounted fails; a mutation of a read-only memory fails (R-M8)."""
        name = optional_str(arguments, "memory") or DEFAULT_MEMORY
        mode = self.memories.mode(name)
        if mode is None:
            raise ToolFailure(f"Memory not mounted: {name}")
        if write and mode != "rw":
            raise ToolFailure(READ_ONLY)
        if name not in self.engine.memories():
            self.engine.ensure_memory(name)
        return name

    def _helper(self, goal: str) -> Any:
        return self.engine.call_helper(f"quipu_knowledge:{goal}")

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
        result = self._helper(f"qk_assert({memory}, {prolog_string(fact)}, R)")
        kind, args = result_parts(result)
        if kind != "ok":
            raise_limit(kind)
            raise ToolFailure(f"Failed to assert: {fact}")
        self._journal(memory, [("assert", str(args[0]))])  # R-F4
        return ToolResult(f"Asserted: {fact}")

    def _define_rule(self, arguments: Mapping[str, Any]) -> ToolResult:
        head = required_str(arguments, "head")
        body = required_str(arguments, "body")
        clause = f"{_strip_period(head)} :- {_strip_period(body)}"
        if not balanced_parentheses(clause):
            raise ToolFailure("Invalid Prolog syntax in rule: unbalanced parentheses")
        memory = self._memory(arguments, write=True)
        result = self._helper(f"qk_define({memory}, {prolog_string(clause)}, R)")
        kind, args = result_parts(result)
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
        except EngineDied:
            raise
        except LogicError:
            raise ToolFailure(QUERY_FAILED) from None
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
            result = self._helper(f"qk_render_solutions({memory}, {prolog_string(goal)}, {MAX_SOLUTIONS}, R)")
        except EngineLimit:  # R-V2: the time limit gives no violations
            return ToolResult(compact_json({"violations": []}))
        kind, args = result_parts(result)
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
            result = self._helper(f"qk_explain({memory}, {prolog_string(fact)}, {depth}, R)")
        except EngineLimit:  # R-E1: proven means a solution within the time limit
            return not_proven
        kind, args = result_parts(result)
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
        result = self._helper(f"qk_schema({memory}, R)")
        kind, args = result_parts(result)
        if kind != "ok":
            raise ToolFailure(EXECUTION_FAILED)  # never an empty schema instead
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
        result = self._helper(f"qk_forget({memory}, {prolog_string(fact)}, R)")
        kind, args = result_parts(result)
        if kind != "ok":
            raise_limit(kind)
            raise ToolFailure(INVALID_ARGUMENTS)
        found, pattern = args
        if found != "true":
            raise ToolFailure(f"No matching clause found for: {fact}")
        # The pattern, not the removed fact: replay removes the first fact unifying with
        # it, which is the same clause (R-W2); the removed fact's text might unify earlier.
        self._journal(memory, [("retract", str(pattern))])  # R-FF3
        return ToolResult(f"Retracted: {fact}")

    def _clear_context(self, arguments: Mapping[str, Any]) -> ToolResult:
        category = required_str(arguments, "category")
        memory = self._memory(arguments, write=True)
        result = self._helper(f"qk_clear({memory}, {prolog_string(category)}, R)")
        kind, args = result_parts(result)
        if kind != "ok":
            raise_limit(kind)
            raise ToolFailure(INVALID_ARGUMENTS)  # [changed]: a bad pattern is an error
        status, pattern = args
        if status != "records":
            # R-CC4: also when nothing matched. A pattern on TMS records clears nothing
            # (R-CC3), and journaling it would make replay clear them.
            self._journal(memory, [("retractall", str(pattern))])
        return ToolResult(f"Cleared all facts matching: {category}")

    def _update_fact(self, arguments: Mapping[str, Any]) -> ToolResult:
        old = required_str(arguments, "old_fact")
        new = required_str(arguments, "new_fact")
        if ":-" in new:
            raise ToolFailure("new_fact must not contain rule syntax")
        memory = self._memory(arguments, write=True)
        result = self._helper(f"qk_update({memory}, {prolog_string(old)}, {prolog_string(new)}, R)")
        kind, args = result_parts(result)
        if kind != "ok":
            raise_limit(kind)
            if kind == "error" and args and args[0] == "rule":
                raise ToolFailure("new_fact must not contain rule syntax")
            raise ToolFailure(INVALID_ARGUMENTS)
        if args[0] != "done":
            raise ToolFailure(f"No matching clause for: {old}")  # R-U1: nothing changed
        self._journal(memory, [("retract", str(args[1])), ("assert", str(args[2]))])  # R-U2
        return ToolResult(f"Updated: {old} -> {new}")

    def _upsert_fact(self, arguments: Mapping[str, Any]) -> ToolResult:
        fact = required_str(arguments, "fact")
        if ":-" in fact:
            raise ToolFailure("fact must not contain rule syntax")
        memory = self._memory(arguments, write=True)
        result = self._helper(f"qk_upsert({memory}, {prolog_string(fact)}, R)")
        kind, args = result_parts(result)
        if kind != "ok":
            raise_limit(kind)
            if kind == "error" and args and args[0] == "rule":
                raise ToolFailure("fact must not contain rule syntax")
            raise ToolFailure(INVALID_ARGUMENTS)
        pattern, clause = args
        self._journal(memory, [("retractall", str(pattern)), ("assert", str(clause))])  # R-UP4
        return ToolResult(f"Upserted: {fact}")


# ---------------------------------------------------------------------- arguments (§2.4)


def required_str(arguments: Mapping[str, Any], key: str) -> str:
    """R-A1: missing, null, not a string or "" is InvalidArguments."""
    value = arguments.get(key)
    if not isinstance(value, str) or value == "":
        raise ToolFailure(INVALID_ARGUMENTS)
    return value


def optional_str(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    if value is None:
        return None
    if not isinstance(value, str):  # R-A2
        raise ToolFailure(INVALID_ARGUMENTS)
    return value


def optional_int(arguments: Mapping[str, Any], key: str) -> int | None:
    value = arguments.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):  # R-A2: true is not an integer
        raise ToolFailure(INVALID_ARGUMENTS)
    return int(value)


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


def compact_json(value: Any) -> str:
    """Compact JSON, UTF-8 rather than escapes (R-J4, R-T2)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def predicate_kind(count: int, rules: int) -> str:
    if rules == 0:
        return "fact"
    return "rule" if rules == count else "both"


# ---------------------------------------------------------------------- engine values


def result_parts(value: Any) -> tuple[str, list[Any]]:
    """A helper result as (functor, args); anything else fails the tool (ExecutionFailed)."""
    try:
        return functor_parts(value)
    except EngineError:
        raise ToolFailure(EXECUTION_FAILED) from None


def raise_limit(kind: str) -> None:
    """A mutation stopped by a limit fails like any engine failure (R-Q1)."""
    if kind == "limit":
        raise ToolFailure(EXECUTION_FAILED)


def _tree(value: Any) -> dict[str, Any]:
    """node(Goal, Rule, Children) into the proof-tree object, keys in order (R-E2)."""
    _, (goal, rule, children) = result_parts(value)
    kids: Any = "truncated" if children == "truncated" else [_tree(child) for child in children]
    return {"goal": str(goal), "rule_applied": str(rule), "children": kids}


__all__ = [
    "DEFAULT_MEMORY",
    "HELPER",
    "TOOL_NAMES",
    "JournalSink",
    "KnowledgeService",
    "Memories",
    "Mode",
    "StaticMemories",
    "ToolResult",
    "balanced_parentheses",
]
