"""``gp-grammar/1``: the versioned step-matching contract of golden paths
(tools-graphs-governance §6.0; the original's docs/design/conformance-grammar.md).

"Trajectory T conforms to path P" is decided here and nowhere else, so a backtest and any later
conformance check cannot disagree about it. A step's signature is ``(action_kind,
target_class)``, compared exactly; a pattern conforms iff it is a subsequence (in order, gaps
allowed) of a trajectory's evaluable signatures. Any change to matching is a new major version,
and every report carries ``GRAMMAR_VERSION``.

The original has no textual pattern language: a pattern is the exemplar's kept steps, and travels
as JSON. So this module is the signature model and the matcher, not a parser.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

GRAMMAR_VERSION: Final = "gp-grammar/1"

# The reserved target classes (an IRI target's class is otherwise one of its rdf:type IRIs).
LITERAL: Final = "literal"
UNTYPED: Final = "untyped"
NONE: Final = "none"

# One recorded actionTarget value: None for a literal, else the rdf:type IRIs of the IRI target.
Target = frozenset[str] | None


@dataclass(frozen=True, slots=True)
class Signature:
    """A step's v1 signature. Both halves are compared exactly (case-sensitive)."""

    action_kind: str
    target_class: str

    def to_json(self) -> dict[str, str]:
        # BT-5: snake_case on the wire, although the grammar document writes camelCase.
        return {"action_kind": self.action_kind, "target_class": self.target_class}


def target_class(targets: Iterable[Target]) -> str:
    """The class half of a signature: ``none`` without a target, ``literal`` for a literal, an IRI
    target's lexicographically smallest ``rdf:type``, ``untyped`` for an IRI target with none.
    [designed here] With several targets, the smallest of their classes: the same deterministic
    pick the grammar makes among several types."""
    classes = [LITERAL if types is None else min(types, default=UNTYPED) for types in targets]
    return min(classes, default=NONE)


def signature(action_kinds: Iterable[str], targets: Iterable[Target]) -> Signature | None:
    """The step's signature, or None when it records no ``actionKind``: such a step is
    unevaluable, never a match and never a deviation (missing data, not misconduct).
    [designed here] With several action kinds, the lexicographically smallest."""
    kind = min(action_kinds, default=None)
    if kind is None:
        return None
    return Signature(kind, target_class(targets))


@dataclass(frozen=True, slots=True)
class Conforms:
    """Every pattern element was matched, in order."""


@dataclass(frozen=True, slots=True)
class DeviatesAt:
    """``pattern_index`` is the first pattern element no remaining evaluable step could match."""

    pattern_index: int


Outcome = Conforms | DeviatesAt


def match(pattern: Sequence[Signature], steps: Sequence[Signature | None]) -> Outcome:
    """Match ``pattern`` as a subsequence of ``steps`` (None: an unevaluable step, skipped).

    Taking each pattern element at its earliest possible step is optimal for a subsequence, so
    the count matched this way is also where the pattern first cannot be continued."""
    matched = 0
    for step in steps:
        if matched == len(pattern):
            break
        if step is not None and step == pattern[matched]:
            matched += 1
    return Conforms() if matched == len(pattern) else DeviatesAt(matched)
