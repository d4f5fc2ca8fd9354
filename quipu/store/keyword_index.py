"""The keyword (lexical) index (tools-search §4): one document per asserted fact row.

A derived table, absent until an operator activates it (``quipu search-index backfill``):

* SQLite: an FTS5 table (``unicode61`` tokenizer) whose rowid is the fact row id, ranked by
  FTS5's ``bm25()``;
* PostgreSQL: a table keyed by the fact row id with a ``tsvector`` under a GIN index, ranked by
  ``ts_rank``; its ``bm25`` is the negated rank, so both backends order the same way (smaller
  first) and ``score == -bm25`` holds on each.

Both fill their documents from one view, ``keyword_source``, so the triggers (rows written after
activation) and the bounded backfill (rows that existed before) index a fact the same way. The
triggers run inside the writer's transaction: a rolled-back write leaves no document. Valid time
is not copied: searches join the fact row and read it there.

A progress row (``cursor``, ``highwater``, ``complete``, ``documents``) tracks the backfill. No
search ever creates, activates or backfills anything; reading the progress creates nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from sqlalchemy import Connection, and_, column, func, inspect, literal_column, select, table, text

from quipu.errors import InvalidField
from quipu.store import keyword_tokens
from quipu.store.schema import OP_ASSERT, facts
from quipu.store.views import TemporalView

COLUMNS: Final = ("label", "alt_label", "description", "attributes", "type_names", "iri_tokens")
MAX_BATCH: Final = 10_000

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_SKOS = "http://www.w3.org/2004/02/skos/core#"
_LABEL = (_RDFS + "label", _SKOS + "prefLabel")
_ALT = (_SKOS + "altLabel",)
_DESCRIPTION = (_RDFS + "comment", _SKOS + "definition")
_TYPE = _RDF + "type"


def _in(iris: Sequence[str]) -> str:
    return "(" + ", ".join(f"'{iri}'" for iri in iris) + ")"  # constants of this module only


def _literal_when(predicates: str) -> str:
    return f"CASE WHEN p.iri IN {predicates} AND f.v_ref IS NULL THEN coalesce(q_lex(f.v), '') ELSE '' END"


_OTHER = _in((*_LABEL, *_ALT, *_DESCRIPTION, _TYPE))
# How a fact fills a document (tools-search §4.1); the same on both backends.
_SOURCE_VIEW: Final = f"""
CREATE VIEW keyword_source AS
SELECT f.id AS fact_id,
  {_literal_when(_in(_LABEL))} AS label,
  {_literal_when(_in(_ALT))} AS alt_label,
  {_literal_when(_in(_DESCRIPTION))} AS description,
  CASE WHEN p.iri NOT IN {_OTHER} AND f.v_ref IS NULL THEN coalesce(q_lex(f.v), '') ELSE '' END
    AS attributes,
  CASE WHEN p.iri = '{_TYPE}' AND o.iri IS NOT NULL THEN quipu_name_tokens(o.iri) ELSE '' END
    AS type_names,
  quipu_name_tokens(s.iri) AS iri_tokens,
  s.iri AS entity_iri,
  CASE WHEN p.iri = '{_TYPE}' THEN o.iri END AS type_iri,
  CASE WHEN f.v_ref IS NULL THEN q_lang(f.v) END AS language,
  CASE WHEN f.v_ref IS NULL THEN q_dt(f.v) END AS datatype,
  f.g AS graph_id
FROM facts AS f
JOIN terms AS s ON s.id = f.e
JOIN terms AS p ON p.id = f.a
LEFT JOIN terms AS o ON o.id = f.v_ref
WHERE f.op = {OP_ASSERT}"""

_FIELDS = ", ".join((*COLUMNS, "entity_iri", "type_iri", "language", "datatype", "graph_id"))
_PROGRESS_TABLE: Final = """
CREATE TABLE keyword_progress (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  cursor BIGINT NOT NULL,
  highwater BIGINT NOT NULL,
  complete BOOLEAN NOT NULL,
  documents BIGINT NOT NULL
)"""


def _count_at(where: str) -> str:
    return f"(SELECT count(*) FROM keyword_index WHERE {where})"


_SQLITE: Final = (
    f"""CREATE VIRTUAL TABLE keyword_index USING fts5(
  {", ".join(COLUMNS)},
  entity_iri UNINDEXED, type_iri UNINDEXED, language UNINDEXED, datatype UNINDEXED,
  graph_id UNINDEXED, tokenize = 'unicode61')""",
    _PROGRESS_TABLE,
    _SOURCE_VIEW,
    # The documents count moves by what the index really gained or lost, so a row the backfill
    # has not reached yet (no document) is counted right when it changes.
    f"""CREATE TRIGGER keyword_index_insert AFTER INSERT ON facts WHEN NEW.op = {OP_ASSERT} BEGIN
  INSERT INTO keyword_index(rowid, {_FIELDS})
    SELECT fact_id, {_FIELDS} FROM keyword_source WHERE fact_id = NEW.id;
  UPDATE keyword_progress SET documents = documents + {_count_at("rowid = NEW.id")};
