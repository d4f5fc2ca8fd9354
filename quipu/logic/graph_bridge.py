"""The graph bridge: how the logic memory's ``rdf/3`` family reads quipu's store.

The Prolog engine is a child process (quipu/logic/engine.py), so its graph predicates
(``prolog/graph.pl``) cannot call the store in process. Instead the runtime runs this bridge: a
thread listening on a Unix socket in a private directory (mode 0700, like the engine's own
socket). A request is one JSON line naming the bound arguments of one call, a keyset cursor and
a page size (at most ``PAGE_MAX``); the reply is one page of rows from one SQL statement
(quipu/store/pattern_reads.py) and the cursor of the next page. The engine asks for the next page
only when backtracking reaches it, so a call never holds more than a page.

A join calls its inner pattern once per outer solution. So that it costs one SQL statement per
call pattern rather than one per solution, the engine may instead ask for a whole pattern at
once (``"bulk": cap`` in the request): the bridge then runs ONE statement, and sends its rows
as several reply lines of a page each, or only "truncated" when there are more than ``cap``.
The engine keeps those rows for the rest of the tool call (``prolog/graph.pl``, the call cache).
Before that it asks how big the pattern is (``"count": cap``, one counting statement), so that
it loads a pattern only when the lookups it has seen make that worth it.

Replies are written as Prolog terms, one per line (``prolog_line``), which the engine reads with
``read_term/3`` about eight times faster than JSON. Every atom is quoted and escaped here, and
reading a term never runs it. Nothing the engine sends is code either: the request is parsed as
JSON and checked field by field, and the values reach SQL as bound parameters. The bridge can
only read.

``GraphSource`` is what answers: ``StoreGraph`` over an open store, or ``NoGraph``, whose every
answer is the error naming the setting that would give the logic memory a store.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from quipu.errors import QuipuError

if TYPE_CHECKING:
    from quipu.rdfio.curie import PrefixMap
    from quipu.store.database import Database

PAGE: Final = 500  # rows per reply unless the request asks for another size
PAGE_MAX: Final = 5000  # the largest page a request may ask for: a page in flight is bounded
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

    def stream(self, pattern: Pattern, chunk: int) -> Iterator[list[Row]]:
        """Every row in cursor order, ``chunk`` at a time, from one statement."""
        ...

    def count(self, pattern: Pattern, cap: int) -> int:
        """How many rows ``stream`` would give, counted no further than ``cap + 1``."""
        ...

    def prefixes(self) -> Mapping[str, str]:
        """The store's CURIE prefixes (prefix -> namespace), as ``/query`` compacts with."""
        ...


class NoGraph:
    """A logic memory without a store: every call is refused, naming the setting."""

    def page(self, pattern: Pattern, after: int, limit: int) -> tuple[list[Row], int | None]:
        raise QuipuError(NO_STORE)

    def stream(self, pattern: Pattern, chunk: int) -> Iterator[list[Row]]:
        raise QuipuError(NO_STORE)

    def count(self, pattern: Pattern, cap: int) -> int:
        raise QuipuError(NO_STORE)

    def prefixes(self) -> Mapping[str, str]:
        raise QuipuError(NO_STORE)


class StoreGraph:
    """Pattern pages from an open store. ``database`` is called at the first request, so a
    server can hand over a store it opens later, and ``zpm`` loads the store stack only when a
    rule first reads the graph."""

    def __init__(self, database: Callable[[], Database]) -> None:
        self._database = database

    def page(self, pattern: Pattern, after: int, limit: int) -> tuple[list[Row], int | None]:
        from quipu.store import pattern_reads

        found, following = pattern_reads.match_page(
            self._database(), after=after, limit=limit, **_arguments(pattern)
        )
        return [_row(m) for m in found], following

    def stream(self, pattern: Pattern, chunk: int) -> Iterator[list[Row]]:
        from quipu.store import pattern_reads

        matches = pattern_reads.match_stream(self._database(), chunk=chunk, **_arguments(pattern))
        for found in matches:
            yield [_row(m) for m in found]

    def count(self, pattern: Pattern, cap: int) -> int:
        from quipu.store import pattern_reads

        return pattern_reads.match_count(self._database(), cap=cap, **_arguments(pattern))

    def prefixes(self) -> Mapping[str, str]:
        return self.prefix_map().namespaces

    def prefix_map(self) -> PrefixMap:
        from quipu.shacl import registry

        return registry.loaded_prefixes(self._database())


def _arguments(pattern: Pattern) -> dict[str, Any]:
    from quipu.store import pattern_reads
    from quipu.store.views import TemporalView

    view = TemporalView.at(as_of_tx=pattern.as_of_tx, valid_at=pattern.valid_at)
    graph: object = pattern_reads.ANY_GRAPH if pattern.graph == "*" else pattern.graph
    return {"s": pattern.s, "p": pattern.p, "o": pattern.o, "graph": graph, "view": view}


