"""The ``path`` group: the provenance cone and the backtest of a trajectory
(tools-graphs-governance §6; the same service as ``/path/cone`` and ``/path/backtest``).

With ``--json`` stdout is the route's JSON body exactly; otherwise a short text report. Both are
reads: nothing is ever written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store

group = typer.Typer(
    help="Golden paths: which steps fed a verified result (cone), and a pruned candidate replayed "
    "over history (backtest).",
    no_args_is_help=True,
)

TrajectoryArgument = Annotated[str, typer.Argument(metavar="TRAJECTORY-IRI", help="the trajectory")]
JsonOption = Annotated[bool, typer.Option("--json", help="print the report as JSON")]
BaseNsOption = Annotated[
    str | None, typer.Option("--base-ns", metavar="IRI", help="vocabulary namespace (default: the store's)")
]


@group.command("cone")
def cone(
    trajectory: TrajectoryArgument,
    via: Annotated[
        list[str] | None,
        typer.Option("--via", metavar="PREDICATE-IRI", help="derivation predicate to walk (repeatable)"),
    ] = None,
    hops: Annotated[int, typer.Option("--hops", min=0, help="depth bound of the derivation walk")] = 8,
    base_ns: BaseNsOption = None,
    json: JsonOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Each step as InCone, OutOfCone or CannotEvaluate against the falsifier-gated verifications."""
    with open_store(db, config) as kb:
        report = kb.golden_paths.cone(trajectory, via=via or [], hops=hops, base_ns=base_ns)
    _show(report, json, _cone_text)


@group.command("backtest")
def backtest(
    exemplar: TrajectoryArgument,
    omit: Annotated[
        list[str] | None,
        typer.Option("--omit", metavar="STEP-IRI", help="a step the candidate omits (repeatable)"),
    ] = None,
    base_ns: BaseNsOption = None,
    json: JsonOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """The exemplar minus the omitted steps, replayed over trajectories sharing its topic."""
    with open_store(db, config) as kb:
        report = kb.golden_paths.backtest(exemplar, omit=omit or [], base_ns=base_ns)
    _show(report, json, _backtest_text)


def _show(report: dict[str, Any], as_json: bool, text: Callable[[dict[str, Any]], list[str]]) -> None:
    """The report on stdout: the route's JSON body exactly, or its text form."""
    if as_json:
        emit(report)
    else:
        sys.stdout.write("\n".join(text(report)) + "\n")


def _cone_text(report: dict[str, Any]) -> list[str]:
    lines = [
        f"cone of {report['trajectory']} within {report['hops']} hops",
        f"verifications: {', '.join(report['verifications'])}",
        f"derivation predicates: {', '.join(report['derivation_predicates'])}",
    ]
    for step in report["steps"]:
        order = "-" if step["order"] is None else str(step["order"])
        lines.append(f"{order:>4}  {step['verdict']:<14}  {step['iri']}  ({step['reason']})")
    return lines


def _backtest_text(report: dict[str, Any]) -> list[str]:
    pattern = " -> ".join(f"{p['action_kind']}:{p['target_class']}" for p in report["pattern"])
    lines = [
        f"{report['grammar']} backtest of {report['exemplar']}",
        f"pattern: {pattern}",
        f"topics: {', '.join(report['topics'])}",
    ]
    for row in report["rows"]:
        outcome = row["outcome"] if row["outcome"] is not None else "open"
        lines.append(
            f"{row['trajectory']}  {row['workitem']}  {outcome}  {_result(row['result'])}"
            f"  ({row['unevaluated_steps']} unevaluated)"
        )
    lines.append(
        f"conformers: {report['conformers_done']} done of {report['conformers_total']}; "
        f"deviators: {report['deviators_done']} done of {report['deviators_total']}; "
        f"cannot evaluate: {report['cannot_evaluate']}"
    )
    return lines


def _result(result: Any) -> str:
    if isinstance(result, dict):
        return f"DeviatesAt pattern[{result['DeviatesAt']['pattern_index']}]"
    return str(result)
