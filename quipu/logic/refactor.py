"""The refactoring and overview tools of the logic memory (spec §4.8-§4.10).

``RefactorService`` runs ``find_predicate_references``, ``rename_predicate`` and
``get_kb_overview`` over one ``Engine``, like ``KnowledgeService`` an ``EngineTools``
(quipu/logic/tooling.py: same ``ToolResult``, ``Memories`` and ``JournalSink`` seams, same
argument rules). The overview also
needs facts that live outside the engine (snapshot files, journal size, the mount table); they
come through ``OverviewSource``, which the runtime provides. Without one the overview reports
nothing configured (the seed's empty-KB example).

``rename_predicate`` changes each memory in one helper call inside a Prolog transaction and
hands that memory's journal batch over afterwards (R-RN6): for every predicate it rebuilt, a
``retractall`` of its most general head followed by an ``assert`` of each of its new clauses in
order, so that replay reproduces the renamed state including clause order (R-W4). A dry run
computes the same plan and applies nothing (R-RN5, R-W6).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from quipu.logic.engine import Engine
from quipu.logic.errors import LogicError
from quipu.logic.snapshots import SnapshotInfo, latest_by_name
from quipu.logic.tooling import (
    DEFAULT_MEMORY,
    HIDDEN_PREDICATES,
    INVALID_ARGUMENTS,
    PLAIN_ATOM,
    EngineTools,
    JournalSink,
    Memories,
    Mode,
    ToolFailure,
    ToolHandler,
    ToolResult,
    compact_json,
    optional_int,
    optional_str,
    predicate_kind,
    required_atom,
    required_str,
    result_parts,
    run_tool,
)

HELPER = Path(__file__).parent / "prolog" / "refactor.pl"
ENGINE_NOT_INITIALIZED = "Prolog engine is not initialized"
ALL_MEMORIES = "__all__"  # R-FR2
OVERVIEW_BUDGET = 64 * 1024  # R-O8, bytes of the UTF-8 text
DEFAULT_SAMPLE_SIZE = 2  # R-O2
MAX_SAMPLE_SIZE = 50

TOOL_NAMES = ("find_predicate_references", "rename_predicate", "get_kb_overview")

# §4.9: name -> arities at which it may not be renamed.
PROTECTED_OPERATORS: dict[str, tuple[int, ...]] = {
    "=": (2,),
    ",": (2,),
    ";": (2,),
    "is": (2,),
    "->": (2,),
    "\\=": (2,),
    "==": (2,),
    "\\==": (2,),
    "=..": (2,),
    "@<": (2,),
    "@>": (2,),
    "@=<": (2,),
    "@>=": (2,),
    "<": (2,),
    ">": (2,),
    "=<": (2,),
    ">=": (2,),
    "+": (2,),
    "-": (2,),
    "*": (2,),
    "/": (2,),
    ":-": (1, 2),
    "\\+": (1,),
    "!": (0,),
}

Scope = Literal["project", "global"]


@dataclass(frozen=True, slots=True)
class MountInfo:
    """One mounted memory as the registry knows it (§7.4)."""

    name: str
    scope: Scope
    mode: Mode
    path: Path | None = None


class OverviewSource(Protocol):
    """What ``get_kb_overview`` needs from persistence and the mount registry (R-O5..R-O7)."""

    def mounts(self) -> Sequence[MountInfo] | None:
        """The mounted memories, ``default`` included; ``None`` when there is no registry."""
        ...

    def snapshots(self, memory: str) -> Sequence[SnapshotInfo]:
        """The snapshot files of ``memory`` (R-N3: seed files and knowledge.pl excluded)."""
        ...

    def journal_pending(self, memory: str) -> int:
        """Newline characters in the memory's journal; 0 when missing or persistence is off."""
        ...

    def persistence_healthy(self) -> bool:
        """True when persistence is ``active`` (R-N7)."""
        ...


