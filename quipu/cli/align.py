"""The ``align`` group: propose, decide and apply cross-graph alignments
(tools-graphs-governance §3; the same services as ``/align/*``).

The mapping set goes to stdout (or ``--out``) so it pipes into the next step; the summary and
the ``expected-version`` line go to stderr. ``decide`` opens no store: it is a pure function of
the two files.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text
from quipu.errors import InvalidField

group = typer.Typer(
    help="Cross-graph alignment as an SSSOM mapping set: propose candidates, decide, apply.",
    no_args_is_help=True,
)

OutOption = Annotated[str | None, typer.Option("--out", help="write the mapping set here instead of stdout")]


def _hand_over(out: dict[str, Any], path: str | None) -> None:
    """The set on stdout or into ``path``; the version to carry forward on stderr."""
    if path is None:
        sys.stdout.write(out["set_tsv"])
    else:
        Path(path).write_text(out["set_tsv"], encoding="utf-8")
    sys.stderr.write(f"expected-version: {out['expected_version']}\n")
    if path is not None:
        sys.stderr.write(f"wrote {path}\n")


@group.command("propose")
def align_propose(
    graph_a: Annotated[str, typer.Argument(metavar="GRAPH-A", help="a known graph IRI")],
    graph_b: Annotated[str, typer.Argument(metavar="GRAPH-B", help="the other known graph IRI")],
    set_id: Annotated[
        str | None, typer.Option("--set-id", help="mapping_set_id (default urn:quipu:align:mcp)")
    ] = None,
    out: OutOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Score label pairs across two graphs into an undecided SSSOM mapping set."""
    with open_store(db, config) as kb:
        proposed = kb.sharing.align_propose(graph_a=graph_a, graph_b=graph_b, mapping_set_id=set_id)
    sys.stderr.write(proposed["summary"] + "\n")
    _hand_over(proposed, out)


def read_decisions(text: str) -> list[dict[str, str]]:
    """``<subject>\\t<object>\\t<accept|negate>`` lines; ``#`` comments and blank lines skipped."""
    found: list[dict[str, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = [cell.strip() for cell in line.rstrip("\r").split("\t")]
        if len(cells) != 3:
            raise InvalidField(
                f"decisions line {number}: expected <subject>\\t<object>\\t<accept|negate>, "
                f"got {len(cells)} cell(s)",
                field="decisions",
            )
        found.append({"subject_id": cells[0], "object_id": cells[1], "decision": cells[2]})
    return found


@group.command("decide")
def align_decide(
    set_file: Annotated[str, typer.Argument(metavar="SET.TSV", help="the proposed set (- for stdin)")],
    decisions: Annotated[
        str, typer.Option("--decisions", help="a TSV of <subject> <object> <accept|negate> lines")
    ],
    reviewer: Annotated[str, typer.Option("--reviewer", help="who decided (becomes author_id)")],
    out: OutOption = None,
) -> None:
    """Record accept / negate verdicts on a mapping set (reads no store)."""
    from quipu.sharing import align

    decided = align.decide(
        set_tsv=read_text(set_file, "SET.TSV", what="mapping set"),
        reviewer=reviewer,
        decisions=read_decisions(read_text(decisions, "--decisions", what="decisions")),
    )
    unmatched = decided["unmatched"]
    sys.stderr.write(
        f"{decided['applied']} decision(s) applied; {len(unmatched)} named no pair in this set\n"
    )
    for pair in unmatched:
        sys.stderr.write(f"  unmatched: {pair['subject_id']}\t{pair['object_id']}\n")
    _hand_over(decided, out)


@group.command("apply")
def align_apply(
    set_file: Annotated[str, typer.Argument(metavar="SET.TSV", help="the decided set (- for stdin)")],
    graph_a: Annotated[str, typer.Option("--graph-a", help="the first source graph given to propose")],
    graph_b: Annotated[str, typer.Option("--graph-b", help="the second source graph")],
    expected_version: Annotated[
        str, typer.Option("--expected-version", help="the version decide printed for this set")
    ],
    actor: Annotated[
        str | None,
        typer.Option("--actor", envvar="QUIPU_ACTOR", help="declared actor (default: $QUIPU_ACTOR)"),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write the decided rows as owl:sameAs / quipu:distinctFrom into the derived alignment graph."""
    tsv = read_text(set_file, "SET.TSV", what="mapping set")
    with open_store(db, config) as kb:
        emit(
            kb.sharing.align_apply(
                set_tsv=tsv,
                graph_a=graph_a,
                graph_b=graph_b,
                expected_version=expected_version,
                actor=actor,
            )
        )
