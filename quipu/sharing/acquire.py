"""``quipu_acquire`` and ``quipu_acquire_composed``: whole named graphs, all or nothing
(tools-graphs-governance §4.6, §4.7).

Both hand a consumer full copies of named graphs as RDFC-1.0 canonical N-Triples, each sealed by
the ``sha256:`` of its exact bytes, the same canonical form a share's ``export.nt`` has (rule
AQ-1). The caller names the store lineage it expects (the ``store_id`` its shares carry); any
other store refuses before a graph is read. Every refusal happens before an answer exists, so a
caller gets every graph it asked for, in the order it asked (AQ-2), or none (AQ-3).

``acquire`` serves MAIN only: a registered, local, committed graph (ROOT included, as
``urn:quipu:graph:root``), read now or as of a MAIN transaction. ``acquire_composed`` also serves
what is mounted beside MAIN, which in quipu means the archive packs of frozen graphs (§1.4): each
graph is labelled with its provider (rule AC-2), and the census of mounted packs is taken before
and after the read and must not change (AC-3). A transaction pin there reaches MAIN rows only
(AC-1), so it is accepted only with the ``expected_generation`` of the census it was taken under.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection

from quipu.errors import BadRequest, InvalidField, MissingField, UnknownGraph, WrongType
from quipu.rdfio import serialize
from quipu.sharing.manifest import canonical_json, sha256_id
from quipu.sharing.share import byte_limit
from quipu.store import acquire_reads, graph_registry, graph_scope, share_state, values
from quipu.store.database import Database
from quipu.store.graph_registry import GraphRecord

MAIN: Final = "main"  # the provider of every graph the store itself holds
ARCHIVE: Final = "archive"  # the census kind of a frozen graph's pack (quipu has no other mounts)


@dataclass(frozen=True, slots=True)
class _Wanted:
    """One requested graph, resolved: its id and who provides its rows."""

    iri: str
    gid: int
    provider: str


# -- the two tools --------------------------------------------------------------------------------


def acquire(
    db: Database,
    *,
    source_store_id: object,
    graphs: object,
    tx: object = None,
    max_bytes: object = None,
    cap: int,
) -> dict[str, Any]:
    """``POST /acquire``: MAIN graphs, current or as of ``tx``, within the size bound."""
    expected, iris, pin = _request(source_store_id, graphs, tx)
    limit = byte_limit(_optional_int(max_bytes, "max_bytes"), cap)
    with db.read(long=True) as conn:
        identity = _lineage(conn, expected)
        head = _pin_in_range(conn, pin)
        # Rule FZ-3: transaction time does not cross into a pack's file.
        graph_scope.refuse_tx_travel(db, pin)
        wanted = [_main_graph(db, conn, iri) for iri in iris]
        texts = _read(db, conn, wanted, pin)
    head_fields = {"source_store_id": identity, "tx": head if pin is None else pin}
    return _answer(head_fields, wanted, texts, limit, providers=False)


def acquire_composed(
    db: Database,
    *,
    source_store_id: object,
    graphs: object,
    expected_generation: object = None,  # the seed's field order: the census pin before the tx pin
    tx: object = None,
    max_bytes: object = None,
    cap: int,
    before_closing_census: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """``POST /acquire/composed``: MAIN and mounted graphs, each with its provider, fenced by a
    census taken before and after the read.

    ``before_closing_census`` runs after the graphs are read and before the second census; it
    exists so a test can change the mounts at exactly that point and see the fence refuse."""
    expected, iris, pin = _request(source_store_id, graphs, tx)
    if expected_generation is not None and not isinstance(expected_generation, str):
        raise WrongType("'expected_generation' must be a string", field="expected_generation")
    if pin is not None and expected_generation is None:
        raise MissingField(
            "'tx' needs 'expected_generation': a MAIN transaction says nothing about what is "
            "mounted, so pin the census generation it was taken under as well",
            field="expected_generation",
        )
    limit = byte_limit(_optional_int(max_bytes, "max_bytes"), cap)
    with db.read() as conn:
        identity = _lineage(conn, expected)
        census = _census(conn)
    generation = sha256_id(canonical_json(census))
    if expected_generation is not None and expected_generation != generation:
        raise BadRequest(
            f"expected_generation {expected_generation} is not the current census generation "
            f"{generation}: the mounts changed since it was taken (read the census again)",
            reason="generation_mismatch",
            field="expected_generation",
        )
    mounted = {graph: entry["alias"] for entry in census for graph in entry["graphs"]}
    with db.read(long=True) as conn:
        head = _pin_in_range(conn, pin)
        wanted = [_composed_graph(db, conn, iri, mounted) for iri in iris]
        texts = _read(db, conn, wanted, pin)
    if before_closing_census is not None:
        before_closing_census()
    with db.read() as conn:
        closing = _census(conn)
    if closing != census:  # AC-3
        raise BadRequest(
            "the census of mounted archives changed while the graphs were read (fence broken): "
            "retry, with the new generation if you pinned one",
            reason="census_changed",
        )
    head_fields = {
        "source_store_id": identity,
        "tx": head if pin is None else pin,
        "generation": generation,
        "census": census,
    }
    return _answer(head_fields, wanted, texts, limit, providers=True)


# -- the request ----------------------------------------------------------------------------------


def _request(source_store_id: object, graphs: object, tx: object) -> tuple[str, list[str], int | None]:
    """The fields both tools share, checked before any work (the route's model has already
    refused wrong JSON types; this keeps the Python entry point as strict)."""
    if not isinstance(source_store_id, str):
        raise WrongType("'source_store_id' must be a string", field="source_store_id")
    if not source_store_id.strip():
        raise InvalidField(
            "'source_store_id' must name the store lineage you expect", field="source_store_id"
        )
    if isinstance(graphs, str) or not isinstance(graphs, Sequence):
        raise WrongType("'graphs' must be an array of graph IRIs", field="graphs")
    if not graphs:
        raise InvalidField("'graphs' must name at least one graph", field="graphs")
    iris = [values.check_iri(g, "graphs") for g in graphs]
    repeated = sorted({g for g in iris if iris.count(g) > 1})
    if repeated:
        raise InvalidField(
            f"'graphs' must be unique: <{repeated[0]}> is named more than once", field="graphs"
        )
    return source_store_id, iris, _optional_int(tx, "tx")


def _optional_int(value: object, field: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise WrongType(f"'{field}' must be an integer", field=field)
    return value


def _lineage(conn: Connection, expected: str) -> str:
    """This store's identity, when it is the one the caller expects; nothing is read otherwise."""
    identity = share_state.store_id(conn)
    if expected != identity:
        raise BadRequest(
            f"lineage mismatch: this server's MAIN store is {identity}, not {expected}; nothing was read",
            reason="lineage_mismatch",
            field="source_store_id",
        )
    return identity