class RefactorService(EngineTools):
    """The three 0.4.0 inventory tools over one engine. ``call(name, arguments)`` runs a tool by
    name; each tool also has a method of its own name."""

    tool_names = TOOL_NAMES
    helpers = (HELPER,)
    helper_module = "quipu_refactor"

    def __init__(
        self,
        engine: Engine,
        memories: Memories,
        journal: JournalSink,
        overview: OverviewSource | None = None,
        *,
        lock: threading.RLock | None = None,
    ) -> None:
        self.overview = overview
        super().__init__(engine, memories, journal, lock=lock)

    # ------------------------------------------------------------------ dispatch

    def call(self, name: str, arguments: Any = None) -> ToolResult:
        if name == "get_kb_overview" and not isinstance(arguments, Mapping):
            arguments = {}  # the overview never fails on its arguments (§4.10)
        return super().call(name, arguments)

    def _run(self, handler: ToolHandler, arguments: Any) -> ToolResult:
        # A dead engine answers with this family's own text (§4.8, §4.10).
        return run_tool(handler, arguments, restart=self._recover, died=ENGINE_NOT_INITIALIZED)

    def _recover(self) -> None:
        # A closed or never started engine (pid None) stays down; a dead one is restarted.
        if self.engine.pid is not None:
            with contextlib.suppress(LogicError):
                self.engine.restart()

    def find_predicate_references(self, arguments: Any = None) -> ToolResult:
        return self.call("find_predicate_references", arguments)

    def rename_predicate(self, arguments: Any = None) -> ToolResult:
        return self.call("rename_predicate", arguments)

    def get_kb_overview(self, arguments: Any = None) -> ToolResult:
        return self.call("get_kb_overview", arguments)

    # ------------------------------------------------------------------ helpers

    def _mounted(self) -> list[str]:
        """Memories mounted now (R-FR2, R-RN4): the engine's memories the registry knows, with
        ``default`` always among them, sorted by name."""
        names = {name for name in self.engine.memories() if self.memories.mode(name) is not None}
        names.add(DEFAULT_MEMORY)
        return sorted(names)

    # ------------------------------------------------------------------ find_predicate_references

    def _find_predicate_references(self, arguments: Mapping[str, Any]) -> ToolResult:
        functor = required_atom(arguments, "functor")
        arity = optional_int(arguments, "arity")
        if arity is not None and arity < 0:
            raise ToolFailure(INVALID_ARGUMENTS)
        include_cross = _optional_bool(arguments, "include_cross_memory_refs", True)
        scope = optional_str(arguments, "memory") or DEFAULT_MEMORY
        if scope == ALL_MEMORIES:
            scanned = self._mounted()
        else:
            self._mounted_mode(scope)  # a memory that is not mounted fails
            scanned = [scope]
        for name in scanned:
            self._ensure(name)
        listing = ", ".join(scanned)
        wanted = -1 if arity is None else arity
        rules, facts, justs, cross = self._ok(f"qr_refs([{listing}], {functor}, {wanted}, R)")
        rule_rows = sorted((_args(item) for item in rules), key=_memory_first)  # R-FR7
        just_rows = sorted((_args(item) for item in justs), key=_memory_first)
        cross_rows = sorted((_args(item) for item in cross), key=_memory_first) if include_cross else []
        payload = {
            "target": functor if arity is None else f"{functor}/{arity}",  # R-FR1
            "memory": scope,
            "rules": [{"head": h, "body": b, "memory": m} for m, h, b in rule_rows],
            "direct_facts_count": int(facts),
            "facts_referenced_in_assumptions": [
                {"assumption": a, "fact": f, "memory": m} for m, a, f in just_rows
            ],
            "cross_memory_refs": [
                {"head": h, "body": b, "memory": m, "qualifier": q} for m, q, h, b in cross_rows
            ],
        }
        return ToolResult(compact_json(payload))

    # ------------------------------------------------------------------ rename_predicate

    def _rename_predicate(self, arguments: Mapping[str, Any]) -> ToolResult:
        old = required_str(arguments, "old_functor")
        new = required_str(arguments, "new_functor")
        arity = optional_int(arguments, "arity")
        if arity is not None and arity < 0:
            raise ToolFailure(INVALID_ARGUMENTS)
        memory = optional_str(arguments, "memory") or DEFAULT_MEMORY
        dry_run = _optional_bool(arguments, "dry_run", False)
        propagate = _optional_bool(arguments, "propagate_cross_memory_refs", False)
        for name in (old, new):  # error 2
            protected = _protected_arity(name, arity)
            if protected is not None:
                raise ToolFailure(f"Cannot rename ISO operator: {name}/{protected}")
        for name in (old, new):  # error 3; the TMS records are no user predicates [designed here]
            if not PLAIN_ATOM.match(name) or name in HIDDEN_PREDICATES:
                raise ToolFailure(INVALID_ARGUMENTS)
        if self._mounted_mode(memory) != "rw":  # error 4: not mounted, or read-only
            raise ToolFailure(f"Cannot rename in read-only memory: {memory}")
        if old == new:  # error 5
            raise ToolFailure("old_functor and new_functor are identical")
        self._ensure(memory)
        if arity is None:  # error 6, R-RN1
            (arities,) = self._ok(f"qr_arities({memory}, {old}, R)")
            if len(arities) > 1:
                listed = ", ".join(str(int(a)) for a in arities)
                raise ToolFailure(
                    f"Ambiguous arity for {old}; detected arities: {listed}. Specify arity parameter."
                )
            if not arities:
                return ToolResult(_rename_text(0, 0, [], [], [], []))
            arity = int(arities[0])
        (exists,) = self._ok(f"qr_has_clauses({memory}, {new}, {arity}, R)")
        if exists == "true":  # error 7
            raise ToolFailure(f"Cannot rename: {new}/{arity} already exists in memory '{memory}'")
        (builtin,) = self._ok(f"qr_builtin({new}, {arity}, R)")
        if builtin == "true":  # a built-in cannot be redefined [designed here]
            raise ToolFailure(INVALID_ARGUMENTS)
        apply = "false" if dry_run else "true"
        facts, rules, ids, entries = self._ok(f"qr_rename({memory}, {old}, {arity}, {new}, {apply}, R)")
        if not dry_run and entries:
            self.journal.append(memory, _entries(entries))
        rewritten: list[dict[str, Any]] = []
        warnings: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for other in self._mounted():  # R-RN4, ordered by name
            if other == memory:
                continue
            writable = self.memories.mode(other) == "rw"
            change = writable and propagate and not dry_run
            refs, updated, other_entries = self._ok(
                f"qr_requalify({other}, {memory}, {old}, {arity}, {new}, {'true' if change else 'false'}, R)"
            )
            if int(refs) == 0:
                continue
            if not writable:
                skipped.append({"memory": other, "refs": int(refs), "reason": "read-only"})
            elif propagate:
                if change and other_entries:
                    self.journal.append(other, _entries(other_entries))
                rewritten.append({"memory": other, "rules_updated": int(updated)})
            else:
                warnings.append(
                    {"memory": other, "refs": int(refs), "reason": "propagate_cross_memory_refs=false"}
                )
        id_texts = [str(text) for text in ids]
        return ToolResult(_rename_text(int(facts), int(rules), id_texts, rewritten, warnings, skipped))

    # ------------------------------------------------------------------ get_kb_overview

    def _get_kb_overview(self, arguments: Mapping[str, Any]) -> ToolResult:
        size = arguments.get("sample_size")
        if isinstance(size, bool) or not isinstance(size, int):  # R-O2
            size = DEFAULT_SAMPLE_SIZE
        size = max(0, min(MAX_SAMPLE_SIZE, int(size)))
        self._ensure(DEFAULT_MEMORY)  # R-O1: the default memory only
        preds, names = self._ok(f"qr_overview({DEFAULT_MEMORY}, {size}, R)")
        rows: list[tuple[str, int, int, int, list[str]]] = []
        for item in preds:
            name, arity, count, rule_count, samples = _args(item)
            if PLAIN_ATOM.match(str(name)) and str(name) not in HIDDEN_PREDICATES:  # R-I1
                rows.append((str(name), int(arity), int(count), int(rule_count), [str(s) for s in samples]))
        rows.sort(key=_overview_order)
        rest = self._overview_rest([str(n) for n in names])
        effective = size
        text = _overview_text(rows, effective, rest, truncated=False)
        while len(text.encode("utf-8")) > OVERVIEW_BUDGET and effective > 0:  # R-O8
            effective //= 2
            text = _overview_text(rows, effective, rest, truncated=True)
        return ToolResult(text)

    def _overview_rest(self, assumption_names: list[str]) -> dict[str, Any]:
        """Everything after ``predicates``: never cut by the budget (R-O8)."""
        source = self.overview
        snapshots: Sequence[SnapshotInfo] = () if source is None else source.snapshots(DEFAULT_MEMORY)
        latest = latest_by_name(snapshots)  # R-O5
        mounts = None if source is None else source.mounts()
        items = sorted(mounts or (), key=lambda mount: mount.name)  # R-O7
        return {
            "assumptions": {"count": len(assumption_names), "names": assumption_names},  # R-O4
            "snapshots": {
                "count": len(snapshots),
                "latest": None if latest is None else latest.name,
                "latest_at": None if latest is None else latest.mtime_utc,
            },
            "persistence": {  # R-O6
                "wal_pending": 0 if source is None else source.journal_pending(DEFAULT_MEMORY),
                "healthy": False if source is None else source.persistence_healthy(),
            },
            "mounts": {
                "available": mounts is not None,
                "count": len(items),
                "items": [{"name": m.name, "scope": m.scope, "mode": m.mode} for m in items],
            },
        }


