"""One SWI-Prolog process driven through its Machine Query Interface (spec §10).

The engine is a child process reached over a Unix-domain socket in a private directory
(TCP costs ~44 ms a call, §10.1). It is started by us, not by ``swiplserver``, so that:

* its stdin is a pipe of ours that we never write: nothing it reads comes from our stdio
  stream (the MCP input). A parent killed with -9 leaves no orphan: the kernel closes our
  socket and the MQI, started with ``mqi_start`` (exit on connection failure), halts;
* its stdout and stderr go to files in the private directory, and the MQI redirects all
  Prolog output to the null device, so nothing it prints reaches our stdout (R-T4, R-Q9);
* the stack limit is set on the command line (R-Q2) and the user's init file is not read.

``swiplserver`` 1.0.2 loops forever on a closed socket (its receive loop treats an empty
``recv`` as "no data yet"), and has no deadline of its own beyond the MQI's cooperative time
limit. ``_GuardedThread`` replaces its receive loop: a closed socket or a dead process raises
``EngineDied``; a call that overruns its limit plus a grace period kills the process (a goal
can catch the cooperative ``time_limit_exceeded``), restarts the engine and raises
``GoalTimeout``.

All user text travels as Prolog string literals into the helper predicates of
``prolog/quipu_logic.pl``, which parse, check and run it; nothing is built by pasting text
into goals (R-P3).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from swiplserver import (
    PrologConnectionFailedError,
    PrologError,
    PrologMQI,
    PrologQueryTimeoutError,
    PrologThread,
)

from quipu.logic.errors import (
    ClauseRejected,
    EngineDied,
    EngineError,
    EngineUnavailable,
    GoalRefused,
    GoalTimeout,
    GraphUnavailable,
    LogicError,
    PrologSyntaxError,
    StackLimit,
)
from quipu.logic.terms import Solutions, decode_solutions, prolog_string

HELPER = Path(__file__).parent / "prolog" / "quipu_logic.pl"
STACK_LIMIT_BYTES = 64 * 1024 * 1024  # R-Q2, the original's max_memory_bytes
QUERY_TIMEOUT_S = 5.0  # R-Q1, the original's timeout_ms
MAX_SOLUTIONS = 100  # R-Q3
MEMORY_NAME = re.compile(r"[a-z][A-Za-z0-9_]*\Z")  # the plain-atom grammar (R-P3)

INSTALL_HINT = (
    "SWI-Prolog (swipl) is required for the logic memory. Install it with: "
    "apt-get install swi-prolog-nox (Debian/Ubuntu), dnf install pl (Fedora), "
    "brew install swi-prolog (macOS); or run scripts/ensure-swipl.sh."
)

_POLL_S = 0.25  # how often a waiting call checks that the process is still alive
_BATCH_CLAUSES = 5000  # load_clauses: clauses per engine call
_BATCH_BYTES = 1 << 20  # ... and at most about this much text per call


class _Gone(ConnectionError):
    """The socket closed or the process ended while we were talking to it. An OSError, so
    that swiplserver's own clean-up code (which suppresses OSError) stays quiet."""


class _Overrun(Exception):
    """The hard deadline of a call passed."""


class _GuardedThread(PrologThread):  # type: ignore[misc]
    """A PrologThread whose receive loop notices a dead engine and enforces a deadline."""

    def __init__(self, mqi: PrologMQI, process: subprocess.Popen[bytes]) -> None:
        super().__init__(mqi)
        self._process = process
        self._buffer = b""
        self.deadline: float | None = None

    def _recv_some(self) -> bytes:
        sock = self._socket
        if sock is None:
            raise _Gone("not connected")
        while True:
            wait = _POLL_S
            if self.deadline is not None:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    raise _Overrun()
                wait = min(wait, remaining)
            sock.settimeout(wait)
            try:
                data: bytes = sock.recv(65536)
            except TimeoutError:
                if self._process.poll() is not None:
                    raise _Gone("the engine process exited") from None
                continue
            except OSError as exc:
                raise _Gone(str(exc)) from exc
            if not data:
                raise _Gone("the engine closed the connection")
            return data

    def _receive(self) -> str:
        # A message is "<byte length>.\n<body>"; heartbeats are single '.' before the length.
        buf = self._buffer
        while (newline := buf.find(b"\n")) < 0:
            buf += self._recv_some()
        header = buf[:newline].lstrip(b".").rstrip(b".")
        try:
            length = int(header)
        except ValueError:
            raise _Gone(f"unexpected message header {header!r}") from None
        body = buf[newline + 1 :]
        while len(body) < length:
            body += self._recv_some()
        self._buffer = body[length:]
        return body[:length].decode("utf-8")


