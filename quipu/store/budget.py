"""Query budgets (DM §13.3): an evaluation deadline and a bound on intermediate results.

They live in the store because the store enforces them (its SQL reads and its rdflib view);
``quipu.sparql`` sets them for each query it runs.

``search.query_timeout_ms`` (0 disables) gives every query a deadline that counts from the
moment it holds its read snapshot. Past it the query stops with ``QueryTimeout`` (408):

* SQL statements are interrupted by the database itself, through ``Dialect.deadline`` (SQLite:
  a progress handler on the read connection; PostgreSQL: ``statement_timeout``);
* Python work of rdflib's evaluator is checked where it meets the store, in
  ``QuipuView.triples()``: at each pattern lookup and every ``CHECK_EVERY`` rows it yields.

``search.max_join_rows`` (0 disables) refuses a query with ``ResultTooLarge`` (422) when an
intermediate result would be larger. What counts as intermediate differs by path:

* rdflib's evaluator (fallback): every row the store hands to it during the query counts. The
  evaluator joins a basic graph pattern as nested loops, one lookup per partial solution, so the
  rows fetched for the k-th pattern *are* the solutions after k patterns: the running total is
  never smaller than any intermediate result of that join. It can be larger (it sums them, and
  EXISTS/OPTIONAL lookups count too), so the bound errs on the side of refusing; it also covers
  operators whose intermediates are not otherwise visible, since their inputs come from the store.
* the compiled path (one SQL statement): SQLite runs the joins inside the database and their
  intermediate sizes cannot be observed from outside. What can be counted is the work: the
  query's SQL gets a budget of ``STEPS_PER_ROW`` SQLite VM steps per allowed row, counted by the
  database itself (``Dialect.work_limits``) over all the statements the query runs; past it the
  statement stops with ``QueryTooExpensive`` (422 ``query_too_expensive``). A join, scan or sort
  that touches more than about ``max_join_rows`` rows on the way passes it (measured: 10 to 30
  steps per row touched), so a cross product is stopped in a few CPU-seconds at most instead of
  running to the deadline, and, unlike the deadline, the refusal does not depend on the load.
  Work inside the SPARQL value functions (Python, a few microseconds a call) is one step per
  call: the deadline still bounds a statement whose time goes there. PostgreSQL counts no
  steps; there ``statement_timeout`` (the deadline) stops such a statement.
* both paths: the final solutions are an intermediate result too. Unless ``max_sparql_rows``
  already cuts them (``truncated: true``), more than ``max_join_rows`` final rows is refused, and
  the compiled statement is limited so the database never produces more than one row too many.

Budgets are carried in a context variable, so ``QuipuView`` (and anything else evaluating under
``run_query``) sees them without being handed them; outside ``run_query`` nothing is checked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from quipu.errors import ConfigError, QueryTimeout, QueryTooExpensive, ResultTooLarge

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from quipu.store.database import Database

# Rows QuipuView yields between deadline checks: a clock read costs ~50 ns, a row far more.
CHECK_EVERY = 1024
# SQLite VM steps of work a query may do per row of max_join_rows. Measured on the LUBM benchmark
# queries: a scan, join or sort costs 10-30 steps per row it touches and the largest compiled
# query at 100k statements takes about 1.1 million steps in all; 100 leaves room for several
# intermediate results of max_join_rows rows. The default bound (1,000,000 rows) is 10^8 steps:
# about 3 CPU-seconds of pure SQL, where a cross product used to run to the 30 s deadline.
STEPS_PER_ROW = 100


class _Result(Protocol):
    truncated: bool


R = TypeVar("R", bound=_Result)

_current: ContextVar[Budget | None] = ContextVar("quipu_query_budget", default=None)


def limit(name: str, value: int | None) -> int | None:
    """A budget option checked once, when a store opens: None or 0 is unlimited."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} must be an integer >= 0 (0: unlimited), not {value!r}")
    return value or None


def timeout_error(timeout_ms: int) -> QueryTimeout:
    return QueryTimeout(f"query exceeded search.query_timeout_ms ({timeout_ms} ms)")


def join_error(max_join_rows: int) -> ResultTooLarge:
    return ResultTooLarge(f"intermediate result larger than search.max_join_rows ({max_join_rows})")


def work_error(max_join_rows: int) -> QueryTooExpensive:
    steps = max_join_rows * STEPS_PER_ROW
    return QueryTooExpensive(
        f"query stopped: its SQL passed the work budget of {steps:,} SQLite steps "
        f"({STEPS_PER_ROW} per row of search.max_join_rows ({max_join_rows}))",
        extra={"budget_steps": steps},
    )


@dataclass
class Budget:
    """One query's limits; ``None`` (or 0 in the settings) means unlimited."""

    timeout_ms: int | None = None
    max_join_rows: int | None = None
    deadline: float | None = None  # time.monotonic() value; set by start()
    rows: int = 0  # rows pulled from the store so far (fallback path)

    @classmethod
    def start(cls, timeout_ms: int | None, max_join_rows: int | None) -> Budget:
        timeout_ms = timeout_ms or None  # 0 disables, as in the settings
        max_join_rows = max_join_rows or None
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        return cls(timeout_ms, max_join_rows, deadline)

    @property
    def steps(self) -> int | None:
        """The work budget of the query's SQL, in SQLite VM steps (None: unlimited)."""
        return None if self.max_join_rows is None else self.max_join_rows * STEPS_PER_ROW

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            assert self.timeout_ms is not None
            raise timeout_error(self.timeout_ms)

    def pulled(self, count: int) -> None:
        """``count`` more rows came from the store: enforce both budgets."""
        self.rows += count
        if self.max_join_rows is not None and self.rows > self.max_join_rows:
            raise join_error(self.max_join_rows)
        self.check_deadline()

    def row_cap(self, max_rows: int | None) -> int | None:
        """How many final rows to ask for: ``max_rows``, or fewer when the join bound is lower."""
        if self.max_join_rows is None or (max_rows is not None and max_rows <= self.max_join_rows):
            return max_rows
        return self.max_join_rows

    def final(self, result: R, max_rows: int | None) -> R:
        """``result``, unless it was cut at ``row_cap`` by the join bound rather than max_rows."""
        if result.truncated and self.row_cap(max_rows) != max_rows:
            assert self.max_join_rows is not None
            raise join_error(self.max_join_rows)
        return result


def current() -> Budget | None:
    """The budget of the query being evaluated on this thread, if any."""
    return _current.get()


@contextmanager
def enforce(
    db: Database, conn: Connection, *, timeout_ms: int | None, max_join_rows: int | None
) -> Iterator[Budget]:
    """Run a query's work on ``conn`` under its budgets.

    Use inside ``db.read()``, so the database-side deadline is gone before the snapshot's
    connection goes back to the pool (an expired deadline would otherwise stop its ROLLBACK).
    """
    budget = Budget.start(timeout_ms, max_join_rows)
    # Unlimited: publish nothing, so QuipuView keeps its plain loop.
    limited = budget.deadline is not None or budget.max_join_rows is not None
    token = _current.set(budget if limited else None)
    try:
        if not limited:
            yield budget
        else:
            late = timeout_error(budget.timeout_ms or 0)
            costly = work_error(budget.max_join_rows or 0)
            with db.dialect.work_limits(conn, budget.deadline, late, budget.steps, costly):
                yield budget
    finally:
        _current.reset(token)
