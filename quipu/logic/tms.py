"""The truth maintenance tools of the logic memory as a service (spec §4.16-§4.21, §5).

``TmsService`` runs the six tools ``assume_fact``, ``get_belief_status``,
``get_justification``, ``list_assumptions``, ``retract_assumption`` and
``retract_assumptions`` over one ``Engine``, like ``KnowledgeService`` an ``EngineTools``
(quipu/logic/tooling.py), whose ``ToolResult``, ``Memories``, ``JournalSink``, argument
validation and error texts it shares.

Records (§5.1): justifications ``tms_justification(Fact, Assumption)`` and sources
``zpm_source(Fact, Source)`` are ordinary facts of the memory, so snapshots carry them.
Justifications are journaled as ``assert`` entries like any clause; source records are not
(as in knowledge.py: replay and snapshot loading write their own, R-TM9).

Order of engine change and journal:

* ``assume_fact`` changes the engine first, then hands over the ``assert`` entries that were
  actually applied (R-TM2), like the knowledge tools.
* A retraction is planned first (a read), its one batch -- ``retractall`` of
  ``tms_justification(_, A)``, then a ``retractall`` per orphaned fact -- is handed to the
  journal, and only then is the engine changed (R-TM6). The engine applies exactly the texts
  it journaled, with their replay meaning (R-W2), so a replay reproduces the live state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from quipu.logic.knowledge import HELPER as KNOWLEDGE_HELPER
from quipu.logic.terms import prolog_string
from quipu.logic.tooling import (
    INVALID_ARGUMENTS,
    EngineTools,
    ToolFailure,
    ToolResult,
    compact_json,
    required_atom,
    required_str,
    result_parts,
)

HELPER = Path(__file__).parent / "prolog" / "tms.pl"

RULE_SYNTAX = "assume_fact: fact must not contain rule syntax"

# §4.21: the first character of a pattern, and every later one.
_PATTERN = re.compile(r"[a-z*?][A-Za-z0-9_*?]*\Z")

TOOL_NAMES = (
    "assume_fact",
    "get_belief_status",
    "get_justification",
    "list_assumptions",
    "retract_assumption",
    "retract_assumptions",
)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """R-RA1: ``*`` any sequence (also empty), ``?`` one character, everything else itself;
    the whole name must match."""
    parts = [".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern]
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


class TmsService(EngineTools):
    """The TMS tools over one engine. ``call(name, arguments)`` runs a tool by name; each tool
    also has a method of its own name. Pass the knowledge service's lock as ``lock`` to
    serialise both services' calls on one engine (R-T3)."""

    tool_names = TOOL_NAMES
    helpers = (KNOWLEDGE_HELPER, HELPER)  # the knowledge helper: qk_note_source, qk_text (idempotent)
    helper_module = "quipu_tms"

    def assume_fact(self, arguments: Any = None) -> ToolResult:
        return self.call("assume_fact", arguments)

    def get_belief_status(self, arguments: Any = None) -> ToolResult:
        return self.call("get_belief_status", arguments)

    def get_justification(self, arguments: Any = None) -> ToolResult:
        return self.call("get_justification", arguments)

    def list_assumptions(self, arguments: Any = None) -> ToolResult:
        return self.call("list_assumptions", arguments)

    def retract_assumption(self, arguments: Any = None) -> ToolResult:
        return self.call("retract_assumption", arguments)

    def retract_assumptions(self, arguments: Any = None) -> ToolResult:
        return self.call("retract_assumptions", arguments)

    # ------------------------------------------------------------------ plumbing

    def _assumptions(self, memory: str) -> list[str]:
        (names,) = self._ok(f"qt_assumptions({memory}, R)")
        return [str(name) for name in names]

    def _retract(self, memory: str, assumption: str) -> int | None:
        """Retract one assumption (§5.2): plan, journal, then apply (R-TM6). Returns the number
        of orphaned facts, or None when no justification has that name (nothing journaled)."""
        plan = self._ok(f"qt_retract_plan({memory}, {prolog_string(assumption)}, R)")
        if plan == ["unknown"]:
            return None
        count, texts = int(plan[0]), [str(text) for text in plan[1]]
        self.journal.append(memory, [("retractall", text) for text in texts])
        literals = ", ".join(prolog_string(text) for text in texts)
        # Should this fail, the batch is journaled already: the next replay applies it.
        self._ok(f"qt_apply({memory}, [{literals}], R)")
        return count

    # ------------------------------------------------------------------ tools

    def _assume_fact(self, arguments: Mapping[str, Any]) -> ToolResult:
        fact = required_str(arguments, "fact")
        assumption = required_atom(arguments, "assumption")
        if ":-" in fact:
            raise ToolFailure(RULE_SYNTAX)
        memory = self._memory(arguments, write=True)
        # The helper also finds rule syntax written without the operator, e.g. ':-'(a, b).
        args = self._ok(
            f"qt_assume({memory}, {prolog_string(fact)}, {prolog_string(assumption)}, R)",
            failure=f"assume_fact: failed to assert fact: {fact}",
            rule_syntax=RULE_SYNTAX,
        )
        entries: list[tuple[str, str]] = []
        for item in args[0]:
            _, (op, text) = result_parts(item)
            entries.append((str(op), str(text)))
        if entries:  # R-TM2: nothing when nothing changed
            self.journal.append(memory, entries)
        return ToolResult(f"Assumed: {fact} under assumption '{assumption}'")

    def _get_belief_status(self, arguments: Mapping[str, Any]) -> ToolResult:
        fact = required_str(arguments, "fact")
        memory = self._memory(arguments, write=False)
        # InvalidArguments: the text does not parse.
        args = self._ok(f"qt_status({memory}, {prolog_string(fact)}, R)", failure=INVALID_ARGUMENTS)
        names, source = [str(name) for name in args[0]], str(args[1])
        status = "in" if names else "out"  # R-TM8: justification, not derivability
        return ToolResult(compact_json({"status": status, "justifications": names, "source": source}))

    def _get_justification(self, arguments: Mapping[str, Any]) -> ToolResult:
        assumption = required_atom(arguments, "assumption")
        memory = self._memory(arguments, write=False)
        (texts,) = self._ok(f"qt_facts({memory}, {prolog_string(assumption)}, R)")
        return ToolResult(compact_json({"facts": [str(text) for text in texts]}))  # R-GJ1

    def _list_assumptions(self, arguments: Mapping[str, Any]) -> ToolResult:
        memory = self._memory(arguments, write=False)
        return ToolResult(compact_json({"assumptions": self._assumptions(memory)}))  # R-LA1

    def _retract_assumption(self, arguments: Mapping[str, Any]) -> ToolResult:
        assumption = required_atom(arguments, "assumption")
        memory = self._memory(arguments, write=True)
        count = self._retract(memory, assumption)
        if count is None:
            raise ToolFailure(f"Unknown assumption '{assumption}'")
        return ToolResult(f"Retracted assumption '{assumption}': {count} fact(s) removed")

    def _retract_assumptions(self, arguments: Mapping[str, Any]) -> ToolResult:
        pattern = required_str(arguments, "pattern")
        if not _PATTERN.match(pattern):
            raise ToolFailure(INVALID_ARGUMENTS)
        memory = self._memory(arguments, write=True)
        regex = glob_regex(pattern)
        matching = [name for name in self._assumptions(memory) if regex.match(name)]
        removed = 0
        for name in matching:  # R-RA2: one batch each, in order of first appearance
            if self._retract(memory, name) is not None:
                removed += 1
        return ToolResult(f"Retracted pattern '{pattern}': {removed} assumption(s) removed")


__all__ = ["HELPER", "RULE_SYNTAX", "TOOL_NAMES", "TmsService", "glob_regex"]