@dataclass(frozen=True, slots=True)
class LoadFailure:
    index: int  # position in the list given to load_clauses
    text: str
    message: str


@dataclass(frozen=True, slots=True)
class LoadReport:
    loaded: int
    failures: tuple[LoadFailure, ...]


@dataclass(frozen=True, slots=True)
class Predicate:
    """One user predicate of a memory with its clauses rendered canonically (§3.4)."""

    name: str
    arity: int
    clauses: tuple[str, ...]


def find_swipl(explicit: str | None = None) -> str:
    """The swipl executable to run: ``explicit``, ``$QUIPU_SWIPL``, or ``swipl`` on PATH."""
    candidate = explicit or os.environ.get("QUIPU_SWIPL") or "swipl"
    found = shutil.which(candidate)
    if found is None:
        raise EngineUnavailable(f"cannot find {candidate!r}. {INSTALL_HINT}")
    return found


class Engine:
    """One Prolog engine. Not thread-safe: calls are serialised by the caller (R-T3).

    Start it with ``start()`` or a ``with`` block. After ``EngineDied`` every call fails until
    ``restart()``, which starts a fresh process, re-creates the registered memories (empty) and
    runs the restart hooks, through which the caller reloads snapshots and journals.
    """

    def __init__(
        self,
        *,
        swipl: str | None = None,
        query_timeout: float = QUERY_TIMEOUT_S,
        load_timeout: float = 120.0,
        grace: float = 2.0,
        stack_limit: int = STACK_LIMIT_BYTES,
        startup_timeout: float = 15.0,
    ) -> None:
        self._swipl = swipl
        self.query_timeout = query_timeout
        self.load_timeout = load_timeout
        self.grace = grace
        self.stack_limit = stack_limit
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._thread: _GuardedThread | None = None
        self._mqi: PrologMQI | None = None
        self._dir: Path | None = None
        self._dead_reason: str | None = None
        self._memories: list[str] = []
        self._hooks: list[Callable[[Engine], None]] = []
        self._helpers: list[Path] = []
        self._prelude: str | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._dead_reason is None and self._process_running()

    def _process_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def add_restart_hook(self, hook: Callable[[Engine], None]) -> None:
        """Run ``hook(engine)`` after every restart (not after the first start)."""
        self._hooks.append(hook)

    def start(self) -> None:
        if self._thread is not None:
            return
        swipl = find_swipl(self._swipl)
        workdir = Path(tempfile.mkdtemp(prefix="quipu-logic-"))
        sock = workdir / "mqi"
        out_path = workdir / "engine.out"
        err_path = workdir / "engine.err"
        args = [
            swipl,
            "--quiet",
            "--no-packs",
            "-f",
            "none",
            f"--stack-limit={self.stack_limit}",
            "-g",
            "mqi_start",
            "-t",
            "halt(2)",
            str(HELPER),
            "--",
            "--write_connection_values=true",
            f"--unix_domain_socket={sock}",
            f"--write_output_to_file={os.devnull}",
        ]
        try:
            with out_path.open("wb") as out, err_path.open("wb") as err:
                process = subprocess.Popen(
                    args, stdin=subprocess.PIPE, stdout=out, stderr=err, start_new_session=True
                )
        except OSError as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            raise EngineUnavailable(f"cannot start {swipl}: {exc}. {INSTALL_HINT}") from exc
        try:
            password = self._await_connection_values(process, out_path, err_path, sock)
            mqi = PrologMQI(launch_mqi=False, unix_domain_socket=str(sock), password=password)
            thread = _GuardedThread(mqi, process)
            thread.deadline = time.monotonic() + self.startup_timeout
            thread.start()
            thread.deadline = None
        except (LogicError, _Gone, _Overrun, OSError, PrologError) as exc:
            _kill(process)
            shutil.rmtree(workdir, ignore_errors=True)
            if isinstance(exc, LogicError):
                raise
            raise EngineUnavailable(f"the Prolog engine did not start: {exc!r}") from exc
        self._process, self._mqi, self._thread, self._dir = process, mqi, thread, workdir
        self._dead_reason = None
        for helper in self._helpers:
            self._consult(helper)

    def _await_connection_values(
        self, process: subprocess.Popen[bytes], out_path: Path, err_path: Path, sock: Path
    ) -> str:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            lines = out_path.read_bytes().split(b"\n")
            if len(lines) >= 3:
                if lines[0].decode() != str(sock):
                    raise EngineUnavailable(f"unexpected engine start-up output {lines[0]!r}")
                return lines[1].decode()
            if process.poll() is not None or time.monotonic() > deadline:
                detail = err_path.read_text(errors="replace").strip()[-2000:]
                what = "exited" if process.poll() is not None else "did not answer in time"
                raise EngineUnavailable(f"the Prolog engine {what} during start-up: {detail}")
            time.sleep(0.005)

    def close(self) -> None:
        """Stop the engine process (no Prolog state needs flushing) and remove its files."""
        thread, process, workdir = self._thread, self._process, self._dir
        self._thread = self._mqi = self._process = self._dir = None
        if thread is not None:
            sock = thread._socket
            # PrologThread.__del__ would try to say goodbye over the socket; it is gone.
            thread._socket = None
            thread._prolog_server.connection_failed = True
            if sock is not None:
                sock.close()
        if process is not None:
            _kill(process)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    def restart(self) -> None:
        """A fresh engine: the registered memories come back empty, then the hooks run."""
        self.close()
        self.start()
        for name in self._memories:
            self._call(f"quipu_logic:ql_ensure_memory({name}), R = ok", self.query_timeout)
        for hook in self._hooks:
            hook(self)

    def load_helper(self, path: Path) -> None:
        """Load one more trusted helper module (a ``.pl`` file of ours) now, if started, and
        again after every start and restart, before the restart hooks run."""
        resolved = Path(path).resolve()
        if resolved in self._helpers:
            return
        self._helpers.append(resolved)
        if self._thread is not None:
            self._consult(resolved)

    def _consult(self, path: Path) -> None:
        self._call(
            f"atom_string(F, {prolog_string(str(path))}), load_files(F, [silent(true)]), R = ok",
            self.load_timeout,
        )

    def set_prelude(self, module: str, name: str) -> None:
        """Run ``module:name`` (a helper's goal of arity 0) before every call, from when the
        helper is loaded (after a restart too): e.g. the graph predicates forget their call cache,
        so nothing a tool call read outlives it."""
        if not (MEMORY_NAME.match(module) and MEMORY_NAME.match(name)):
            raise ValueError(f"not a plain module and predicate name: {module}:{name}")
        self._prelude = f"( current_predicate({module}:{name}/0) -> {module}:{name} ; true )"

    def call_helper(self, goal: str, *, timeout: float | None = None) -> Any:
        """Run one goal of a helper module that binds ``R`` and return R's JSON value, bounded
        by ``timeout`` (default: the query limit). The caller builds the goal only from
        validated names and ``prolog_string`` literals (R-P3)."""
        return self._call(goal, self.query_timeout if timeout is None else timeout)

    # ------------------------------------------------------------------ calls

    def _call(self, goal: str, timeout: float | None) -> Any:
        """Run one helper goal binding ``R``; returns R's JSON value."""
        thread = self._thread
        if thread is None:
            raise EngineDied(self._dead_reason or "the engine is not started")
        if self._dead_reason is not None:
            raise EngineDied(self._dead_reason)
        if not self._process_running():
            self._dead(f"the engine process exited (status {self._exit_status()})")
        thread.deadline = None if timeout is None else time.monotonic() + timeout + self.grace
        if self._prelude is not None:
            goal = f"{self._prelude}, ( {goal} )"
        try:
            answer = thread.query(goal, query_timeout_seconds=timeout)
        except _Gone as exc:
            self._dead(f"the engine stopped answering: {exc}")
        except _Overrun:
            # The goal ignored the cooperative limit (e.g. it caught time_limit_exceeded).
            self.restart()
            raise GoalTimeout(
                f"the call did not finish within {timeout} s; the engine was restarted"
            ) from None
        except PrologQueryTimeoutError:
            raise GoalTimeout(f"the call did not finish within {timeout} s") from None
        except PrologConnectionFailedError as exc:
            self._lost(f"the engine connection failed: {exc}")
        except PrologError as exc:
            raise EngineError(f"the engine reported an error: {exc}") from exc
        except OSError as exc:
            self._lost(f"the engine connection broke: {exc}")
        finally:
            thread.deadline = None
        if isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], dict) and "R" in answer[0]:
            return answer[0]["R"]
        raise EngineError(f"unexpected engine answer {answer!r}")

    def _dead(self, reason: str) -> NoReturn:
        self._dead_reason = reason
        raise EngineDied(reason)

    def _lost(self, detail: str) -> NoReturn:
        """The connection failed. A killed engine usually shows first as a broken pipe, an
        instant before its exit can be seen: wait a moment, and name the exit when there is one."""
        process = self._process
        if process is not None:
            try:
                status = process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            else:
                self._dead(f"the engine process exited (status {status})")
        self._dead(detail)

    def _exit_status(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def _checked(self, result: Any) -> Any:
        """Turn the helper's error results into exceptions; return the ``ok`` payload."""
        name, args = functor_parts(result)
        if name == "ok":
            return args[0] if len(args) == 1 else args
        if name == "limit":
            raise _limit_error(args[0])
        if name == "error" and len(args) == 2:
            kind, message = args
            if kind == "syntax":
                raise PrologSyntaxError(str(message))
            if kind == "rejected":
                raise ClauseRejected(str(message))
            raise EngineError(str(message))
        raise EngineError(f"unexpected engine result {result!r}")

    # ------------------------------------------------------------------ memories

    def ensure_memory(self, name: str) -> None:
        """Register ``name`` as a memory module (idempotent)."""
        _check_memory_name(name)
        if name in self._memories:
            return
        if self.is_reserved_name(name):
            raise ValueError(f"{name!r} names an engine or library module")
        self._call(f"quipu_logic:ql_ensure_memory({name}), R = ok", self.query_timeout)
        self._memories.append(name)

    def drop_memory(self, name: str) -> None:
        """Remove every clause of the memory and unregister it."""
        self._require_memory(name)
        self._call(f"quipu_logic:ql_drop_memory({name}), R = ok", self.load_timeout)
        self._memories.remove(name)

    def memories(self) -> list[str]:
        return list(self._memories)

    def is_reserved_name(self, name: str) -> bool:
        """True when ``name`` is already an engine module or a library module (§10.4)."""
        _check_memory_name(name)
        result = self._call(
            f"( quipu_logic:ql_reserved_name({name}) -> R = true ; R = false )", self.query_timeout
        )
        return bool(result == "true")

    def _require_memory(self, name: str) -> None:
        if name not in self._memories:
            raise ValueError(f"memory {name!r} is not registered in the engine")

    # ------------------------------------------------------------------ clauses

    def assertz(self, memory: str, clause: str) -> None:
        """Append one fact or rule (text, one term) to the memory, keeping variable names."""
        self._require_memory(memory)
        self._checked(
            self._call(f"quipu_logic:ql_assertz({memory}, {prolog_string(clause)}, R)", self.query_timeout)
        )

    def retract_first_fact(self, memory: str, fact: str) -> bool:
        """Remove the first fact that unifies with ``fact`` (one copy, R-FF1)."""
        self._require_memory(memory)
        result = self._checked(
            self._call(
                f"quipu_logic:ql_retract_first_fact({memory}, {prolog_string(fact)}, R)", self.query_timeout
            )
        )
        return bool(result == "true")

    def retractall(self, memory: str, head: str) -> int:
        """Remove every clause whose head unifies with ``head`` (R-CC1); returns the count."""
        self._require_memory(memory)
        result = self._checked(
            self._call(f"quipu_logic:ql_retractall({memory}, {prolog_string(head)}, R)", self.query_timeout)
        )
        return int(result)

    def load_clauses(self, memory: str, clauses: Sequence[str]) -> LoadReport:
        """Load many clauses (and dynamic/discontiguous/module directives) in batches: one
        engine call per ~5000 clauses or ~1 MiB, not one per clause. Clauses that do not
        parse or cannot be stored are skipped and reported; the rest load (R-B5)."""
        self._require_memory(memory)
        loaded = 0
        failures: list[LoadFailure] = []
        for start, batch in _batches(clauses):
            literals = ", ".join(prolog_string(text) for text in batch)
            ok = self._checked(
                self._call(f"quipu_logic:ql_load({memory}, [{literals}], R)", self.load_timeout)
            )
            count, failed = ok
            loaded += int(count)
            for item in failed:
                _, (index, message) = functor_parts(item)
                failures.append(LoadFailure(start + int(index), batch[int(index)], str(message)))
        return LoadReport(loaded, tuple(failures))

    def predicates(self, memory: str) -> list[Predicate]:
        """The memory's dynamic predicates, by name then arity, with rendered clauses."""
        self._require_memory(memory)
        preds = self._checked(self._call(f"quipu_logic:ql_clauses({memory}, R)", self.load_timeout))
        out: list[Predicate] = []
        for item in preds:
            _, (name, arity, texts) = functor_parts(item)
            out.append(Predicate(str(name), int(arity), tuple(str(t) for t in texts)))
        return out

    def render(self, text: str) -> str:
        """The canonical rendering (§3.4) of one term given as text."""
        return str(
            self._checked(
                self._call(f"quipu_logic:ql_render_text({prolog_string(text)}, R)", self.query_timeout)
            )
        )

    # ------------------------------------------------------------------ queries

    def query(
        self, memory: str, goal: str, *, limit: int = MAX_SOLUTIONS, timeout: float | None = None
    ) -> Solutions:
        """Run an untrusted goal in a memory: checked first (R-Q4), at most ``limit``
        solutions (R-Q3), bounded in time (R-Q1) and stack (R-Q2), output discarded (R-Q9);
        other runtime errors give no solutions (R-Q5)."""
        self._require_memory(memory)
        if limit < 0:
            raise ValueError("limit must not be negative")
        seconds = self.query_timeout if timeout is None else timeout
        if seconds <= 0:
            raise ValueError("timeout must be positive")
        result = self._call(
            f"quipu_logic:ql_query({memory}, {prolog_string(goal)}, {int(limit)}, R)", seconds
        )
        name, args = functor_parts(result)
        if name == "ok" and len(args) == 2:
            return decode_solutions(args[0], args[1])
        if name == "refused":
            raise GoalRefused(str(args[0]))
        if name == "syntax":
            raise PrologSyntaxError(str(args[0]))
        if name == "limit":
            raise _limit_error(args[0], seconds)
        if name == "graph":
            raise GraphUnavailable(str(args[0]))
        if name == "error" and len(args) == 2:
            raise EngineError(str(args[1]))
        raise EngineError(f"unexpected engine result {result!r}")


def functor_parts(value: Any) -> tuple[str, list[Any]]:
    """A helper result as (functor, args): an atom is a functor with no arguments."""
    if isinstance(value, str):
        return value, []
    if isinstance(value, dict) and isinstance(value.get("args"), list):
        return str(value.get("functor")), list(value["args"])
    raise EngineError(f"unexpected engine value {value!r}")


def _limit_error(kind: Any, seconds: float | None = None) -> LogicError:
    if kind == "time":
        return GoalTimeout(f"the call did not finish within {seconds} s" if seconds else "time limit")
    return StackLimit("the goal exhausted the engine's stack limit")


def _check_memory_name(name: str) -> None:
    if not MEMORY_NAME.match(name):
        raise ValueError(f"{name!r} is not a plain atom ([a-z][A-Za-z0-9_]*)")


def _batches(clauses: Sequence[str]) -> Iterable[tuple[int, Sequence[str]]]:
    start = 0
    while start < len(clauses):
        end, size = start, 0
        while end < len(clauses) and end - start < _BATCH_CLAUSES and (size < _BATCH_BYTES or end == start):
            size += len(clauses[end]) + 4
            end += 1
        yield start, clauses[start:end]
        start = end


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    if process.stdin is not None:
        process.stdin.close()
