"""``quipu_graph_freeze`` and ``quipu_graph_thaw`` (tools-graphs-governance §1.4-§1.5).

Freeze, in the spec's order: validate; hash the graph's canonical history from the live store
before writing anything; build the pack beside the store as ``<alias>.qpack.db.building``;
move it to ``<alias>.qpack.db`` (never over an existing file); re-verify the final pack's hash;
then, in one transaction, relabel the graph as an archive, write its lifecycle facts, delete its
local rows, mark it frozen, record the pack and add it to ``urn:quipu:dataset:frozen``; and
mount the pack so the next read already sees it. Nothing local is deleted unless the pack
verified (rule FZ-7); a failure after the pack exists names the leftover file.

Packs are SQLite files attached to the store's reads, so both tools need a SQLite store on disk;
on PostgreSQL (and ``:memory:``) they are refused with a 400 naming that limit.

``out_dir`` is confined to ``[quipu.graphs] archive_dir`` (default: the store file's directory):
a remote caller must not be able to make the server write files elsewhere [beyond the original].
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import quipu
from quipu import times
from quipu.errors import BadRequest, InvalidField
from quipu.graphs import labels
from quipu.graphs.registry import check_actor
from quipu.identity import Authenticated
from quipu.store import archive_packs, datasets, graph_facts, graph_lifecycle, graph_registry, values
from quipu.store.archive_packs import content_hash, driver, history_text
from quipu.store.database import Database
from quipu.store.graph_labels import FRESHNESS
from quipu.store.graph_registry import META, GraphRecord
from quipu.store.graph_scope import FROZEN_DATASET
from quipu.store.schema import META_IRI, ROOT_IRI
from quipu.store.writes import open_transaction

Q: Final = "https://quipu.dev/ontology/"
PACK_SUFFIX: Final = ".qpack.db"


class UnsupportedBackend(BadRequest):
    reason = "unsupported_backend"


def _store_file(db: Database, tool: str) -> str:
    path = db.file_path
    if path is None:
        where = "PostgreSQL" if db.backend.kind == "postgresql" else "an in-memory store"
        raise UnsupportedBackend(
            f"{tool} needs a SQLite store on disk: archive packs are SQLite files attached to the "
            f"store's reads, which {where} cannot do (docs/postgresql.md)"
        )
    return path


def archive_root(db: Database, configured: Path | None) -> Path:
    return (configured or Path(_store_file(db, "quipu_graph_freeze")).parent).resolve()


def confined_dir(root: Path, out_dir: object) -> Path:
    """``out_dir`` resolved (symlinks and ``..`` included) and kept inside ``root``."""
    if out_dir is None:
        target = root
    else:
        if not isinstance(out_dir, str) or not out_dir.strip() or "\x00" in out_dir:
            raise InvalidField("'out_dir' must be a non-empty directory path", field="out_dir")
        given = Path(out_dir)
        try:
            target = (given if given.is_absolute() else root / given).resolve()
        except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
            raise InvalidField(f"'out_dir' {out_dir!r} cannot be resolved: {exc}", field="out_dir") from None
    if target != root and root not in target.parents:
        raise InvalidField(
            f"'out_dir' {out_dir!r} is outside the archive directory {root} ([quipu.graphs] archive_dir); "
            "packs are written only there",
            field="out_dir",
            reason="path_outside_archive_dir",
        )
    try:
        is_dir = target.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        raise InvalidField(f"'out_dir' {out_dir!r} is not an existing directory", field="out_dir")
    return target


def local_name(iri: str) -> str:
    return re.split(r"[/#:]", iri.rstrip("/#:"))[-1]


def alias_for(iri: str, taken: set[str]) -> str:
    """``fz_<local name>``: lowercased, anything but [a-z0-9] as ``_``, ``g`` first when it does
    not start with a letter, then ``_2``, ``_3`` … past the aliases already used."""
    local = local_name(iri) or "graph"
    name = re.sub(r"[^a-z0-9]", "_", local.lower())
    if not name[:1].isalpha():
        name = "g" + name
    base = f"fz_{name}"
    alias, n = base, 1
    while alias in taken:
        n += 1
        alias = f"{base}_{n}"
    return alias


def _frozen_target(db: Database, graph: object) -> tuple[str, GraphRecord]:
    if graph is None:
        raise InvalidField("missing 'graph'", field="graph")
    iri = values.check_iri(graph, "graph")
    if iri == ROOT_IRI:
        raise InvalidField(
            "ROOT cannot be frozen: the default graph is the store, not a window", field="graph"
        )
    if iri == META_IRI:
        raise InvalidField("the meta-graph cannot be frozen: it holds every graph's labels", field="graph")
    with db.read() as conn:
        gid, rec = graph_registry.lookup(db, conn, iri)
    if gid is None:
        raise InvalidField(f"unknown graph: <{iri}>", field="graph", reason="unknown_graph")
    if rec is None:
        raise InvalidField(
            f"graph <{iri}> is interned but not registered", field="graph", reason="unknown_graph"
        )
    if rec.cls == "overlay":
        raise InvalidField(f"<{iri}> is an overlay: scratch layers are not frozen", field="graph")
    if rec.source is not None:
        raise InvalidField(
            f"<{iri}> comes from attachment {rec.source!r}: another owner's artifact", field="graph"
        )
    if rec.lifecycle == "frozen":
        raise InvalidField(f"<{iri}> is already frozen; thaw it first with quipu_graph_thaw", field="graph")
    return iri, rec


def freeze(
    db: Database,
    archive_dir: Path | None,
    *,
    graph: object,
    timestamp: object,
    out_dir: object = None,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    _store_file(db, "quipu_graph_freeze")
    if not isinstance(timestamp, str):
        raise InvalidField(
            "missing 'timestamp' (recorded on the lifecycle facts and the label)", field="timestamp"
        )
    stamp = times.normalise_timestamp(timestamp)
    check_actor(actor)
    iri, rec = _frozen_target(db, graph)
    target = confined_dir(archive_root(db, archive_dir), out_dir)
    # 2. the content hash, from the live store, before anything is written
    with db.read() as conn:
        history, n_facts = history_text(driver(conn).cursor(), rec.g)
        taken = graph_lifecycle.aliases_in_use(conn)
    digest = content_hash(history)
    # 3.-4. the pack, built aside, moved into place without overwriting, then re-verified
    alias = alias_for(iri, taken | set(db.archives.mounts))
    pack = target / f"{alias}{PACK_SUFFIX}"
    building = Path(f"{pack}.building")
    for path in (pack, building):
        if path.exists() or path.is_symlink():
            raise InvalidField(f"{path} already exists; an archive is never overwritten", field="out_dir")
    counts = _build(db, rec, iri, building, digest, stamp)
    try:
        os.link(building, pack)  # fails rather than replace a file that appeared meanwhile
    finally:
        building.unlink(missing_ok=True)
    leftover = f"(the pack {pack} is left on disk; delete it before retrying)"
    if content_hash(archive_packs.pack_history(str(pack), iri)[0]) != digest:
        raise BadRequest(
            f"pack verification failed: its history hash differs; nothing was deleted {leftover}"
        )
    # 5. one transaction: relabel, lifecycle facts, delete, lifecycle, pack record, dataset
    try:
        with db.write(auth) as ctx:
            live, _ = history_text(driver(ctx.conn).cursor(), rec.g)
            if content_hash(live) != digest:  # a write landed since the hash: keep everything
                raise BadRequest(
                    f"graph <{iri}> changed while it was being frozen; nothing was deleted {leftover}"
                )
            now = rec.labels.in_effect(times.now())
            archived = replace(now, durability="backed", kind="archive", tx=None, valid_to=None)
            labels.declare(db, ctx, rec.g, iri, stamp, archived, actor=actor, source="graph-freeze")
            tx = open_transaction(ctx, timestamp=stamp, actor=actor, source="graph-freeze", graph=META)
            graph_facts.assert_triples(
                db, ctx, tx,
                [(iri, Q + "lifecycleState", values.string("frozen")),
                 (iri, Q + "frozenInto", values.string(digest)),
                 (iri, Q + "frozenAt", values.string(stamp))],
                stamp,
            )  # fmt: skip
            graph_lifecycle.delete_rows(ctx, rec.g)
            graph_registry.set_lifecycle(ctx, rec.g, "frozen")
            graph_lifecycle.record_freeze(
                ctx, graph_iri=iri, alias=alias, path=str(pack), content_hash=digest, frozen_at=stamp,
                facts_count=counts.facts, transactions_count=counts.transactions,
            )  # fmt: skip
            datasets.add_member(ctx, FROZEN_DATASET, iri, stamp)
    except BadRequest as exc:
        if leftover in exc.message:
            raise
        raise type(exc)(f"{exc.message} {leftover}", reason=exc.reason, field=exc.field) from exc
    db.reload_archives()  # 6. mounted: the next read composes it
    return {
        "graph": iri, "pack": str(pack), "alias": alias, "content_hash": digest, "facts": n_facts,
        "transactions": counts.transactions, "vectors": counts.vectors, "vectors_omitted": None,
    }  # fmt: skip


def _build(
    db: Database, rec: GraphRecord, iri: str, building: Path, digest: str, stamp: str
) -> archive_packs.PackCounts:
    """A standalone store at ``building`` holding the graph's record and manifest."""
    Database(str(building)).close()  # every table at the current revision
    now = rec.labels.in_effect(times.now())
    registry_row = {
        "g": rec.g, "class": "committed", "parent_branch": None, "created_at": rec.created_at,
        "created_actor": rec.actor, "data_kind": "archive", "durability_rank": 3,
        "fresh_rank": None if now.freshness is None else FRESHNESS.index(now.freshness) + 1,
        "policy": " ".join(now.policy) if now.policy else None,  # trust is dropped: its chain is the origin's
        "labels_tx": 0,  # declared by the freeze itself, in no transaction of the pack
    }  # fmt: skip
    try:
        with db.read() as conn, sqlite3.connect(building) as target:
            counts = archive_packs.copy_graph(conn, target, rec.g, registry_row)
            archive_packs.write_manifest(
                target,
                {
                    "pack_format": archive_packs.PACK_FORMAT,
                    "name": local_name(iri),
                    "version": 1,
                    "term_space": "origin",  # term and transaction ids are the origin store's
                    "content_hash": digest,
                    "created_at": stamp,
                    "source_graph": iri,
                    "producer": {"version": quipu.__version__, "tool": "quipu graph freeze"},
                    "counts": {
                        "facts": counts.facts, "transactions": counts.transactions, "history": True,
                        "vectors": counts.vectors, "vectors_omitted": None,
                    },
                },
            )  # fmt: skip
        target.close()
        archive_packs.prepare_pack_file(str(building))
    except BaseException:
        building.unlink(missing_ok=True)
        for extra in ("-wal", "-shm", "-journal"):
            Path(f"{building}{extra}").unlink(missing_ok=True)
        raise
    return counts


