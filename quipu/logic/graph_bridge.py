"""The graph bridge: how the logic memory's ``rdf/3`` family reads quipu's store.

The Prolog engine is a child process (quipu/logic/engine.py), so its graph predicates
(``prolog/graph.pl``) cannot call the store in process. Instead the runtime runs this bridge: a
thread listening on a Unix socket in a private directory (mode 0700, like the engine's own
socket), answering one JSON request line with one JSON reply line. A request names the bound
arguments of one call and a keyset cursor; the reply is one page of rows from one SQL statement
(quipu/store/pattern_reads.py) and the cursor of the next page. The engine asks for the next page
only when backtracking reaches it, so a call never holds more than a page.

Nothing the engine sends is code: the request is parsed as JSON and checked field by field, and
the values reach SQL as bound parameters. The bridge can only read.

``GraphSource`` is what answers: ``StoreGraph`` over an open store, or ``NoGraph``, whose every
answer is the error naming the setting that would give the logic memory a store.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from quipu.errors import QuipuError

if TYPE_CHECKING:
    from quipu.store.database import Database

PAGE: Final = 500  # rows per reply: a page in flight is bounded, whatever the pattern
MAX_LINE: Final = 64 * 1024  # a request is a few IRIs; anything longer is refused
NO_STORE: Final = (
    "the logic memory has no knowledge graph: rdf/3, rdf/4, rdf_at/4 and rdf_tx/4 read quipu's "
    "store, which quipu-server wires in itself; for zpm set [quipu.logic] store or pass "
    "zpm serve --db PATH"
)


@dataclass(frozen=True, slots=True)
class Pattern:
    """One call's bound arguments: None is unbound. ``o`` is ("iri", text) or ("literal",
    lexical, datatype or None, lang or None); ``graph`` None is ROOT and "*" any graph."""

    s: str | None
    p: str | None
    o: tuple[Any, ...] | None
    graph: str | None
    valid_at: str | None
    as_of_tx: int | None


Row = tuple[str, str, list[Any], str, int]  # s, p, o, graph, tx


class GraphSource(Protocol):
    def page(self, pattern: Pattern, after: int, limit: int) -> tuple[list[Row], int | None]:
        """Rows after the cursor ``after`` in cursor order, and the next cursor (None: done)."""
        ...


class NoGraph:
    """A logic memory without a store: every call is refused, naming the setting."""

    def page(self, pattern: Pattern, after: int, limit: int) -> tuple[list[Row], int | None]:
        raise QuipuError(NO_STORE)


class StoreGraph:
    """Pattern pages from an open store. ``database`` is called at the first request, so a
    server can hand over a store it opens later, and ``zpm`` loads the store stack only when a
    rule first reads the graph."""

    def __init__(self, database: Callable[[], Database]) -> None:
        self._database = database

    def page(self, pattern: Pattern, after: int, limit: int) -> tuple[list[Row], int | None]:
        from quipu.store import pattern_reads
        from quipu.store.views import TemporalView

        view = TemporalView.at(as_of_tx=pattern.as_of_tx, valid_at=pattern.valid_at)
        graph: object = pattern_reads.ANY_GRAPH if pattern.graph == "*" else pattern.graph
        found, following = pattern_reads.match_page(
            self._database(),
            s=pattern.s,
            p=pattern.p,
            o=pattern.o,
            graph=graph,
            view=view,
            after=after,
            limit=limit,
        )
        rows = [(m.s, m.p, list(m.o), m.g, m.tx) for m in found]
        return rows, following


class StoreAt(StoreGraph):
    """The store at ``location`` (a file path or database URL), or else ``[quipu.logic] store``,
    opened at the first graph read. Neither set: the read is refused, naming both."""

    def __init__(self, location: str | None = None) -> None:
        super().__init__(self._open)
        self._location = location
        self._db: Database | None = None
        self._lock = threading.Lock()

    def _open(self) -> Database:
        with self._lock:
            if self._db is None:
                from quipu.config import load_settings
                from quipu.store.database import Database

                location = self._location or load_settings().logic.store
                if not location:
                    raise QuipuError(NO_STORE)
                self._db = Database(location)
            return self._db

    def close(self) -> None:
        """Close the store this source opened (the bridge calls it as it closes)."""
        with self._lock:
            db, self._db = self._db, None
        if db is not None:
            db.close()


class GraphBridge:
    """The listening thread. ``path`` is the socket the engine connects to."""

    def __init__(self, source: GraphSource) -> None:
        self.source = source
        self._dir = Path(tempfile.mkdtemp(prefix="quipu-graph-"))
        os.chmod(self._dir, 0o700)
        self.path = self._dir / "graph"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(4)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="quipu-graph-bridge", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):  # not connected: nothing to shut down
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)
        closing = getattr(self.source, "close", None)  # a source that opened its own store
        if closing is not None:
            closing()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="quipu-graph-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        # A goal stopped by its time limit ends with its engine restarted: the connection goes
        # away mid-answer, which is no error of the bridge's.
        with contextlib.suppress(OSError), conn, conn.makefile("rb") as reader, conn.makefile("wb") as writer:
            while not self._closed.is_set():
                line = reader.readline(MAX_LINE + 1)
                if not line:
                    return
                rest = line
                while len(rest) > MAX_LINE and not rest.endswith(b"\n"):
                    rest = reader.readline(MAX_LINE + 1)  # skip the rest: one request, one reply
                reply = self.answer(line)
                writer.write(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
                writer.flush()

    def answer(self, line: bytes) -> dict[str, Any]:
        """One reply: ``{"rows": [...], "next": cursor or null}`` or ``{"error": message}``."""
        try:
            if len(line) > MAX_LINE:
                raise QuipuError(f"a graph request is longer than {MAX_LINE} bytes")
            pattern, after = parse_request(line)
            rows, following = self.source.page(pattern, after, PAGE)
        except QuipuError as exc:
            return {"error": str(exc)}
        except Exception as exc:
            return {"error": f"the graph read failed: {type(exc).__name__}: {exc}"}
        return {"rows": rows, "next": following}


def parse_request(line: bytes) -> tuple[Pattern, int]:
    try:
        request = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QuipuError(f"a graph request is not JSON: {exc}") from None
    if not isinstance(request, dict):
        raise QuipuError("a graph request must be an object")
    point = request.get("point") or {}
    if not isinstance(point, dict):
        raise QuipuError("point must be an object")
    after = request.get("after", 0)
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise QuipuError("after must be an integer >= 0")
    return (
        Pattern(
            s=_text(request.get("s"), "s"),
            p=_text(request.get("p"), "p"),
            o=_object(request.get("o")),
            graph=_text(request.get("graph"), "graph"),
            valid_at=_text(point.get("valid_at"), "valid_at"),
            as_of_tx=_tx(point.get("as_of_tx")),
        ),
        after,
    )


def _text(value: object, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise QuipuError(f"{field} must be a string or null")


def _tx(value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise QuipuError("as_of_tx must be an integer >= 0")


def _object(value: object) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 2 and value[0] == "iri" and isinstance(value[1], str):
        return ("iri", value[1])
    if (
        isinstance(value, list)
        and len(value) == 4
        and value[0] == "literal"
        and isinstance(value[1], str)
        and all(v is None or isinstance(v, str) for v in value[2:])
    ):
        return ("literal", value[1], value[2], value[3])
    raise QuipuError('o must be null, ["iri", text] or ["literal", lexical, datatype, lang]')