def _pin_in_range(conn: Connection, pin: int | None) -> int:
    """The latest MAIN transaction, after checking that a pin names one that exists."""
    head, _ = share_state.anchor(conn)
    if pin is not None and not 1 <= pin <= head:
        latest = f"the latest is {head}" if head else "the store has no transaction yet"
        raise InvalidField(
            f"'tx' {pin} is out of range: it must be from 1 to the latest MAIN transaction ({latest})",
            field="tx",
            reason="tx_out_of_range",
        )
    return head


# -- which graphs may be acquired -------------------------------------------------------------------


def _registered(db: Database, conn: Connection, iri: str) -> GraphRecord:
    """The registry row of ``iri``: unknown and merely interned IRIs are both refused, each
    saying which it is (tools-graphs-governance §0.8 keeps the two apart)."""
    gid, record = graph_registry.lookup(db, conn, iri)
    if gid is None:
        raise UnknownGraph(f"unknown graph: <{iri}> (no graph of that name exists)", field="graphs")
    if record is None:
        raise UnknownGraph(
            f"graph <{iri}> is unregistered: the IRI is known but names no graph", field="graphs"
        )
    if record.cls != "committed":
        raise _not_acquirable(iri, "is an overlay (a scratch layer), not a committed graph")
    return record


def _main_graph(db: Database, conn: Connection, iri: str) -> _Wanted:
    record = _registered(db, conn, iri)
    if record.source is not None:
        raise _not_acquirable(iri, f"was contributed by the attachment {record.source!r}, not owned by MAIN")
    if record.lifecycle == "frozen":
        raise _not_acquirable(
            iri, "is frozen: its rows live in a mounted archive pack (quipu_acquire_composed serves it)"
        )
    return _Wanted(iri, record.g, MAIN)