def thaw(
    db: Database,
    *,
    graph: object,
    timestamp: object,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    _store_file(db, "quipu_graph_thaw")
    if graph is None:
        raise InvalidField("missing 'graph'", field="graph")
    iri = values.check_iri(graph, "graph")
    if not isinstance(timestamp, str):
        raise InvalidField(
            "missing 'timestamp' (recorded on the lifecycle change and the label)", field="timestamp"
        )
    stamp = times.normalise_timestamp(timestamp)
    check_actor(actor)
    with db.read() as conn:
        record = graph_lifecycle.open_freeze(conn, iri)
        gid, rec = graph_registry.lookup(db, conn, iri)
    if record is None:
        raise InvalidField(f"graph <{iri}> is not frozen", field="graph")
    if gid is None or rec is None:
        raise InvalidField(f"graph <{iri}> lost its term; it cannot be thawed here", field="graph")
    # TH-1: verify the pack, then detach it, then restore everything in one transaction.
    if not os.path.exists(record.path):
        raise InvalidField(f"archive pack {record.path} is missing; nothing changed", field="graph")
    if content_hash(archive_packs.pack_history(record.path, iri)[0]) != record.content_hash:
        raise BadRequest(f"archive pack {record.path} failed hash verification; nothing changed")
    pack = archive_packs.read_record(record.path, iri)
    db.archives.replace([m for m in db.archives.mounts.values() if m.alias != record.alias])
    try:
        with db.write(auth) as ctx:
            facts_restored, vectors_restored = graph_lifecycle.restore(db, ctx, gid, pack)
            graph_registry.set_lifecycle(ctx, gid, None)
            now = rec.labels.in_effect(times.now())
            # durability stays backed: the pack still exists
            thawed = replace(now, durability="backed", kind="operational", tx=None, valid_to=None)
            labels.declare(db, ctx, gid, iri, stamp, thawed, actor=actor, source="graph-thaw")
            tx = open_transaction(ctx, timestamp=stamp, actor=actor, source="graph-thaw", graph=META)
            graph_facts.close_triple(db, ctx, tx, (iri, Q + "lifecycleState", values.string("frozen")))
            graph_lifecycle.stamp_thawed(ctx, record.id, stamp)
            datasets.drop_member(ctx, FROZEN_DATASET, iri)
    finally:
        db.reload_archives()  # TH-2: after a failure the pack is mounted again
    return {"graph": iri, "facts_restored": facts_restored, "vectors_restored": vectors_restored}
