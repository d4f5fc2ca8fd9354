"""What the registries versioned by name share (the shape sets, the OWL ontologies): a load or a
removal closes the open version at its timestamp, so it may not predate that version."""

from __future__ import annotations

from sqlalchemy import Connection, Table, select

from quipu.errors import InvalidField


def refuse_going_back(conn: Connection, table: Table, name: str, ts: str, what: str) -> None:
    """A version cannot end before it began: 400 naming ``timestamp`` when ``ts`` predates the
    open version of ``name`` (``what``: "shape set", "ontology")."""
    c = table.c
    start = conn.execute(select(c.valid_from).where(c.name == name, c.valid_to.is_(None))).scalar()
    if start is not None and ts < start:
        raise InvalidField(
            f"'timestamp' {ts} is before the open version of {what} '{name}' ({start}); "
            "versions only move forward",
            field="timestamp",
        )