def _row(m: Any) -> Row:
    return (m.s, m.p, list(m.o), m.g, m.tx)


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
                for reply in self.answers(line):
                    writer.write(prolog_line(reply))
                writer.flush()

    def answers(self, line: bytes) -> Iterator[dict[str, Any]]:
        """The reply lines to one request: one for a page, or a bulk read's lines (the last one
        without ``"more": true``). A failure is a last line ``{"error": message}``."""
        try:
            if len(line) > MAX_LINE:
                raise QuipuError(f"a graph request is longer than {MAX_LINE} bytes")
            request = parse_request(line)
            if request.prefixes:
                yield {"prefixes": dict(self.source.prefixes())}
            elif request.count is not None:
                yield {"count": self.source.count(request.pattern, request.count)}
            elif request.bulk is not None:
                yield from self._bulk(request.pattern, request.bulk)
            else:
                rows, following = self.source.page(request.pattern, request.after, request.size)
                yield {"rows": rows, "next": following}
        except QuipuError as exc:
            yield {"error": str(exc)}
        except Exception as exc:
            yield {"error": f"the graph read failed: {type(exc).__name__}: {exc}"}

    def curies(self) -> Callable[[str], str] | None:
        """The store's IRI-to-CURIE compaction (tools-core's rules, as ``/query`` uses), or None
        without a store or without prefixes: for the answers of ``query_logic``."""
        prefix_map = getattr(self.source, "prefix_map", None)
        if prefix_map is None:
            return None
        try:
            found = prefix_map()
        except QuipuError:  # no store named: answers stay full IRIs
            return None
        return found.compact if found else None

    def _bulk(self, pattern: Pattern, cap: int) -> Iterator[dict[str, Any]]:
        """A whole pattern from one statement, in page-sized lines, or only ``truncated`` when it
        has more than ``cap`` rows. The rows are gathered before the first line is sent, so a
        pattern too big for the engine's cache costs a read here, never the engine's work."""
        held: list[list[Row]] = []
        count = 0
        chunks = self.source.stream(pattern, PAGE)
        try:
            for rows in chunks:
                count += len(rows)
                if count > cap:
                    yield {"rows": [], "more": False, "truncated": True}
                    return
                held.append(rows)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # ends the read at once, not when the generator is collected
        for rows in held:
            yield {"rows": rows, "more": True}
        yield {"rows": [], "more": False, "truncated": False}


# -- replies, written as Prolog terms (prolog/graph.pl reads them with read_term/3) ------------

# Inside a quoted atom only the backslash, the quote and control characters need escaping;
# everything else (operators, parentheses, full stops, any Unicode) is data as it stands.
_ESCAPED: Final = re.compile(r"[\\'\x00-\x1f\x7f]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in "\\'":
        return "\\" + char
    return f"\\x{ord(char):x}\\"


def quoted(text: str) -> str:
    """``text`` as a quoted Prolog atom."""
    return "'" + _ESCAPED.sub(_escape, text) + "'"


def _object_term(o: list[Any]) -> str:
    if o[0] == "iri":
        return quoted(o[1])
    _, lexical, datatype, lang = o
    if lang is not None:
        return f"literal(lang({quoted(lang)},{quoted(lexical)}))"
    if datatype is not None:
        return f"literal(type({quoted(datatype)},{quoted(lexical)}))"
    return f"literal({quoted(lexical)})"


def _rows_term(rows: list[Row]) -> str:
    return (
        "["
        + ",".join(
            f"r({quoted(s)},{quoted(p)},{_object_term(o)},{quoted(g)},{int(tx)})" for s, p, o, g, tx in rows
        )
        + "]"
    )


def prolog_line(reply: dict[str, Any]) -> bytes:
    """One reply as the term line the engine reads: ``p(Rows, Next)`` for a page, ``b(Rows,
    State)`` for a part of a whole-pattern read, ``n(Count)`` for a count, ``e(Message)`` for a
    refusal."""
    if "error" in reply:
        term = f"e({quoted(str(reply['error']))})"
    elif "count" in reply:
        term = f"n({int(reply['count'])})"
    elif "prefixes" in reply:
        pairs = ",".join(f"{quoted(p)}-{quoted(ns)}" for p, ns in sorted(reply["prefixes"].items()))
        term = f"x([{pairs}])"
    elif "next" in reply:
        following = reply["next"]
        term = f"p({_rows_term(reply['rows'])},{'none' if following is None else int(following)})"
    else:
        state = "more" if reply.get("more") else "truncated" if reply.get("truncated") else "done"
        term = f"b({_rows_term(reply['rows'])},{state})"
    return (term + ".\n").encode("utf-8")


@dataclass(frozen=True, slots=True)
class Request:
    """One request: a page (``after``, ``size``), a whole-pattern read of at most ``bulk`` rows,
    or a count of the pattern's rows up to ``count`` + 1."""

    pattern: Pattern
    after: int = 0
    size: int = PAGE
    bulk: int | None = None
    count: int | None = None
    prefixes: bool = False


def parse_request(line: bytes) -> Request:
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
    size = request.get("size", PAGE)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= PAGE_MAX:
        raise QuipuError(f"size must be an integer from 1 to {PAGE_MAX}")
    return Request(
        Pattern(
            s=_text(request.get("s"), "s"),
            p=_text(request.get("p"), "p"),
            o=_object(request.get("o")),
            graph=_text(request.get("graph"), "graph"),
            valid_at=_text(point.get("valid_at"), "valid_at"),
            as_of_tx=_tx(point.get("as_of_tx")),
        ),
        after,
        size,
        _cap(request.get("bulk"), "bulk"),
        _cap(request.get("count"), "count"),
        request.get("prefixes") is True,
    )


def _cap(value: object, field: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise QuipuError(f"{field} must be an integer >= 0 or null")


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
