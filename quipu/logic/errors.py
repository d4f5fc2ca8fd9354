"""Errors of the logic engine: a branch of quipu's one error tree (``quipu.errors`` draws it).

The tools map them to their wire texts (spec §2.3, §4); the REST layer maps them to HTTP through
the same ``status`` and ``reason`` as every other error::

    LogicError              400 logic_error
    ├── EngineUnavailable   503 engine_unavailable   no engine can be started (swipl missing, ...)
    ├── EngineDied          503 engine_died          the engine process ended; restart() it
    ├── EngineLimit         400 engine_limit         a limit stopped the goal; the engine stays usable
    │   ├── GoalTimeout     408 logic_timeout        the wall-clock limit (R-Q1); also a QueryTimeout
    │   └── StackLimit      400 stack_limit          the stack limit (R-Q2)
    ├── GoalRefused         400 goal_refused         an untrusted goal calls something not allowed (R-Q4)
    ├── PrologSyntaxError   400 prolog_syntax_error  the text is not exactly one Prolog term (R-P1)
    ├── ClauseRejected      400 clause_rejected      the text parses but is not a storable clause
    ├── EngineError         500 engine_error         anything else the engine reported
    ├── ProjectNotFound     400 project_not_found    no .zpm/ above the start directory (project.py)
    ├── SnapshotNameError   400 invalid_snapshot_name  a name save/restore refuse (snapshots.py)
    ├── SnapshotError       400 snapshot_unusable    missing, unreadable or not a snapshot (snapshots.py)
    └── JournalError        500 journal_error        not active, or rotation failed (journal.py)
"""

from __future__ import annotations

from quipu.errors import QueryTimeout, QuipuError

# QueryTimeout is quipu's one timeout class: a logic goal's timeout is one (GoalTimeout).
__all__ = [
    "ClauseRejected",
    "EngineDied",
    "EngineError",
    "EngineLimit",
    "EngineUnavailable",
    "GoalRefused",
    "GoalTimeout",
    "LogicError",
    "PrologSyntaxError",
    "QueryTimeout",
    "StackLimit",
]


class LogicError(QuipuError):
    """Base of the logic engine's errors."""

    status = 400
    reason = "logic_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)


class EngineUnavailable(LogicError):
    """No Prolog engine can be started."""

    status = 503
    reason = "engine_unavailable"


class EngineDied(LogicError):
    """The engine process is gone; call ``Engine.restart()`` to get a fresh one."""

    status = 503
    reason = "engine_died"


class EngineLimit(LogicError):
    """A resource limit stopped the goal."""

    reason = "engine_limit"


class GoalTimeout(EngineLimit, QueryTimeout):
    """The per-call wall-clock limit fired: a logic goal's ``QueryTimeout``."""

    status = 408
    reason = "logic_timeout"


class StackLimit(EngineLimit):
    """The goal ran out of Prolog stack."""

    reason = "stack_limit"


class GoalRefused(LogicError):
    """The goal calls a predicate that untrusted goals may not call."""

    reason = "goal_refused"


class PrologSyntaxError(LogicError):
    """The text does not parse as exactly one term."""

    reason = "prolog_syntax_error"


class ClauseRejected(LogicError):
    """The term cannot be stored as a clause (variable head, built-in head, ...)."""

    reason = "clause_rejected"


class EngineError(LogicError):
    """An unexpected error reported by the engine."""

    status = 500
    reason = "engine_error"


class GraphUnavailable(LogicError):
    """A graph predicate (rdf/3 ...) could not read the knowledge graph: no store is wired in,
    or the store refused the read. Said, never turned into "no solutions"."""

    reason = "graph_unavailable"
