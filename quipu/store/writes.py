"""Write transactions: assert, retract, set and graph registration (DM §4, §5, §7, §12).

Each public function runs in one database transaction through ``Database.write``: a refusal or
an error anywhere rolls back everything, interned terms included. Nothing is ever deleted: a
retraction closes claims (``valid_to``, ``retracted_tx``) and appends a retraction record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Float,
    Text,
    bindparam,
    case,
    cast,
    exists,
    func,
    insert,
    literal,
    select,
    tuple_,
    union_all,
    update,
)
from sqlalchemy.sql import FromClause, Select
from sqlalchemy.sql.dml import Insert, Update

from quipu import times
from quipu.errors import InvalidField, NotFound, UnknownGraph, WriteRefused
from quipu.identity import Authenticated
from quipu.store import graph_registry, values
from quipu.store.context import TxInfo, WriteContext
from quipu.store.database import Database
from quipu.store.schema import (
    META_IRI,
    OP_ASSERT,
    OP_RETRACT,
    ROOT,
    ROOT_IRI,
    facts,
    graphs,
    transaction_auth,
    transactions,
)
from quipu.store.stage import ROW_COLUMNS, Row, fact_stage, fill
from quipu.store.statements import Statement, StatementBatch, gc_paused
from quipu.store.views import visible

RDF_TYPE = values.RDF + "type"
_BULK_ROWS = 10_000  # batches above this size may take the empty-graph fast path

# progress(phase, done, total): coarse reports for long ingests (the CLI draws a bar).
Progress = Callable[[str, int, int], None]
# check(ctx, destination graph id): a gate run inside the write; raising refuses it (rolled back).
WriteCheck = Callable[["WriteContext", int], None]


def _silent(phase: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class KnotResult:
    tx_id: int
    count: int
    valid_from: str
    claims: int  # claim rows written (new statements plus new ownership claims)
    tx_ids: tuple[int, ...] = ()  # one per destination graph, ROOT first
    retracted: int = 0  # statements a snapshot replacement closed (always 0 in append mode)


@dataclass(frozen=True)
class RetractResult:
    tx_id: int
    retracted: int
    entity: str


@dataclass(frozen=True)
class SetResult:
    tx_id: int
    retracted: int
    asserted: int
    entity: str
    predicate: str


# Statements grouped by destination graph id, deduplicated by (e, a, v).
_Plan = dict[int, dict[tuple[int, int, bytes], Row]]


def derived_source(source: str | None, actor: str | None, verb: str) -> str:
    """The producer key of a write (DM §4.1): the caller's, else ``<verb>:<actor>``."""
    if source is not None and source.strip():
        return source
    if actor is not None and actor.strip():
        return f"{verb}:{actor}"
    return f"{verb}:anonymous"


def companion_iri(graph_iri: str) -> str:
    """DM §3 rule 4: ``<G>#inferred``, ``<G>-inferred`` when ``<G>`` has a ``#`` already."""
    return graph_iri + ("-inferred" if "#" in graph_iri else "#inferred")


def is_companion(iri: str) -> bool:
    """Reserved companion inferred graphs (DM §3.4)."""
    return iri.endswith("#inferred") or ("#" in iri and iri.endswith("-inferred"))


_INSERT_TX = (
    insert(transactions)
    .values({c: bindparam(c) for c in ("timestamp", "actor", "source", "graph", "recorded_at")})
    .returning(transactions.c.id)
)
_INSERT_AUTH = insert(transaction_auth).values(
    {c: bindparam(c) for c in ("tx_id", "principal", "credential_id", "auth_class")}
)


def open_transaction(
    ctx: WriteContext, *, timestamp: str, actor: str | None, source: str | None, graph: int
) -> TxInfo:
    params = {
        "timestamp": timestamp,
        "actor": actor,
        "source": source,
        "graph": graph,
        "recorded_at": times.now(),
    }
    tx_id = int(ctx.dialect.prepared(_INSERT_TX).run(ctx.conn, params).fetchone()[0])
    if ctx.auth is not None:  # the verified identity, beside (never instead of) the declared actor
        ctx.dialect.prepared(_INSERT_AUTH).run(ctx.conn, {"tx_id": tx_id, **ctx.auth.as_json()})
    info = TxInfo(tx_id, timestamp, source, graph)
    ctx.transactions.append(info)
    return info