END""",
    f"""CREATE TRIGGER keyword_index_update AFTER UPDATE OF e, a, v, g, op ON facts BEGIN
  UPDATE keyword_progress SET documents = documents - {_count_at("rowid = OLD.id")};
  DELETE FROM keyword_index WHERE rowid = OLD.id;
  INSERT INTO keyword_index(rowid, {_FIELDS})
    SELECT fact_id, {_FIELDS} FROM keyword_source WHERE fact_id = NEW.id;
  UPDATE keyword_progress SET documents = documents + {_count_at("rowid = NEW.id")};
END""",
    f"""CREATE TRIGGER keyword_index_delete AFTER DELETE ON facts BEGIN
  UPDATE keyword_progress SET documents = documents - {_count_at("rowid = OLD.id")};
  DELETE FROM keyword_index WHERE rowid = OLD.id;
END""",
)
_SQLITE_DROP: Final = (
    "DROP TRIGGER IF EXISTS keyword_index_insert",
    "DROP TRIGGER IF EXISTS keyword_index_update",
    "DROP TRIGGER IF EXISTS keyword_index_delete",
    "DROP VIEW IF EXISTS keyword_source",
    "DROP TABLE IF EXISTS keyword_index",
    "DROP TABLE IF EXISTS keyword_progress",
)

_PG_DOCUMENT = "to_tsvector('simple', concat_ws(' ', " + ", ".join(COLUMNS) + "))"
_PG_INSERT = f"INSERT INTO keyword_index (fact_id, {_FIELDS}, document) SELECT fact_id, {_FIELDS}, {_PG_DOCUMENT} FROM keyword_source"
_POSTGRES: Final = (
    keyword_tokens.PG_FUNCTION,
    f"""CREATE TABLE keyword_index (
  fact_id BIGINT PRIMARY KEY,
  {", ".join(f"{name} TEXT NOT NULL" for name in COLUMNS)},
  entity_iri TEXT NOT NULL, type_iri TEXT, language TEXT, datatype TEXT,
  graph_id BIGINT NOT NULL, document TSVECTOR NOT NULL
)""",
    "CREATE INDEX keyword_index_document ON keyword_index USING gin (document)",
    _PROGRESS_TABLE,
    _SOURCE_VIEW,
    f"""CREATE OR REPLACE FUNCTION quipu_keyword_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    DELETE FROM keyword_index WHERE fact_id = OLD.id;
    IF FOUND THEN UPDATE keyword_progress SET documents = documents - 1; END IF;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.op = {OP_ASSERT} THEN
    {_PG_INSERT} WHERE fact_id = NEW.id;
    IF FOUND THEN UPDATE keyword_progress SET documents = documents + 1; END IF;
  END IF;
  RETURN NULL;
END $$""",
    """CREATE TRIGGER keyword_index_sync AFTER INSERT OR DELETE OR UPDATE OF e, a, v, g, op
ON facts FOR EACH ROW EXECUTE FUNCTION quipu_keyword_sync()""",
)
_POSTGRES_DROP: Final = (
    "DROP TRIGGER IF EXISTS keyword_index_sync ON facts",
    "DROP FUNCTION IF EXISTS quipu_keyword_sync()",
    "DROP VIEW IF EXISTS keyword_source",
    "DROP TABLE IF EXISTS keyword_index",
    "DROP TABLE IF EXISTS keyword_progress",
)


@dataclass(frozen=True, slots=True)
class Progress:
    cursor: int
    highwater: int
    complete: bool
    documents: int

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _is_postgres(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def exists(conn: Connection) -> bool:
    """Whether the index has been activated (creates nothing)."""
    return inspect(conn).has_table("keyword_progress")


def progress(conn: Connection) -> Progress | None:
    """The backfill's state, or None before activation (creates nothing)."""
    if not exists(conn):
        return None
    row = conn.execute(
        text("SELECT cursor, highwater, complete, documents FROM keyword_progress WHERE id = 1")
    ).one()
    return Progress(int(row[0]), int(row[1]), bool(row[2]), int(row[3]))


