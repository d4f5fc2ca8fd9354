"""``quipu_path_cone``: which steps of a finished trajectory fed the result a falsifiable
verification checked (tools-graphs-governance §6.1, rules CO-1..CO-5).

A step is ``InCone`` when something it produced flows, along the derivation predicates, into a
falsifier-gated verification of the trajectory; ``OutOfCone`` when nothing does (mechanically
prunable); ``CannotEvaluate`` when it recorded no derivation edge at all (never prunable by
silence). The walk is the bounded breadth-first walk of ``quipu_impact``.

Why forward reachability and not "remove the step and see whether the chain survives" (CO-3): a
retraction removes only the step's own statements, so a chain running on through its output
artifacts' statements survives it, and a load-bearing step would read as prunable: the one
direction this analysis must never fail in (the original's design correction, quipu-gp2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from quipu.errors import InvalidField, NotFound
from quipu.governance.trajectories import Step, Trajectories
from quipu.graphs.impact import walk

DEFAULT_HOPS: Final = 8
IN_CONE: Final = "InCone"
OUT_OF_CONE: Final = "OutOfCone"
CANNOT_EVALUATE: Final = "CannotEvaluate"


def cone(paths: Trajectories, trajectory: str, via: Sequence[str], hops: int) -> dict[str, Any]:
    """The cone report of ``trajectory``, walking ``via`` and ``verifiedBy`` up to ``hops``."""
    term = paths.id(trajectory)
    if term is None:
        raise NotFound(f"entity not found: {trajectory}", field="trajectory")
    steps = paths.steps((term,)).get(term, [])
    if not steps:
        raise InvalidField(
            f"trajectory has no steps: {trajectory} (nothing to compute a cone over)", field="trajectory"
        )
    verifications = _admissible(paths, steps)
    if not verifications:
        # Refused, not reported: against an unverified result every step would be prunable.
        raise InvalidField(
            f"trajectory {trajectory} has no falsifier-gated verification among its steps' "
            "verifiedBy targets, so it is not admissible",
            field="trajectory",
        )
    # verifiedBy is always walked: it is the edge that reaches a verification. Repeats collapse.
    predicates = list(dict.fromkeys([*via, paths.vocabulary.verified_by]))
    walked = list(paths.ids(predicates).values())  # CO-5: an unknown predicate contributes nothing
    edges = paths.derivation_edges([s.term for s in steps], walked)
    names = paths.iris(verifications)
    return {
        "trajectory": trajectory,
        "verifications": [names[v] for v in verifications],
        "derivation_predicates": predicates,
        "hops": hops,
        "steps": [_classified(paths, step, edges.get(step.term, 0), walked, hops, names) for step in steps],
    }


def _admissible(paths: Trajectories, steps: Sequence[Step]) -> list[int]:
    """The falsifier-gated verifications the steps' ``verifiedBy`` reach, in step order. CO-4: a
    verification without a falsifier never anchors anything."""
    order = {s.term: i for i, s in enumerate(steps)}
    linked = sorted(paths.verified_by(order), key=lambda pair: order[pair[0]])  # stable: store order
    candidates = list(dict.fromkeys(v for _, v in linked))
    gated = paths.falsifier_gated(candidates)
    return [v for v in candidates if v in gated]


def _classified(
    paths: Trajectories, step: Step, edges: int, walked: list[int], hops: int, verifications: dict[int, str]
) -> dict[str, Any]:
    if edges == 0:  # CO-1: no derivation edge recorded, so the question has no answer
        verdict, reason = (
            CANNOT_EVALUATE,
            "no outgoing derivation edges recorded: cannot say what this step fed",
        )
    else:
        # CO-2, CO-3: forward reachability from the step, never removal.
        reached, _ = walk(paths.conn, step.term, hops, walked)
        hit = next((r for r in reached[1:] if r.term in verifications), None)
        if hit is not None:
            verdict, reason = IN_CONE, f"reaches {verifications[hit.term]} at depth {hit.depth}"
        else:
            verdict = OUT_OF_CONE
            reason = f"no verified result reachable within {hops} hops over {edges} derivation edge(s)"
    return {"iri": step.iri, "order": step.order, "verdict": verdict, "reason": reason}