def resolve_target_graph(db: Database, ctx: WriteContext, iri: str | None) -> int:
    """A registered committed graph to write into; never interns (DM §1.4, knot rule 7)."""
    if iri is None or iri == "" or iri == ROOT_IRI:
        return ROOT
    _refuse_companion(iri)
    return _registered(ctx.conn, iri, db.terms.lookup_in(ctx, (iri,)).get(iri))


def check_target_graph(db: Database, iri: str | None) -> None:
    """``resolve_target_graph``'s refusals from a read snapshot, before any parsing.

    ``/knot`` refuses a bad graph before a syntax error (tools-core §3.1 error order) without
    parsing a large document first; the write checks again inside its transaction.
    """
    if iri is None or iri == "" or iri == ROOT_IRI:
        return
    _refuse_companion(iri)
    with db.read() as conn:
        _registered(conn, iri, db.terms.lookup(conn, (iri,)).get(iri))


def _refuse_companion(iri: str) -> None:
    if is_companion(iri):
        raise WriteRefused(
            f"graph <{iri}> is a reserved companion inferred graph; only the reasoner writes there",
            field="graph",
        )


def _registered(conn: Connection, iri: str, gid: int | None) -> int:
    if gid is None:
        raise UnknownGraph(
            f"unknown graph: {iri} — create and register it first via graph_create", field="graph"
        )
    row = conn.execute(select(graphs.c["class"], graphs.c.lifecycle).where(graphs.c.g == gid)).first()
    if row is None:
        raise UnknownGraph(f"graph {iri} is interned but not registered", field="graph")
    if row[0] == "overlay":
        raise WriteRefused(f"graph {iri} is an overlay — write through overlay_write", field="graph")
    refuse_unwritable(iri, row[1])
    return gid


def refuse_unwritable(iri: str, lifecycle: str | None) -> None:
    """The meta-graph is written only by the label, dataset and lifecycle tools, and a frozen
    graph only after a thaw (tools-graphs-governance §0.8, rule FZ-2)."""
    if iri == META_IRI:
        raise WriteRefused(
            f"graph <{META_IRI}> holds graph labels and lifecycle facts; write it through "
            "quipu_graph_label and quipu_datasets",
            field="graph",
        )
    if lifecycle == "frozen":
        raise WriteRefused(f"graph <{iri}> is frozen; thaw it first with quipu_graph_thaw", field="graph")


def grouped_rows(
    statements: Sequence[Statement], ids: dict[str, int], graph_of: dict[str | None, int]
) -> _Plan:
    """Interned statements as staging rows, grouped by destination graph id and deduplicated."""
    if not statements:
        return {}
    if len(graph_of) == 1:  # no named graph in the batch: one bucket, no per-statement look-up
        return {graph_of[None]: _bucket(statements, ids)}
    by_graph: dict[int, list[Statement]] = {}
    for statement in statements:
        by_graph.setdefault(graph_of[statement[0]], []).append(statement)
    return {gid: _bucket(triples, ids) for gid, triples in by_graph.items()}


def _bucket(statements: Iterable[Statement], ids: dict[str, int]) -> dict[tuple[int, int, bytes], Row]:
    """One graph's rows (its statements' graph names are not read), deduplicated by (e, a, v)."""
    bucket: dict[tuple[int, int, bytes], Row] = {}
    digest, ref, numeric = values.digest, values.ref, values.numeric
    refs: dict[int, tuple[bytes, bytes]] = {}  # a term's Ref encoding and digest, once each
    literals: dict[bytes, tuple[bytes, float | None]] = {}  # a literal's digest and numeric shadow
    for _g, s, p, o in statements:
        e, a = ids[s], ids[p]
        if type(o) is str:
            oid = ids[o]
            pair = refs.get(oid)
            if pair is None:
                v = ref(oid)
                pair = refs[oid] = (v, digest(v))
            bucket[(e, a, pair[0])] = (e, a, pair[0], pair[1], oid, None)
        else:
            assert isinstance(o, bytes)
            key = (e, a, o)
            if key not in bucket:
                shadow = literals.get(o)
                if shadow is None:
                    shadow = literals[o] = (digest(o), numeric(o))
                bucket[key] = (e, a, o, shadow[0], None, shadow[1])
    return bucket


