"""What every logic tool service shares: the result type, the two seams, argument checks, the
one way a tool runs, and the service base classes (spec §2.4, §4, §7.5).

A tool takes the ``arguments`` object of a ``tools/call`` and returns a ``ToolResult``: the one
text content item and the result-level ``isError`` (R-T7). A handler fails by raising
``ToolFailure`` with the whole answer text; ``run_tool`` turns that, a dead engine and any other
engine failure into the answer.

Two seams connect the services to the rest, so that nothing here knows MCP, REST or files:

* ``Memories``: which memories are mounted and how (the mount registry, §7). A memory that is
  mounted is a module of the engine.
* ``JournalSink``: where the journal batch of an effective mutation goes (§6.3).

``ToolService`` is the dispatch every service shares: a tool name maps to the method ``_<name>``,
and each call holds the lock that serialises all calls on one engine (R-T3). ``EngineTools`` adds
what the services over one engine need (knowledge, TMS, refactor); ``RuntimeTools``
(quipu/logic/runtime.py) is the sibling for the services over a whole runtime.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from quipu.logic.engine import Engine, functor_parts
from quipu.logic.errors import EngineDied, EngineError, LogicError

DEFAULT_MEMORY = "default"

INVALID_ARGUMENTS = "InvalidArguments"
EXECUTION_FAILED = "ExecutionFailed"
READ_ONLY = "Memory is read-only"

Mode = Literal["rw", "ro"]

PLAIN_ATOM = re.compile(r"[a-z][A-Za-z0-9_]*\Z")  # R-P3
# R-I1: names never listed, at any arity (helper predicates live in other modules).
HIDDEN_PREDICATES = frozenset(
    {"tms_justification", "zpm_source", "portray", "term_expansion", "goal_expansion"}
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


ToolHandler = Callable[[Mapping[str, Any]], ToolResult]


def run_tool(
    handler: ToolHandler,
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


# ---------------------------------------------------------------------- services


class ToolService(ABC):
    """Dispatch by tool name: ``tool_names`` lists the tools, each run by the method
    ``_<name>``. ``call(name, arguments)`` runs one under ``lock``."""

    tool_names: ClassVar[tuple[str, ...]]

    def __init__(self, lock: threading.RLock) -> None:
        # One lock per engine: every service over the same engine must share it, so that the
        # engine takes one call at a time (R-T3).
        self._lock = lock
        self._handlers: dict[str, ToolHandler] = {name: getattr(self, f"_{name}") for name in self.tool_names}

    def handles(self, name: str) -> bool:
        return name in self._handlers

    def call(self, name: str, arguments: Any = None) -> ToolResult:
        """Run tool ``name``; ``arguments`` absent (None) means no arguments (§2.2). Raises
        KeyError for a name that is not one of these tools (a protocol error, R-T8)."""
        handler = self._handlers[name]
        with self._lock:
            return self._run(handler, arguments)

    @abstractmethod
    def _run(self, handler: ToolHandler, arguments: Any) -> ToolResult:
        """Run one handler through ``run_tool``; called with the lock held."""


class EngineTools(ToolService):
    """The base of the services over one engine: the engine, the two seams, the helper files
    the service needs loaded (``helpers``) and the Prolog module its goals go to
    (``helper_module``)."""

    helpers: ClassVar[tuple[Path, ...]]
    helper_module: ClassVar[str]

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
        for helper in self.helpers:
            engine.load_helper(helper)
        super().__init__(lock if lock is not None else threading.RLock())

    def _run(self, handler: ToolHandler, arguments: Any) -> ToolResult:
        return run_tool(handler, arguments, restart=self.engine.restart)

    # ------------------------------------------------------------------ memories (§7.5)

    def _memory(self, arguments: Mapping[str, Any], *, write: bool) -> str:
        """The memory a call targets: absent, null or "" is default (R-A4, R-M7); a name that
        is not mounted fails; a mutation of a read-only memory fails (R-M8)."""
        name = optional_str(arguments, "memory") or DEFAULT_MEMORY
        mode = self._mounted_mode(name)
        if write and mode != "rw":
            raise ToolFailure(READ_ONLY)
        self._ensure(name)
        return name

    def _mounted_mode(self, name: str) -> Mode:
        """The mode of memory ``name``; a name that is not mounted fails the tool."""
        mode = self.memories.mode(name)
        if mode is None:
            raise ToolFailure(not_mounted_text(name))
        return mode

    def _ensure(self, name: str) -> None:
        """A mounted memory is a module of the engine; a registry may mount it before the
        engine has one."""
        if name not in self.engine.memories():
            self.engine.ensure_memory(name)

    # ------------------------------------------------------------------ helper calls

    def _helper(self, goal: str) -> tuple[str, list[Any]]:
        """A goal of the service's helper module, answered as (functor, args)."""
        return result_parts(self.engine.call_helper(f"{self.helper_module}:{goal}"))

    def _ok(self, goal: str, *, failure: str = EXECUTION_FAILED, rule_syntax: str | None = None) -> list[Any]:
        """The payload of the helper's ok(...) answer. Any other answer fails the tool: a limit
        like any engine failure (R-Q1), a clause that turned out to be a rule with
        ``rule_syntax`` when given, anything else with ``failure``."""
        kind, args = self._helper(goal)
        if kind != "ok":
            raise_limit(kind)
            if rule_syntax is not None and kind == "error" and args and args[0] == "rule":
                raise ToolFailure(rule_syntax)
            raise ToolFailure(failure)
        return args


# ---------------------------------------------------------------------- arguments (§2.4)


def required_str(arguments: Mapping[str, Any], key: str) -> str:
    """R-A1: missing, null, not a string or "" is InvalidArguments."""
    value = arguments.get(key)
    if not isinstance(value, str) or value == "":
        raise ToolFailure(INVALID_ARGUMENTS)
    return value


def required_atom(arguments: Mapping[str, Any], key: str) -> str:
    """A required string that must be a plain atom (R-A1, R-P3)."""
    return plain_atom(required_str(arguments, key))


def plain_atom(text: str) -> str:
    """R-P3: a name that reaches the engine as goal syntax must be a plain atom (a lower-case
    letter, then letters, digits and ``_``); anything else is InvalidArguments."""
    if not PLAIN_ATOM.match(text):
        raise ToolFailure(INVALID_ARGUMENTS)
    return text


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


# ---------------------------------------------------------------------- answers


def not_mounted_text(name: str) -> str:
    return f"Memory not mounted: {name}"


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


__all__ = [
    "DEFAULT_MEMORY",
    "EXECUTION_FAILED",
    "HIDDEN_PREDICATES",
    "INVALID_ARGUMENTS",
    "PLAIN_ATOM",
    "READ_ONLY",
    "EngineTools",
    "JournalSink",
    "Memories",
    "Mode",
    "StaticMemories",
    "ToolFailure",
    "ToolHandler",
    "ToolResult",
    "ToolService",
    "compact_json",
    "not_mounted_text",
    "optional_int",
    "optional_str",
    "plain_atom",
    "predicate_kind",
    "raise_limit",
    "required_atom",
    "required_str",
    "result_parts",
    "run_tool",
]
