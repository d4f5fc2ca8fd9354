"""A statement the database refuses for its size, not its data: past SQLite's compile-time
limits (expression depth 1000, a parser stack of 100, 200 FROM terms, 64 tables in a join, 500
terms of a compound SELECT, 127 function arguments) or PostgreSQL's (SQLSTATE class 54,
"program limit exceeded": stack depth, 100 function arguments, 1664 columns).

The SPARQL compiler can build such a statement from a query that is large but valid. SQLite
refuses it while preparing, before any row is read, and its read transaction carries on: the
query can still be answered another way (``recoverable``). PostgreSQL has aborted the
transaction by then, so there the query is refused (400) instead.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from quipu.store.database import Database

_SQLITE_MESSAGES: Final = (
    "expression tree is too large",
    "parser stack overflow",
    "too many from clause terms",
    "at most 64 tables in a join",
    "too many terms in compound select",
    "too many arguments on function",
    "too many columns",
    "too many sql variables",
    "too many terms in order by",
    "too many terms in group by",
)
_PG_PROGRAM_LIMIT: Final = "54"  # SQLSTATE class: program limit exceeded


def exceeded(exc: BaseException) -> str | None:
    """The database's message when ``exc`` (a driver error, or SQLAlchemy's wrapper of one)
    refuses a statement for its size; None for any other failure."""
    orig = getattr(exc, "orig", None) or exc
    if isinstance(orig, sqlite3.OperationalError):
        message = str(orig)
        return message if any(m in message.lower() for m in _SQLITE_MESSAGES) else None
    sqlstate = getattr(orig, "sqlstate", None)  # psycopg's errors
    if isinstance(sqlstate, str) and sqlstate.startswith(_PG_PROGRAM_LIMIT):
        return str(orig).strip().splitlines()[0]
    return None


def recoverable(db: Database, exc: BaseException) -> bool:
    """Whether ``exc`` refused a statement for its size and the read can go on without it."""
    return db.backend.kind == "sqlite" and exceeded(exc) is not None