_CLAIM_COLUMNS = (*ROW_COLUMNS, "g", "tx", "valid_from", "op")
_ID_CHUNK = 500


def _live_claims_of(f: FromClause, g: Any, e: Any, a: Any, vh: Any, v: Any) -> list[ColumnElement[bool]]:
    """Conditions: a row of ``f`` is a live claim of statement (e, a, v) in graph g."""
    c = f.c
    return [c.g == g, c.e == e, c.a == a, c.vh == vh, c.v == v, c.op == OP_ASSERT, c.valid_to.is_(None)]


def _insert_unowned(staged: FromClause) -> Insert:
    """INSERT claims for staged statements that have no live claim of this source (DM §5.2)."""
    f = facts.alias("f")
    t = transactions.alias("t")
    st = staged.c
    owned = exists().where(
        *_live_claims_of(f, bindparam("g"), st.e, st.a, st.vh, st.v),
        t.c.id == f.c.tx,
        t.c.source.is_not_distinct_from(bindparam("src", type_=Text)),
    )
    other = facts.alias("other")
    # A second owner's claim is marked, so current reads see the statement once (facts.dup).
    live_already = exists().where(*_live_claims_of(other, bindparam("g"), st.e, st.a, st.vh, st.v))
    chosen = select(
        st.e,
        st.a,
        st.v,
        st.vh,
        st.v_ref,
        st.v_num,
        bindparam("g", type_=BigInteger),
        bindparam("tx", type_=BigInteger),
        bindparam("vf", type_=Text),
        literal(OP_ASSERT),
        case((live_already, 1), else_=0),
    ).where(~owned)
    return insert(facts).from_select([*_CLAIM_COLUMNS, "dup"], chosen)


_INSERT_UNOWNED = _insert_unowned(fact_stage)
# Up to this many rows the statements are bound as parameters of the INSERT itself instead of
# going through the staging table: filling it cost an episode-sized write ~0.03 ms of its ~0.9
# (measured). One statement per row count, few enough for the driver's statement cache.
_LISTED_ROWS = 64
_listed: dict[int, tuple[Insert, tuple[str, ...]]] = {}


def _row_param(name: str, column: str) -> ColumnElement[Any]:
    """A bound row value typed as its column: PostgreSQL reads an untyped NULL in a UNION as text."""
    param = bindparam(name, type_=fact_stage.c[column].type)
    return cast(param, Float) if column == "v_num" else param


def _insert_listed(n: int) -> tuple[Insert, tuple[str, ...]]:
    """``_insert_unowned`` over ``n`` rows bound as parameters, and those parameters' names.

    The rows are a UNION ALL of one-row SELECTs (a derived VALUES table cannot name its columns
    in SQLite, and a CTE would start the statement with WITH, where the driver reports no rowcount).
    """
    found = _listed.get(n)
    if found is None:
        names = tuple(f"r{i}_{c}" for i in range(n) for c in ROW_COLUMNS)
        width = len(ROW_COLUMNS)
        one: list[Select[*tuple[Any, ...]]] = [
            select(
                *(
                    _row_param(name, c).label(c)
                    for name, c in zip(names[i : i + width], ROW_COLUMNS, strict=True)
                )
            )
            for i in range(0, len(names), width)
        ]
        listed = (union_all(*one) if n > 1 else one[0]).subquery("quipu_rows")
        # setdefault: every caller gets the one statement kept (prepared() caches by its id).
        found = _listed.setdefault(n, (_insert_unowned(listed), names))
    return found


_GRAPH_HAS_ROWS = select(facts.c.id).where(facts.c.g == bindparam("g")).limit(1)


