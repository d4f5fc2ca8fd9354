"""``quipu_path_backtest``: replay a candidate golden path over history
(tools-graphs-governance §6.2, rules BT-1..BT-5).

The candidate is the exemplar trajectory minus the omitted steps, compiled to a ``gp-grammar/1``
pattern. It is replayed over every other trajectory whose work item shares a topic with the
exemplar's: did it conform, and how did its work item close? "No trajectory matched" and "nothing
could be evaluated" are counted apart, and a candidate that cannot be compiled is refused: a
pattern with holes would match something other than the path a human means to promote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from quipu.errors import InvalidField, NotFound
from quipu.governance.gp_grammar import GRAMMAR_VERSION, Conforms, Signature, match
from quipu.governance.trajectories import Trajectories

CONFORMS: Final = "Conforms"
CANNOT_EVALUATE: Final = "CannotEvaluate"
DONE: Final = "done"


def backtest(paths: Trajectories, exemplar: str, omit: Sequence[str]) -> dict[str, Any]:
    """The backtest report of the candidate ``exemplar`` minus ``omit``."""
    term = paths.id(exemplar)
    if term is None:
        raise NotFound(f"entity not found: {exemplar}", field="exemplar")
    pattern = _pattern(paths, term, exemplar, set(omit))
    links = paths.work_items()
    topics_of = paths.strings("about", {item for _, item in links})
    own_items = {item for trajectory, item in links if trajectory == term}
    topics = sorted({topic for item in own_items for topic in topics_of.get(item, ())})
    if not topics:
        raise InvalidField(
            f"cannot establish applicability: the work item of {exemplar} records no 'about' topic, "
            "and a backtest over an unbounded population would count everything and mean nothing",
            field="exemplar",
        )
    # BT-1: every other trajectory whose work item shares a topic; off-topic ones never count.
    wanted = set(topics)
    population = [
        (trajectory, item)
        for trajectory, item in links
        if trajectory != term and not wanted.isdisjoint(topics_of.get(item, ()))
    ]
    names = paths.iris({t for pair in population for t in pair})
    population.sort(key=lambda pair: (names[pair[0]], names[pair[1]]))
    steps = paths.steps({trajectory for trajectory, _ in population})
    outcomes = paths.strings("outcome", {item for _, item in population})
    rows: list[dict[str, Any]] = []
    counts = dict.fromkeys(
        ("conformers_done", "conformers_total", "deviators_done", "deviators_total", "cannot_evaluate"), 0
    )
    for trajectory, item in population:
        signatures = [step.signature for step in steps.get(trajectory, [])]
        # [designed here] Several outcome strings: the smallest, like every other multiple value.
        outcome = min(outcomes.get(item, ()), default=None)
        done = int(outcome == DONE)  # BT-3: exactly "done"
        result: Any
        if all(sig is None for sig in signatures):  # BT-2: nothing to evaluate (or no steps)
            result = CANNOT_EVALUATE
            counts["cannot_evaluate"] += 1
        elif isinstance(found := match(pattern, signatures), Conforms):
            result = CONFORMS
            counts["conformers_total"] += 1
            counts["conformers_done"] += done
        else:
            result = {"DeviatesAt": {"pattern_index": found.pattern_index}}
            counts["deviators_total"] += 1
            counts["deviators_done"] += done
        rows.append(
            {
                "trajectory": names[trajectory],
                "workitem": names[item],
                "outcome": outcome,
                "result": result,
                "unevaluated_steps": signatures.count(None),  # BT-4: skipped while matching
            }
        )
    return {
        "grammar": GRAMMAR_VERSION,
        "exemplar": exemplar,
        "pattern": [sig.to_json() for sig in pattern],
        "topics": topics,
        "rows": rows,
        **counts,
    }


def _pattern(paths: Trajectories, term: int, exemplar: str, omit: set[str]) -> list[Signature]:
    """The candidate's pattern: the exemplar's kept steps' signatures, in order; refused when a
    kept step has none or nothing is kept."""
    steps = paths.steps((term,)).get(term, [])
    if not steps:
        raise InvalidField(f"exemplar trajectory has no steps: {exemplar}", field="exemplar")
    kept = [step for step in steps if step.iri not in omit]
    holes = [step.iri for step in kept if step.signature is None]
    if holes:
        raise InvalidField(
            f"cannot compile the candidate pattern: kept step(s) without actionKind have no "
            f"{GRAMMAR_VERSION} signature: {', '.join(holes)}; omit them or record their action kinds",
            field="omit",
        )
    pattern = [step.signature for step in kept if step.signature is not None]
    if not pattern:
        raise InvalidField(
            "the candidate pattern is empty after omissions: nothing to backtest", field="omit"
        )
    return pattern
