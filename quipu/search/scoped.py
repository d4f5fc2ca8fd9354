"""``quipu_hybrid_search`` (tools-search §5.2): vector ranking restricted to what a SPARQL SELECT names.

Not ``quipu_search``'s hybrid mode (lexical plus vector fusion): here SPARQL picks candidates
and cosine similarity ranks them.

1. The query vector is the caller's ``embedding`` (finite numbers, 1..16384 of them), else the
   provider's vector of ``query``, computed before any store read.
2. The whole request runs under ``[quipu.search] query_timeout_ms`` (408 past it).
3. With ``sparql``: the SELECT runs at ``valid_at`` with at most 1001 result rows; more than
   1000 is refused (never truncated). Candidates are the values of the first projected
   variable: IRIs, and plain strings taken as IRIs; other values are ignored.
4. The candidates' vector rows (current, or live at ``valid_at``) are scored, all of them,
   before the top ``limit`` is cut, so an entity below the global top ``limit`` is still found
   when it is the best in scope. Without ``sparql`` the global top ``limit`` rows are scored.
   Scoring is one matrix product over the rows read; the ``text`` returned is that of the row
   scored. One row per entity exists at a time, so the 1000-candidate cap also bounds the rows.
5. No named-only exclusion, no IRI compaction (full IRIs), as the original.

The SPARQL read, the vector read and the text read are not one snapshot across concurrent
writes; each row returned is scored from the version it shows.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from quipu.errors import InvalidField
from quipu.search import limits
from quipu.search.vectors import dimension_error, rank
from quipu.sparql.cells import LITERAL, URI
from quipu.sparql.engine import run_query
from quipu.store import budget as budgets
from quipu.store import vectors as store_vectors
from quipu.store.database import Database
from quipu.store.vectors import VectorRow
from quipu.times import normalise_valid_at

if TYPE_CHECKING:
    from quipu.config import SearchSettings
    from quipu.search.embedding import MiniLM
    from quipu.search.vectors import VectorIndex

MAX_CANDIDATE_ROWS: Final = 1000
MAX_DIMENSION: Final = 16384
TOO_MANY: Final = "narrow the SPARQL scope: candidate result exceeds 1000 rows"
SEND_EMBEDDING: Final = (
    " Or send a pre-computed 'embedding' (an array of numbers, e.g. 384 for all-MiniLM-L6-v2) "
    "instead of 'query': it needs no provider."
)
_RDF_TYPE: Final = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_TYPED: Final = re.compile(r"(?: a |" + re.escape(_RDF_TYPE) + r" ?)<([^<>\s]+)>")
_NO_PUSHDOWN: Final = ("UNION", "OPTIONAL", "FILTER", "MINUS")

clock: Callable[[], float] = time.monotonic  # the deadline's clock (tests move it)


@dataclass(frozen=True)
class Deadline:
    """The request's wall-clock budget (None: unlimited)."""

    timeout_ms: int | None
    ends: float | None

    @classmethod
    def start(cls, timeout_ms: int) -> Deadline:
        if not timeout_ms:
            return cls(None, None)
        return cls(timeout_ms, clock() + timeout_ms / 1000)

    def check(self) -> None:
        if self.ends is not None and clock() > self.ends:
            assert self.timeout_ms is not None
            raise budgets.timeout_error(self.timeout_ms)

    def remaining_ms(self) -> int | None:
        """What is left for the SPARQL evaluation (at least 1 ms: 0 would mean unlimited)."""
        if self.ends is None:
            return None
        self.check()
        return max(1, math.ceil((self.ends - clock()) * 1000))


def query_vector(
    provider: Callable[[], MiniLM | None], query: object, embedding: object
) -> NDArray[np.float32]:
    """The caller's ``embedding`` (it wins over ``query``), else the provider's vector of ``query``."""
    if embedding is not None:
        if not isinstance(embedding, Sequence) or isinstance(embedding, str):
            raise InvalidField("'embedding' must be an array of numbers", field="embedding")
        if not 1 <= len(embedding) <= MAX_DIMENSION:
            raise InvalidField(
                f"'embedding' must have 1 to {MAX_DIMENSION} numbers, not {len(embedding)}", field="embedding"
            )
        for at, x in enumerate(embedding):
            if isinstance(x, bool) or not isinstance(x, int | float):
                raise InvalidField(f"'embedding'[{at}] is not a number: {x!r}", field="embedding")
            if not math.isfinite(x):
                raise InvalidField(f"'embedding'[{at}] is not finite: {x!r}", field="embedding")
        return np.asarray(embedding, dtype=np.float32)
    if query is not None and not isinstance(query, str):
        raise InvalidField("'query' must be a string", field="query")
    if not query or not query.strip():
        raise InvalidField("missing 'embedding' array or 'query' text parameter", field="query")
    model = provider()
    if model is None:
        from quipu.search.state import NO_PROVIDER

        raise InvalidField(NO_PROVIDER + SEND_EMBEDDING, field="query")
    return model.embed_text(query)