# ---------------------------------------------------------------------- helpers


def _optional_bool(arguments: Mapping[str, Any], key: str, default: bool) -> bool:
    """R-A2: JSON booleans and the strings "true"/"false" (the CLI's spelling)."""
    value = arguments.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if value == "true":
        return True
    if value == "false":
        return False
    raise ToolFailure(INVALID_ARGUMENTS)


def _protected_arity(name: str, arity: int | None) -> int | None:
    """The arity at which ``name`` is a protected operator; the highest when arity is omitted."""
    arities = PROTECTED_OPERATORS.get(name, ())
    if arity is None:
        return max(arities, default=None)
    return arity if arity in arities else None


def _args(item: Any) -> list[Any]:
    _, args = result_parts(item)
    return args


def _memory_first(row: Sequence[Any]) -> tuple[Any, ...]:
    """R-FR7 with the default memory first [designed here], as the seed's __all__ example
    lists default's rule before audit's; then plain string order of the remaining keys."""
    return (row[0] != DEFAULT_MEMORY, *row)


def _overview_order(row: tuple[str, int, int, int, list[str]]) -> tuple[int, str, int]:
    """Predicates with only facts first, then mixed, then only rules; then name and arity.
    [designed here] in place of R-I3's plain name order, so that the seed's example (parent
    facts before the ancestor rule) comes out as printed."""
    _, _, count, rules, _ = row
    rank = {"fact": 0, "both": 1, "rule": 2}[predicate_kind(count, rules)]
    return (rank, row[0], row[1])