def assert_rows(ctx: WriteContext, tx: TxInfo, rows: Sequence[Row], valid_from: str) -> int:
    """Write claims for ``rows`` (deduplicated statements) into ``tx.graph`` (DM §5.2).

    A statement with a live claim of this transaction's source is skipped (idempotent); one live
    only under other sources gets a second, ownership claim. Returns the claim rows written.
    """
    if not rows:
        return 0
    conn = ctx.conn
    prepared = ctx.dialect.prepared
    if len(rows) > _BULK_ROWS and prepared(_GRAPH_HAS_ROWS).run(conn, {"g": tx.graph}).fetchone() is None:
        # A graph with no rows at all has no claims to compare against: every row is new.
        constants: dict[str, int | str] = {
            "g": tx.graph,
            "tx": tx.id,
            "valid_from": valid_from,
            "op": OP_ASSERT,
        }
        report = ctx.progress or _silent
        with ctx.dialect.indexes_deferred(conn, facts, len(rows)):
            ctx.dialect.insert_tuples(conn, facts, ROW_COLUMNS, rows, constants)
            report("building indexes", 0, 1)  # if they were deferred, they are built on leaving
        report("building indexes", 1, 1)
        return len(rows)
    params = {"g": tx.graph, "tx": tx.id, "vf": valid_from, "src": tx.source}
    if len(rows) <= _LISTED_ROWS:
        statement, names = _insert_listed(len(rows))
        params.update(zip(names, chain.from_iterable(rows), strict=True))
        return int(prepared(statement).run(conn, params).rowcount)
    fill(conn, ctx.dialect, fact_stage, rows)
    written = int(prepared(_INSERT_UNOWNED).run(conn, params).rowcount)
    ctx.dialect.grew(conn, facts, written)
    return written


def close_claims(
    ctx: WriteContext,
    tx: TxInfo,
    *,
    e: int | None = None,
    a: int | None = None,
    v: bytes | None = None,
    keep: bytes | None = None,
    claim_ids: Sequence[int] | None = None,
) -> int:
    """Close live claims in ``tx.graph`` and record one retraction per statement (DM §5.3).

    Unscoped by default: every owner's claims of the matching statements close. ``claim_ids``
    closes exactly those claims instead (source-scoped retraction). ``keep`` excludes one value
    (``set`` keeps the value it is making sole). Returns how many statements were closed.
    """
    c = facts.c
    live = [c.g == tx.graph, c.op == OP_ASSERT, c.valid_to.is_(None)]
    if e is not None:
        live.append(c.e == e)
    if a is not None:
        live.append(c.a == a)
    if v is not None:
        live += [c.vh == values.digest(v), c.v == v]
    if keep is not None:
        live.append(c.v != keep)
    batches: list[list[ColumnElement[bool]]]
    if claim_ids is None:
        batches = [live]
    else:
        ids = list(claim_ids)
        batches = [[*live, c.id.in_(ids[i : i + _ID_CHUNK])] for i in range(0, len(ids), _ID_CHUNK)]
    earliest: _Closed = {}
    for cond in batches:
        _close(ctx, tx, update(facts).where(*cond), earliest)
    if claim_ids is not None:  # other owners' claims may remain live: one must be primary
        _promote(ctx, tx.graph, [row for row, _vf in earliest.values()])
    return _record_retractions(ctx, tx, earliest)


def _promote_statement() -> Update:
    """Mark the oldest remaining live claim primary (dup = 0) when none is."""
    f, g = facts.alias("f"), facts.alias("g")
    key: list[Any] = [bindparam(f"b_{name}") for name in ("g", "e", "a", "vh", "v")]
    oldest = select(func.min(f.c.id)).where(*_live_claims_of(f, *key)).scalar_subquery()
    has_primary = exists().where(*_live_claims_of(g, *key), g.c.dup == 0)
    return update(facts).where(facts.c.id == oldest, ~has_primary).values(dup=0)


_PROMOTE = _promote_statement()


def _promote(ctx: WriteContext, graph: int, rows: Sequence[Row]) -> None:
    prepared = ctx.dialect.prepared(_PROMOTE)
    for e, a, v, vh, _ref, _num in rows:
        prepared.run(ctx.conn, {"b_g": graph, "b_e": e, "b_a": a, "b_vh": vh, "b_v": v})


# Closed statements → (row, earliest valid_from among their closed claims).
_Closed = dict[tuple[int, int, bytes], tuple[Row, str]]