def pushdown_filter(sparql: str | None) -> str | None:
    """The type filter a delegated (ANN) backend could push down: ``entity_type = '<IRI>'`` when
    the query names one class with ``a`` or ``rdf:type`` and has no UNION, OPTIONAL, FILTER or
    MINUS; else None. Reported only: the built-in backend scores the candidates exactly."""
    if sparql is None:
        return None
    text = " ".join(sparql.split())
    upper = text.upper()
    if any(word in upper for word in _NO_PUSHDOWN):
        return None
    found = _TYPED.search(text)
    return None if found is None else f"entity_type = '{found.group(1)}'"


def sparql_candidates(
    db: Database, sparql: str, valid_at: str | None, settings: SearchSettings, deadline: Deadline
) -> list[str]:
    """The candidate IRIs of a SELECT, duplicates kept, in result order (§5.2 step 3)."""
    result = run_query(
        db,
        sparql,
        valid_at=valid_at,
        max_rows=MAX_CANDIDATE_ROWS + 1,
        timeout_ms=deadline.remaining_ms(),
        max_join_rows=settings.max_join_rows or None,
    )
    if result.form != "SELECT":
        raise InvalidField(f"'sparql' must be a SELECT query, not {result.form}", field="sparql")
    if result.truncated or len(result.table) > MAX_CANDIDATE_ROWS:
        raise InvalidField(TOO_MANY, field="sparql")
    found: list[str] = []
    for row in result.table:
        cell = row[0] if row else None
        if cell is None:
            continue
        if cell.kind == URI or (cell.kind == LITERAL and cell.datatype is None and cell.lang is None):
            found.append(cell.value)
    return found


def score(rows: Sequence[VectorRow], query: NDArray[np.float32], limit: int) -> list[tuple[VectorRow, float]]:
    """The ``limit`` best rows by cosine with ``query`` (ties: entity id), in one matrix product."""
    if not rows:
        return []
    width = 4 * query.shape[0]
    for row in rows:
        if len(row.embedding) != width:
            raise dimension_error(len(row.embedding) // 4, query.shape[0])
    matrix = np.frombuffer(b"".join(row.embedding for row in rows), dtype="<f4").reshape(len(rows), -1)
    if not np.isfinite(matrix).all():
        raise InvalidField(
            "a stored vector holds a non-finite value: re-embed the store (quipu_embed_backfill)",
            field="embedding",
        )
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
    ids = np.fromiter((row.entity_id for row in rows), dtype=np.int64, count=len(rows))
    ranked = rank(matrix, norms, ids, query, limit)
    by_id = {row.entity_id: row for row in rows}
    return [(by_id[int(e)], float(s)) for e, s in zip(ranked.entity_ids, ranked.similarities, strict=True)]


def hybrid_search(
    db: Database,
    index: VectorIndex,
    provider: Callable[[], MiniLM | None],
    settings: SearchSettings,
    *,
    query: object = None,
    embedding: object = None,
    sparql: object = None,
    limit: int | None = None,
    valid_at: object = None,
) -> dict[str, Any]:
    """The ``quipu_hybrid_search`` response without its ``embeddings`` block (the service adds it)."""
    deadline = Deadline.start(settings.query_timeout_ms)
    if sparql is not None and (not isinstance(sparql, str) or not sparql.strip()):
        raise InvalidField("'sparql' must be a non-empty SELECT query string", field="sparql")
    if valid_at is not None and not isinstance(valid_at, str):
        raise InvalidField("'valid_at' must be a string", field="valid_at")
    instant = normalise_valid_at(valid_at)
    wanted = limits.clamp_limit(settings, limit)
    vector = query_vector(provider, query, embedding)  # before any store read
    deadline.check()
    candidates = None if sparql is None else sparql_candidates(db, sparql, instant, settings, deadline)
    deadline.check()
    with db.read() as conn:
        if candidates is not None:
            ids = db.terms.lookup(conn, set(candidates)).values()
            rows = list(store_vectors.for_entities(conn, ids, instant).values())
        elif instant is not None:
            rows = store_vectors.live_at(conn, instant)
        else:
            # The cached index finds the global top rows; they are read back and scored from
            # the versions read, so the text returned is that of the vector scored.
            index.refresh(conn)
            top = index.rank(vector, wanted, include_named_only=True).entity_ids
            rows = list(store_vectors.for_entities(conn, (int(e) for e in top)).values())
        deadline.check()
        best = score(rows, vector, wanted)
        iris = db.terms.iris(conn, {row.entity_id for row, _s in best})
    deadline.check()
    results = [
        {
            "entity": iris[row.entity_id],
            "text": row.text,
            "score": similarity,
            "source": "knowledge",
            "valid_from": row.valid_from,
            "valid_to": row.valid_to,
        }
        for row, similarity in best
    ]
    return {
        "results": results,
        "count": len(results),
        "sparql_candidates": None if candidates is None else len(candidates),
        "pushdown_filter": pushdown_filter(sparql if isinstance(sparql, str) else None),
    }