def _overview_text(
    rows: Sequence[tuple[str, int, int, int, list[str]]], size: int, rest: dict[str, Any], *, truncated: bool
) -> str:
    predicates = [
        {
            "functor": name,
            "arity": arity,
            "kind": predicate_kind(count, rules),
            "count": count,
            "samples": samples[:size],
        }
        for name, arity, count, rules, samples in rows
    ]
    return compact_json({"predicates": predicates, **rest, "truncated": truncated})


def _rename_text(
    facts: int,
    rules: int,
    ids: list[str],
    rewritten: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
    skipped: list[dict[str, Any]],
) -> str:
    """§4.9's JSON, with ", " and ": " separators as printed in the document; R-RN7."""
    payload = {
        "renamed_facts": facts,
        "rewritten_rule_bodies": rules,
        "affected_rule_ids": ids,
        "cross_memory_impact": {"rewritten": rewritten, "warnings": warnings, "skipped_readonly": skipped},
        "is_error": False,
    }
    return json.dumps(payload, ensure_ascii=False)


def _entries(items: Sequence[Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in items:
        op, text = _args(item)
        out.append((str(op), str(text)))
    return out


__all__ = [
    "ALL_MEMORIES",
    "ENGINE_NOT_INITIALIZED",
    "HELPER",
    "OVERVIEW_BUDGET",
    "PROTECTED_OPERATORS",
    "TOOL_NAMES",
    "MountInfo",
    "OverviewSource",
    "RefactorService",
]