def _close(ctx: WriteContext, tx: TxInfo, statement: Update, earliest: _Closed) -> None:
    """Run a claim-closing UPDATE and collect what it closed, per statement."""
    c = facts.c
    closed = ctx.conn.execute(
        statement.values(valid_to=tx.timestamp, retracted_tx=tx.id).returning(
            c.e, c.a, c.v, c.vh, c.v_ref, c.v_num, c.valid_from
        )
    )
    for row in closed:
        key = (row.e, row.a, bytes(row.v))
        prior = earliest.get(key)
        if prior is None or row.valid_from < prior[1]:
            earliest[key] = ((row.e, row.a, key[2], bytes(row.vh), row.v_ref, row.v_num), row.valid_from)


def _record_retractions(ctx: WriteContext, tx: TxInfo, earliest: _Closed) -> int:
    """One retraction record per closed statement (DM §5.3 step 3); returns how many."""
    if earliest:
        tail = (tx.graph, tx.id, tx.timestamp, tx.id, OP_RETRACT)
        ctx.dialect.insert_tuples(
            ctx.conn,
            facts,
            (*ROW_COLUMNS, "g", "tx", "valid_to", "retracted_tx", "op", "valid_from"),
            [r + tail + (vf,) for r, vf in earliest.values()],
        )
    return len(earliest)


def close_statements(ctx: WriteContext, tx: TxInfo, rows: Sequence[Row]) -> int:
    """Close every owner's live claims of exactly these statements in ``tx.graph`` (DM §5.3).

    The set-based twin of ``close_claims(e=, a=, v=)`` for many statements (SPARQL Update's
    deletions): the statements are staged and one UPDATE closes them, driven from the staged
    rows through the (g, e, a, vh) index. Returns how many statements were closed.
    """
    if not rows:
        return 0
    fill(ctx.conn, ctx.dialect, fact_stage, rows)
    c, st = facts.c, fact_stage.c
    # A row-value IN (not a join, which SQLite plans as a scan of the graph per staged row)
    # is answered through ix_facts_gea for each staged statement.
    statement = update(facts).where(
        c.g == tx.graph,
        tuple_(c.e, c.a, c.vh, c.v).in_(select(st.e, st.a, st.vh, st.v)),
        c.op == OP_ASSERT,
        c.valid_to.is_(None),
    )
    earliest: _Closed = {}
    _close(ctx, tx, statement, earliest)
    return _record_retractions(ctx, tx, earliest)


def _live_values(conn: Connection, g: int, e: int, a: int | None = None) -> list[tuple[int, bytes]]:
    c = facts.c
    query = select(c.a, c.v).distinct().where(c.g == g, c.e == e, visible(facts, None, None))
    if a is not None:
        query = query.where(c.a == a)
    return [(int(r.a), bytes(r.v)) for r in conn.execute(query)]


_ONE_LIVE_VALUE = (
    select(facts.c.v)
    .where(facts.c.g == bindparam("g"), facts.c.e == bindparam("e"), facts.c.a == bindparam("a"))
    .where(facts.c.op == OP_ASSERT, facts.c.valid_to.is_(None))
    .limit(1)
)


def live_value(ctx: WriteContext, g: int, e: int, a: int) -> bytes | None:
    """One current value of (e, a) in graph ``g`` inside a write, or None (a prepared probe: the
    episode writer asks it on every write)."""
    row = ctx.dialect.prepared(_ONE_LIVE_VALUE).run(ctx.conn, {"g": g, "e": e, "a": a}).fetchone()
    return None if row is None else bytes(row[0])


# -- public write operations ---------------------------------------------------------------


def assert_statements(
    db: Database,
    batch: StatementBatch,
    *,
    timestamp: str,
    valid_from: str,
    actor: str | None = None,
    source: str | None = None,
    graph: str | None = None,
    progress: Progress | None = None,
    auth: Authenticated | None = None,
    check: WriteCheck | None = None,
) -> KnotResult:
    """Assert a parsed batch in append mode: one transaction per destination graph (DM §3.6),
    ROOT first then ascending graph id, all inside one database transaction.

    ``timestamp`` and ``valid_from`` arrive normalised. Destination graphs are checked before
    anything is interned; named graphs the batch mentions itself must be registered too.
    """
    with db.write(auth) as ctx:
        ctx.progress = progress
        return assert_statements_in(
            db,
            ctx,
            batch,
            timestamp=timestamp,
            valid_from=valid_from,
            actor=actor,
            source=source,
            graph=graph,
            progress=progress,
            check=check,
        )