def ready(conn: Connection) -> bool:
    """Searchable: activated and fully backfilled."""
    state = progress(conn)
    return state is not None and state.complete


def activate(conn: Connection) -> Progress:
    """Create the index, its triggers and its progress row in the caller's write transaction;
    ``highwater`` is the largest fact row id now. A no-op when it exists."""
    state = progress(conn)
    if state is not None:
        return state
    for statement in _POSTGRES if _is_postgres(conn) else _SQLITE:
        conn.exec_driver_sql(statement)
    highwater = int(conn.execute(select(func.coalesce(func.max(facts.c.id), 0))).scalar_one())
    state = Progress(cursor=0, highwater=highwater, complete=highwater == 0, documents=0)
    conn.execute(
        text(
            "INSERT INTO keyword_progress (id, cursor, highwater, complete, documents) "
            "VALUES (1, :cursor, :highwater, :complete, 0)"
        ),
        {"cursor": 0, "highwater": highwater, "complete": state.complete},
    )
    return state


def backfill_batch(conn: Connection, batch_size: int) -> Progress:
    """(Re)index the next ``batch_size`` fact rows up to ``highwater``, in the caller's write
    transaction (activating first when needed). Retrying a batch is safe: its range is emptied
    and filled again, and ``documents`` moves by the difference."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
        raise InvalidField(f"batch_size must be an integer in 1..{MAX_BATCH}", field="batch_size")
    state = activate(conn)
    if state.complete:
        return state
    ids = (
        select(facts.c.id)
        .where(facts.c.id > state.cursor, facts.c.id <= state.highwater)
        .order_by(facts.c.id)
        .limit(batch_size)
        .subquery()
    )
    last: Any = conn.execute(select(func.max(ids.c.id))).scalar_one()
    end = state.highwater if last is None else int(last)
    pg = _is_postgres(conn)
    key = "fact_id" if pg else "rowid"
    bounds = {"lo": state.cursor, "hi": end}
    in_range = f"{key} > :lo AND {key} <= :hi"
    before = int(
        conn.execute(text(f"SELECT count(*) FROM keyword_index WHERE {in_range}"), bounds).scalar_one()
    )
    conn.execute(text(f"DELETE FROM keyword_index WHERE {in_range}"), bounds)
    if pg:
        conn.execute(text(f"{_PG_INSERT} WHERE fact_id > :lo AND fact_id <= :hi"), bounds)
    else:
        conn.execute(
            text(
                f"INSERT INTO keyword_index(rowid, {_FIELDS}) SELECT fact_id, {_FIELDS} "
                "FROM keyword_source WHERE fact_id > :lo AND fact_id <= :hi"
            ),
            bounds,
        )
    after = int(
        conn.execute(text(f"SELECT count(*) FROM keyword_index WHERE {in_range}"), bounds).scalar_one()
    )
    state = Progress(end, state.highwater, end >= state.highwater, state.documents + after - before)
    conn.execute(
        text("UPDATE keyword_progress SET cursor = :c, complete = :done, documents = :docs WHERE id = 1"),
        {"c": state.cursor, "done": state.complete, "docs": state.documents},
    )
    return state


def drop(conn: Connection) -> None:
    """Remove the triggers, the view and the tables; facts are untouched."""
    for statement in _POSTGRES_DROP if _is_postgres(conn) else _SQLITE_DROP:
        conn.exec_driver_sql(statement)


# -- matching --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Match:
    fact_id: int
    entity_id: int
    bm25: float
    valid_from: str
    valid_to: str | None
    graph_id: int
    fields: dict[str, str]  # the document's indexed columns
    entity_iri: str
    type_iri: str | None
    language: str | None
    datatype: str | None


def _fts_expression(phrases: Sequence[str]) -> str:
    """Every phrase quoted (quotes doubled), joined with AND: caller text is never FTS syntax."""
    return " AND ".join('"' + phrase.replace('"', '""') + '"' for phrase in phrases)


def matches(conn: Connection, phrases: Sequence[str], view: TemporalView) -> Iterator[Match]:
    """Documents matching every phrase whose fact is visible in ``view`` (its graphs, current or
    live at its instant), best first: rank, then entity term id, then fact row id. Streamed, so
    a caller that stops early does not read the rest."""
    if _is_postgres(conn):
        yield from _pg_matches(conn, phrases, view)
    else:
        yield from _sqlite_matches(conn, phrases, view)


_NAMES: Final = (*COLUMNS, "entity_iri", "type_iri", "language", "datatype")
FIRST_WINDOW: Final = 100  # documents ranked before the first visibility join


def _sqlite_matches(conn: Connection, phrases: Sequence[str], view: TemporalView) -> Iterator[Match]:
    """FTS5 ranks in windows of growing size, with its own top-N sort (``ORDER BY bm25 LIMIT``),
    and only a window's documents are joined to their fact rows for visibility. A window ends
    strictly below the rank of the first document it left out, so documents tied at its edge all
    fall in the next window and the (rank, entity, row) order is exact."""
    ki = table("keyword_index", column("rowid"), *(column(n) for n in _NAMES))
    rank: Any = literal_column("bm25(keyword_index)")
    matched = text("keyword_index MATCH :expression").bindparams(expression=_fts_expression(phrases))
    f = facts.alias("f")
    lower: float | None = None
    size = FIRST_WINDOW
    while True:
        ranked = select(ki.c.rowid.label("fact"), rank.label("bm25"), *(ki.c[n] for n in _NAMES)).where(
            matched
        )
        if lower is not None:
            ranked = ranked.where(rank >= lower)
        window = ranked.order_by(rank).limit(size + 1).subquery("d")
        # A LEFT JOIN keeps the window the outer loop (fact rows looked up by primary key) and
        # every document in the answer, visible or not, so the window's edge is known.
        query = select(
            f.c.id, f.c.e, window.c.bm25, f.c.valid_from, f.c.valid_to, f.c.g, *(window.c[n] for n in _NAMES)
        ).select_from(window.outerjoin(f, and_(f.c.id == window.c.fact, view.where(f))))
        documents = conn.execute(query).all()
        last = len(documents) <= size
        edge = 0.0
        if not last:
            edge = max(float(d[2]) for d in documents)
            documents = [d for d in documents if float(d[2]) < edge]
            if not documents:  # more than ``size`` documents share one rank: widen, same start
                size *= 4
                continue
        rows = sorted(
            (d for d in documents if d[0] is not None), key=lambda d: (float(d[2]), int(d[1]), int(d[0]))
        )
        yield from (_match(row) for row in rows)
        if last:
            return
        lower, size = edge, size * 4


def _pg_matches(conn: Connection, phrases: Sequence[str], view: TemporalView) -> Iterator[Match]:
    f = facts.alias("f")
    ki = table("keyword_index", column("fact_id"), column("document"), *(column(n) for n in _NAMES))
    query_vector = _pg_tsquery(phrases)
    rank = -func.ts_rank(ki.c.document, query_vector)
    query = (
        select(
            f.c.id, f.c.e, rank.label("bm25"), f.c.valid_from, f.c.valid_to, f.c.g, *(ki.c[n] for n in _NAMES)
        )
        .select_from(ki.join(f, ki.c.fact_id == f.c.id))
        .where(ki.c.document.op("@@")(query_vector), view.where(f))
        .order_by(rank, f.c.e, f.c.id)
    )
    result = conn.execution_options(stream_results=True, yield_per=256).execute(query)
    for row in result:
        yield _match(row)


def _pg_tsquery(phrases: Sequence[str]) -> Any:
    combined: Any = None
    for phrase in phrases:
        part = func.phraseto_tsquery("simple", phrase)
        combined = part if combined is None else combined.op("&&")(part)
    return combined


def _match(row: Any) -> Match:
    fields = {name: row[6 + i] or "" for i, name in enumerate(COLUMNS)}
    rest = row[6 + len(COLUMNS) :]
    return Match(
        fact_id=int(row[0]),
        entity_id=int(row[1]),
        bm25=float(row[2]),
        valid_from=row[3],
        valid_to=row[4],
        graph_id=int(row[5]),
        fields=fields,
        entity_iri=rest[0],
        type_iri=rest[1],
        language=rest[2] or None,
        datatype=rest[3],
    )