def _composed_graph(db: Database, conn: Connection, iri: str, mounted: Mapping[str, str]) -> _Wanted:
    """A MAIN graph, or a frozen graph whose rows a mounted pack holds (provider: its alias)."""
    record = _registered(db, conn, iri)
    if record.source is not None:  # quipu mounts archive packs only, never another's store
        raise _not_acquirable(
            iri, f"was contributed by the attachment {record.source!r}, which is not mounted"
        )
    if record.lifecycle != "frozen":
        return _Wanted(iri, record.g, MAIN)
    alias = mounted.get(iri)
    if alias is None:
        # The registry and the opening census disagree: a freeze came in between.
        raise BadRequest(
            f"graph <{iri}> is frozen but no archive in the census provides it (fence broken): retry",
            reason="census_changed",
            field="graphs",
        )
    return _Wanted(iri, record.g, alias)


def _not_acquirable(iri: str, why: str) -> InvalidField:
    return InvalidField(
        f"graph <{iri}> cannot be acquired: it {why}", field="graphs", reason="not_acquirable"
    )


# -- reading and answering --------------------------------------------------------------------------


def _census(conn: Connection) -> list[dict[str, Any]]:
    """The mounted archives, sorted by alias, as the response shows them (no server paths)."""
    return [
        {
            "alias": pack.alias,
            "kind": ARCHIVE,
            "content_hash": pack.content_hash,
            "term_space": pack.term_space,
            "graphs": [pack.graph_iri],
        }
        for pack in acquire_reads.mounted_packs(conn)
    ]


def _read(db: Database, conn: Connection, wanted: Sequence[_Wanted], pin: int | None) -> list[str]:
    """Each graph's statements as sorted N-Triples, in request order. The label floor applies as
    to any read, and admitting a frozen graph makes its pack's rows visible to this read."""
    graph_scope.enforce(db, conn, {w.gid for w in wanted})
    texts = []
    for w in wanted:
        # AC-1: a pin reaches MAIN rows; a pack is a read-only file, read as mounted.
        as_of = pin if w.provider == MAIN else None
        rows, iri_of = share_state.graph_triples(conn, db.terms, (w.gid,), as_of_tx=as_of)
        texts.append(
            serialize.ntriples(
                (serialize.iri_term(iri_of[e]), f"<{iri_of[a]}>", serialize.value_term(v, iri_of))
                for e, a, v in rows
            )
        )
    return texts


def _answer(
    head: Mapping[str, Any], wanted: Sequence[_Wanted], texts: Sequence[str], limit: int, *, providers: bool
) -> dict[str, Any]:
    """The response, refused whole when its JSON encoding is over ``limit`` (AQ-3)."""
    from quipu.sharing import canonical  # its RDF library loads with the first acquisition

    entries = []
    for w, text in zip(wanted, texts, strict=True):
        ntriples = canonical.canonical_nquads(text)
        entry: dict[str, Any] = {"graph": w.iri}
        if providers:
            entry["provider"] = w.provider
        entry |= {"triples": ntriples.count("\n"), "graph_hash": sha256_id(ntriples), "ntriples": ntriples}
        entries.append(entry)
    body: dict[str, Any] = {**head, "complete": True, "bytes": 0, "graphs": entries}
    body["bytes"] = size = _encoded_size(body)
    if size > limit:
        raise BadRequest(
            f"the acquisition is {size} bytes encoded, over max_bytes {limit}: ask for fewer graphs "
            "(nothing partial is returned)",
            reason="acquire_too_large",
            field="max_bytes",
        )
    return body


def _encoded_size(body: dict[str, Any]) -> int:
    """The length of the compact UTF-8 JSON the server sends, ``bytes`` field included. The
    count's own digits are part of what it counts, so settle on the value that counts itself."""
    text = json.dumps({**body, "bytes": 0}, ensure_ascii=False, separators=(",", ":"))
    rest = len(text.encode("utf-8")) - 1  # everything but the one digit of the placeholder 0
    size = rest + 1
    while rest + len(str(size)) != size:
        size = rest + len(str(size))
    return size