def assert_statements_in(
    db: Database,
    ctx: WriteContext,
    batch: StatementBatch,
    *,
    timestamp: str,
    valid_from: str,
    actor: str | None = None,
    source: str | None = None,
    graph: str | None = None,
    progress: Progress | None = None,
    check: WriteCheck | None = None,
) -> KnotResult:
    """``assert_statements`` inside an open write, beside other work that must commit with it
    (an import stages its triples, its review row and its event together)."""
    src = derived_source(source, actor, "knot")
    report = progress or _silent
    target = resolve_target_graph(db, ctx, graph)
    if check is not None:  # gates, inside the transaction and before anything is interned
        check(ctx, target)
    graph_of: dict[str | None, int] = {None: target}
    for name in sorted(batch.graphs):
        graph_of[name] = resolve_target_graph(db, ctx, name)
    ids = db.terms.intern(ctx, batch.iris)
    report("interned terms", len(ids), len(ids))
    with gc_paused(len(batch.statements) > _BULK_ROWS):
        plan = grouped_rows(batch.statements, ids, graph_of)
    total = sum(len(b) for b in plan.values())
    done = 0
    order = sorted(set(plan) | {target})  # ROOT (0) first, then ascending ids
    tx_ids: list[int] = []
    claims = 0
    for gid in order:
        tx = open_transaction(ctx, timestamp=timestamp, actor=actor, source=src, graph=gid)
        tx_ids.append(tx.id)
        rows = list(plan.get(gid, {}).values())
        claims += assert_rows(ctx, tx, rows, valid_from)
        done += len(rows)
        report("written statements", done, total)
    return KnotResult(tx_ids[order.index(target)], total, valid_from, claims, tuple(tx_ids))


def _entity_id(db: Database, ctx: WriteContext, iri: str, field: str = "entity") -> int:
    values.check_iri(iri, field, blank=field == "entity")
    tid = db.terms.lookup_in(ctx, (iri,)).get(iri)
    if tid is None:
        raise NotFound(f"{field} not found: {iri}", field=field)
    return tid


def retract(
    db: Database,
    entity: str,
    predicate: str | None = None,
    value: object = None,
    *,
    timestamp: str | None = None,
    actor: str | None = None,
    source: str | None = None,
    allow_orphan: bool = False,
    auth: Authenticated | None = None,
) -> RetractResult:
    """Retract ROOT statements about ``entity`` (tools-core §3.7): all, one predicate, or one."""
    ts = times.normalise_timestamp(timestamp)
    wanted = values.from_json(value) if value is not None else None
    with db.write(auth) as ctx:
        e = _entity_id(db, ctx, entity)
        a = _entity_id(db, ctx, predicate, "predicate") if predicate is not None else None
        v: bytes | None = None
        if wanted is not None:
            if wanted.iri is not None:
                oid = db.terms.lookup_in(ctx, (wanted.iri,)).get(wanted.iri)
                if oid is None:  # an unknown IRI matches nothing and is not interned
                    return RetractResult(0, 0, entity)
                v = values.ref(oid)
            else:
                v = wanted.encoded
        live = _live_values(ctx.conn, ROOT, e)
        matched = [(pa, pv) for pa, pv in live if (a is None or pa == a) and (v is None or pv == v)]
        if not matched:
            if wanted is not None and wanted.bare_string and a is not None:
                current = [pv for pa, pv in live if pa == a]
                _bare_string_guard(current, entity, predicate, value, "retract matched nothing")
            return RetractResult(0, 0, entity)
        if not allow_orphan and (a is not None or v is not None):
            _half_ghost_guard(db, ctx, entity, live, matched)
        tx = open_transaction(
            ctx, timestamp=ts, actor=actor, source=derived_source(source, actor, "retract"), graph=ROOT
        )
        retracted = close_claims(ctx, tx, e=e, a=a, v=v)
    return RetractResult(tx.id, retracted, entity)


