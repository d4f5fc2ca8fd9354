"""The ``propose`` group: file, list, accept or reject a schema-evolution proposal."""

from __future__ import annotations

from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text
from quipu.errors import InvalidField

group = typer.Typer(
    help="Schema-evolution proposals: file, list, accept or reject a requested schema change.",
    no_args_is_help=True,
)

ProposalArgument = Annotated[int, typer.Argument(metavar="ID", help="the proposal id")]
DecidedByOption = Annotated[
    str | None,
    typer.Option(
        "--decided-by", envvar="QUIPU_ACTOR", help="who decides (default: $QUIPU_ACTOR, else the OS user)"
    ),
]
DecidedAtOption = Annotated[str | None, typer.Option("--timestamp", help="decided_at (default now)")]


def _decider(given: str | None) -> str:
    """The declared decider: the flag or $QUIPU_ACTOR, else the OS user name."""
    if given:
        return given
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name and no passwd entry (some containers)
        raise InvalidField(
            "missing --decided-by (and neither QUIPU_ACTOR nor an OS user name is available)",
            field="decided_by",
        ) from None


@group.command("submit")
def propose_submit(
    kind: Annotated[str, typer.Argument(help="shape, ontology, class or property")],
    target: Annotated[str, typer.Argument(help="shape-set name, class IRI or property IRI")],
    file: Annotated[str, typer.Argument(help="the proposed change: Turtle or a JSON patch (- for stdin)")],
    proposer: Annotated[str, typer.Option("--proposer", help="who proposes")],
    rationale: Annotated[str | None, typer.Option("--rationale", help="why")] = None,
    trigger: Annotated[
        str | None, typer.Option("--trigger", help="validation-failure ref or work-item id")
    ] = None,
    timestamp: Annotated[str | None, typer.Option("--timestamp", help="created_at (default now)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """File a pending proposal; nothing changes until it is accepted."""
    diff = read_text(file)
    with open_store(db, config) as kb:
        filed = kb.propose(
            kind, target, diff, proposer, rationale=rationale, trigger_ref=trigger, timestamp=timestamp
        )
    emit({"proposal_id": filed.id, "status": filed.status})


@group.command("list")
def propose_list(
    status: Annotated[
        str | None, typer.Option("--status", help="pending, accepted or rejected (default: all)")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """The proposal queue, newest first."""
    with open_store(db, config) as kb:
        found = kb.proposals(status)
    emit({"proposals": [p.as_json() for p in found], "count": len(found)})


@group.command("accept")
def propose_accept(
    proposal_id: ProposalArgument,
    note: Annotated[str | None, typer.Option("--note", help="decision note")] = None,
    decided_by: DecidedByOption = None,
    timestamp: DecidedAtOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Accept a pending proposal; a shape proposal is validated and installed as a shape set."""
    by = _decider(decided_by)
    with open_store(db, config) as kb:
        decided = kb.accept_proposal(proposal_id, by, note=note, timestamp=timestamp)
    emit(
        {"proposal_id": decided.id, "status": decided.status, "target": decided.target, "kind": decided.kind}
    )


@group.command("reject")
def propose_reject(
    proposal_id: ProposalArgument,
    note: Annotated[str, typer.Option("--note", help="the reason for rejecting")],
    decided_by: DecidedByOption = None,
    timestamp: DecidedAtOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Reject a pending proposal, recording the reason."""
    by = _decider(decided_by)
    with open_store(db, config) as kb:
        decided = kb.reject_proposal(proposal_id, by, note, timestamp=timestamp)
    emit({"proposal_id": decided.id, "status": decided.status, "target": decided.target})
