"""Filing, listing and deciding proposals over the ``proposals`` table (§7.1-§7.4)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

from sqlalchemy import Connection, Row, insert, select, update

from quipu import times
from quipu.errors import InvalidField, MissingField, NotFound, WriteRefused, WrongType
from quipu.identity import Authenticated
from quipu.shacl import registry
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.schema import proposals as table

KINDS: Final = ("shape", "ontology", "class", "property")
STATUSES: Final = ("pending", "accepted", "rejected")


@dataclass(frozen=True)
class Proposal:
    """One row of the queue, in the field order of the §7.2 listing."""

    id: int
    kind: str
    target: str
    diff: str
    rationale: str | None
    proposer: str
    trigger_ref: str | None
    status: str
    decided_by: str | None
    decided_at: str | None
    decision_note: str | None
    created_at: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


_c = table.c
_COLUMNS = (
    _c.id,
    _c.kind,
    _c.target,
    _c.diff,
    _c.rationale,
    _c.proposer,
    _c.trigger_ref,
    _c.status,
    _c.decided_by,
    _c.decided_at,
    _c.decision_note,
    _c.created_at,
)


def _proposal(row: Row[Any]) -> Proposal:
    return Proposal(**{name: row._mapping[name] for name in Proposal.__dataclass_fields__})


def _required(value: object, field: str) -> str:
    """A required text field: absent or blank is missing; anything but text is the wrong type."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise MissingField(f"missing '{field}' parameter", field=field)
    if not isinstance(value, str):
        raise WrongType(f"'{field}' must be a string", field=field)
    return value


def _one_of(value: str, field: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidField(
            f"unknown {field} '{value}' (expected: {', '.join(allowed)})",
            field=field,
            reason=f"unknown_{field}",
        )
    return value


def _proposal_id(value: object) -> int:
    if value is None:
        raise MissingField("missing 'id' parameter", field="id")
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongType("'id' must be an integer", field="id")
    return value


# -- filing and listing ----------------------------------------------------------------------


def submit(
    db: Database,
    kind: str | None,
    target: str | None,
    diff: str | None,
    proposer: str | None,
    *,
    rationale: str | None = None,
    trigger_ref: str | None = None,
    timestamp: str | None = None,
    auth: Authenticated | None = None,
) -> Proposal:
    """File a pending proposal. The diff is stored as given, never validated here (SP-1)."""
    values = {
        "kind": _one_of(_required(kind, "kind"), "kind", KINDS),
        "target": _required(target, "target"),
        "diff": _required(diff, "diff"),
        "proposer": _required(proposer, "proposer"),
        "rationale": rationale,
        "trigger_ref": trigger_ref,
        "status": "pending",
        "created_at": times.normalise_timestamp(timestamp),
    }
    with db.write(auth) as ctx:
        new_id: int = ctx.conn.execute(insert(table).values(**values).returning(_c.id)).scalar_one()
        return _proposal(ctx.conn.execute(select(*_COLUMNS).where(_c.id == new_id)).one())


def listing(db: Database, status: str | None = None) -> list[Proposal]:
    """The queue, newest ``created_at`` first (the later filing first on a tie)."""
    query = select(*_COLUMNS).order_by(_c.created_at.desc(), _c.id.desc())
    if status is not None:
        query = query.where(_c.status == _one_of(status, "status", STATUSES))
    with db.read() as conn:
        return [_proposal(row) for row in conn.execute(query)]


# -- deciding --------------------------------------------------------------------------------


def accept(
    db: Database,
    proposal_id: int | None,
    decided_by: str | None,
    *,
    note: str | None = None,
    timestamp: str | None = None,
    auth: Authenticated | None = None,
) -> Proposal:
    """Accept a pending proposal; a ``shape`` one is installed as the shape set ``target``,
    versioned at ``decided_at``, in the same transaction (PA-1). Other kinds only record the
    decision (PA-2). Any refusal rolls back both the load and the decision (PA-3)."""
    pid = _proposal_id(proposal_id)
    by = _required(decided_by, "decided_by")
    decided_at = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        found = _pending(ctx.conn, pid)
        if found.kind == "shape":
            _install(db, ctx, found, decided_at)
        return _decide(ctx.conn, found, "accepted", by, decided_at, note)


def reject(
    db: Database,
    proposal_id: int | None,
    decided_by: str | None,
    note: str | None,
    *,
    timestamp: str | None = None,
    auth: Authenticated | None = None,
) -> Proposal:
    """Reject a pending proposal, recording the reason (``note``, required)."""
    pid = _proposal_id(proposal_id)
    reason = _required(note, "note")
    by = _required(decided_by, "decided_by")
    decided_at = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        return _decide(ctx.conn, _pending(ctx.conn, pid), "rejected", by, decided_at, reason)


def _pending(conn: Connection, pid: int) -> Proposal:
    # Ids are positive 64-bit integers: anything else names no proposal (and must not reach
    # the driver, which cannot bind it).
    row = conn.execute(select(*_COLUMNS).where(_c.id == pid)).first() if 1 <= pid < 2**63 else None
    if row is None:
        raise NotFound(f"proposal {pid} not found", field="id")
    found = _proposal(row)
    if found.status != "pending":
        raise WriteRefused(f"proposal {pid} is already {found.status}", field="id", reason="not_pending")
    return found


def _install(db: Database, ctx: WriteContext, found: Proposal, decided_at: str) -> None:
    """Load the proposed shapes inside the decision's transaction, or refuse naming the diff."""
    try:
        registry.parse_shapes(found.diff, "diff")
        registry.load(db, found.target, found.diff, timestamp=decided_at, ctx=ctx)
    except InvalidField as exc:
        raise InvalidField(
            f"{exc.message}; proposal {found.id} remains pending",
            field=exc.field,
            reason=exc.reason,
            extra=exc.extra,
        ) from None


def _decide(
    conn: Connection, found: Proposal, status: str, by: str, decided_at: str, note: str | None
) -> Proposal:
    conn.execute(
        update(table)
        .where(_c.id == found.id, _c.status == "pending")
        .values(status=status, decided_by=by, decided_at=decided_at, decision_note=note)
    )
    decided = asdict(found) | {
        "status": status,
        "decided_by": by,
        "decided_at": decided_at,
        "decision_note": note,
    }
    return Proposal(**decided)