def _bare_string_guard(
    current: list[bytes], entity: str, predicate: str | None, value: object, what: str
) -> None:
    """A bare string can never equal a stored reference: refuse instead of a silent no-op."""
    refs = [pv for pv in current if values.ref_id(pv) is not None]
    text = str(value)
    if current and len(refs) == len(current):
        raise WriteRefused(
            f'{what}: object "{text}" is a string literal, but <{predicate}> takes an IRI reference '
            f'on <{entity}>; send {{"iri": "{text}"}} for an edge or {{"str": "{text}"}} for a literal',
            field="value",
        )
    if not current and values.looks_like_iri(text):
        raise WriteRefused(
            f'{what}: object "{text}" looks like an IRI but was sent as a string literal; send '
            f'{{"iri": "{text}"}} for an edge or {{"str": "{text}"}} to mean the literal',
            field="value",
        )


def _half_ghost_guard(
    db: Database,
    ctx: WriteContext,
    entity: str,
    live: list[tuple[int, bytes]],
    matched: list[tuple[int, bytes]],
) -> None:
    type_id = db.terms.lookup_in(ctx, (RDF_TYPE,)).get(RDF_TYPE)
    types = {(pa, pv) for pa, pv in live if pa == type_id}
    gone = set(matched)
    survivors = [s for s in live if s not in gone]
    if types and types <= gone and survivors:
        raise WriteRefused(
            f"refusing to retract entity <{entity}>'s last rdf:type while {len(survivors)} other "
            "fact(s) survive; pass allow_orphan: true to allow it",
            reason="would_orphan",
        )


def set_value(
    db: Database,
    entity: str,
    predicate: str,
    value: object,
    *,
    timestamp: str | None = None,
    actor: str | None = None,
    source: str | None = None,
    auth: Authenticated | None = None,
) -> SetResult:
    """Make ``value`` the only current object of (entity, predicate) in ROOT (tools-core §3.6)."""
    values.check_iri(predicate, "predicate")
    if value is None:
        raise InvalidField("missing 'value' parameter", field="value")
    wanted = values.from_json(value)
    ts = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        e = _entity_id(db, ctx, entity)
        a_known = db.terms.lookup_in(ctx, (predicate,)).get(predicate)
        live = _live_values(ctx.conn, ROOT, e, a_known) if a_known is not None else []
        if wanted.bare_string:
            _bare_string_guard([pv for _pa, pv in live], entity, predicate, value, "set refused")
        if wanted.iri is not None:
            ids = db.terms.intern(ctx, (predicate, wanted.iri))
            v = values.ref(ids[wanted.iri])
        else:
            ids = db.terms.intern(ctx, (predicate,))
            assert wanted.encoded is not None
            v = wanted.encoded
        current = {pv for _pa, pv in live}
        if current == {v}:
            return SetResult(0, 0, 0, entity, predicate)
        tx = open_transaction(
            ctx, timestamp=ts, actor=actor, source=derived_source(source, actor, "set"), graph=ROOT
        )
        a = ids[predicate]
        retracted = close_claims(ctx, tx, e=e, a=a, keep=v) if current - {v} else 0
        asserted = 0
        if v not in current:
            oid = values.ref_id(v)
            row: Row = (e, a, v, values.digest(v), oid, values.numeric(v))
            asserted = 1 if assert_rows(ctx, tx, [row], ts) else 0
    return SetResult(tx.id, retracted, asserted, entity, predicate)


def register_graph(
    db: Database,
    iri: str,
    *,
    actor: str | None = None,
    timestamp: str | None = None,
    auth: Authenticated | None = None,
) -> bool:
    """Register a committed named graph; False when it already was. Reserved IRIs are refused."""
    values.check_iri(iri, "graph")
    if iri in (ROOT_IRI, META_IRI) or is_companion(iri):
        raise WriteRefused(f"graph IRI <{iri}> is reserved", field="graph")
    with db.write(auth) as ctx:
        return register_graph_in(db, ctx, iri, actor=actor, timestamp=timestamp)[1]


def register_graph_in(
    db: Database, ctx: WriteContext, iri: str, *, actor: str | None = None, timestamp: str | None = None
) -> tuple[int, bool]:
    """``register_graph`` inside an open write (the caller checked the IRI): (graph id, created).

    SPARQL Update registers the graphs it inserts into in the same database transaction as its
    facts, so a failed update leaves no registration behind.
    """
    return graph_registry.register(db, ctx, iri, created_at=times.normalise_timestamp(timestamp), actor=actor)
